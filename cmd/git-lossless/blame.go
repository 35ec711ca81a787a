package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/git-lossless/git-lossless/internal/cli"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/git-lossless/git-lossless/blame"
	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/guard"
	"github.com/git-lossless/git-lossless/hooks/harnesses"
)

func blameCmd() *command {
	return &command{
		Name:    "blame",
		Summary: "for each line of a file, the commit that brought it and the agent context (or person) that wrote it",
		Usage:   "[-M] [-C] [-L A,B] [--porcelain|--json] [REV] [--] FILE | --why FILE:LINE [REV]",
		Long: `Line provenance. For each line of FILE at REV (default: the working tree,
uncommitted changes included), the commit git blame finds for it and its
origin: the archived agent write that introduced it (harness, session,
subagent, model where known, tool call, time) or a person ("-": no archived
agent write produced it). The origin is found by content — the archived
version a write produced carries the line, in the same place — never by a
stored commit id, so amend, rebase, cherry-pick, squash merges and
filter-branch leave it unchanged. A line an agent wrote that a person then
changed is the person's. The rule is in blame/FORMAT.md.

  -M, -C       as git blame: follow lines moved within the file, or moved
               or copied from other files changed in the same commit; the
               origin follows them
  -L A,B       lines A to B only (B may be left out: to the end)
  --porcelain  git blame --line-porcelain output, each line's headers
               followed by lossless-* keys (documented in blame/FORMAT.md)
  --json       one document {"path","rev","lines":[{line, text, commit,
               orig_path, orig_line, author, author_mail, author_time,
               summary, boundary, origin:{harness, writer, seq, session,
               agent, model, op, tool, call, ts, path, blob, line,
               request}|null}]}
  --requests   add to each origin the user request that led to it (masked
               as recall masks)
  --why FILE:LINE
               the context at the moment that line was written: the user's
               request, every file the context had seen and whether that
               version was still current, the tool call, and the receipts of
               the commit that carries it
  --identity   age identity (or unencrypted SSH key) to open encrypted spans
               for --why and --requests`,
		Flags: func(fs *pflag.FlagSet) func(context.Context, *env, []string) error {
			moves := fs.BoolP("moves", "M", false, "follow lines moved within the file (git blame -M)")
			copies := fs.BoolP("copies", "C", false, "follow lines moved or copied from other files (git blame -C)")
			lrange := fs.StringP("lines", "L", "", "blame lines A,B only")
			porcelain := fs.Bool("porcelain", false, "git's line porcelain with lossless-* keys")
			asJSON := fs.Bool("json", false, "one JSON document")
			requests := fs.Bool("requests", false, "add the user request behind each agent line")
			why := fs.String("why", "", "explain one line: FILE:LINE")
			identity := fs.String("identity", "", "age identity file or unencrypted SSH private key, to open encrypted spans")
			return func(ctx context.Context, e *env, args []string) error {
				if *porcelain && *asJSON {
					return cli.Usagef("--porcelain and --json cannot be combined")
				}
				st, err := cli.OpenStore(e)
				if err != nil {
					return err
				}
				if st.Location().WorkTree == "" {
					return errors.New("blame needs a work tree (this is a bare repository)")
				}
				opt := blame.Options{Moves: *moves, Copies: *copies, Requests: *requests, HarnessOf: harnesses.WriterHarness()}
				if *identity != "" || *why != "" || *requests {
					ids, err := st.Crypt().LoadIdentities(ctx, *identity, e.Getenv)
					if err != nil {
						return err
					}
					opt.Identities = ids
				}
				if *why != "" {
					if *lrange != "" || *porcelain {
						return cli.Usagef("--why takes no -L or --porcelain")
					}
					if len(args) > 1 {
						return cli.Usagef("--why FILE:LINE takes at most a REV")
					}
					file, n, err := parseFileLine(*why)
					if err != nil {
						return err
					}
					rev := ""
					if len(args) == 1 {
						rev = args[0]
					}
					rel, err := repoPath(st, e, file)
					if err != nil {
						return err
					}
					w, err := blame.WhyLine(ctx, st, rev, rel, n, blame.WhyOptions{Options: opt})
					if err != nil && !errors.Is(err, blame.ErrNoOrigin) {
						return err
					}
					bw := bufio.NewWriter(e.Stdout)
					defer bw.Flush()
					if *asJSON {
						return writeJSON(bw, w)
					}
					printWhy(bw, rel, w)
					return nil
				}
				var rev, file string
				switch {
				case len(args) == 1:
					file = args[0]
				case len(args) == 2:
					rev, file = args[0], args[1]
				default:
					return cli.Usagef("blame takes [REV] [--] FILE")
				}
				if *lrange != "" {
					a, b, err := parseRange(*lrange)
					if err != nil {
						return err
					}
					opt.Start, opt.End = a, b
				}
				rel, err := repoPath(st, e, file)
				if err != nil {
					return err
				}
				lines, err := blame.File(ctx, st, rev, rel, opt)
				if err != nil {
					return err
				}
				bw := bufio.NewWriter(e.Stdout)
				defer bw.Flush()
				switch {
				case *asJSON:
					if lines == nil {
						lines = []blame.Line{}
					}
					return writeJSON(bw, struct {
						Path  string       `json:"path"`
						Rev   string       `json:"rev"`
						Lines []blame.Line `json:"lines"`
					}{rel, rev, lines})
				case *porcelain:
					printBlamePorcelain(bw, lines)
				default:
					printBlame(bw, lines)
				}
				return nil
			}
		},
	}
}

