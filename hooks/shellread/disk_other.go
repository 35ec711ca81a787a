//go:build !unix

package shellread

import "os"

// openNonblock opens name for reading; outside unix there are no FIFOs
// in the file system to block on.
func openNonblock(name string) (*os.File, error) {
	return os.Open(name)
}
