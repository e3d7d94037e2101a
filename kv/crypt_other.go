//go:build !unix

package kv

func nlink(any) (uint64, bool) { return 0, false }