func writeJSON(bw *bufio.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	bw.Write(b)
	return bw.WriteByte('\n')
}

// repoPath is FILE (relative to the current directory) as a path inside
// the work tree, slash-separated.
func repoPath(st *gitstore.Store, e *env, file string) (string, error) {
	abs := file
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(e.Dir, file)
	}
	rel := st.RelPath(filepath.Clean(abs))
	if filepath.IsAbs(rel) || rel == "." || strings.HasPrefix(rel, "../") {
		return "", cli.Usagef("%s is outside the work tree %s", file, st.Location().WorkTree)
	}
	return rel, nil
}

func parseFileLine(s string) (string, int, error) {
	i := strings.LastIndexByte(s, ':')
	if i <= 0 {
		return "", 0, cli.Usagef("--why takes FILE:LINE, not %q", s)
	}
	n, err := strconv.Atoi(s[i+1:])
	if err != nil || n < 1 {
		return "", 0, cli.Usagef("--why takes FILE:LINE with LINE a number from 1, not %q", s[i+1:])
	}
	return s[:i], n, nil
}

func parseRange(s string) (int, int, error) {
	a, b, _ := strings.Cut(s, ",")
	start, err := strconv.Atoi(a)
	if err != nil || start < 1 {
		return 0, 0, cli.Usagef("-L takes A,B with A a line number from 1, not %q", s)
	}
	end := 0
	if b != "" {
		if end, err = strconv.Atoi(b); err != nil || end < start {
			return 0, 0, cli.Usagef("-L takes A,B with B a line number not before A, not %q", s)
		}
	}
	return start, end, nil
}

// originLabel is the agent column: harness and session, the subagent and
// model where known; "-" for a person.
func originLabel(o *blame.Origin) string {
	if o == nil {
		return "-"
	}
	h := o.Harness
	if h == "" {
		h = o.Writer
	}
	s := h + ":" + cut(o.Session, 8)
	if o.Agent != "" {
		s += "/" + cut(o.Agent, 8)
	}
	if o.Model != "" {
		s += " " + o.Model
	}
	return guard.Printable(s)
}

