// Command git-lossless-hook is the agent harnesses' hook entry point of
// git-lossless in a program of its own: `git-lossless-hook hook [HARNESS]
// EVENT` does exactly what `git-lossless hook [HARNESS] EVENT` does (see
// `git lossless help hook`), reading the hook's JSON on stdin and always
// exiting 0 except when the edit guard denies.
//
// Why a second program: a harness (Claude Code, for one) starts a fresh
// process for every tool call it hooks, so the hook's start-up cost is
// paid on every read and edit. git-lossless links the proxy, the MCP
// server, OpenPGP receipts, the tokenizer and recall, whose package
// initialisation and page faults cost a process several milliseconds
// before main runs; this program links only the hook path (the runtime in
// hooks, the adapters listed in hooks/harnesses, gitstore, guard, seal and
// the object layer). `git lossless install HARNESS` writes this program
// into the harness's settings when it sits beside git-lossless (as `go
// install ./cmd/...` puts it), and git-lossless itself otherwise. It links no net, so no cgo:
// even a default build is statically linked, which spares every hook the
// dynamic loader.
//
// It accepts the same command line as git-lossless's hook command, global
// flags included, plus --version (the same line git-lossless prints, which
// the doctor compares) and --help.
//
// SSH keys are the one thing it leaves to git-lossless: encrypting to an
// SSH recipient needs golang.org/x/crypto/ssh, which links net, x509 and
// cgo (see gitstore.SSHKeys). When the archive an event goes to encrypts
// to an SSH key (gitstore.Crypt.NeedsSSH), this program hands the event —
// the same command line and the same input bytes — to the git-lossless
// beside it, before anything is recorded, and relays what it prints.
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/hooks"
	"github.com/git-lossless/git-lossless/hooks/harnesses"
	"github.com/git-lossless/git-lossless/internal/version"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], hooks.Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv})
	stop()
	os.Exit(code)
}

const usage = `usage: git-lossless-hook hook [HARNESS] EVENT

EVENT is one of session-start, pre-tool-use, post-tool-use, pre-compact,
subagent-stop, session-end (the harness's own names, Claude Code's
PreToolUse and so on, are accepted too); HARNESS names the harness whose
hook JSON is read on stdin (default: claude-code). This is the hook entry
point of git-lossless in a small program of its own, for a faster start;
see ` + "`git lossless help hook`" + ` for what each event does.
`

func run(ctx context.Context, args []string, e hooks.Env) int {
	if rest, ok := hooks.Invocation(args); ok {
		return runHook(ctx, rest, e, fullProgram)
	}
	for _, a := range args {
		switch a {
		case "--version", "version":
			fmt.Fprintf(e.Stdout, "git-lossless version %s\n", version.Version)
			return 0
		case "-h", "--help", "help":
			io.WriteString(e.Stdout, usage)
			return 0
		}
	}
	// Anything else is a misconfigured hook: one line, exit 0, so that
	// the harness is never blocked by our own mistake.
	fmt.Fprintf(e.Stderr, "git-lossless-hook: not a hook command line: %q (ignored; %s)\n", args, "usage: git-lossless-hook hook [HARNESS] EVENT")
	return 0
}

// errHandOver stops a hook run whose archive needs SSH keys.
var errHandOver = errors.New("the archive encrypts to an SSH key: handed to git-lossless")

// fullProgram is the git-lossless beside this program.
func fullProgram() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	return filepath.Join(filepath.Dir(exe), "git-lossless"), nil
}

// runHook runs the hook here, its output held until it is done, unless the
// archive turns out to need SSH keys: then nothing has been recorded, the
// held output is dropped, and git-lossless (found by full) runs the same
// hook on the same input. It always returns the hook's code (0 but for
// the guard's deny, which is on stdout); a failure to hand over is one
// line on stderr and 0, as any failure of a hook.
func runHook(ctx context.Context, args []string, e hooks.Env, full func() (string, error)) int {
	in, err := io.ReadAll(e.Stdin)
	if err != nil {
		fmt.Fprintf(e.Stderr, "git-lossless-hook: read the hook input: %v (ignored)\n", err)
		return 0
	}
	var out, errOut bytes.Buffer
	handOver := false
	he := e
	he.Stdin, he.Stdout, he.Stderr = bytes.NewReader(in), &out, &errOut
	he.Open = func(dir string) (*gitstore.Store, error) {
		st, err := gitstore.OpenDir(dir, gitstore.Options{})
		if err == nil && st.Crypt().NeedsSSH() {
			handOver = true
			return nil, errHandOver
		}
		return st, err
	}
	code := hooks.RunArgs(ctx, harnesses.All(), args, he)
	if !handOver {
		e.Stdout.Write(out.Bytes())
		e.Stderr.Write(errOut.Bytes())
		return code
	}
	prog, err := full()
	if err == nil {
		_, err = os.Stat(prog)
	}
	if err != nil {
		fmt.Fprintf(e.Stderr, "git-lossless-hook: the archive encrypts to an SSH key, which only git-lossless handles, and there is none beside this program (%v); nothing recorded (ignored)\n", err)
		return 0
	}
	cmd := exec.CommandContext(ctx, prog, append([]string{"hook"}, args...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(in), e.Stdout, e.Stderr
	// git-lossless's hook exits 0 whatever happens (its deny is on
	// stdout): anything else is a crash, reported and not passed on, so
	// that Claude Code is never blocked by it.
	if err := cmd.Run(); err != nil {
		fmt.Fprintf(e.Stderr, "git-lossless-hook: hand the hook to %s: %v (ignored)\n", prog, err)
	}
	return 0
}
