package testkit

import (
	"os"
	"path/filepath"
	"testing"
)

// IsolateUserConfig points HOME and XDG_DATA_HOME at fresh directories,
// makes git read no global or system configuration, and unsets the
// variables that would reach the user's own identity or proxy: what a
// test of a command needs so nothing of the machine's user leaks in.
func IsolateUserConfig(t testing.TB) {
	t.Helper()
	base := t.TempDir()
	t.Setenv("HOME", filepath.Join(base, "home"))
	t.Setenv("XDG_DATA_HOME", filepath.Join(base, "data"))
	t.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("LOSSLESS_AGE_IDENTITY", "")
	t.Setenv("LOSSLESS_PROXY_URL", "")
	t.Setenv("LOSSLESS_PROXY_LISTEN", "")
}
