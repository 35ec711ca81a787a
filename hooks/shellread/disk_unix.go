//go:build unix

package shellread

import (
	"os"
	"syscall"
)

// openNonblock opens name for reading without blocking on a FIFO that
// has no writer (O_NONBLOCK); ReadFile then refuses whatever is not a
// regular file, on which O_NONBLOCK changes nothing.
func openNonblock(name string) (*os.File, error) {
	return os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}
