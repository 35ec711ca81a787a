package gitobj

import (
	"os/exec"
	"testing"
)

// gitInit makes a repository with the real git, the second implementation
// every test here checks the object layer against.
func gitInit(t *testing.T, args ...string) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("git", append([]string{"init", "-q"}, append(args, dir)...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	return dir
}
