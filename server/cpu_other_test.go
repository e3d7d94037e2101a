//go:build !unix

package server

import "time"

// cpuTime is not measured here: TestLoad reports 0 µs CPU per request.
func cpuTime() time.Duration { return 0 }
