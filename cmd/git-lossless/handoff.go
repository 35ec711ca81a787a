package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/git-lossless/git-lossless/internal/cli"

	"github.com/spf13/pflag"

	"github.com/git-lossless/git-lossless/hooks/harnesses"
	"github.com/git-lossless/git-lossless/recall"
)

func handoffCmd() *command {
	return &command{
		Name:    "handoff",
		Summary: "what a new session or another agent needs to pick a session's work up, from the archive alone",
		Usage:   "[--session S] [--decisions N] [--json] [--identity FILE]",
		Long: `A hand-off of one session (default: the session of the newest span or file
version in the archive, whatever its harness; proxy sessions included),
made from what the archive already holds: nothing is recorded for it.

  goal             the first user prompt of the session's main context, and
                   the latest when it is another. Prompts that are harness
                   markup are skipped (text starting with a tag such as
                   <command-name> or <task-notification>, "[Request
                   interrupted", "Caveat:"); with no prompt in the main
                   context, its subagents'. Of a proxy session: the first
                   and last user messages the proxy folded (it archives
                   only what it folds). Also the first words of the latest
                   compaction summary.
  pinned facts     user sentences holding a keep phrase ("remember this",
                   "keep in mind", "don't forget", "make a note", "pin
                   this", "must keep"...), the "## Must Keep" bullets of
                   compaction summaries and the proxy's pins; each once, the
                   newest 20.
  latest decisions the first two sentences (300 characters at most) of the
                   main context's last N assistant texts (--decisions, 3).
                   A heuristic: the model's last statements are usually its
                   decisions and conclusions, but nothing marks them so.
  files            edited: every path with an edit or write in the session
                   (any context), by its last one: its blob and whether
                   those bytes are on disk now (current, changed, gone,
                   excluded: deny-listed, unknown: no content archived);
                   read only: the other paths, by their last read.
  errors open      a tool result marked is_error, unless a later result in
                   the session (any context), not an error, answers a call
                   of the same tool on the same target: the call's file
                   (its path), else its command, else its input. Repeated
                   failures on one target are one line, counted. Results
                   the proxy folded count when their format marks errors
                   (Anthropic's is_error; OpenAI's carry no mark).
  the rest         the session's span groups (as recall digests lists them:
                   from the start, after each compaction, each proxy span)
                   by their first span, and each writer's span id range:
                   git lossless recall open ID reads any of them.

Every text is masked (key-shaped values: first 3 + **** + last 4), and
archived text is printed one line each under a line that says it is data.
Encrypted spans are counted as locked, and a goal or decision that is one
is shown by its id only, unless an identity opens them (--identity FILE,
LOSSLESS_AGE_IDENTITY, git config lossless.identity). --json prints one
document: {session, harness, proxy, first, last, spans, locked, goal,
latest_request, summary, pinned_facts, latest_decisions, files_edited,
files_read, errors_open, rest, span_ranges}. A session the archive holds
nothing of is an error (exit 3).`,
		Flags: func(fs *pflag.FlagSet) func(context.Context, *env, []string) error {
			asJSON := fs.Bool("json", false, "one JSON document")
			session := fs.String("session", "", "the session (default: the newest in the archive)")
			decisions := fs.Int("decisions", 3, "assistant statements to report")
			identity := fs.String("identity", "", "age identity file or unencrypted SSH private key, to open encrypted spans")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) > 0 {
					return cli.Usagef("usage: git lossless handoff [--session S] [--json]")
				}
				if *decisions < 1 {
					return cli.Usagef("--decisions: want 1 or more, not %d", *decisions)
				}
				st, err := cli.OpenStore(e)
				if err != nil {
					return err
				}
				ids, err := st.Crypt().LoadIdentities(ctx, *identity, e.Getenv)
				if err != nil {
					return err
				}
				warn := func(msg string) { fmt.Fprintf(e.Stderr, "git-lossless: warning: %s\n", msg) }
				idx, err := recall.Open(ctx, st, recall.Options{Identities: ids, Warn: warn, HarnessOf: harnesses.WriterHarness()})
				if err != nil {
					return err
				}
				defer idx.Close()
				h, err := idx.Handoff(ctx, recall.HandoffQuery{Session: *session, Decisions: *decisions})
				if errors.Is(err, recall.ErrNoSession) {
					return cli.WithHint(err, "`git lossless recall digests` lists the archived sessions")
				}
				if err != nil {
					return err
				}
				if *asJSON {
					return printJSON(e.Stdout, h)
				}
				return h.WriteText(e.Stdout)
			}
		},
	}
}
