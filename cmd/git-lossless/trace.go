package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"github.com/git-lossless/git-lossless/internal/cli"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/git-lossless/git-lossless/blame"
	"github.com/git-lossless/git-lossless/blame/agenttrace"
	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/hooks/harnesses"
)

func traceCmd() *command {
	return &command{
		Name:    "trace",
		Summary: "export line provenance as Agent Trace records (agent-trace.dev, v0.1.0)",
		Usage:   "export [REV-RANGE] [-o FILE] [--unrecorded human|unknown]",
		Long: `trace export writes one Agent Trace record (specification 0.1.0,
https://github.com/cursor/agent-trace) per commit of REV-RANGE, as git
rev-list --reverse --no-merges REV-RANGE lists them (default HEAD: every
commit HEAD reaches; main..HEAD or HEAD~10..HEAD limit it; merge commits
are left out), one JSON object per line, to FILE (written whole, mode
0600) or stdout. The records say, for the lines
each commit added relative to its first parent, which archived agent write
produced them (found by content: it survives amend, rebase and squash
merges) or that none did. The line numbers are the commit's, so git blame finds the record
of any line.

  version      0.1.0
  id           a version 5 UUID of the commit and the record's content
               without tool (the same on every run and across versions;
               new when the attribution changes)
  timestamp    the committer time
  vcs          git and the full commit id
  tool         git-lossless and its version (the harness is per line, in
               metadata)
  files        the files the commit added lines to; ranges of consecutive
               lines of one write, or of no write, each with content_hash
               sha256: and the SHA-256 of its lines
  conversation one per agent context: url git-lossless:session/SESSION
               (/agent/AGENT for a subagent, related to its session),
               contributor ai with the model as provider/model
  unrecorded   lines no archived write produced: contributor human, or
               unknown with --unrecorded unknown (history recorded before
               the hooks were installed)
  metadata     "com.github.git-lossless": the first parent; per changed
               file its old path, binary flag, added, removed and rewritten
               counts, and per agent range the write (harness, writer, seq,
               session, agent, model as archived, op, tool, call id, time,
               blob, its line in the blob)

docs/agent-trace.md has the mapping and what the format cannot carry.`,
		Flags: func(fs *pflag.FlagSet) func(context.Context, *env, []string) error {
			output := fs.StringP("output", "o", "", "write the records to FILE (mode 0600) instead of stdout")
			unrecorded := fs.String("unrecorded", agenttrace.Human, "contributor type of lines no archived agent write produced: human or unknown")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) == 0 || args[0] != "export" {
					return cli.Usagef("usage: git lossless trace export [REV-RANGE] [-o FILE]")
				}
				args = args[1:]
				if len(args) > 1 {
					return cli.Usagef("trace export takes one revision range, got %d arguments", len(args))
				}
				if *unrecorded != agenttrace.Human && *unrecorded != agenttrace.Unknown {
					return cli.Usagef("--unrecorded is human or unknown, not %q", *unrecorded)
				}
				revRange := "HEAD"
				if len(args) == 1 {
					revRange = args[0]
				}
				return runTraceExport(ctx, e, revRange, *output, agenttrace.EncodeOptions{ToolVersion: version, Unrecorded: *unrecorded})
			}
		},
	}
}

// commitChanges finds the attributed changes of a range's commits; tests
// replace it to feed hand-made changes.
var commitChanges = func(ctx context.Context, st *gitstore.Store, revRange string) ([]blame.CommitChange, error) {
	return blame.Commits(ctx, st, revRange, blame.Options{HarnessOf: harnesses.WriterHarness()})
}

func runTraceExport(ctx context.Context, e *env, revRange, output string, opt agenttrace.EncodeOptions) error {
	st, err := openRepoStore(e)
	if err != nil {
		return err
	}
	changes, err := commitChanges(ctx, st, revRange)
	if err != nil {
		return fmt.Errorf("trace export %s: %w", revRange, err)
	}
	if output == "" {
		bw := bufio.NewWriter(e.Stdout)
		if err := agenttrace.Encode(bw, changes, opt); err != nil {
			return err
		}
		return bw.Flush()
	}
	if !filepath.IsAbs(output) {
		output = filepath.Join(e.Dir, output)
	}
	// Whole or not at all: an error midway leaves no half export.
	var buf bytes.Buffer
	if err := agenttrace.Encode(&buf, changes, opt); err != nil {
		return err
	}
	if err := writeFileAtomic(output, buf.Bytes()); err != nil {
		return fmt.Errorf("write %s: %w", output, err)
	}
	return nil
}
