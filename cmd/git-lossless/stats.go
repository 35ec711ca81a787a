package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/git-lossless/git-lossless/internal/cli"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/spf13/pflag"

	"github.com/git-lossless/git-lossless/blame"
	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/guard"
	"github.com/git-lossless/git-lossless/hooks/harnesses"
)

func statsCmd() *command {
	return &command{
		Name:    "stats",
		Summary: "lines added per commit by agents (per harness, model, session) and by people",
		Usage:   "[REV-RANGE] [--by harness|model|session|author] [--json]",
		Long: `For each commit of REV-RANGE (git log's notation: A..B, A...B or one revision
for all of its history; merges are left out, as git log --numstat leaves
them out), the lines it added, how many of them came from an archived agent
write (found by content, as git lossless blame finds it: the write whose
version carries the line, see blame/FORMAT.md) and how many from a person,
the lines it removed, and the lines agent writes added that the commit
does not carry as written (changed or dropped before the commit).
Then the totals grouped by --by, and ` + "`git diff --shortstat`" + ` of the same range
as the real git prints it (A..B: git diff A..B, the same as git diff A B;
one revision R: the diff from the empty tree to R), with a plain word when
its numbers differ from the per-commit sums: a line added by one commit and
removed by a later one counts in both commits but not in the diff, a merge's
own changes (conflict resolutions) are in the diff but no commit's, and for
A..B where A is not an ancestor of B the diff also undoes A's own commits.

Without REV-RANGE: @{upstream}..HEAD when the branch has an upstream (the
commits not pushed yet), else HEAD (all history).

--by groups agent lines by harness (default), model ("unknown" where the
archive does not name one: spans archived before the harness adapters
recorded models), session, or author (the commit's author, who committed
the agent's lines); lines of people are grouped as "human".

--json prints one document:
  {"range": R, "by": "harness",
   "commits": [{"commit", "summary", "author", "added", "agent", "human",
                "removed", "rewritten", "by": {KEY: lines, "human": lines}}],
   "totals": {"commits", "added", "agent", "human", "removed", "rewritten",
              "by": {KEY: lines, "human": lines}},
   "shortstat": {"files", "insertions", "deletions"},
   "differs": true when shortstat's insertions or deletions are not the sums,
   "note": why, when they differ}
Commits come oldest first; counts are lines as git diff --numstat counts
them (binary files count none).`,
		Flags: func(fs *pflag.FlagSet) func(context.Context, *env, []string) error {
			by := fs.String("by", "harness", "group agent lines by harness, model, session or author")
			asJSON := fs.Bool("json", false, "one JSON document")
			return func(ctx context.Context, e *env, args []string) error {
				switch *by {
				case "harness", "model", "session", "author":
				default:
					return cli.Usagef("--by must be harness, model, session or author, not %q", *by)
				}
				if len(args) > 1 {
					return cli.Usagef("stats takes one revision range, not %d arguments (see `git lossless stats --help`)", len(args))
				}
				if len(args) == 1 && strings.HasPrefix(args[0], "-") {
					return cli.Usagef("%q is not a revision range", args[0])
				}
				st, err := cli.OpenStore(e)
				if err != nil {
					return err
				}
				top := st.Location().WorkTree
				if top == "" {
					return errors.New("stats needs a repository with a work tree")
				}
				rng, dflt := "", false
				if len(args) == 1 {
					rng = args[0]
				} else {
					rng, dflt = defaultStatsRange(ctx, top), true
				}
				rep, err := computeStats(ctx, st, top, rng, *by, blame.Options{HarnessOf: harnesses.WriterHarness()})
				if err != nil {
					return err
				}
				bw := bufio.NewWriter(e.Stdout)
				defer bw.Flush()
				if *asJSON {
					b, err := json.Marshal(rep)
					if err != nil {
						return err
					}
					bw.Write(b)
					bw.WriteByte('\n')
					return nil
				}
				printStats(bw, rep, dflt)
				return nil
			}
		},
	}
}

// statsCommit is one commit's line counts.
type statsCommit struct {
	Commit    string         `json:"commit"`
	Summary   string         `json:"summary"`
	Author    string         `json:"author"`
	Added     int            `json:"added"`
	Agent     int            `json:"agent"`
	Human     int            `json:"human"`
	Removed   int            `json:"removed"`
	Rewritten int            `json:"rewritten"`
	By        map[string]int `json:"by"`
}

type statsTotals struct {
	Commits   int            `json:"commits"`
	Added     int            `json:"added"`
	Agent     int            `json:"agent"`
	Human     int            `json:"human"`
	Removed   int            `json:"removed"`
	Rewritten int            `json:"rewritten"`
	By        map[string]int `json:"by"`
}

type shortstat struct {
	Files      int `json:"files"`
	Insertions int `json:"insertions"`
	Deletions  int `json:"deletions"`
}

