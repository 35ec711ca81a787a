// Package blamefixture builds the repository line provenance is measured
// on, for package blame's Go benchmarks and `git lossless bench stats`: a
// history of Commits commits over a pool of Go-like files where about half
// the commits carry agent writes archived in the store (a read of the file
// as it was, then the agent's edit, by one of four contexts of two
// harnesses), some of them changed by a person before the commit, and the
// other half are a person's own edits.
//
// Edits are realistic in size: a function of 4 to 30 lines inserted at a
// random place, now and then a few lines deleted, one to three files per
// commit. Lines are code-like and unique to where they were written, with
// the blank lines and closing braces real code has between them (lines
// that are not distinctive on their own).
//
// It is a fixture, not part of git-lossless: only tests and the bench
// commands of cmd/git-lossless may import it (internal/layoutcheck
// enforces that). It depends on gitstore, not on testing, so the bench
// commands can link it.
package blamefixture

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
)

// Version names the generator: a fixture built by another version is
// rebuilt, never reused.
const Version = "v2"

// Fixture sizes the repository.
type Fixture struct {
	Commits int // commits on main, the first one the pool's initial files
	Files   int // files in the pool
}

// Default is the size the stats target is stated for: 1,000 commits.
func Default() Fixture { return Fixture{Commits: 1000, Files: 40} }

// Name is a directory name that identifies the fixture's contents.
func (f Fixture) Name() string {
	return fmt.Sprintf("lossless-blame-fixture-%s-c%d-f%d", Version, f.Commits, f.Files)
}

// Built is a fixture on disk, with the generator's own bookkeeping of it.
type Built struct {
	Dir          string // the repository (work tree)
	Commits      int
	AgentCommits int // commits carrying agent writes
	Events       int // archived events
	// AgentLines is how many lines the commits added that agent writes
	// produced as committed; Rewritten how many lines agent writes added
	// that a person changed before committing.
	AgentLines, Rewritten int
	// PerCommit is the same bookkeeping per commit, oldest first; only
	// Build fills it (Cached returns a fixture built before without it).
	PerCommit []Book
}

// Book is one commit's bookkeeping.
type Book struct{ Agent, Rewritten int }

// doneFile marks a complete fixture and holds its bookkeeping.
const doneFile = "blame-fixture-done"

