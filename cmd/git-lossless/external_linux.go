package main

import (
	"os/exec"
	"syscall"
)

// dieWithUs asks the kernel to send the external program SIGTERM when
// git-lossless dies, however it dies: a harness that kills its MCP
// server with SIGKILL (or an OOM kill) kills git-lossless only, and the
// server would otherwise live on, holding the harness's pipes until it
// closed them. The signal is tied to the thread that started the
// program, which the Go runtime never ends while the process lives
// (no goroutine here locks a thread).
func dieWithUs(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
