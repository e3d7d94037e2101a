//go:build unix

package bench

import (
	"syscall"
	"time"
)

// rusage is the process's CPU time and minor page faults so far (zeros if
// unknown): a first query's cost beside its wall time, which on a shared
// machine swings with other tenants' load.
func rusage() (time.Duration, int64) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), ru.Minflt
}
