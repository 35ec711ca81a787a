package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/git-lossless/git-lossless/internal/cli"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/hooks/harnesses"
	"github.com/git-lossless/git-lossless/recall"
)

func recallCmd() *command {
	return &command{
		Name:    "recall",
		Summary: "find anything the agents saw or said: digests, search, open a span, a file's history",
		Usage:   "digests [--session S] [--harness NAME] [--since AGE] | search QUERY [--limit N] [--session S] [--harness NAME] [--kind K] | open ID [--lines A-B] [--reveal] | file PATH [--session S] [--harness NAME]",
		Long: `Searches the archive: every agent harness's spans (prompts, answers, tool
calls and results, compaction summaries), every proxy span, and every
file version by its path.

  recall digests [--session S] [--harness NAME] [--since AGE]
      one line per session and per compaction group: when, writer, session,
      agent, harness, kinds, size, the first words
  recall search QUERY [--limit N] [--session S] [--harness NAME] [--kind K] [--cursor C]
      ranked hits (BM25 over stemmed terms; fragments of words and paths by
      trigrams; one-letter typos) with a snippet, the span id and the
      harness; kinds: user_prompt, assistant_text, thinking, tool_use,
      tool_result, compact_summary, proxy, file
  recall open ID [--lines A-B] [--reveal]
      any span by WRITER#SEQ or a proxy span by its sp- id, as text lines;
      --reveal puts redacted secrets back from the vault (local identity)
  recall file PATH [--session S] [--harness NAME]
      the versions of a file each context saw, when, and whether each still
      matches the disk

The harness of a span or version is its event's "harness" field, else the
one its writer's prefix names (cc-: claude-code); proxy spans and MCP
reads outside a session have none ("-"). --harness NAME keeps one
harness's.

Everything it prints masks key-shaped values (first 3 + **** + last 4;
secret-named assignments keep their name) unless --no-mask; the archive is
untouched. Encrypted spans are listed as locked unless an identity opens
them (--identity FILE, LOSSLESS_AGE_IDENTITY, git config lossless.identity):
then they are searched and opened in memory only, and nothing derived from
their plaintext is written to disk.

The index is derived state under .git/lossless/recall/: updated
incrementally (only new batches are read), rebuilt by --reindex, deletable
at any time. --json prints JSON.`,
		Flags: func(fs *pflag.FlagSet) func(context.Context, *env, []string) error {
			asJSON := fs.Bool("json", false, "print JSON")
			noMask := fs.Bool("no-mask", false, "print secrets as archived")
			identity := fs.String("identity", "", "age identity file or unencrypted SSH private key, to open encrypted spans")
			reindex := fs.Bool("reindex", false, "rebuild the index from the archive first")
			session := fs.String("session", "", "one session only")
			harness := fs.String("harness", "", "one agent harness only ("+harnessList()+")")
			since := fs.String("since", "", "digests: groups with a span in this last age (30m, 24h, 7d, 2w)")
			limit := fs.Int("limit", 10, "search: hits per page")
			kind := fs.String("kind", "", "search: one kind of span (or proxy, file)")
			cursor := fs.String("cursor", "", "search: the next page (the cursor a search printed)")
			lines := fs.String("lines", "", "open: lines A-B only")
			reveal := fs.Bool("reveal", false, "open: put redacted secrets back from the vault")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) == 0 && !*reindex {
					return cli.Usagef("usage: git lossless recall digests|search QUERY|open ID|file PATH")
				}
				if err := checkHarnessFilter(*harness); err != nil {
					return err
				}
				st, err := cli.OpenStore(e)
				if err != nil {
					return err
				}
				ids, err := st.Crypt().LoadIdentities(ctx, *identity, e.Getenv)
				if err != nil {
					return err
				}
				if *reindex {
					if err := recall.Reindex(ctx, st); err != nil {
						return err
					}
					if len(args) == 0 {
						fmt.Fprintln(e.Stdout, "recall index rebuilt")
						return nil
					}
				}
				warn := func(msg string) { fmt.Fprintf(e.Stderr, "git-lossless: warning: %s\n", msg) }
				idx, err := recall.Open(ctx, st, recall.Options{Identities: ids, Warn: warn, HarnessOf: harnesses.WriterHarness()})
				if err != nil {
					return err
				}
				defer idx.Close()
				mask := func(s string) string {
					if *noMask {
						return s
					}
					return recall.Mask(s)
				}
				out := e.Stdout
				switch args[0] {
				case "digests":
					if len(args) != 1 {
						return cli.Usagef("usage: git lossless recall digests [--session S] [--since AGE]")
					}
					var from time.Time
					if *since != "" {
						d, err := parseAgeFlag(*since)
						if err != nil {
							return cli.Usagef("--since: %v", err)
						}
						from = time.Now().Add(-d)
					}
					ds, err := idx.Digests(ctx, recall.DigestQuery{Session: *session, Since: from, Harness: *harness})
					if err != nil {
						return err
					}
					if *asJSON {
						for i := range ds {
							ds[i].Words = mask(ds[i].Words)
						}
						return printJSON(out, ds)
					}
					for _, d := range ds {
						kinds := make([]string, 0, len(d.Kinds))
						for k, n := range d.Kinds {
							kinds = append(kinds, k+" "+strconv.Itoa(n))
						}
						sort.Strings(kinds)
						group := "start"
						switch {
						case d.Source == "proxy":
							group = "proxy"
						case d.Group > 0:
							group = "after compaction " + strconv.Itoa(d.Group)
						}
						agent := "main"
						if d.Agent != "" {
							agent = d.Agent
						}
						lock := ""
						if d.Locked > 0 {
							lock = fmt.Sprintf(" (%d locked)", d.Locked)
						}
						fmt.Fprintf(out, "%s  %s  %s  session %s  %s  harness %s  %s: %d spans%s, %s  %s\n  %s\n", d.First.Local().Format("2006-01-02 15:04"), d.ID, d.Writer,
							orDash(d.Session), agent, orDash(d.Harness), group, d.Spans, lock, humanBytes(d.Bytes), strings.Join(kinds, ", "), mask(d.Words))
					}
					if len(ds) == 0 {
						fmt.Fprintln(out, "no spans archived")
					}
					return nil
				case "search":
					if len(args) < 2 {
						return cli.Usagef("usage: git lossless recall search QUERY")
					}
					res, err := idx.Search(ctx, recall.Query{Text: strings.Join(args[1:], " "), Limit: *limit, Session: *session, Harness: *harness, Kind: *kind, Cursor: *cursor})
					if err != nil {
						return cli.Usagef("%v", err)
					}
					for i := range res.Hits {
						res.Hits[i].Snippet = mask(res.Hits[i].Snippet)
					}
					if *asJSON {
						return printJSON(out, res)
					}
					for _, h := range res.Hits {
						what := h.Kind
						if h.Tool != "" {
							what += " " + h.Tool
						}
						if h.Path != "" {
							what += " " + h.Path
						}
						lock := ""
						if h.Locked {
							lock = "  [locked]"
						}
						fmt.Fprintf(out, "%-40s %6.2f  %s  %s  %s  %s%s\n    %s\n", h.ID, h.Score, h.TS.Local().Format("2006-01-02 15:04"), orDash(h.Session), orDash(h.Harness), what, lock, h.Snippet)
					}
					fmt.Fprintf(out, "%d of %d hits", len(res.Hits), res.Total)
					if res.Next != "" {
						fmt.Fprintf(out, "; more: --cursor %s", res.Next)
					}
					fmt.Fprintln(out)
					return nil
				case "open":
					if len(args) != 2 {
						return cli.Usagef("usage: git lossless recall open ID [--lines A-B] [--reveal]")
					}
					sp, err := idx.Span(ctx, args[1])
					if errors.Is(err, recall.ErrNoSpan) {
						return cli.WithHint(err, "`git lossless recall search QUERY` or `recall digests` give span ids")
					}
					if err != nil {
						return err
					}
					if sp.Locked {
						fmt.Fprintf(out, "span %s: locked (age-encrypted, %s bytes)\n", sp.ID, cli.Commas(sp.Bytes))
						return cli.WithHint(cli.FailedError{Msg: "span is encrypted"}, gitstore.IdentityHint)
					}
					lns := sp.Lines
					from, to := 1, len(lns)
					if *lines != "" {
						if from, to, err = parseLines(*lines, len(lns)); err != nil {
							return cli.Usagef("--lines: %v", err)
						}
					}
					text := strings.Join(lns[min(from-1, len(lns)):to], "\n")
					left := 0
					if *reveal {
						b, _, l, err := st.Crypt().Reveal(ctx, sp.Writer, []byte(text), ids)
						if err != nil {
							return err
						}
						text, left = string(b), l
					} else {
						text = mask(text)
					}
					if *asJSON {
						sp.Lines = strings.Split(text, "\n")
						if text == "" {
							sp.Lines = []string{}
						}
						return printJSON(out, sp)
					}
					fmt.Fprintf(out, "# %s  %s  %s  session %s  harness %s  lines %d-%d of %d\n", sp.ID, sp.Kind, sp.TS.Local().Format("2006-01-02 15:04:05"), orDash(sp.Session), orDash(sp.Harness), from, to, len(lns))
					if text != "" {
						fmt.Fprintln(out, text)
					}
					if left > 0 {
						return cli.WithHint(cli.FailedError{Msg: fmt.Sprintf("%d placeholders could not be revealed: the vault is locked or was pruned", left)}, "the vault opens with the local identity of the machine that archived the span ("+localIdentityHint()+")")
					}
					return nil
				case "file":
					if len(args) != 2 {
						return cli.Usagef("usage: git lossless recall file PATH [--session S]")
					}
					vs, err := idx.FileHistory(ctx, args[1], *session)
					if err != nil {
						return err
					}
					if *harness != "" {
						vs = slices.DeleteFunc(vs, func(v recall.FileVersion) bool { return v.Harness != *harness })
					}
					if *asJSON {
						return printJSON(out, vs)
					}
					for _, v := range vs {
						agent := "main"
						if v.Agent != "" {
							agent = v.Agent
						}
						fmt.Fprintf(out, "%s  %s#%d  %-5s %-12s session %s  %s  harness %s  blob %.12s  %s\n", v.TS.Local().Format("2006-01-02 15:04:05"), v.Writer, v.Seq, v.Op, v.View, orDash(v.Session), agent, orDash(v.Harness), v.Blob, v.State)
					}
					if len(vs) == 0 {
						fmt.Fprintf(out, "no archived version of %s\n", args[1])
					}
					return nil
				default:
					return cli.Usagef("unknown recall subcommand %q: digests, search, open or file", args[0])
				}
			}
		},
	}
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// parseLines reads A-B (1-based, inclusive; "A" alone, "A-" to the end).
func parseLines(s string, n int) (int, int, error) {
	a, b, ok := strings.Cut(s, "-")
	from, err := strconv.Atoi(a)
	if err != nil || from < 1 {
		return 0, 0, fmt.Errorf("%q: want A-B with 1 <= A <= B", s)
	}
	to := from
	if ok {
		to = n
		if b != "" {
			if to, err = strconv.Atoi(b); err != nil || to < from {
				return 0, 0, fmt.Errorf("%q: want A-B with 1 <= A <= B", s)
			}
		}
	}
	if from > n {
		return 0, 0, fmt.Errorf("%q: the span has %d lines", s, n)
	}
	return from, min(to, n), nil
}

// parseAgeFlag reads 30m, 24h, 7d, 2w.
func parseAgeFlag(s string) (time.Duration, error) {
	if n := len(s); n > 1 && (s[n-1] == 'd' || s[n-1] == 'w') {
		v, err := strconv.Atoi(s[:n-1])
		if err == nil && v > 0 {
			k := 24 * time.Hour
			if s[n-1] == 'w' {
				k *= 7
			}
			return time.Duration(v) * k, nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%q: want an age such as 30m, 24h, 7d, 2w", s)
	}
	return d, nil
}
