// Package cli is what git-lossless's command programs share:
// cmd/git-lossless (the product), cmd/git-lossless-bench (the demo and
// the benchmarks, which `git lossless bench` and `git lossless demo` run
// when it is installed beside it) and cmd/git-lossless-mcp (the MCP
// server, which `git lossless mcp` runs). It holds the command framework (the
// environment a command sees, a command, its errors and exit codes, the
// one way errors are printed) and the printers whose output both show:
// a recorded event, a seal report, a receipt and its verification.
//
// The split keeps the shipping program free of the benchmarks, the demo
// and their fixtures (internal/testkit, the peer scanner), and of the MCP
// SDK: layoutcheck holds cmd/git-lossless to that.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/git-lossless/git-lossless/gitstore"
)

// Exit codes, one meaning each (documented in `git lossless help`).
const (
	ExitOK     = 0
	ExitFailed = 1 // a check ran and failed
	ExitUsage  = 2 // a bad invocation
	ExitError  = 3 // the command could not run
)

// Env is everything a command touches of the outside world, so commands
// run in tests without a process of their own.
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Dir            string // working directory after -C
	Getenv         func(string) string
}

// Command is one subcommand: a flag set built fresh per run, and a run
// function over the parsed flags.
type Command struct {
	Name    string
	Summary string
	Usage   string // after "git lossless NAME "
	Long    string
	Flags   func(fs *pflag.FlagSet) func(ctx context.Context, e *Env, args []string) error
}

// UsageError is a bad invocation: exit 2.
type UsageError struct{ Msg string }

func (u UsageError) Error() string { return u.Msg }

// Usagef makes a UsageError.
func Usagef(format string, a ...any) error { return UsageError{fmt.Sprintf(format, a...)} }

// FailedError is a check that ran and failed: exit 1, its report already
// printed.
type FailedError struct{ Msg string }

func (f FailedError) Error() string { return f.Msg }

// HintError carries a hint line printed under the error.
type HintError struct {
	Err  error
	Hint string
}

func (h HintError) Error() string { return h.Err.Error() }
func (h HintError) Unwrap() error { return h.Err }

// WithHint adds a hint line to err.
func WithHint(err error, hint string) error { return HintError{err, hint} }

// Fail prints err the one way errors are printed (`git-lossless: error:
// ...`, then `git-lossless: hint: ...`) and returns the exit code.
func Fail(e *Env, err error) int {
	if err == nil {
		return ExitOK
	}
	var ue UsageError
	var fe FailedError
	code := ExitError
	switch {
	case errors.As(err, &ue):
		code = ExitUsage
	case errors.As(err, &fe):
		code = ExitFailed
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(e.Stderr, "git-lossless: interrupted")
		return 130
	}
	fmt.Fprintf(e.Stderr, "git-lossless: error: %s\n", err.Error())
	var he HintError
	if errors.As(err, &he) && he.Hint != "" {
		fmt.Fprintf(e.Stderr, "git-lossless: hint: %s\n", he.Hint)
	}
	return code
}

// OpenStore discovers and opens the archive for the command's directory,
// printing the fallback reason when a repository could not be used.
func OpenStore(e *Env) (*gitstore.Store, error) {
	st, err := gitstore.OpenDir(e.Dir, gitstore.Options{Warn: func(msg string) {
		fmt.Fprintf(e.Stderr, "git-lossless: warning: %s\n", msg)
	}})
	if err != nil {
		return nil, fmt.Errorf("open archive: %w", err)
	}
	return st, nil
}

// RunCommand parses args against c's flags (and -h/--help) and runs it.
func RunCommand(ctx context.Context, c *Command, e *Env, args []string) error {
	fs := pflag.NewFlagSet("git lossless "+c.Name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SortFlags = false
	runFn := c.Flags(fs)
	help := fs.BoolP("help", "h", false, "show this help")
	if err := fs.Parse(args); err != nil {
		return Usagef("%v (see `git lossless %s --help`)", err, c.Name)
	}
	if *help {
		PrintCommandHelp(e.Stdout, c, fs)
		return nil
	}
	return runFn(ctx, e, fs.Args())
}

// PrintCommandHelp prints one command's help: usage, summary, the long
// text and the flags.
func PrintCommandHelp(w io.Writer, c *Command, fs *pflag.FlagSet) {
	fmt.Fprintf(w, "usage: git lossless %s %s\n\n%s\n", c.Name, c.Usage, c.Summary)
	if c.Long != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(c.Long))
	}
	fmt.Fprintf(w, "\nflags:\n%s", fs.FlagUsages())
}
