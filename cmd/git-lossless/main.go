// Command git-lossless is a flight recorder for AI coding agents, stored
// inside git itself. Installed on PATH it runs as `git lossless ...`.
//
// Exit codes (one place, documented in `git lossless help`):
//
//	0  success
//	1  a check failed: verify found a break, some inputs were refused
//	2  usage error: unknown command or flag, missing argument
//	3  the command could not run: repository, I/O or internal error
//
// Errors are printed as `git-lossless: error: ...`, one line, lower case,
// followed by `git-lossless: hint: ...` where there is something to do.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/git-lossless/git-lossless/gitstore"
	_ "github.com/git-lossless/git-lossless/gitstore/sshkeys" // SSH recipients and identities (not in git-lossless-hook)
	lversion "github.com/git-lossless/git-lossless/internal/version"
)

// version is the program's version; release builds set it through
// internal/version (its doc gives the -ldflags line).
var version = lversion.Version

const (
	exitOK     = 0
	exitFailed = 1
	exitUsage  = 2
	exitError  = 3
)

// env is everything a command touches of the outside world, so commands
// run in tests without a process of their own.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	dir            string // working directory after -C
	getenv         func(string) string
}

// command is one subcommand: a flag set built fresh per run, and a run
// function over the parsed flags.
type command struct {
	name    string
	summary string
	usage   string // after "git lossless NAME "
	long    string
	flags   func(fs *pflag.FlagSet) func(ctx context.Context, e *env, args []string) error
}

// usageError is a bad invocation: exit 2.
type usageError struct{ msg string }

func (u usageError) Error() string { return u.msg }

func usagef(format string, a ...any) error { return usageError{fmt.Sprintf(format, a...)} }

// failedError is a check that ran and failed: exit 1, its report already
// printed.
type failedError struct{ msg string }

func (f failedError) Error() string { return f.msg }

// hintError carries a hint line printed under the error.
type hintError struct {
	err  error
	hint string
}

func (h hintError) Error() string { return h.err.Error() }
func (h hintError) Unwrap() error { return h.err }

func withHint(err error, hint string) error { return hintError{err, hint} }

func commands() []*command {
	cs := []*command{
		recordCmd(), logCmd(), importCmd(), catCmd(), verifyCmd(), headsCmd(), locksCmd(), reindexCmd(),
		demoCmd(), benchCmd(), pruneCmd(), hookCmd(), restoreCmd(), sweepCmd(),
		installCmd(), uninstallCmd(), doctorCmd(), receiptCmd(), keyCmd(),
		proxyCmd(), statuslineCmd(), savingsCmd(), spanCmd(), redactCmd(), pushCmd(), anchorCmd(), syncCmd(), mcpCmd(), recallCmd(),
		meterCmd(), packCmd(), whoCmd(), blameCmd(), traceCmd(), statsCmd(), handoffCmd(),
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].name < cs[j].name })
	return cs
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], &env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv})
	stop()
	os.Exit(code)
}

// run parses global flags, dispatches, and maps errors to exit codes.
func run(ctx context.Context, args []string, e *env) int {
	if rest, ok := hookInvocation(args); ok {
		return runHook(ctx, e, rest) // always 0: see hooks.go
	}
	// Global flags come before the command, as with git.
	for len(args) > 0 {
		a := args[0]
		switch {
		case a == "-C":
			if len(args) < 2 {
				return fail(e, usagef("-C needs a directory"))
			}
			e.dir = joinDir(e.dir, args[1])
			args = args[2:]
		case strings.HasPrefix(a, "-C") && len(a) > 2:
			e.dir = joinDir(e.dir, a[2:])
			args = args[1:]
		case a == "--version" || a == "version":
			fmt.Fprintf(e.stdout, "git-lossless version %s\n", version)
			return exitOK
		case a == "-h" || a == "--help":
			printHelp(e.stdout)
			return exitOK
		case strings.HasPrefix(a, "-"):
			return fail(e, usagef("unknown global flag %s (see `git lossless help`)", a))
		default:
			goto dispatch
		}
	}
dispatch:
	if len(args) == 0 {
		printHelp(e.stderr)
		return exitUsage
	}
	if e.dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return fail(e, err)
		}
		e.dir = wd
	} else if st, err := os.Stat(e.dir); err != nil {
		return fail(e, usagef("cannot change to %s: %v", e.dir, errors.Unwrap(err)))
	} else if !st.IsDir() {
		return fail(e, usagef("cannot change to %s: not a directory", e.dir))
	}
	name, rest := args[0], args[1:]
	if name == "help" {
		switch {
		case len(rest) == 0:
			printHelp(e.stdout)
			return exitOK
		case rest[0] == "environment" || rest[0] == "env":
			printEnvironment(e.stdout)
			return exitOK
		}
		name, rest = rest[0], []string{"--help"}
	}
	for _, c := range commands() {
		if c.name == name {
			return fail(e, runCommand(ctx, c, e, rest))
		}
	}
	return fail(e, usagef("%q is not a git-lossless command (see `git lossless help`)", name))
}

func joinDir(base, d string) string {
	if base == "" || filepath.IsAbs(d) {
		return d
	}
	return filepath.Join(base, d)
}