// statsReport is what stats prints, the --json document as it is.
type statsReport struct {
	Range     string        `json:"range"`
	By        string        `json:"by"`
	Commits   []statsCommit `json:"commits"`
	Totals    statsTotals   `json:"totals"`
	Shortstat shortstat     `json:"shortstat"`
	Differs   bool          `json:"differs"`
	Note      string        `json:"note,omitempty"`
	// diffArgs is the git diff run for Shortstat and diffOut what it
	// printed, both shown as they are.
	diffArgs []string
	diffOut  string
}

// humanKey groups the lines no archived agent write produced.
const humanKey = "human"

// defaultStatsRange is the commits not pushed yet when the branch has an
// upstream — what a stats before a push is about — else all of HEAD.
func defaultStatsRange(ctx context.Context, top string) string {
	out, err := exec.CommandContext(ctx, "git", "-C", top, "rev-parse", "--abbrev-ref", "--symbolic-full-name", "@{upstream}").Output()
	if up := strings.TrimSpace(string(out)); err == nil && up != "" && !strings.HasPrefix(up, "-") {
		return up + "..HEAD"
	}
	return "HEAD"
}

// statsKey is the group an agent line counts in.
func statsKey(by string, o *blame.Origin, c *blame.CommitChange) string {
	var k string
	switch by {
	case "model":
		k = o.Model
	case "session":
		k = o.Session
		if k == "" {
			k = o.Writer
		}
	case "author":
		k = c.Author
	default:
		k = o.Harness
	}
	if k == "" {
		k = "unknown"
	}
	return k
}

// computeStats attributes the range's commits and runs git diff
// --shortstat over it.
func computeStats(ctx context.Context, st *gitstore.Store, top, rng, by string, opt blame.Options) (*statsReport, error) {
	changes, err := blame.Commits(ctx, st, rng, opt)
	if err != nil {
		return nil, err
	}
	rep := &statsReport{Range: rng, By: by, Commits: make([]statsCommit, 0, len(changes)), Totals: statsTotals{By: map[string]int{}}}
	t := &rep.Totals
	for i := range changes {
		c := &changes[i]
		sc := statsCommit{Commit: c.Commit, Summary: c.Summary, Author: c.Author, By: map[string]int{}}
		for _, f := range c.Files {
			sc.Added += len(f.Added)
			sc.Removed += f.Removed
			sc.Rewritten += f.Rewritten
			for _, l := range f.Added {
				if l.Origin == nil {
					sc.Human++
					continue
				}
				sc.Agent++
				sc.By[statsKey(by, l.Origin, c)]++
			}
		}
		if sc.Human > 0 {
			sc.By[humanKey] += sc.Human
		}
		for k, n := range sc.By {
			t.By[k] += n
		}
		t.Commits++
		t.Added += sc.Added
		t.Agent += sc.Agent
		t.Human += sc.Human
		t.Removed += sc.Removed
		t.Rewritten += sc.Rewritten
		rep.Commits = append(rep.Commits, sc)
	}
	if rep.Shortstat, rep.diffArgs, rep.diffOut, err = gitShortstat(ctx, top, rng); err != nil {
		return nil, err
	}
	if rep.Shortstat.Insertions != t.Added || rep.Shortstat.Deletions != t.Removed {
		rep.Differs = true
		rep.Note = differNote(ctx, top, rng, rep)
	}
	return rep, nil
}

// gitShortstat runs the real git diff --shortstat over the range: A..B and
// A...B as git diff reads them, one revision from the empty tree.
func gitShortstat(ctx context.Context, top, rng string) (shortstat, []string, string, error) {
	args := []string{"diff", "--shortstat", rng}
	if !strings.Contains(rng, "..") {
		// The empty tree of the repository's hash (SHA-1 or SHA-256),
		// computed, not written.
		out, err := exec.CommandContext(ctx, "git", "-C", top, "hash-object", "-t", "tree", "/dev/null").Output()
		if err != nil {
			return shortstat{}, nil, "", fmt.Errorf("git hash-object -t tree /dev/null: %w", err)
		}
		args = []string{"diff", "--shortstat", strings.TrimSpace(string(out)), rng}
	}
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", top, "-c", "diff.external=", "--no-pager"}, append(args, "--")...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return shortstat{}, nil, "", fmt.Errorf("git %s: %s", strings.Join(args, " "), msg)
	}
	s, err := parseShortstat(string(out))
	if err != nil {
		return shortstat{}, nil, "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return s, args, strings.TrimSpace(string(out)), nil
}

