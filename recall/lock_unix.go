//go:build unix

package recall

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// lockDir takes the index's update lock: an exclusive flock on dir/lock,
// a file created once and never removed, as gitstore's own index lock.
// The kernel releases it when its holder dies, so no stale lock outlives
// a crash. flock locks belong to the open file, so two Opens in one
// process exclude each other as two processes do. It waits, polling, up
// to wait (or until ctx ends).
func lockDir(ctx context.Context, dir string, wait time.Duration) (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(dir, lockName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(wait)
	delay := time.Millisecond
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if err != syscall.EWOULDBLOCK && err != syscall.EINTR {
			f.Close()
			return nil, err
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, errLockBusy
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, 20*time.Millisecond)
	}
}

var errLockBusy = errors.New("recall: the index is being updated by another process")
