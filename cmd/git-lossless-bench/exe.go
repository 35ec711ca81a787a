package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
)

// productExe is the git-lossless program the benchmarks run as a process:
// the one beside this program (as `go install ./cmd/...` puts them, and
// as `git lossless bench` found this one), else the one on PATH.
func productExe() (string, error) {
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), "git-lossless")
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	if p, err := exec.LookPath("git-lossless"); err == nil {
		return p, nil
	}
	return "", errors.New("git-lossless is neither beside git-lossless-bench nor on PATH (go install ./cmd/... installs both)")
}
