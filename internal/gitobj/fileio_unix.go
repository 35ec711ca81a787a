//go:build unix

package gitobj

import (
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// The store's hot paths open a dozen small files per append. os.OpenFile
// spends five extra system calls on each regular file (it tries, and
// fails, to register it with the network poller: fcntl, fcntl, epoll_ctl,
// fcntl, fcntl). Opening with syscall.Open and wrapping the descriptor
// with os.NewFile gives an ordinary blocking *os.File for one fcntl.

// openFile is os.OpenFile without the poller set-up.
func OpenFile(name string, flag int, perm os.FileMode) (*os.File, error) {
	for {
		fd, err := syscall.Open(name, flag|syscall.O_CLOEXEC, uint32(perm.Perm()))
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
		return os.NewFile(uintptr(fd), name), nil
	}
}

// readFile is os.ReadFile without the poller set-up.
func ReadFile(name string) ([]byte, error) {
	f, err := OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size := 512
	if st, err := f.Stat(); err == nil && st.Size() > 0 && int64(int(st.Size())) == st.Size() {
		size = int(st.Size()) + 1
	}
	b := make([]byte, 0, size)
	for {
		n, err := f.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return nil, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}

// createTemp is os.CreateTemp(dir, prefix+"*") without the poller set-up,
// creating the file with perm (a loose object is born read-only, as git
// makes it, which spares a chmod per object).
func CreateTemp(dir, prefix string, perm os.FileMode) (*os.File, error) {
	for try := 0; ; try++ {
		name := filepath.Join(dir, prefix+strconv.FormatUint(rand.Uint64(), 36))
		f, err := OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
		if os.IsExist(err) && try < 100 {
			continue
		}
		return f, err
	}
}

// writeFile is os.WriteFile without the poller set-up.
func WriteFile(name string, data []byte, perm os.FileMode) error {
	f, err := OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err1 := f.Close(); err == nil {
		err = err1
	}
	return err
}

// tryLockFile takes an exclusive advisory lock (flock) on the file at
// path, creating it if need be, without waiting. The file is never
// removed: the lock, not the file's existence, is what excludes, so it
// costs no create or unlink once the file exists and the kernel releases
// it when its holder dies. ok is false when another process holds it or
// the file cannot be opened.
func TryLockFile(path string) (unlock func(), ok bool) {
	f, err := OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, false
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, false
	}
	return func() { f.Close() }, true // closing the descriptor releases the lock
}

// fileIno is a file's inode number (0 when unknown).
func fileIno(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}