func cut(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// printBlame writes git blame's default layout with an agent column:
// "COMMIT (AUTHOR DATE AGENT N) TEXT".
func printBlame(bw *bufio.Writer, lines []blame.Line) {
	authW, origW, numW := 0, 0, len(strconv.Itoa(len(lines)))
	if len(lines) > 0 {
		numW = len(strconv.Itoa(lines[len(lines)-1].N))
	}
	for _, l := range lines {
		authW = max(authW, len(authorLabel(l)))
		origW = max(origW, len(originLabel(l.Origin)))
	}
	for _, l := range lines {
		id := l.Commit[:8]
		if l.Boundary {
			id = "^" + l.Commit[:7]
		}
		date := l.AuthorTime.Format("2006-01-02 15:04:05 -0700")
		if l.Commit == blame.Uncommitted {
			id = "00000000"
		}
		fmt.Fprintf(bw, "%s (%-*s %s %-*s %*d) %s\n", id, authW, authorLabel(l), date, origW, originLabel(l.Origin), numW, l.N, l.Text)
	}
}

func authorLabel(l blame.Line) string {
	if l.Commit == blame.Uncommitted {
		return "Not Committed Yet"
	}
	return guard.Printable(l.Author)
}

// printBlamePorcelain writes git's --line-porcelain records with our keys
// before each line's text: lossless-origin agent|human, then for agents
// lossless-harness, -writer, -seq, -session, -agent, -model, -op, -tool,
// -call, -time (RFC 3339, UTC), -blob, -line, -request (each only when
// known). Values are single-line: control characters are escaped.
func printBlamePorcelain(bw *bufio.Writer, lines []blame.Line) {
	for _, l := range lines {
		bw.WriteString(l.Head)
		bw.WriteByte('\n')
		for _, h := range l.Headers {
			bw.WriteString(h)
			bw.WriteByte('\n')
		}
		o := l.Origin
		if o == nil {
			bw.WriteString("lossless-origin human\n")
		} else {
			bw.WriteString("lossless-origin agent\n")
			kv := func(k, v string) {
				if v != "" {
					fmt.Fprintf(bw, "lossless-%s %s\n", k, guard.Printable(v))
				}
			}
			kv("harness", o.Harness)
			kv("writer", o.Writer)
			kv("seq", strconv.FormatInt(o.Seq, 10))
			kv("session", o.Session)
			kv("agent", o.Agent)
			kv("model", o.Model)
			kv("op", string(o.Op))
			kv("tool", o.Tool)
			kv("call", o.Call)
			kv("time", o.TS.UTC().Format(time.RFC3339Nano))
			kv("path", o.Path)
			kv("blob", o.Blob)
			kv("line", strconv.Itoa(o.Line))
			kv("request", o.Request)
		}
		bw.WriteByte('\t')
		bw.WriteString(l.Text)
		bw.WriteByte('\n')
	}
}

const whyTime = "2006-01-02 15:04:05"

func printWhy(bw *bufio.Writer, rel string, w *blame.Why) {
	l := w.Line
	fmt.Fprintf(bw, "%s:%d  %s\n", guard.Printable(rel), l.N, guard.Printable(l.Text))
	if l.Commit == blame.Uncommitted {
		fmt.Fprintln(bw, "  not committed yet")
	} else {
		fmt.Fprintf(bw, "  commit %s %s (%s, %s)\n", l.Commit[:12], guard.Printable(l.Summary), guard.Printable(l.Author), l.AuthorTime.Format(whyTime))
	}
	o := l.Origin
	if o == nil {
		fmt.Fprintln(bw, "  no archived agent write made this line: a person wrote it, or an agent the archive did not record")
	} else {
		fmt.Fprintf(bw, "  written by %s at %s\n", originLabel(o), o.TS.Local().Format(whyTime))
		fmt.Fprintf(bw, "  %s by %s (call %s), line %d of version %s of %s\n", o.Op, cli.Dash(o.Tool), cli.Dash(guard.Printable(o.Call)), o.Line, short(o.Blob), guard.Printable(o.Path))
		switch {
		case w.Request != "":
			fmt.Fprintf(bw, "  request: %s\n", guard.Printable(flatten(w.Request, 300)))
		case w.RequestLocked:
			fmt.Fprintln(bw, "  request: encrypted (give --identity to read it)")
		default:
			fmt.Fprintln(bw, "  request: none archived")
		}
		if c := w.Call; c != nil {
			switch {
			case c.Locked:
				fmt.Fprintln(bw, "  call: encrypted (give --identity to read it)")
			case len(c.Input) > 0:
				fmt.Fprintf(bw, "  call input: %s\n", guard.Printable(flatten(string(c.Input), 300)))
			}
		}
		fmt.Fprintf(bw, "  the context had seen %s before the write:\n", cli.Plural(len(w.Seen), "file"))
		for _, s := range w.Seen {
			state := s.State()
			fmt.Fprintf(bw, "    %-9s %s  %s %s  %s\n", state, guard.Printable(s.Path), s.Op, s.TS.Local().Format(whyTime), cli.Dash(short(s.Blob)))
		}
	}
	if len(w.Receipts) == 0 {
		if l.Commit != blame.Uncommitted {
			fmt.Fprintln(bw, "  no receipt for the commit")
		}
		return
	}
	for _, r := range w.Receipts {
		what := "does not list this context"
		if r.Names {
			what = "lists this context"
		}
		if r.Carried {
			what += ", carried from a rewritten commit"
		}
		fmt.Fprintf(bw, "  receipt on %s (note %s): %s\n", r.Writer, short(r.Note), what)
	}
}

func flatten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}