// Cached returns the fixture under root, building it there on first use.
// An incomplete fixture (an interrupted build) is rebuilt.
func (f Fixture) Cached(ctx context.Context, root string) (Built, error) {
	dir := filepath.Join(root, f.Name())
	if b, err := os.ReadFile(filepath.Join(dir, ".git", doneFile)); err == nil {
		bt := Built{Dir: dir}
		if n, _ := fmt.Sscanf(string(b), "%d %d %d %d %d", &bt.Commits, &bt.AgentCommits, &bt.Events, &bt.AgentLines, &bt.Rewritten); n == 5 {
			return bt, nil
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return Built{}, fmt.Errorf("remove incomplete fixture: %w", err)
	}
	bt, err := f.Build(ctx, dir)
	if err != nil {
		os.RemoveAll(dir)
		return Built{}, err
	}
	mark := fmt.Sprintf("%d %d %d %d %d\n", bt.Commits, bt.AgentCommits, bt.Events, bt.AgentLines, bt.Rewritten)
	if err := os.WriteFile(filepath.Join(dir, ".git", doneFile), []byte(mark), 0o644); err != nil {
		return Built{}, fmt.Errorf("mark fixture complete: %w", err)
	}
	return bt, nil
}

// Path is the repository path of pool file i.
func Path(i int) string { return fmt.Sprintf("pkg/d%d/file%03d.go", i%8, i) }

type agent struct{ writer, session, harness string }

var agents = []agent{
	{"cc-bench-a", "bench-a", "claude-code"},
	{"cc-bench-b", "bench-b", "claude-code"},
	{"codex-bench-c", "bench-c", "codex"},
	{"codex-bench-d", "bench-d", "codex"},
}

// gen makes code-like lines, each distinctive line unique.
type gen struct {
	rng *rand.Rand
	n   int
}

// block is a function of 5 to 31 lines: a comment, a signature, a body,
// and a closing brace that names it. Functions follow each other without
// a blank line between them: a block whose first or last line is the same
// as the line beside where it goes (a blank line at both ends) could be
// put a line higher or lower by a diff — a slider — and git's diff and
// the generator's bookkeeping would disagree on which of the two lines is
// new. Inside a body, lines that are not distinctive ("\t}", "\treturn
// x") are as common as in real code.
func (g *gen) block() []string {
	g.n++
	out := []string{fmt.Sprintf("// step%d works on x.", g.n), fmt.Sprintf("func step%d(x int) int {", g.n)}
	for j := range 1 + g.rng.IntN(27) {
		g.n++
		switch g.rng.IntN(6) {
		case 0:
			out = append(out, fmt.Sprintf("\tif x > %d {", g.n), fmt.Sprintf("\t\tx -= limit%d", g.n), "\t}")
		default:
			out = append(out, fmt.Sprintf("\tx = x*%d + value%d // line %d", j+2, g.n, g.n))
		}
	}
	return append(out, "\treturn x", fmt.Sprintf("} // step%d", g.n))
}

func content(lines []string) []byte {
	if len(lines) == 0 {
		return nil
	}
	return []byte(strings.Join(lines, "\n") + "\n")
}

// Build creates the fixture as a new repository at dir (fsync off: it is
// rebuilt, never recovered).
func (f Fixture) Build(ctx context.Context, dir string) (Built, error) {
	if f.Commits < 2 || f.Files < 3 {
		return Built{}, fmt.Errorf("blame fixture needs at least 2 commits and 3 files")
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main", dir}, {"-C", dir, "config", "gc.auto", "0"}} {
		if out, err := exec.CommandContext(ctx, "git", args...).CombinedOutput(); err != nil {
			return Built{}, fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	off := false
	st, err := gitstore.OpenDir(dir, gitstore.Options{Fsync: &off})
	if err != nil {
		return Built{}, err
	}
	bt := Built{Dir: dir, Commits: f.Commits}
	g := &gen{rng: rand.New(rand.NewPCG(21, 21))}
	rng := g.rng
	files := make([][]string, f.Files)
	base := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)
	recs := map[string][]gitstore.Record{}
	var fi bytes.Buffer
	commit := func(n int, ts time.Time, author, msg string, changed map[int]bool) {
		stamp := fmt.Sprintf("%d +0000", ts.Unix())
		fmt.Fprintf(&fi, "commit refs/heads/main\nmark :%d\nauthor %s <%s@example.invalid> %s\ncommitter %s <%s@example.invalid> %s\ndata %d\n%s\n",
			n, author, strings.ToLower(author), stamp, author, strings.ToLower(author), stamp, len(msg), msg)
		if n > 1 {
			fmt.Fprintf(&fi, "from :%d\n", n-1)
		}
		for i := range files {
			if changed[i] {
				c := content(files[i])
				fmt.Fprintf(&fi, "M 100644 inline %s\ndata %d\n%s\n", Path(i), len(c), c)
			}
		}
	}
	all := map[int]bool{}
	for i := range files {
		files[i] = append([]string{"package d"}, g.block()...)
		for range 4 + rng.IntN(8) {
			files[i] = append(files[i], g.block()...)
		}
		all[i] = true
	}
	commit(1, base, "Pat", "the pool", all)
	bt.PerCommit = append(bt.PerCommit, Book{})
	for n := 2; n <= f.Commits; n++ {
		var book Book
		ts := base.Add(time.Duration(n) * time.Minute)
		changed := map[int]bool{}
		isAgent := rng.IntN(2) == 0
		a := agents[rng.IntN(len(agents))]
		author := []string{"Pat", "Sam"}[rng.IntN(2)]
		for k := range 1 + rng.IntN(3) {
			i := rng.IntN(f.Files)
			if changed[i] {
				continue
			}
			changed[i] = true
			at := 1 + rng.IntN(len(files[i]))
			for at < len(files[i]) && at > 1 && !strings.HasPrefix(files[i][at-1], "} // step") {
				at++ // between two functions
			}
			blk := g.block()
			if !isAgent {
				files[i] = append(files[i][:at:at], append(blk, files[i][at:]...)...)
				continue
			}
			evTS := ts.Add(time.Duration(-40+10*k) * time.Second)
			ev := func(op gitstore.Op, ts time.Time, body []byte) gitstore.Record {
				e := gitstore.Event{TS: ts, Session: a.session, Source: "hook", View: "full", Op: op, Harness: a.harness,
					Tool: map[gitstore.Op]string{gitstore.OpRead: "Read", gitstore.OpEdit: "Edit"}[op]}
				if op == gitstore.OpEdit {
					e.Key = fmt.Sprintf("call-%d-%d", n, k)
				}
				e.SetPath(Path(i))
				return gitstore.Record{Event: e, Content: body, HasContent: true}
			}
			recs[a.writer] = append(recs[a.writer], ev("read", evTS, content(files[i])))
			files[i] = append(files[i][:at:at], append(blk, files[i][at:]...)...)
			recs[a.writer] = append(recs[a.writer], ev("edit", evTS.Add(5*time.Second), content(files[i])))
			bt.Events += 2
			book.Agent += len(blk)
			if rng.IntN(4) == 0 {
				// The person changes one of the agent's lines (its
				// signature) before the commit.
				files[i][at+1] += " // checked by hand"
				book.Agent--
				book.Rewritten++
			}
		}
		if isAgent {
			bt.AgentCommits++
		} else if rng.IntN(3) == 0 {
			// Now and then a person deletes a few lines too.
			for i := range changed {
				if len(files[i]) > 20 {
					at := 2 + rng.IntN(len(files[i])-10)
					files[i] = append(files[i][:at:at], files[i][at+1+rng.IntN(4):]...)
				}
			}
		}
		commit(n, ts, author, fmt.Sprintf("change %d", n), changed)
		bt.PerCommit = append(bt.PerCommit, book)
		bt.AgentLines += book.Agent
		bt.Rewritten += book.Rewritten
	}
	cmd := exec.CommandContext(ctx, "git", "-C", dir, "fast-import", "--quiet")
	cmd.Stdin = &fi
	if out, err := cmd.CombinedOutput(); err != nil {
		return Built{}, fmt.Errorf("git fast-import: %v: %s", err, out)
	}
	for _, a := range agents {
		rs := recs[a.writer]
		for len(rs) > 0 {
			k := min(len(rs), 100)
			if _, err := st.Append(ctx, a.writer, rs[:k]); err != nil {
				return Built{}, fmt.Errorf("archive %s: %w", a.writer, err)
			}
			rs = rs[k:]
		}
	}
	return bt, nil
}
