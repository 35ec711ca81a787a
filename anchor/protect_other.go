//go:build !unix

package anchor

import "os"

// canExec reports whether path has an executable bit; systems without
// access(2) have no noexec mounts to tell apart.
func canExec(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().Perm()&0o111 != 0
}

// ownerNote: file ownership is not compared here.
func ownerNote(string) string { return "" }