var shortstatPart = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(\d+) (files? changed|insertions?\(\+\)|deletions?\(-\))$`)
})

// parseShortstat reads " 3 files changed, 10 insertions(+), 2 deletions(-)"
// (parts with nothing to count are left out; no change prints nothing).
func parseShortstat(out string) (shortstat, error) {
	var s shortstat
	out = strings.TrimSpace(out)
	if out == "" {
		return s, nil
	}
	for _, part := range strings.Split(out, ",") {
		m := shortstatPart().FindStringSubmatch(strings.TrimSpace(part))
		if m == nil {
			return s, fmt.Errorf("unexpected shortstat %q", out)
		}
		n, _ := strconv.Atoi(m[1])
		switch m[2][0] {
		case 'f':
			s.Files = n
		case 'i':
			s.Insertions = n
		case 'd':
			s.Deletions = n
		}
	}
	return s, nil
}

// differNote says why git diff's numbers are not the per-commit sums.
func differNote(ctx context.Context, top, rng string, rep *statsReport) string {
	t, s := rep.Totals, rep.Shortstat
	var why []string
	if t.Added > s.Insertions || t.Removed > s.Deletions {
		why = append(why, "a line added by one commit and removed or changed by a later one counts in both commits, not in the diff")
	}
	out, err := exec.CommandContext(ctx, "git", "-C", top, "rev-list", "--count", "--merges", rng, "--").Output()
	if n, _ := strconv.Atoi(strings.TrimSpace(string(out))); err == nil && n > 0 {
		why = append(why, cli.Plural(n, "merge")+" of the range "+map[bool]string{true: "is", false: "are"}[n == 1]+
			" left out of the per-commit numbers (a merge's own changes, such as conflict resolutions, are only in the diff)")
	}
	if a, b, ok := strings.Cut(rng, ".."); ok && !strings.Contains(rng, "...") {
		if a == "" {
			a = "HEAD"
		}
		if b == "" {
			b = "HEAD"
		}
		if exec.CommandContext(ctx, "git", "-C", top, "merge-base", "--is-ancestor", a, b).Run() != nil {
			why = append(why, a+" is not an ancestor of "+b+": the diff also undoes the commits of "+a+" that "+b+" lacks")
		}
	}
	if len(why) == 0 {
		why = append(why, "the diff is of the range's ends, the sums are of its commits")
	}
	return strings.Join(why, "; ")
}

// statsSummaryWidth is how much of a commit's subject the table shows.
const statsSummaryWidth = 40

func cutRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-3]) + "..."
}

func percent(n, of int) string {
	if of == 0 {
		return "-"
	}
	return strconv.FormatFloat(100*float64(n)/float64(of), 'f', 1, 64) + "%"
}

// printStats writes the table: a line per commit, the totals by group,
// and git's shortstat of the range beside them.
func printStats(bw *bufio.Writer, rep *statsReport, dflt bool) {
	t := rep.Totals
	if len(rep.Commits) == 0 {
		fmt.Fprintf(bw, "no commit in %s", guard.Printable(rep.Range))
		if dflt {
			fmt.Fprint(bw, " (the default: commits not on the upstream yet; name a range, e.g. HEAD for all history)")
		}
		fmt.Fprintln(bw)
	} else {
		tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "COMMIT\tSUMMARY\tADDED\tAGENT\tHUMAN\tREMOVED\tREWRITTEN")
		for _, c := range rep.Commits {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\n", short(c.Commit), guard.Printable(cutRunes(c.Summary, statsSummaryWidth)),
				c.Added, c.Agent, c.Human, c.Removed, c.Rewritten)
		}
		tw.Flush()
		fmt.Fprintln(bw)
		fmt.Fprintf(bw, "%s: %s, %s added (agents %s, people %s), %s removed\n", guard.Printable(rep.Range), cli.Plural(t.Commits, "commit"),
			cli.Plural(t.Added, "line"), percent(t.Agent, t.Added), percent(t.Human, t.Added), cli.Plural(t.Removed, "line"))
		if written := t.Agent + t.Rewritten; written > 0 {
			fmt.Fprintf(bw, "agent lines: %d committed as written, %d changed or dropped before commit (%s kept)\n",
				t.Agent, t.Rewritten, percent(t.Agent, written))
		}
		fmt.Fprintln(bw)
		keys := make([]string, 0, len(t.By))
		for k := range t.By {
			if k != humanKey {
				keys = append(keys, k)
			}
		}
		sort.Slice(keys, func(i, j int) bool {
			if t.By[keys[i]] != t.By[keys[j]] {
				return t.By[keys[i]] > t.By[keys[j]]
			}
			return keys[i] < keys[j]
		})
		if t.Human > 0 || len(keys) == 0 {
			keys = append(keys, humanKey)
		}
		tw = tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "%s\tLINES\tSHARE\n", strings.ToUpper(rep.By))
		for _, k := range keys {
			fmt.Fprintf(tw, "%s\t%d\t%s\n", guard.Printable(k), t.By[k], percent(t.By[k], t.Added))
		}
		tw.Flush()
		fmt.Fprintln(bw)
	}
	got := rep.diffOut
	if got == "" {
		got = "(no change)"
	}
	fmt.Fprintf(bw, "git %s: %s\n", guard.Printable(strings.Join(rep.diffArgs, " ")), got)
	if rep.Differs {
		fmt.Fprintf(bw, "the per-commit sums differ (%s added, %s removed): %s\n", cli.Plural(t.Added, "line"), cli.Plural(t.Removed, "line"), rep.Note)
	} else if len(rep.Commits) > 0 {
		fmt.Fprintln(bw, "the per-commit sums are the same")
	}
}
