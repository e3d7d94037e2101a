//go:build unix

package memor_test

import (
	"syscall"
	"time"
)

// processCPU is the CPU time of the whole process (engine workers and
// Pebble included): on a shared machine it swings much less with other
// tenants' load than wall time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
