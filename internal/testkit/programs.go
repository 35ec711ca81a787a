package testkit

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// Module is this repository's module path; its programs are Module/cmd/NAME.
const Module = "github.com/git-lossless/git-lossless"

// BuildPrograms builds the named programs of cmd/ ("git-lossless",
// "git-lossless-hook", "git-lossless-mcp", "git-lossless-bench") into
// dir, side by side as `go install ./cmd/...` lays them out, in one `go
// build` (with the caller's environment and build cache), and returns
// their paths in the order named. git-lossless runs its `mcp` command
// through git-lossless-mcp beside it, and install writes the hook and
// MCP programs it finds there into the harnesses' configs, so a test of
// a real harness builds all three.
func BuildPrograms(dir string, names ...string) ([]string, error) {
	args := []string{"build", "-o", dir + string(filepath.Separator)}
	paths := make([]string, len(names))
	for i, n := range names {
		args = append(args, Module+"/cmd/"+n)
		paths[i] = filepath.Join(dir, n)
		if runtime.GOOS == "windows" {
			paths[i] += ".exe"
		}
	}
	cmd := exec.Command(goTool(), args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build %s: %v\n%s", strings.Join(names, " "), err, out)
	}
	return paths, nil
}

// goTool is the go command: on PATH, else in GOROOT.
func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	if root := os.Getenv("GOROOT"); root != "" {
		return filepath.Join(root, "bin", "go")
	}
	return "go"
}
