//go:build unix

package gitobj

import (
	"os/exec"
	"syscall"
)

// ownProcessGroup makes cmd the leader of a process group of its own and,
// when its context ends, kills the whole group: git push and fetch start
// helpers (git-receive-pack for a path remote, ssh, git-remote-http)
// that would keep the pipes open, and the command, waiting, after git
// itself died.
func OwnProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
