//go:build linux

package gitobj

import (
	"os/exec"
	"syscall"
)

// DieWithParent makes the kernel kill cmd (SIGKILL) when the thread that
// started it exits, which for a Go program that keeps the thread locked
// while cmd runs (runtime.LockOSThread) means when the program dies: a
// `git fetch` into a fetch quarantine must not outlive a killed
// git-lossless, whose watchdog bounded what it writes. Call it after
// OwnProcessGroup. Linux only; elsewhere a no-op.
func DieWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
