package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/git-lossless/git-lossless/internal/cli"
	"io"
	"regexp"
	"strconv"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/git-lossless/git-lossless/anchor"
	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/hooks/harnesses"
	"github.com/git-lossless/git-lossless/seal"
)

func recordCmd() *command {
	return &command{
		Name:    "record",
		Summary: "archive files as an agent saw or wrote them",
		Usage:   "--op read|edit|write [--session S] [--agent A] [--writer W] PATH...",
		Long: `Archives each PATH's current content as a git blob and appends one event
per path to the writer's log (refs/lossless/<writer>), sealed in its chain.
Paths inside the repository are recorded relative to its top; others
absolutely. A path on the deny list is recorded with excluded:true and its
content is never written. Directories, missing and unreadable files are
refused with an error; the other paths are still recorded (exit 1).

The writer defaults to cli-<clone>-<session> with --session, else
cli-<clone>, where <clone> is this clone's id: two clones never write to
one writer (the hashed form of the session id when it holds a secret).
--writer names another, which must be new or one this clone wrote: a
writer another clone wrote (adopted by sync, or fetched) is refused, and
so is a cli-/proxy- name carrying another clone's id. A --session,
--agent, --writer, --key or --source value in which the secret scanner
finds a credential is refused before anything is written: it would be
stored in the events or as a ref name, and pushed with the archive.`,
		Flags: func(fs *pflag.FlagSet) func(context.Context, *env, []string) error {
			op := fs.String("op", "", "what happened: read, edit or write (required)")
			session := fs.String("session", "", "session id the event belongs to")
			agent := fs.String("agent", "", "subagent id (empty: the main context)")
			writer := fs.String("writer", "", "writer name (ref refs/lossless/<writer>)")
			view := fs.String("view", "full", "what part was seen: full or lines:A-B")
			key := fs.String("key", "", "dedupe key: an event with a key already stored is skipped (one path only)")
			source := fs.String("source", "cli", "who recorded: cli, hook, sweep, proxy or mcp")
			quiet := fs.BoolP("quiet", "q", false, "print nothing on success")
			return func(ctx context.Context, e *env, args []string) error {
				switch gitstore.Op(*op) {
				case gitstore.OpRead, gitstore.OpEdit, gitstore.OpWrite:
				case "":
					return cli.Usagef("--op is required: read, edit or write")
				default:
					return cli.Usagef("--op %q: use read, edit or write", *op)
				}
				if len(args) == 0 {
					return cli.Usagef("record needs at least one PATH")
				}
				if *key != "" && len(args) > 1 {
					return cli.Usagef("--key applies to one PATH; got %d", len(args))
				}
				if !validView(*view) {
					return cli.Usagef("--view %q: use full or lines:A-B", *view)
				}
				if err := refuseSecretFlags("--session", *session, "--agent", *agent, "--writer", *writer, "--key", *key, "--source", *source); err != nil {
					return err
				}
				if *writer != "" {
					if err := gitstore.ValidWriter(*writer); err != nil {
						return cli.Usagef("%v", err)
					}
				}
				st, err := cli.OpenStore(e)
				if err != nil {
					return err
				}
				w := *writer
				if w == "" {
					// Per clone by construction: two clones never derive
					// the same writer (gitstore FORMAT.md section 2).
					if w, err = st.OwnWriterName(ctx, gitstore.FamilyCLI, *session); err != nil {
						return err
					}
				}
				if err := st.CheckWritable(ctx, w); err != nil {
					return cli.WithHint(fmt.Errorf("record to %s: %w", w, err), "a clone appends only to writers it wrote; leave out --writer to use this clone's own")
				}
				var recs []gitstore.Record
				var problems []string
				for _, p := range args {
					rec, err := cli.FileRecord(st, e.Dir, p)
					if err != nil {
						problems = append(problems, err.Error())
						fmt.Fprintf(e.Stderr, "git-lossless: error: %v\n", err)
						continue
					}
					rec.Op, rec.Session, rec.Agent, rec.Sidechain = gitstore.Op(*op), *session, *agent, *agent != ""
					rec.View, rec.Key, rec.Source = *view, *key, *source
					recs = append(recs, rec)
				}
				if len(recs) > 0 {
					res, err := st.Append(ctx, w, recs)
					if err != nil {
						return fmt.Errorf("record to %s: %w", w, err)
					}
					if !*quiet {
						for _, ev := range res.Events {
							cli.PrintRecorded(e.Stdout, ev)
						}
						if res.Deduped > 0 {
							fmt.Fprintf(e.Stdout, "skipped %d already recorded (same key)\n", res.Deduped)
						}
					}
				}
				if len(problems) > 0 {
					return cli.FailedError{Msg: fmt.Sprintf("%d of %d paths refused", len(problems), len(args))}
				}
				return nil
			}
		},
	}
}

var viewRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(full|lines:[0-9]+-[0-9]+)$`) })

func validView(v string) bool { return viewRe().MatchString(v) }

// filterFlags are the event filters shared by log and friends.
type filterFlags struct {
	session, agent, path, writer, op, source, since, until, harness *string
	limit                                                           *int
}

func addFilterFlags(fs *pflag.FlagSet) *filterFlags {
	return &filterFlags{
		session: fs.String("session", "", "only this session"),
		agent:   fs.String("agent", "", "only this subagent id, or 'main' for main contexts"),
		path:    fs.String("path", "", "only this path (exact, or a glob such as 'src/**/*.go')"),
		writer:  fs.String("writer", "", "only this writer"),
		harness: fs.String("harness", "", "only this agent harness's events ("+harnessList()+")"),
		op:      fs.String("op", "", "only this op (read, edit, write, span, ...)"),
		source:  fs.String("source", "", "only this source (hook, sweep, proxy, mcp, cli)"),
		since:   fs.String("since", "", "only events at or after: RFC 3339 time or age such as 30m, 24h, 7d, 2w"),
		until:   fs.String("until", "", "only events before: RFC 3339 time or age"),
		limit:   fs.Int("limit", 0, "only the last N events"),
	}
}

func (f *filterFlags) query(now time.Time) (gitstore.Query, error) {
	q := gitstore.Query{Session: *f.session, Agent: *f.agent, Path: *f.path, Op: gitstore.Op(*f.op), Source: *f.source, Limit: *f.limit}
	if *f.writer != "" {
		q.Writers = []string{*f.writer}
	}
	if err := checkHarnessFilter(*f.harness); err != nil {
		return q, err
	}
	q.Harness, q.HarnessOf = *f.harness, harnesses.WriterHarness()
	var err error
	if q.Since, err = parseWhen(*f.since, now); err != nil {
		return q, cli.Usagef("--since: %v", err)
	}
	if q.Until, err = parseWhen(*f.until, now); err != nil {
		return q, cli.Usagef("--until: %v", err)
	}
	if *f.limit < 0 {
		return q, cli.Usagef("--limit must be positive")
	}
	return q, nil
}

// parseWhen accepts RFC 3339 times, dates, and ages (30m, 24h, 7d, 2w).
func parseWhen(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse("2006-01-02", s); err == nil {
		return t, nil
	}
	if n := len(s); n >= 2 {
		unit := s[n-1]
		if v, err := strconv.ParseFloat(s[:n-1], 64); err == nil && v >= 0 {
			mult := map[byte]time.Duration{'s': time.Second, 'm': time.Minute, 'h': time.Hour, 'd': 24 * time.Hour, 'w': 7 * 24 * time.Hour}[unit]
			if mult != 0 {
				return now.Add(-time.Duration(v * float64(mult))), nil
			}
		}
	}
	return time.Time{}, fmt.Errorf("%q is neither a time (2026-12-02T15:04:05Z, 2026-12-02) nor an age (30m, 24h, 7d, 2w)", s)
}

func logCmd() *command {
	return &command{
		Name:    "log",
		Summary: "show archived events of every writer in time order",
		Usage:   "[--json] [filters]",
		Long: `Merges all writers' logs in time order. The table shows time, writer and
