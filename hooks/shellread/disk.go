package shellread

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// MaxFileSize bounds the file ReadFile reads. Harnesses cap a shell
// call's output far below it (Claude Code's Bash at 30,000 characters by
// default, Codex at about ten thousand tokens), so a larger file is only
// ever seen in part, and a hook must not spend its time reading a huge log
// to prove that.
const MaxFileSize = 8 << 20

// The reasons ReadFile gives for not reading a file.
var (
	// ErrNotRegular: a directory, FIFO, device or socket. cat of a
	// directory prints nothing on stdout; reading a FIFO or a device
	// from the hook would block it or never end.
	ErrNotRegular = errors.New("shellread: not a regular file")
	// ErrTooLarge: larger than MaxFileSize.
	ErrTooLarge = errors.New("shellread: file larger than MaxFileSize")
)

// ReadFile reads the file a Read names, resolved (Read.Resolve), for
// Match: it follows symlinks as cat does, and refuses without blocking
// anything but a regular file of at most MaxFileSize bytes.
func ReadFile(ctx context.Context, name string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, err := openNonblock(name)
	if err != nil {
		return nil, fmt.Errorf("shellread: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("shellread: stat %q: %w", name, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %q is %v", ErrNotRegular, name, fi.Mode().Type())
	}
	if fi.Size() > MaxFileSize {
		return nil, fmt.Errorf("%w: %q has %d bytes", ErrTooLarge, name, fi.Size())
	}
	b := make([]byte, 0, fi.Size()+1)
	// The file may grow while it is read: read one byte past the cap to
	// tell.
	b, err = readAll(io.LimitReader(f, MaxFileSize+1), b)
	if err != nil {
		return nil, fmt.Errorf("shellread: read %q: %w", name, err)
	}
	if len(b) > MaxFileSize {
		return nil, fmt.Errorf("%w: %q grew past it while read", ErrTooLarge, name)
	}
	return b, nil
}

// readAll is io.ReadAll into b's spare capacity.
func readAll(r io.Reader, b []byte) ([]byte, error) {
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}
