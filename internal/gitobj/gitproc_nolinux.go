//go:build !linux

package gitobj

import "os/exec"

// DieWithParent: only Linux can tie a child's life to its parent's; a
// quarantine left by a git that outlived a killed parent is removed by
// the next fetch once stale.
func DieWithParent(cmd *exec.Cmd) {}
