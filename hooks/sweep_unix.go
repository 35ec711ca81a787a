//go:build unix

package hooks

import (
	"os"
	"syscall"
)

// fileIdentity returns the device and inode of a file: a transcript
// replaced by another file (same path, new inode) resets its cursor.
func fileIdentity(fi os.FileInfo) (dev, ino uint64) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Dev), uint64(st.Ino)
	}
	return 0, 0
}
