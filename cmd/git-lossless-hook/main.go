// Command git-lossless-hook is the Claude Code hook entry point of
// git-lossless in a program of its own: `git-lossless-hook hook EVENT`
// does exactly what `git-lossless hook EVENT` does (see `git lossless help
// hook`), reading the hook's JSON on stdin and always exiting 0 except
// when the edit guard denies.
//
// Why a second program: Claude Code starts a fresh process for every tool
// call it hooks, so the hook's start-up cost is paid on every Read and
// Edit. git-lossless links the proxy, the MCP server, OpenPGP receipts,
// the tokenizer and recall, whose package initialisation and page faults
// cost a process several milliseconds before main runs; this program
// links only the hook path (hooks, gitstore, guard, seal and the object
// layer). `git lossless install claude-code` writes this program into the
// settings when it sits beside git-lossless (as `go install ./cmd/...`
// puts it), and git-lossless itself otherwise. Built with CGO_ENABLED=0
// it is also statically linked, which spares the dynamic loader.
//
// It accepts the same command line as git-lossless's hook command, global
// flags included, plus --version (the same line git-lossless prints, which
// the doctor compares) and --help.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/git-lossless/git-lossless/hooks"
	"github.com/git-lossless/git-lossless/internal/version"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], hooks.Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv})
	stop()
	os.Exit(code)
}

const usage = `usage: git-lossless-hook hook EVENT

EVENT is one of session-start, pre-tool-use, post-tool-use, pre-compact,
subagent-stop, session-end (Claude Code's names, PreToolUse and so on, are
accepted too). The hook's JSON is read on stdin. This is the hook entry
point of git-lossless in a small program of its own, for a faster start;
see ` + "`git lossless help hook`" + ` for what each event does.
`

func run(ctx context.Context, args []string, e hooks.Env) int {
	if rest, ok := hooks.Invocation(args); ok {
		return hooks.RunArgs(ctx, rest, e)
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
	// Claude Code is never blocked by our own mistake.
	fmt.Fprintf(e.Stderr, "git-lossless-hook: not a hook command line: %q (ignored; %s)\n", args, "usage: git-lossless-hook hook EVENT")
	return 0
}
