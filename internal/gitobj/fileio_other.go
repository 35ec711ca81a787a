//go:build !unix

package gitobj

import (
	"os"
	"time"
)

func OpenFile(name string, flag int, perm os.FileMode) (*os.File, error) {
	return os.OpenFile(name, flag, perm)
}

func ReadFile(name string) ([]byte, error) { return os.ReadFile(name) }

func CreateTemp(dir, prefix string, perm os.FileMode) (*os.File, error) {
	f, err := os.CreateTemp(dir, prefix+"*")
	if err == nil {
		if err = f.Chmod(perm); err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}
	return f, err
}

func WriteFile(name string, data []byte, perm os.FileMode) error {
	return os.WriteFile(name, data, perm)
}

// tryLockFile takes an exclusive lock by creating the file at path (there
// is no flock here), removing a lock older than StaleLockAge first, without
// waiting. unlock removes the file.
func TryLockFile(path string) (unlock func(), ok bool) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if st, serr := os.Stat(path); serr == nil && time.Since(st.ModTime()) > StaleLockAge {
			os.Remove(path)
		}
		return nil, false
	}
	return func() { f.Close(); os.Remove(path) }, true
}

// fileIno: no inode numbers here (0: nothing is cached by it).
func fileIno(fi os.FileInfo) uint64 { return 0 }
