package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/git-lossless/git-lossless/internal/cli"
)

// The benchmarks and the demo live in a program of their own,
// git-lossless-bench, so the program you run every day holds only the
// product (no fixtures, no peer scanner, no stub backends: layoutcheck
// holds it to that). `git lossless bench ARGS` and `git lossless demo
// ARGS` run `git-lossless-bench bench|demo ARGS`, found beside this
// executable first, then on PATH, as git runs git-<command>: stdin,
// stdout, stderr and the exit code are passed through.

// benchProgram is the program's name.
const benchProgram = "git-lossless-bench"

// externalSummaries are the commands git-lossless-bench provides.
var externalSummaries = map[string]string{
	"bench": "measure against the peers (C git, the reference tools' figures), side by side (git-lossless-bench)",
	"demo":  "a scripted agent session recorded, verified and receipted in a throwaway repository (git-lossless-bench)",
}

// externalCmd is the help entry of a command git-lossless-bench runs; run
// dispatches it before flags are parsed (runExternal).
func externalCmd(name string) *command {
	return &command{
		Name: name, Summary: externalSummaries[name], Usage: "[ARGS] (see `git lossless " + name + " --help`)",
		Flags: func(fs *pflag.FlagSet) func(context.Context, *env, []string) error {
			return func(ctx context.Context, e *env, args []string) error { return runExternal(ctx, e, name, args) }
		},
	}
}

// errNoBench is the error when git-lossless-bench is nowhere to be found.
var errNoBench = errors.New(benchProgram + " is not installed beside git-lossless or on PATH")

// findBench finds git-lossless-bench beside the running program, then on
// PATH.
func findBench(getenv func(string) string) (string, error) {
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), benchProgram)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	for _, dir := range filepath.SplitList(getenv("PATH")) {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, benchProgram)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", errNoBench
}

// runExternal runs `git-lossless-bench NAME ARGS` in the command's
// directory with the command's streams; its exit code becomes ours.
func runExternal(ctx context.Context, e *env, name string, args []string) error {
	bin, err := findBench(e.Getenv)
	if err != nil {
		return cli.WithHint(err, "go install github.com/git-lossless/git-lossless/cmd/"+benchProgram+"@latest (from a clone: go run ./cmd/"+benchProgram+" "+name+")")
	}
	cmd := exec.CommandContext(ctx, bin, append([]string{name}, args...)...)
	cmd.Dir, cmd.Stdin, cmd.Stdout, cmd.Stderr = e.Dir, e.Stdin, e.Stdout, e.Stderr
	err = cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return exitCode(ee.ExitCode())
	}
	if err != nil {
		return fmt.Errorf("run %s: %w", bin, err)
	}
	return nil
}

// exitCode is an external program's exit status, already reported by it.
type exitCode int

func (c exitCode) Error() string {
	return fmt.Sprintf("%s exited with status %d", benchProgram, int(c))
}
