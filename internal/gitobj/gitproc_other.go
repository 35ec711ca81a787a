//go:build !unix

package gitobj

import "os/exec"

// ownProcessGroup: no process groups here; WaitDelay alone bounds the wait.
func OwnProcessGroup(cmd *exec.Cmd) {}
