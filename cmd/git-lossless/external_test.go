package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchAndDemoAreExternal: without git-lossless-bench beside it or on
// PATH, `git lossless demo` and `git lossless bench` say what to install
// (exit 3) and run nothing; with it (cmd/git-lossless-bench's tests run
// every benchmark as `git-lossless bench ...`) they run it.
func TestBenchAndDemoAreExternal(t *testing.T) {
	sb := newSandbox(t)
	sb.setenv("PATH", filepath.Dir(docsGit(t)))
	for _, args := range [][]string{{"demo"}, {"bench", "store"}, {"help", "bench"}} {
		r := sb.run(sb.root, args...)
		if r.code != exitError || !strings.Contains(r.stderr, "git-lossless-bench is not installed beside git-lossless or on PATH") ||
			!strings.Contains(r.stderr, "hint: go install github.com/git-lossless/git-lossless/cmd/git-lossless-bench@latest") {
			t.Errorf("git lossless %s: exit %d\n%s", strings.Join(args, " "), r.code, r.stderr)
		}
	}
	// help lists them, under measure, as git-lossless-bench's.
	r := sb.ok(sb.root, "help")
	for _, n := range []string{"bench", "demo"} {
		if !strings.Contains(r.stdout, "    "+n+" ") || !strings.Contains(r.stdout, "(git-lossless-bench)") {
			t.Errorf("help does not list %s as git-lossless-bench's:\n%s", n, r.stdout)
		}
	}
}
