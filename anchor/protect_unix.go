//go:build unix

package anchor

import (
	"fmt"
	"os"
	"syscall"
)

// canExec reports whether the system lets this process execute path
// (access(2) with X_OK, which a noexec mount refuses even to root): git
// runs a hook only when it passes the same test.
func canExec(path string) bool { return syscall.Access(path, 1) == nil }

// ownerNote says, when the repository at dir belongs to another user than
// this process's, that the probe proved the hook for this user only: a
// push made as the owner (ssh git@host) reads that user's configuration,
// where core.hooksPath may name another directory.
func ownerNote(dir string) string {
	fi, err := os.Stat(dir)
	if err != nil {
		return ""
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || int(st.Uid) == os.Getuid() {
		return ""
	}
	return fmt.Sprintf("%s belongs to uid %d and protect runs as uid %d: the probe is a push made as uid %d with its configuration; pushes made as the owner (ssh git@host) read the owner's, so run protect as that user", dir, st.Uid, os.Getuid(), os.Getuid())
}
