package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/git-lossless/git-lossless/hooks"
	"github.com/git-lossless/git-lossless/hooks/harnesses"
	"github.com/git-lossless/git-lossless/internal/cli"
	"github.com/git-lossless/git-lossless/mcp"
)

// mcpCmd is the server's command: `git lossless mcp` runs it through
// this program, so its help is the command's help.
func mcpCmd() *command {
	return &command{
		Name:    "mcp",
		Summary: "serve the archive to an agent as MCP tools (stdio)",
		Usage:   "[--harness NAME] [--identity FILE] [--no-mask]",
		Long: `Runs git-lossless's MCP server on standard input and output (the stdio
transport), for the repository it is started in (-C DIR; the embedded
archive outside any repository). Tools: search, read_span, digests,
read_file, restore_context, file_history, seal_status, context_status,
receipt, who (which contexts of any harness hold each file's current or a
stale version, and its last writer; not counted as seeing it). read_file and restore_context record what they return as seen by
the caller's session of the harness --harness names (default claude-code,
whose registration names none), so the edit guard lets the model edit it
afterwards; every other tool only reads.

Archived text is returned between marker lines as data, not instructions;
key-shaped values in it are masked (first 3 + **** + last 4) unless
--no-mask. Encrypted spans open with --identity FILE, LOSSLESS_AGE_IDENTITY
or git config lossless.identity, in memory only.

git lossless install claude-code registers this server with Claude Code
(as "git-lossless", the way claude mcp add stores it); git lossless doctor
checks that it starts and lists its tools. Logs go to standard error.

The server is the program git-lossless-mcp (git lossless mcp runs it,
found beside git-lossless or on PATH); install registers it directly when
it sits beside git-lossless.

A malformed or oversized frame (one line of standard input, at most 1 MiB)
gets the JSON-RPC error the specification names and the next one is
served; read_file refuses the git directory and anything outside the work
tree. The server exits, with status 0, when standard input ends (after
answering the calls in flight), or when standard output fails.`,
		Flags: func(fs *pflag.FlagSet) func(context.Context, *env, []string) error {
			identity := fs.String("identity", "", "age identity file or unencrypted SSH private key, to open encrypted spans")
			noMask := fs.Bool("no-mask", false, "print secrets in archived text as they are archived")
			harness := fs.String("harness", "", "the agent harness whose sessions the tools serve: "+harnessList()+" (default: the first)")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) > 0 {
					return cli.Usagef("mcp takes no arguments")
				}
				st, err := cli.OpenStore(e)
				if err != nil {
					return err
				}
				ids, err := st.Crypt().LoadIdentities(ctx, *identity, e.Getenv)
				if err != nil {
					return err
				}
				h, err := harnessFlag(*harness)
				if err != nil {
					return err
				}
				srv := mcp.New(mcp.Config{Store: st, Identities: ids, NoMask: *noMask, Harness: h, HarnessOf: harnesses.WriterHarness(), Getenv: e.Getenv, Version: version,
					Warn: func(msg string) { fmt.Fprintf(e.Stderr, "git-lossless: warning: %s\n", msg) }})
				err = srv.Run(ctx)
				if errors.Is(err, context.Canceled) {
					return nil
				}
				return err
			}
		},
	}
}

// harnessList names the harnesses for the help text: "claude-code, ...".
func harnessList() string { return strings.Join(harnesses.Names(), ", ") }

// harnessFlag finds the harness a --harness flag names ("" = the
// default; harnesses.Flag), an unknown one a usage error.
func harnessFlag(name string) (hooks.Harness, error) {
	h, err := harnesses.Flag(name)
	if err != nil {
		return nil, cli.Usagef("%v", err)
	}
	return h, nil
}
