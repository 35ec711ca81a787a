//go:build !unix

package recall

import (
	"io"
	"os"
)

// mapFile reads a segment file whole where mmap is not available.
func mapFile(f *os.File, size int64) ([]byte, func(), error) {
	b := make([]byte, size)
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, nil, err
	}
	return b, nil, nil
}
