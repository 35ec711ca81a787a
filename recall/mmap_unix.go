//go:build unix

package recall

import (
	"os"
	"syscall"
)

// mapFile maps a segment file read-only. Segments are never modified in
// place (a new one is written beside and renamed), so a mapping stays
// valid after a merge removes the file.
func mapFile(f *os.File, size int64) ([]byte, func(), error) {
	if size <= 0 || int64(int(size)) != size {
		return nil, nil, syscall.EINVAL
	}
	b, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	return b, func() { syscall.Munmap(b) }, nil
}
