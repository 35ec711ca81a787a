// Command git-lossless-mcp is git-lossless's MCP server in a program of
// its own: `git-lossless-mcp mcp [FLAGS]` does what `git lossless mcp
// [FLAGS]` does (see `git lossless help mcp`), serving the archive to an
// agent as MCP tools over standard input and output.
//
// Why a program of its own: the server is built on the MCP SDK
// (github.com/modelcontextprotocol/go-sdk), which links JSON schema
// validation, encoding/gob, OAuth and net/http, and whose package
// initialisation cost every git-lossless process about 2 ms before main
// ran, whatever the command. git-lossless links none of it
// (internal/layoutcheck holds it to that): its `mcp` command runs this
// program, found beside it first, then on PATH, as git runs
// git-<command>. `git lossless install HARNESS` writes this program into
// the harness's MCP config when it sits beside git-lossless (as `go
// install ./cmd/...` puts it), so the harness starts the server with no
// git-lossless process in between; `git-lossless mcp` otherwise.
//
//	git-lossless-mcp [-C DIR] mcp [--harness NAME] [--identity FILE] [--no-mask]
//	git-lossless-mcp --version | --help
//
// --version prints the line git-lossless prints (the doctor and install
// compare it). Exit codes are git-lossless's (internal/cli).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/git-lossless/git-lossless/internal/cli"
	lversion "github.com/git-lossless/git-lossless/internal/version"
)

type (
	env     = cli.Env
	command = cli.Command
)

// version is the program's version, git-lossless's (internal/version).
var version = lversion.Version

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], &env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv})
	stop()
	os.Exit(code)
}

// run parses -C, --version and --help as git-lossless does, then runs
// the one command, mcp.
func run(ctx context.Context, args []string, e *env) int {
	for len(args) > 0 {
		rest, took, err := cli.TakeDirFlag(e, args)
		if err != nil {
			return cli.Fail(e, err)
		}
		if took {
			args = rest
			continue
		}
		switch a := args[0]; {
		case a == "--version" || a == "version":
			fmt.Fprintf(e.Stdout, "git-lossless version %s\n", version)
			return cli.ExitOK
		case a == "-h" || a == "--help" || a == "help":
			printHelp(e)
			return cli.ExitOK
		}
		break // the command
	}
	if len(args) == 0 {
		printHelp(&env{Stdout: e.Stderr})
		return cli.ExitUsage
	}
	if args[0] != "mcp" {
		return cli.Fail(e, cli.Usagef("%q is not a git-lossless-mcp command: it runs `git-lossless-mcp mcp [FLAGS]` (see `git lossless mcp --help`)", args[0]))
	}
	if err := cli.EnterDir(e); err != nil {
		return cli.Fail(e, err)
	}
	return cli.Fail(e, cli.RunCommand(ctx, mcpCmd(), e, args[1:]))
}

func printHelp(e *env) {
	fmt.Fprintf(e.Stdout, "git-lossless-mcp %s: git-lossless's MCP server (`git lossless mcp`).\n\nusage: git-lossless-mcp [-C DIR] mcp [FLAGS]\n       git-lossless-mcp --version\n\n`git-lossless-mcp mcp --help` describes the server and its flags.\n", version)
}
