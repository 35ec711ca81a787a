package main

import (
	"context"
	"fmt"
	"github.com/git-lossless/git-lossless/internal/cli"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/git-lossless/git-lossless/guard"
	"github.com/git-lossless/git-lossless/hooks/harnesses"
	"github.com/git-lossless/git-lossless/meter"
)

// meterTableRows is how many rows the table shows unless --limit says.
const meterTableRows = 20

func meterCmd() *command {
	return &command{
		Name:    "meter",
		Summary: "where the read tokens went: by file, session, agent or repository, re-reads and what a restore would have saved",
		Usage:   "[--session S] [--harness NAME] [--since AGE] [--by file|session|agent|repo|harness] [--limit N] [--json]",
		Long: `Counts, over the archive (-C DIR; the embedded archive outside any
repository), the tokens the agents' contexts were shown files by, exactly,
with the o200k_base tokenizer over the archived bytes (counts are cached by
blob under .git/lossless/receipts/, shared with receipts: a second run
counts nothing).

  read        an event that showed a model a file's content: op read,
              attach (re-attached after a compaction) or restore (printed
              by git lossless restore)
  context     a session's main agent, or one of its subagents
  re-read     a read of a path the same context had read before (archive
              order: entry order within the session's writer)
  changed     a re-read whose bytes differ from the context's previous read
              of the path (another version, or another part of the file)
  saved       the tokens of re-reads that arrived unchanged with no
              compaction of the context since the previous read: content
              the model already held byte for byte, which a restore from
              the archive would have answered with "unchanged" instead (the
              one line it costs is not subtracted). Unchanged re-reads after
              a compaction were needed and are not counted as saved.
  uncounted   reads whose tokens are unknown: denied by the deny list (the
              content was never archived) or pruned since

--since AGE (30m, 24h, 7d, 2w, or an RFC 3339 time) counts the reads in
that window; whether a read is a re-read is still decided on the whole
history. --by groups the table (default file): repo is the work tree each
event was recorded in, harness the agent harness of each context (its
events' "harness" field, else the one its writer's prefix names: cc- is
claude-code; "-" for contexts of no harness, such as the MCP server's
reads outside a session). --by session and --by agent show each row's
harness. --harness NAME meters that harness's contexts only. The table
shows the top rows (--limit N, 0 for all); --json prints every figure,
with stable names, and every row (with its "harness" for session and
agent rows).`,
		Flags: func(fs *pflag.FlagSet) func(context.Context, *env, []string) error {
			session := fs.String("session", "", "meter one session only")
			harness := fs.String("harness", "", "meter one agent harness's contexts only ("+harnessList()+")")
			since := fs.String("since", "", "count reads since: an age (30m, 24h, 7d, 2w) or an RFC 3339 time (default: everything)")
			by := fs.String("by", "file", "group rows by file, session, agent, repo or harness")
			limit := fs.Int("limit", meterTableRows, "rows to show (0: all; --json shows all unless set)")
			asJSON := fs.Bool("json", false, "print JSON")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) > 0 {
					return cli.Usagef("meter takes no arguments (see `git lossless meter --help`)")
				}
				b, err := meter.ParseBy(*by)
				if err != nil {
					return cli.Usagef("--by: %v", err)
				}
				if *limit < 0 {
					return cli.Usagef("--limit must be 0 or more")
				}
				if err := checkHarnessFilter(*harness); err != nil {
					return err
				}
				from, err := parseWhen(*since, time.Now())
				if err != nil {
					return cli.Usagef("--since: %v", err)
				}
				st, err := cli.OpenStore(e)
				if err != nil {
					return err
				}
				rep, err := meter.Meter(ctx, st, meter.Options{Session: *session, Since: from, Harness: *harness, HarnessOf: harnesses.WriterHarness()})
				if err != nil {
					return err
				}
				rows, err := rep.Rows(b)
				if err != nil {
					return err
				}
				n := *limit
				if *asJSON && !fs.Changed("limit") {
					n = 0
				}
				shown := rows
				if n > 0 && len(shown) > n {
					shown = shown[:n]
				}
				if *asJSON {
					return printJSON(e.Stdout, struct {
						*meter.Report
						By        meter.By    `json:"by"`
						RowsTotal int         `json:"rows_total"`
						Rows      []meter.Row `json:"rows"`
					}{rep, b, len(rows), shown})
				}
				printMeter(e.Stdout, rep, b, shown, len(rows), *since)
				return nil
			}
		},
	}
}

// ratioPct is n of "of" as a percentage, "-" when of is 0.
func ratioPct(n, of int) string {
	if of == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(n)/float64(of))
}

