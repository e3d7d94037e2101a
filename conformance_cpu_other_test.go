//go:build !unix

package memor_test

import "time"

// processCPU is not measured outside unix.
func processCPU() time.Duration { return 0 }
