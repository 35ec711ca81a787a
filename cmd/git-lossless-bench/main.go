// Command git-lossless-bench holds git-lossless's demo and benchmarks, so
// that the program users run every day (cmd/git-lossless) holds only the
// product: the fixtures they generate, the stub model backends and the
// peer scanner they measure against are linked here, never there
// (internal/layoutcheck). `git lossless demo` and `git lossless bench`
// run this program when it is installed beside git-lossless or on PATH;
// from a clone, `go run ./cmd/git-lossless-bench demo` runs the demo
// directly.
//
//	git-lossless-bench demo [--keep] | demo proxy
//	git-lossless-bench bench [store|hooks|proxy|receipt|anchor|recall|...] [flags]
//
// Exit codes are git-lossless's (internal/cli).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"github.com/git-lossless/git-lossless/internal/cli"
	lversion "github.com/git-lossless/git-lossless/internal/version"
)

type (
	env     = cli.Env
	command = cli.Command
)

const (
	exitOK     = cli.ExitOK
	exitFailed = cli.ExitFailed
	exitUsage  = cli.ExitUsage
	exitError  = cli.ExitError
)

func commands() []*command {
	cs := []*command{benchCmd(), demoCmd()}
	sort.Slice(cs, func(i, j int) bool { return cs[i].Name < cs[j].Name })
	return cs
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], &env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv})
	stop()
	os.Exit(code)
}

// run dispatches `bench ...` or `demo ...`.
func run(ctx context.Context, args []string, e *env) int {
	if err := cli.EnterDir(e); err != nil {
		return cli.Fail(e, err)
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		w := e.Stdout
		if len(args) == 0 {
			w = e.Stderr
		}
		fmt.Fprintf(w, "git-lossless-bench %s: git-lossless's demo and benchmarks (`git lossless demo`, `git lossless bench`).\n\nusage: git-lossless-bench COMMAND [ARGS]\n\ncommands:\n", lversion.Version)
		for _, c := range commands() {
			fmt.Fprintf(w, "  %-6s %s\n", c.Name, c.Summary)
		}
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	if args[0] == "--version" {
		fmt.Fprintf(e.Stdout, "git-lossless-bench version %s\n", lversion.Version)
		return exitOK
	}
	for _, c := range commands() {
		if c.Name == args[0] {
			return cli.Fail(e, cli.RunCommand(ctx, c, e, args[1:]))
		}
	}
	return cli.Fail(e, cli.Usagef("%q is not a git-lossless-bench command (%s)", args[0], strings.Join([]string{"bench", "demo"}, ", ")))
}