entry number, harness, op, session, agent, path and blob; --json prints one
stored event line per event (unknown fields kept), with its writer and
commit, and its harness: the event's own "harness" field, or, for events
written before it existed, the harness its writer's prefix names (cc-:
claude-code). Events of no harness (proxy-, cli-, mcp- writers) show "-"
and carry none. --harness NAME keeps one harness's events.`,
		Flags: func(fs *pflag.FlagSet) func(context.Context, *env, []string) error {
			f := addFilterFlags(fs)
			asJSON := fs.Bool("json", false, "one JSON object per line")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) > 0 {
					return cli.Usagef("log takes no arguments; use --path to select a file")
				}
				q, err := f.query(time.Now())
				if err != nil {
					return err
				}
				st, err := cli.OpenStore(e)
				if err != nil {
					return err
				}
				evs, err := st.Events(ctx, q)
				if err != nil {
					return err
				}
				bw := bufio.NewWriter(e.Stdout)
				defer bw.Flush()
				if *asJSON {
					for _, ev := range evs {
						b, err := json.Marshal(ev)
						if err != nil {
							return err
						}
						if h := gitstore.HarnessOf(ev.Harness, ev.Writer, q.HarnessOf); ev.Harness == "" && h != "" {
							// Told by the writer: said beside the stored line's fields.
							bw.WriteString(`{"harness":`)
							hb, _ := json.Marshal(h)
							bw.Write(hb)
							bw.WriteByte(',')
							b = b[1:]
						}
						bw.Write(b)
						bw.WriteByte('\n')
					}
					return nil
				}
				if len(evs) == 0 {
					fmt.Fprintln(bw, "no events")
					return nil
				}
				tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
				fmt.Fprintln(tw, "TIME\tWRITER#SEQ\tHARNESS\tOP\tSESSION\tAGENT\tPATH\tBLOB\tBYTES")
				for _, ev := range evs {
					blob := "-"
					if ev.Excluded {
						blob = "(excluded)"
					} else if ev.Blob != "" {
						blob = ev.Blob[:12]
					}
					agent := ev.Agent
					if agent == "" {
						agent = "main"
					}
					fmt.Fprintf(tw, "%s\t%s#%d\t%s\t%s\t%s\t%s\t%s\t%s\t%d\n",
						ev.TS.Local().Format("2006-01-02 15:04:05"), ev.Writer, ev.Seq, cli.Dash(gitstore.HarnessOf(ev.Harness, ev.Writer, q.HarnessOf)), ev.Op,
						cli.Dash(shortText(ev.Session, 12)), agent, cli.Dash(ev.Path), blob, ev.Bytes)
				}
				return tw.Flush()
			}
		},
	}
}

func shortText(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

func catCmd() *command {
	return &command{
		Name:    "cat",
		Summary: "print an archived blob's exact bytes",
		Usage:   "SHA1",
		Long:    "Prints the blob byte for byte (binary included); the same as `git cat-file -p SHA1`.",
		Flags: func(fs *pflag.FlagSet) func(context.Context, *env, []string) error {
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) != 1 {
					return cli.Usagef("cat needs exactly one blob id")
				}
				st, err := cli.OpenStore(e)
				if err != nil {
					return err
				}
				b, err := st.Objects().Blob(ctx, args[0])
				if errors.Is(err, gitstore.ErrObjectMissing) {
					return cli.WithHint(fmt.Errorf("blob %s is not in %s", args[0], st.Location().CommonDir), "`git lossless log --json` lists the blobs events name; a pruned blob is gone on purpose")
				}
				if err != nil {
					return err
				}
				_, err = e.Stdout.Write(b)
				return err
			}
		},
	}
}

