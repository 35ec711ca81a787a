//go:build unix

package gitobj

import (
	"os"
	"syscall"
)

// mapFile maps a pack read-only (nil when it cannot): reading an object
// is then a slice of memory, not a system call and a copy.
func MapFile(f *os.File, size int64) []byte {
	if size <= 0 || int64(int(size)) != size {
		return nil
	}
	b, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil
	}
	return b
}

func UnmapFile(b []byte) { syscall.Munmap(b) }
