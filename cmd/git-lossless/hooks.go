package main

import (
	"context"
	"fmt"
	"github.com/git-lossless/git-lossless/internal/cli"
	"strings"

	"github.com/spf13/pflag"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/hooks"
	"github.com/git-lossless/git-lossless/hooks/harnesses"
)

func hookCmd() *command {
	return &command{
		Name:    "hook",
		Summary: "an agent harness's hook entry point (reads the hook JSON on stdin)",
		Usage:   "[HARNESS] session-start|pre-tool-use|post-tool-use|pre-compact|subagent-stop|session-end",
		Long: `Installed into an agent harness's hook settings by ` + "`git lossless install HARNESS`" + `;
HARNESS (` + harnessList() + `) names whose payload is on stdin, and
without it the hook is Claude Code's (` + "`git lossless install claude-code`" + ` writes
none, so settings of every version keep working).
post-tool-use archives what each Read, Write and Edit put into the context;
pre-tool-use is the edit guard (denies edits of files the context has not
seen in their current version; LOSSLESS_GUARD=off disables it);
session-start (compact, resume) prints the working set back; pre-compact,
subagent-stop and session-end sweep the transcripts into the archive.
A hook never blocks its harness because of its own failure: errors, bad
flags and a bad -C included, are one line on stderr and exit 0. The
harness's own event names (Claude Code's PreToolUse, ...) are accepted
too.`,
		Flags: func(fs *pflag.FlagSet) func(context.Context, *env, []string) error {
			return func(ctx context.Context, e *env, args []string) error {
				runHook(ctx, e, args)
				return nil
			}
		},
	}
}

// hookInvocation is hooks.Invocation: the command line shape both
// programs share.
func hookInvocation(args []string) ([]string, bool) { return hooks.Invocation(args) }

// runHook runs `hook [HARNESS] EVENT` (hooks.RunArgs); it always exits 0.
func runHook(ctx context.Context, e *env, args []string) int {
	return hooks.RunArgs(ctx, harnesses.All(), args, hooks.Env{Stdin: e.Stdin, Stdout: e.Stdout, Stderr: e.Stderr, Getenv: e.Getenv})
}

// harnessList names the harnesses for help texts: "claude-code, ...".
func harnessList() string { return strings.Join(harnesses.Names(), ", ") }

// checkHarnessFilter checks a --harness filter of log, recall, meter
// and pack: "" (every harness) or a harness's name.
func checkHarnessFilter(name string) error {
	if name == "" {
		return nil
	}
	if _, ok := harnesses.ByName(name); !ok {
		return cli.Usagef("--harness %q: the harnesses are %s", name, harnessList())
	}
	return nil
}

// harnessFlag finds the harness a --harness flag names ("" = the
// default; harnesses.Flag), an unknown one a usage error.
func harnessFlag(name string) (hooks.Harness, error) {
	h, err := harnesses.Flag(name)
	if err != nil {
		return nil, cli.Usagef("%v", err)
	}
	return h, nil
}

// sessionHarness is the harness of a session: the one --harness names,
// else the one whose writer of the session exists (the first of them),
// else the default.
func sessionHarness(ctx context.Context, st *gitstore.Store, name, session string) (hooks.Harness, error) {
	if name != "" || session == "" {
		return harnessFlag(name)
	}
	for _, h := range harnesses.All() {
		if w, err := st.WriterHead(ctx, hooks.Writer(h, session)); err == nil && w.Commit != "" {
			return h, nil
		}
	}
	return harnesses.Default(), nil
}