func printMeter(out io.Writer, rep *meter.Report, b meter.By, rows []meter.Row, total int, since string) {
	t := rep.Totals
	span := "all archived reads"
	if since != "" {
		span = "reads since " + rep.Since.Local().Format("2006-01-02 15:04") + " (" + since + ")"
	}
	if rep.Session != "" {
		span += " of session " + rep.Session
	}
	if rep.Harness != "" {
		span += " of harness " + rep.Harness
	}
	fmt.Fprintf(out, "read tokens (o200k), %s, %s\n", span, cli.Plural(rep.Contexts, "context"))
	if t.Reads == 0 {
		fmt.Fprintln(out, "no reads archived")
		return
	}
	fmt.Fprintf(out, "  reads      %8s   %12s tokens\n", cli.Commas(int64(t.Reads)), cli.Commas(t.Tokens))
	fmt.Fprintf(out, "  re-reads   %8s   %12s tokens   %s of reads\n", cli.Commas(int64(t.ReReads)), cli.Commas(t.ReReadTokens), ratioPct(t.ReReads, t.Reads))
	fmt.Fprintf(out, "    changed  %8s   %12s tokens   %s of re-reads arrived changed\n", cli.Commas(int64(t.Changed)), cli.Commas(t.ChangedTokens), ratioPct(t.Changed, t.ReReads))
	fmt.Fprintf(out, "    unchanged%8s                         %s of them after a compaction (needed)\n", cli.Commas(int64(t.Unchanged)), cli.Commas(int64(t.AfterCompaction)))
	fmt.Fprintf(out, "  saved      %8s   %12s tokens   a restore from the archive would have saved (unchanged, no compaction between)\n", cli.Commas(int64(t.Saveable)), cli.Commas(t.SavedTokens))
	if t.Uncounted > 0 {
		fmt.Fprintf(out, "  uncounted  %8s   (denied by the deny list, or content pruned: tokens unknown)\n", cli.Commas(int64(t.Uncounted)))
	}
	fmt.Fprintln(out)
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	// Session and context rows name their harness.
	withHarness := b == meter.BySession || b == meter.ByAgent
	harnessCol := func(r meter.Row) string {
		if !withHarness {
			return ""
		}
		return "  " + cli.Dash(r.Harness) + "\t"
	}
	head := ""
	if withHarness {
		head = "  HARNESS\t"
	}
	fmt.Fprintf(w, "READS\tTOKENS\tRE-READS\tCHANGED\tSAVED TOKENS\t%s  %s\n", head, strings.ToUpper(string(b)))
	for _, r := range rows {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s  %s\n", cli.Commas(int64(r.Reads)), cli.Commas(r.Tokens), cli.Commas(int64(r.ReReads)), cli.Commas(int64(r.Changed)), cli.Commas(r.SavedTokens), harnessCol(r), guard.Printable(r.Key))
	}
	w.Flush()
	if len(rows) < total {
		fmt.Fprintf(out, "(%d of %d rows; --limit 0 shows all)\n", len(rows), total)
	}
}

func packCmd() *command {
	return &command{
		Name:    "pack",
		Summary: "one byte-stable text of the files agents read most, for an agent type's system prompt",
		Usage:   "[--budget TOKENS] [--since AGE] [--harness NAME] [--json]",
		Long: `Prints the files the agents read most across sessions (reads, attaches
and restores over the window, ties by path), each with its current content
from the working tree and its git blob id, within --budget o200k tokens
(the whole text, header included, counted exactly), for embedding in an
agent type's system prompt.

Files are taken in rank order when they fit in what is left of the budget;
files that are gone, denied by the deny list, binary, outside the work
tree or holding a credential (the secret scanner's rules) are left out. The window (--since, default 7d) ends at the newest
read in the archive, not at the clock, and the text holds no counts, no
times and no map order, with the chosen files in path order: the same
archive and working tree give the same bytes (git gc changes nothing),
and more reads of the same files leave the text, and a provider's prompt
cache, as they were.

--harness NAME counts only the reads of that agent harness's contexts
(the harness of an event: its "harness" field, else its writer's prefix):
a pack for one harness's agents. The text does not name the harness.

--json lists every file considered, in rank order, with its reads, the
harnesses whose contexts read it ("-" for reads of no harness), tokens,
blob, whether the disk changed since the newest full read, and the
reason it is in or out (in, over budget, budget full, gone, denied,
binary, outside, secret).`,
		Flags: func(fs *pflag.FlagSet) func(context.Context, *env, []string) error {
			budget := fs.Int64("budget", meter.DefaultBudget, "the most o200k tokens the text may hold")
			since := fs.String("since", "7d", "the window: an age (30m, 24h, 7d, 2w)")
			harness := fs.String("harness", "", "count the reads of one agent harness only ("+harnessList()+")")
			asJSON := fs.Bool("json", false, "list what went in and why, as JSON (instead of the text)")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) > 0 {
					return cli.Usagef("pack takes no arguments (see `git lossless pack --help`)")
				}
				if *budget <= 0 {
					return cli.Usagef("--budget must be a positive number of tokens")
				}
				if err := checkHarnessFilter(*harness); err != nil {
					return err
				}
				d, err := parseAgeFlag(*since)
				if err != nil {
					return cli.Usagef("--since: %v", err)
				}
				st, err := cli.OpenStore(e)
				if err != nil {
					return err
				}
				p, err := meter.BuildPack(ctx, st, meter.PackOptions{Budget: *budget, Since: d, Harness: *harness, HarnessOf: harnesses.WriterHarness()})
				if err != nil {
					return err
				}
				if *asJSON {
					return printJSON(e.Stdout, p)
				}
				_, err = e.Stdout.Write(p.Text)
				return err
			}
		},
	}
}
