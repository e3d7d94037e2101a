//go:build unix

package cputime

import (
	"syscall"
	"time"
)

// Process is the user and system CPU time of the whole process so far
// (every goroutine, Pebble's background work included); 0 if unknown.
func Process() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
