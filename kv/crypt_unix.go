//go:build unix

package kv

import "syscall"

func nlink(sys any) (uint64, bool) {
	if s, ok := sys.(*syscall.Stat_t); ok {
		return uint64(s.Nlink), true //nolint:unconvert // uint16 on some systems
	}
	return 0, false
}