func verifyCmd() *command {
	return &command{
		Name:    "verify",
		Summary: "check every writer's seal chain and archived content",
		Usage:   "[--all] [--json] [--no-content] [--anchor REMOTE|DIR]... [WRITER...]",
		Long: `Walks each writer's log from its first entry: sequence, links and batch
seals, then every referenced blob's presence and sha256, then the heads seen
earlier: this clone's own (the witness) and those anchored in signed
checkpoints pushed from here or accepted from a remote (git lossless anchor).
Reports OK or the first break per writer: content-changed, blob-missing,
entry-edited, entry-reordered, chain-forked (against the witness),
anchor-mismatch (against an anchor: history rewritten here after it was
anchored), unsealed, witness-damaged (this clone's memory of the heads
cannot be read). Entries whose blob a prune record removed are reported as
pruned, which is expected. Without WRITER arguments every writer is
checked, including writers whose refs are gone but that this clone
witnessed, owns or anchored: a deleted writer is a break.

Alarms are reported beside the writers: a notes ref (receipts) rolled back
behind an anchored head (anchor-mismatch), a local anchor record that no
longer checks, and the alarms the last sync or anchor check of each remote
left open (foreign-append, diverged, refused, gone-there, anchor-rollback,
anchor-fork, anchor-bad-signature, anchor-key-changed): they stay open
until a sync or check of that remote no longer finds them. doctor, the MCP
server's seal_status and receipt verify give the same verdict.

--anchor REMOTE|DIR (repeatable) first fetches that remote's checkpoints
into tracking refs (refs/lossless-tracking/..., never over a local ref), or
reads an anchor directory, and compares them with what this clone accepted
of each checkpoint chain before, from any remote: anchor-rollback (an older
checkpoint of a chain than one accepted, or deleted), anchor-fork (moved
sideways, another checkpoint at the same number, or a checkpoint of this
clone it never made), anchor-bad-signature, anchor-key-changed. Both signed
checkpoints of every alarm are kept under .git/lossless/anchor/evidence/
and printed. What checks is accepted and checked against from then on,
offline too.

--json prints one JSON document: {"ok", "summary", "anchors" (one remote
check per --anchor), "writers" (one report per writer, with "ok"),
"findings" (the alarms)}.

Exit 0 only when every writer verifies and no alarm is open.`,
		Flags: func(fs *pflag.FlagSet) func(context.Context, *env, []string) error {
			all := fs.Bool("all", false, "verify every writer (the default without WRITER arguments)")
			asJSON := fs.Bool("json", false, "print the verdict as one JSON document")
			quick := fs.Bool("no-content", false, "check the chains only, not the blobs")
			anchors := fs.StringArray("anchor", nil, "fetch and check this remote's (or anchor directory's) checkpoints first (repeatable)")
			return func(ctx context.Context, e *env, args []string) error {
				if *all && len(args) > 0 {
					return cli.Usagef("give --all or WRITER names, not both")
				}
				for _, w := range args {
					if err := gitstore.ValidWriter(w); err != nil {
						return cli.Usagef("%v", err)
					}
				}
				st, err := cli.OpenStore(e)
				if err != nil {
					return err
				}
				checks := []*anchor.RemoteCheck{}
				for _, a := range *anchors {
					if err := gitstore.ValidRemote(a); err != nil {
						return cli.Usagef("--anchor: %v", err)
					}
					rc, err := anchor.CheckRemote(ctx, st, anchorTarget(e, a), time.Now())
					if err != nil {
						return cli.WithHint(fmt.Errorf("check anchors on %s: %w", a, err), "`git ls-remote REMOTE` shows whether the remote can be reached")
					}
					checks = append(checks, rc)
					if !*asJSON {
						printFindings(e.Stdout, rc)
					}
				}
				if locks, err := st.Locks(ctx); err == nil {
					for _, l := range locks {
						if l.Stale {
							fmt.Fprintf(e.Stderr, "git-lossless: warning: stale lock %s (%s); `git lossless locks --clean` removes it\n", l.Path, l.Why)
						}
					}
				}
				v, err := anchor.Check(ctx, st, anchor.CheckOptions{Writers: args, SkipContent: *quick})
				if err != nil {
					return err
				}
				for _, rep := range v.Writers {
					if len(args) > 0 && rep.Batches == 0 && rep.OK() {
						return fmt.Errorf("no writer %q in %s", rep.Writer, st.Location().CommonDir)
					}
				}
				if *asJSON {
					type writerJSON struct {
						*seal.Report
						OK bool `json:"ok"`
					}
					ws := make([]writerJSON, len(v.Writers))
					for i, r := range v.Writers {
						ws[i] = writerJSON{r, r.OK()}
					}
					enc := json.NewEncoder(e.Stdout)
					if err := enc.Encode(struct {
						OK       bool                  `json:"ok"`
						Summary  string                `json:"summary"`
						Anchors  []*anchor.RemoteCheck `json:"anchors"`
						Writers  []writerJSON          `json:"writers"`
						Findings []anchor.Finding      `json:"findings"`
					}{v.OK(), v.Summary(), checks, ws, v.Findings}); err != nil {
						return err
					}
				} else {
					for _, rep := range v.Writers {
						cli.PrintReport(e.Stdout, rep)
					}
					printed := map[string]bool{} // --anchor's findings, printed above with their checkpoints
					for _, rc := range checks {
						for _, f := range rc.Findings {
							printed[f.Kind+"\x00"+f.Detail] = true
						}
					}
					for _, f := range v.Findings {
						if !printed[f.Kind+"\x00"+f.Detail] {
							printAlarm(e.Stdout, f)
						}
					}
					fmt.Fprintln(e.Stdout, v.Summary())
				}
				switch {
				case v.Broken() > 0:
					return cli.FailedError{Msg: fmt.Sprintf("%d of %d writers failed verification", v.Broken(), len(v.Writers))}
				case len(v.Findings) > 0:
					return cli.FailedError{Msg: fmt.Sprintf("%s open", cli.Plural(len(v.Findings), "alarm"))}
				}
				return nil
			}
		},
	}
}

