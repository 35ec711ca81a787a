//go:build !unix

package gitstore

import "os/exec"

// ownProcessGroup: no process groups here; WaitDelay alone bounds the wait.
func ownProcessGroup(cmd *exec.Cmd) {}
