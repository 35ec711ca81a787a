//go:build !unix

package recall

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"time"
)

// lockDir takes the index's update lock where flock is not available: a
// lock file created exclusively and removed on unlock. A lock file older
// than staleLock is taken to be left by a crashed process and removed.
func lockDir(ctx context.Context, dir string, wait time.Duration) (unlock func(), err error) {
	p := filepath.Join(dir, lockName+".excl")
	deadline := time.Now().Add(wait)
	for {
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err == nil {
			f.Close()
			return func() { os.Remove(p) }, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return nil, err
		}
		if fi, err := os.Stat(p); err == nil && time.Since(fi.ModTime()) > staleLock {
			os.Remove(p)
			continue
		}
		if time.Now().After(deadline) {
			return nil, errLockBusy
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

const staleLock = 5 * time.Minute

var errLockBusy = errors.New("recall: the index is being updated by another process")
