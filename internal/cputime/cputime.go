// Package cputime reads the process's CPU time, which the benchmarks and
// load tests report beside wall time: on a shared machine it swings much
// less with other tenants' load.
package cputime
