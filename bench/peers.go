// Package bench holds memor's benchmarks, each run side by side with the
// peer a user would otherwise pick. Peer-only dependencies live in this
// module's go.mod, never in the library's.
package bench
