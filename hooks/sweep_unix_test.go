//go:build unix

package hooks

import (
	"syscall"
	"time"
)

// swCPUTime is the CPU time (user and system, all threads) this process
// has used: benchmarks report it beside wall time, which on a shared
// machine says more about the neighbours than about the code.
func swCPUTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