func restoreCmd() *command {
	return &command{
		Name:    "restore",
		Summary: "print a context's working set (current content) back for the model",
		Usage:   "[--session S] [--agent A] [--files F...] [--budget N]",
		Long: `Prints the current content of the files a context worked on (ranked:
edited first, then by touches, then recency), each annotated with how it
relates to what the context last saw, within a character budget. What it
prints is recorded as seen by that context, so the edit guard lets the
model edit those files afterwards.`,
		Flags: func(fs *pflag.FlagSet) func(context.Context, *env, []string) error {
			session := fs.String("session", "", "the agent session's id")
			agent := fs.String("agent", "", "subagent id (empty: the main context)")
			harness := fs.String("harness", "", "the session's harness, "+harnessList()+" (default: the one whose archive holds the session)")
			files := fs.StringSlice("files", nil, "only these files (comma-separated or repeated)")
			budget := fs.Int("budget", hooks.RestoreBudget, "characters of content at most")
			return func(ctx context.Context, e *env, args []string) error {
				all := append(append([]string{}, *files...), args...)
				if *session == "" && len(all) == 0 {
					return cli.Usagef("restore needs --session or --files")
				}
				if *budget <= 0 {
					return cli.Usagef("--budget must be positive")
				}
				st, err := cli.OpenStore(e)
				if err != nil {
					return err
				}
				for i, f := range all {
					if !strings.HasPrefix(f, "/") {
						all[i] = e.Dir + "/" + f
					}
				}
				h, err := sessionHarness(ctx, st, *harness, *session)
				if err != nil {
					return err
				}
				out, err := hooks.Restore(ctx, st, hooks.RestoreOptions{Harness: h, Session: *session, Agent: *agent, Files: all, Budget: *budget})
				if err != nil {
					return err
				}
				_, err = fmt.Fprint(e.Stdout, out)
				return err
			}
		},
	}
}

func sweepCmd() *command {
	return &command{
		Name:    "sweep",
		Summary: "archive an agent harness's transcripts (and their subagents') by hand",
		Usage:   "[--harness NAME] TRANSCRIPT...",
		Long: `Parses each session transcript and every subagent transcript its harness
keeps beside it (Claude Code: under <session>/subagents/) from where the
last sweep stopped, and archives the file versions the model was shown and
the conversation as spans. A second sweep with nothing new adds nothing.`,
		Flags: func(fs *pflag.FlagSet) func(context.Context, *env, []string) error {
			harness := fs.String("harness", "", "the transcripts' harness, "+harnessList()+" (default: the first)")
			return func(ctx context.Context, e *env, args []string) error {
				h, err := harnessFlag(*harness)
				if err != nil {
					return err
				}
				if len(args) == 0 {
					return cli.Usagef("sweep needs at least one transcript path")
				}
				st, err := cli.OpenStore(e)
				if err != nil {
					return err
				}
				for _, p := range args {
					stats, err := hooks.SweepSession(ctx, st, h, p, hooks.SweepOptions{})
					if err != nil {
						return fmt.Errorf("sweep %s: %w", p, err)
					}
					fmt.Fprintf(e.Stdout, "%s: %s\n", p, sweepSummary(stats))
				}
				return nil
			}
		},
	}
}

// sweepSummary says what a sweep did in one line.
func sweepSummary(s hooks.SweepStats) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s read (%s, %s", cli.Plural(s.Transcripts, "transcript"), cli.Plural(s.Lines, "line"), pushBytes(s.Bytes))
	if s.Invalid > 0 {
		fmt.Fprintf(&b, ", %s not JSON, skipped", cli.Plural(s.Invalid, "line"))
	}
	if s.Resets > 0 {
		fmt.Fprintf(&b, ", %s truncated or replaced, read again", cli.Plural(s.Resets, "transcript"))
	}
	fmt.Fprintf(&b, "): %s stored (%s, %s, %s)", cli.Plural(s.Appended, "event"), cli.Plural(s.Evidence, "file event"),
		cli.Plural(s.Spans, "span"), cli.Plural(s.Compactions, "compaction"))
	if s.Deduped > 0 {
		fmt.Fprintf(&b, ", %s already stored", cli.Plural(s.Deduped, "record"))
	}
	return b.String()
}
