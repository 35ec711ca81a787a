//go:build unix

package shellread_test

import (
	"context"
	"errors"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/git-lossless/git-lossless/hooks/shellread"
)

// TestReadFileFIFO: `head -n 1 fifo` is a recognised read, but the hook
// must not open a FIFO for reading the ordinary way: with no writer that
// blocks forever. ReadFile returns ErrNotRegular at once.
func TestReadFileFIFO(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	r := mustParse(t, "head -n 1 pipe")
	if _, err := shellread.ReadFile(context.Background(), r.Resolve(dir)); !errors.Is(err, shellread.ErrNotRegular) {
		t.Errorf("ReadFile(fifo): %v, want ErrNotRegular", err)
	}
}
