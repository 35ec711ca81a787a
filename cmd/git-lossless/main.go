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
	"github.com/git-lossless/git-lossless/internal/cli"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"github.com/git-lossless/git-lossless/gitstore"
	_ "github.com/git-lossless/git-lossless/gitstore/sshkeys" // SSH recipients and identities (not in git-lossless-hook)
	lversion "github.com/git-lossless/git-lossless/internal/version"
)

// version is the program's version; release builds set it through
// internal/version (its doc gives the -ldflags line).
var version = lversion.Version

const (
	exitOK     = cli.ExitOK
	exitFailed = cli.ExitFailed
	exitUsage  = cli.ExitUsage
	exitError  = cli.ExitError
)

// env and command are the shared framework's (internal/cli): the
// benchmarks and the demo, in cmd/git-lossless-bench, use the same.
type (
	env     = cli.Env
	command = cli.Command
)

func commands() []*command {
	cs := []*command{
		recordCmd(), logCmd(), importCmd(), catCmd(), verifyCmd(), headsCmd(), locksCmd(), reindexCmd(),
		externalCmd("demo"), externalCmd("bench"), pruneCmd(), hookCmd(), restoreCmd(), sweepCmd(),
		installCmd(), uninstallCmd(), doctorCmd(), receiptCmd(), keyCmd(),
		proxyCmd(), statuslineCmd(), savingsCmd(), spanCmd(), redactCmd(), pushCmd(), anchorCmd(), syncCmd(), externalCmd("mcp"), recallCmd(),
		meterCmd(), packCmd(), whoCmd(), blameCmd(), traceCmd(), statsCmd(), handoffCmd(),
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].Name < cs[j].Name })
	return cs
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], &env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv})
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
		rest, took, err := cli.TakeDirFlag(e, args)
		if err != nil {
			return cli.Fail(e, err)
		}
		if took {
			args = rest
			continue
		}
		a := args[0]
		switch {
		case a == "--version" || a == "version":
			fmt.Fprintf(e.Stdout, "git-lossless version %s\n", version)
			return exitOK
		case a == "-h" || a == "--help":
			printHelp(e.Stdout)
			return exitOK
		case strings.HasPrefix(a, "-"):
			return cli.Fail(e, cli.Usagef("unknown global flag %s (see `git lossless help`)", a))
		default:
			goto dispatch
		}
	}
dispatch:
	if len(args) == 0 {
		printHelp(e.Stderr)
		return exitUsage
	}
	if err := cli.EnterDir(e); err != nil {
		return cli.Fail(e, err)
	}
	name, rest := args[0], args[1:]
	if name == "help" {
		switch {
		case len(rest) == 0:
			printHelp(e.Stdout)
			return exitOK
		case rest[0] == "environment" || rest[0] == "env":
			printEnvironment(e.Stdout)
			return exitOK
		}
		name, rest = rest[0], []string{"--help"}
	}
	if _, ok := externals[name]; ok {
		// The program parses its own flags and prints its own errors;
		// its exit code is ours.
		err := runExternal(ctx, e, name, rest)
		var xc exitCode
		if errors.As(err, &xc) {
			return xc.code
		}
		return cli.Fail(e, err)
	}
	for _, c := range commands() {
		if c.Name == name {
			return cli.Fail(e, cli.RunCommand(ctx, c, e, rest))
		}
	}
	return cli.Fail(e, cli.Usagef("%q is not a git-lossless command (see `git lossless help`)", name))
}

// joinDir is d relative to the command's directory base (cli.JoinDir).
func joinDir(base, d string) string { return cli.JoinDir(base, d) }

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
		byName[c.Name] = c
		width = max(width, len(c.Name))
	}
	for i, g := range commandGroups {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "  %s:\n", g.title)
		for _, n := range g.names {
			fmt.Fprintf(w, "    %-*s  %s\n", width, n, byName[n].Summary)
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
