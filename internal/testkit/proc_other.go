//go:build !unix

package testkit

import (
	"os"
	"os/exec"
)

// setProcessGroup does nothing where there are no process groups.
func setProcessGroup(*exec.Cmd) {}

// terminate kills p and each of others; there is no gentler signal here.
func terminate(p *os.Process, others []int, _ bool) {
	_ = p.Kill()
	for _, pid := range others {
		if q, err := os.FindProcess(pid); err == nil {
			_ = q.Kill()
		}
	}
}

// descendants is unknown here.
func descendants(int) []int { return nil }

// alive is only asked about descendants, of which there are none here.
func alive(int) bool { return false }