// printAlarm prints one finding of a verdict.
func printAlarm(w io.Writer, f anchor.Finding) {
	subject := f.Writer
	if subject == "" {
		subject = f.Clone
	}
	if subject != "" {
		subject += ": "
	}
	where := ""
	if f.Remote != "" {
		where = " (" + f.Remote + ")"
	}
	fmt.Fprintf(w, "ALARM  %s%s%s: %s\n", subject, f.Kind, where, f.Detail)
	if f.Evidence != "" {
		fmt.Fprintf(w, "       evidence: %s\n", f.Evidence)
	}
}

func headsCmd() *command {
	return &command{
		Name:    "heads",
		Summary: "print each writer's chain head and length",
		Usage:   "[--json]",
		Flags: func(fs *pflag.FlagSet) func(context.Context, *env, []string) error {
			asJSON := fs.Bool("json", false, "one JSON object per writer")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) > 0 {
					return cli.Usagef("heads takes no arguments")
				}
				st, err := cli.OpenStore(e)
				if err != nil {
					return err
				}
				ws, err := st.Writers(ctx)
				if err != nil {
					return err
				}
				if *asJSON {
					enc := json.NewEncoder(e.Stdout)
					for _, w := range ws {
						if err := enc.Encode(w); err != nil {
							return err
						}
					}
					return nil
				}
				if len(ws) == 0 {
					fmt.Fprintf(e.Stdout, "no writers in %s\n", st.Location().CommonDir)
					return nil
				}
				tw := tabwriter.NewWriter(e.Stdout, 0, 0, 2, ' ', 0)
				fmt.Fprintln(tw, "WRITER\tENTRIES\tSEAL\tCOMMIT")
				for _, w := range ws {
					if w.Err != "" {
						fmt.Fprintf(tw, "%s\t?\t(%s)\t%s\n", w.Name, w.Err, w.Commit)
						continue
					}
					fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", w.Name, w.Seq, w.Seal, w.Commit)
				}
				return tw.Flush()
			}
		},
	}
}

func locksCmd() *command {
	return &command{
		Name:    "locks",
		Summary: "report (and with --clean remove) stale ref locks",
		Usage:   "[--clean]",
		Long: `A process killed while moving a ref leaves refs/lossless/<writer>.lock.
A lock is stale when the git-lossless process that took it is gone, or when
any lock is older than 30 seconds (git holds ref locks for milliseconds).
Appends remove stale locks themselves; this command shows them.`,
		Flags: func(fs *pflag.FlagSet) func(context.Context, *env, []string) error {
			clean := fs.Bool("clean", false, "remove stale locks")
			return func(ctx context.Context, e *env, args []string) error {
				st, err := cli.OpenStore(e)
				if err != nil {
					return err
				}
				ls, err := st.Locks(ctx)
				if err != nil {
					return err
				}
				if len(ls) == 0 {
					fmt.Fprintln(e.Stdout, "no locks")
					return nil
				}
				for _, l := range ls {
					state := "held"
					if l.Stale {
						state = "stale: " + l.Why
					}
					fmt.Fprintf(e.Stdout, "%s (%s, age %s)\n", l.Path, state, l.Age.Round(time.Millisecond))
				}
				if *clean {
					removed, err := st.CleanStaleLocks(ctx)
					if err != nil {
						return err
					}
					fmt.Fprintf(e.Stdout, "removed %d stale locks\n", len(removed))
				}
				return nil
			}
		},
	}
}

func reindexCmd() *command {
	return &command{
		Name:    "reindex",
		Summary: "rebuild the derived index from the commits",
		Usage:   "",
		Long: `The index under <git dir>/lossless/index is a cache of each writer's event
lines; readers check it against the refs and catch it up themselves. This
rebuilds it from scratch. It is never the source of truth.`,
		Flags: func(fs *pflag.FlagSet) func(context.Context, *env, []string) error {
			return func(ctx context.Context, e *env, args []string) error {
				st, err := cli.OpenStore(e)
				if err != nil {
					return err
				}
				if err := st.Reindex(ctx); err != nil {
					return err
				}
				fmt.Fprintln(e.Stdout, "index rebuilt")
				return nil
			}
		},
	}
}