func runCommand(ctx context.Context, c *command, e *env, args []string) error {
	fs := pflag.NewFlagSet("git lossless "+c.name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SortFlags = false
	runFn := c.flags(fs)
	help := fs.BoolP("help", "h", false, "show this help")
	if err := fs.Parse(args); err != nil {
		return usagef("%v (see `git lossless %s --help`)", err, c.name)
	}
	if *help {
		printCommandHelp(e.stdout, c, fs)
		return nil
	}
	return runFn(ctx, e, fs.Args())
}

// fail prints err the one way errors are printed and returns the exit code.
func fail(e *env, err error) int {
	if err == nil {
		return exitOK
	}
	var ue usageError
	var fe failedError
	code := exitError
	switch {
	case errors.As(err, &ue):
		code = exitUsage
	case errors.As(err, &fe):
		code = exitFailed
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(e.stderr, "git-lossless: interrupted")
		return 130
	}
	fmt.Fprintf(e.stderr, "git-lossless: error: %s\n", err.Error())
	var he hintError
	if errors.As(err, &he) && he.hint != "" {
		fmt.Fprintf(e.stderr, "git-lossless: hint: %s\n", he.hint)
	}
	return code
}

// helpTagline is what git-lossless is, in one line (help's first line,
// the man page's NAME).
const helpTagline = "a flight recorder for AI coding agents, stored in git"

// helpIntro is the overview paragraph of `help` and of the man page;
// archive names the embedded archive.
func helpIntro(archive string) string {
	return `Every file version and conversation span an agent was shown is archived in
the repository's own object store: contents as git blobs, events as commits
on refs/lossless/<writer>, each writer's log sealed in a SHA-256 chain.
Outside any repository the archive is ` + archive + "."
}

// helpDef is one entry of help's global flags, exit codes, environment
// and git config lists; desc may hold line breaks.
type helpDef struct{ term, desc string }

var (
	helpGlobalFlags = []helpDef{
		{"-C DIR", "run as if started in DIR (like git -C)"},
		{"--version", "print the version"},
		{"-h, --help", "this help; `git lossless help COMMAND` or `COMMAND --help` for one command"},
	}
	helpExitCodes = []helpDef{
		{"0", "success"},
		{"1", "a check failed (verify found a break, some inputs were refused)"},
		{"2", "usage error"},
		{"3", "the command could not run (repository, I/O or internal error)"},
	}
)

// printDefs prints defs as help's two columns, the terms padded to width.
func printDefs(w io.Writer, defs []helpDef, width int) {
	for _, d := range defs {
		desc := strings.ReplaceAll(d.desc, "\n", "\n  "+strings.Repeat(" ", width+1))
		fmt.Fprintf(w, "  %-*s %s\n", width, d.term, desc)
	}
}

func printHelp(w io.Writer) {
	fmt.Fprintf(w, "git-lossless %s: %s.\n\n%s\n\nusage: git lossless [-C DIR] [--version] COMMAND [ARGS]\n\ncommands:\n",
		version, helpTagline, helpIntro(embeddedHint()))
	byName := map[string]*command{}
	width := 0
	for _, c := range commands() {
		byName[c.name] = c
		width = max(width, len(c.name))
	}
	for i, g := range commandGroups {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "  %s:\n", g.title)
		for _, n := range g.names {
			fmt.Fprintf(w, "    %-*s  %s\n", width, n, byName[n].summary)
		}
	}
	fmt.Fprint(w, "\nglobal flags:\n")
	printDefs(w, helpGlobalFlags, 10)
	fmt.Fprint(w, "\nexit codes:\n")
	printDefs(w, helpExitCodes, 2)
	fmt.Fprint(w, "\nenvironment and git config: `git lossless help environment` lists every one.\n")
}

// commandGroups orders help's command list by what a user is doing;
// TestHelpGroupsEveryCommand holds every command to exactly one group.
var commandGroups = []struct {
	title string
	names []string
}{
	{"record and inspect", []string{"record", "log", "cat", "who", "blame", "stats", "trace", "span"}},
	{"agents (hooks, restore, hand-off)", []string{"install", "uninstall", "doctor", "hook", "sweep", "import", "restore", "handoff", "mcp"}},
	{"share and anchor", []string{"push", "sync", "anchor", "verify", "heads"}},
	{"recall and metering", []string{"recall", "meter", "pack"}},
	{"proxy", []string{"proxy", "statusline", "savings"}},
	{"receipts", []string{"receipt", "key"}},
	{"maintenance", []string{"prune", "redact", "locks", "reindex"}},
	{"measure", []string{"bench", "demo"}},
}

func embeddedHint() string {
	if d, err := gitstore.EmbeddedDir(); err == nil {
		return d
	}
	return "$XDG_DATA_HOME/git-lossless/archive.git"
}

func printCommandHelp(w io.Writer, c *command, fs *pflag.FlagSet) {
	fmt.Fprintf(w, "usage: git lossless %s %s\n\n%s\n", c.name, c.usage, c.summary)
	if c.long != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(c.long))
	}
	fmt.Fprintf(w, "\nflags:\n%s", fs.FlagUsages())
}

// openStore discovers and opens the archive for the command's directory,
// printing the fallback reason when a repository could not be used.
func openStore(e *env) (*gitstore.Store, error) {
	st, err := gitstore.OpenDir(e.dir, gitstore.Options{Warn: func(msg string) {
		fmt.Fprintf(e.stderr, "git-lossless: warning: %s\n", msg)
	}})
	if err != nil {
		return nil, fmt.Errorf("open archive: %w", err)
	}
	return st, nil
}
