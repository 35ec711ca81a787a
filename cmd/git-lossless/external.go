package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/git-lossless/git-lossless/internal/cli"
)

// Some commands live in programs of their own, so that the program you
// run every day holds only what its commands need and starts without the
// package initialisation of the rest (layoutcheck holds it to that):
//
//   - git-lossless-bench: `bench` and `demo` (the fixtures they generate,
//     the peer scanner, the stub backends);
//   - git-lossless-mcp: `mcp`, the MCP server (the MCP SDK, with its JSON
//     schema, gob, OAuth and HTTP packages, whose initialisation alone
//     cost every git-lossless process about 2 ms).
//
// `git lossless NAME ARGS` runs `PROGRAM NAME ARGS`, found beside this
// executable first, then on PATH, as git runs git-<command>, in the
// command's directory (-C): stdin, stdout and stderr are passed through
// (the same files, not copies, so an MCP client talks to the server
// itself), and the exit code is ours. SIGINT and SIGTERM reach it as
// they reach us: a terminal sends SIGINT to both; a SIGTERM sent to us
// only (a harness stopping its MCP server) is passed on, and the program
// is killed if it has not exited 5 s later. On Linux it also gets SIGTERM
// when git-lossless dies of a signal it cannot catch (SIGKILL; see
// dieWithUs).

// external is a command another program provides.
type external struct {
	program string // the program's name
	summary string // help's line
}

// externals are the commands run by other programs, by name.
var externals = map[string]external{
	"bench": {benchProgram, "measure against the peers (C git, the reference tools' figures), side by side (git-lossless-bench)"},
	"demo":  {benchProgram, "a scripted agent session recorded, verified and receipted in a throwaway repository (git-lossless-bench)"},
	"mcp":   {mcpProgram, "serve the archive to an agent as MCP tools (stdio; git-lossless-mcp)"},
}

const (
	// benchProgram is the demo's and the benchmarks' program.
	benchProgram = "git-lossless-bench"
	// mcpProgram is the MCP server's program (settings.MCPProgramName,
	// which install writes into the harnesses' configs when it sits
	// beside git-lossless).
	mcpProgram = "git-lossless-mcp"
)

// externalCmd is the help entry of a command another program runs; run
// dispatches it before flags are parsed (runExternal).
func externalCmd(name string) *command {
	return &command{
		Name: name, Summary: externals[name].summary, Usage: "[ARGS] (see `git lossless " + name + " --help`)",
		Flags: func(fs *pflag.FlagSet) func(context.Context, *env, []string) error {
			return func(ctx context.Context, e *env, args []string) error { return runExternal(ctx, e, name, args) }
		},
	}
}

// errNotInstalled is the error when a command's program is nowhere to be
// found.
type errNotInstalled struct{ program string }

func (e errNotInstalled) Error() string {
	return e.program + " is not installed beside git-lossless or on PATH"
}

// findProgram finds program beside the running executable, then on PATH.
func findProgram(program string, getenv func(string) string) (string, error) {
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), program)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	for _, dir := range filepath.SplitList(getenv("PATH")) {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, program)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", errNotInstalled{program}
}

// externalStopWait is how long a program told to stop (SIGTERM) has to
// exit before it is killed.
const externalStopWait = 5 * time.Second

// runExternal runs `PROGRAM NAME ARGS` in the command's directory with
// the command's streams; its exit code becomes ours.
func runExternal(ctx context.Context, e *env, name string, args []string) error {
	program := externals[name].program
	bin, err := findProgram(program, e.Getenv)
	if err != nil {
		return cli.WithHint(err, "go install github.com/git-lossless/git-lossless/cmd/"+program+"@latest (from a clone: go install ./cmd/..., or go run ./cmd/"+program+" "+name+")")
	}
	cmd := exec.CommandContext(ctx, bin, append([]string{name}, args...)...)
	cmd.Dir, cmd.Stdin, cmd.Stdout, cmd.Stderr = e.Dir, e.Stdin, e.Stdout, e.Stderr
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = externalStopWait
	dieWithUs(cmd)
	err = cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ee.ExitCode() < 0 { // killed by a signal: it reported nothing
			return fmt.Errorf("%s %s: %v", program, name, ee)
		}
		return exitCode{program, ee.ExitCode()}
	}
	if err != nil {
		return fmt.Errorf("run %s: %w", bin, err)
	}
	return nil
}

// exitCode is an external program's exit status, already reported by it.
type exitCode struct {
	program string
	code    int
}

func (c exitCode) Error() string {
	return fmt.Sprintf("%s exited with status %d", c.program, c.code)
}
