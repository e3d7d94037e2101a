//go:build !unix

package bench

import "time"

// rusage is not measured outside unix.
func rusage() (time.Duration, int64) { return 0, 0 }
