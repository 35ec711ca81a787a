//go:build unix

package claudecode

import (
	"os"
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

// swFileIdentity is the device and inode a cursor records for a file.
func swFileIdentity(fi os.FileInfo) (dev, ino uint64) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Dev), uint64(st.Ino)
	}
	return 0, 0
}
