// Package receiptfixture builds the repository receipts are measured on
// (the 100,000-event fixture), for
// both the receipt package's Go benchmarks and `git lossless bench
// receipt`: Claude Code-like sessions (one writer each: reads, edits,
// partial reads, subagent reads and conversation spans over a pool of
// files), one after the other, and two commits, P and C. C changes 50
// files against P: 40 that the last three sessions edited (5 of them
// changed again by a human), 5 they only read, 5 new ones. A third commit,
// Wide, has a window covering every session, for a stress figure.
//
// File contents are code-like lines unique to their file; an edit changes
// one line, so the versions of one file share every other line, as real
// edits do, and no line is shared across files beyond the package clause.
// That matters to what is measured: token counting reuses the count of a
// line seen before, and a fixture whose files shared their lines would make
// that look better than it is.
//
// It is a fixture, not part of git-lossless: only tests and the bench
// commands of cmd/git-lossless may import it, never a production package
// (internal/layoutcheck enforces that). It depends on gitstore and
// internal/testkit/benchdata, not on testing, so the bench commands can
// link it.
package receiptfixture

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/hooks/claudecode"
	"github.com/git-lossless/git-lossless/internal/testkit/benchdata"
)

// Version names the generator: a fixture built by another version is
// rebuilt, never reused.
const Version = "v3"

// Fixture sizes the repository: Sessions writers of PerSession events
// each over a pool of Files files.
type Fixture struct {
	Sessions   int
	PerSession int
	Files      int
}

// Default is the size the targets are set for: 100 sessions of 1,000
// events (100,000 events) over 2,000 files.
func Default() Fixture { return Fixture{Sessions: 100, PerSession: 1000, Files: 2000} }

// ForEvents sizes a fixture of about n events: sessions of 1,000 events
// (fewer when n is small), at least 3 sessions, at least 200 files.
func ForEvents(n int) Fixture {
	s := max(3, n/1000)
	return Fixture{Sessions: s, PerSession: max(30, n/s), Files: min(2000, max(200, n/50))}
}

// Events is the number of events the fixture holds.
func (f Fixture) Events() int { return f.Sessions * f.PerSession }

// Name is a directory name that identifies the fixture's contents.
func (f Fixture) Name() string {
	return fmt.Sprintf("lossless-receipt-fixture-%s-s%d-e%d-f%d", Version, f.Sessions, f.PerSession, f.Files)
}

func (f Fixture) check() error {
	if f.Sessions < 3 || f.PerSession < 30 || f.Files < 200 {
		return errors.New("receipt fixture needs at least 3 sessions of 30 events and 200 files")
	}
	return nil
}

// Built is a fixture on disk.
type Built struct {
	Dir    string // the repository (work tree)
	Commit string // C: 50 changed files, the target's commit
	Parent string // P, C's parent
	Wide   string // a commit whose window covers every session
}

// idsFile holds the commit ids; it is written last, so it also marks a
// complete fixture.
const idsFile = "receipt-fixture-commits"

// Cached returns the fixture under root, building it there on first use.
// An incomplete fixture (an interrupted build) is rebuilt.
func (f Fixture) Cached(ctx context.Context, root string) (Built, error) {
	dir := filepath.Join(root, f.Name())
	if b, err := os.ReadFile(filepath.Join(dir, ".git", idsFile)); err == nil {
		if ids := strings.Fields(string(b)); len(ids) == 3 {
			return Built{Dir: dir, Commit: ids[0], Parent: ids[1], Wide: ids[2]}, nil
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
	ids := bt.Commit + " " + bt.Parent + " " + bt.Wide + "\n"
	if err := os.WriteFile(filepath.Join(dir, ".git", idsFile), []byte(ids), 0o644); err != nil {
		return Built{}, fmt.Errorf("mark fixture complete: %w", err)
	}
	return bt, nil
}

// Path is the repository path of pool file i.
func Path(i int) string { return fmt.Sprintf("pkg/d%02d/file%04d.go", i%40, i) }

// Content is version v of pool file i: about 0.5-1 KB of Go-like
// lines naming the file, where edit u (u = 1..v) rewrote line u mod n.
func Content(i, v int) []byte {
	n := 6 + i%7
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "// %s\npackage d\n\n", Path(i))
	for j := range n {
		// The last edit of line j: the largest u <= v with u%n == j.
		last := v - ((v-j)%n+n)%n
		if last < 1 {
			last = 0
		}
		fmt.Fprintf(&buf, "func f%d_%d(x int) int { return x*%d + %d } // keeps the order of file %d stable\n", i, j, j+1, last, i)
	}
	return buf.Bytes()
}

// Build creates the fixture as a new repository at dir (fsync off: it is
// rebuilt, never recovered).
func (f Fixture) Build(ctx context.Context, dir string) (Built, error) {
	if err := f.check(); err != nil {
		return Built{}, err
	}
	if err := benchdata.GitInit(dir); err != nil {
		return Built{}, err
	}
	off := false
	st, err := gitstore.OpenDir(dir, gitstore.Options{Fsync: &off})
	if err != nil {
		return Built{}, err
	}
	base := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)
	version := make([]int, f.Files) // current version of each file on "disk"
	content := func(i int) []byte { return Content(i, version[i]) }
	rng := rand.New(rand.NewPCG(7, 7))
	var parentState []int
	var edited []int // files the last three sessions edit
	sessStart := func(s int) time.Time { return base.Add(time.Duration(s) * 10 * time.Minute) }
	step := 10 * time.Minute / time.Duration(f.PerSession+1)
	for s := range f.Sessions {
		if err := ctx.Err(); err != nil {
			return Built{}, err
		}
		last := s - (f.Sessions - 3) // 0, 1, 2 for the last three sessions
		if last == 0 {
			parentState = append([]int(nil), version...)
		}
		writer := fmt.Sprintf("%sbench-%03d", claudecode.Prefix, s)
		session := fmt.Sprintf("bench-session-%03d", s)
		recs := make([]gitstore.Record, 0, f.PerSession)
		for e := range f.PerSession {
			ts := sessStart(s).Add(time.Duration(e) * step)
			ev := gitstore.Event{TS: ts, Session: session, Source: "hook", View: "full", Tool: "Read", Op: gitstore.OpRead}
			r := gitstore.Record{}
			file := rng.IntN(f.Files)
			if last >= 0 && e < 14*2 {
				// The last sessions read, then edit, 14 files each.
				file = last*14 + e/2
				if e%2 == 1 {
					version[file]++
					ev.Op, ev.Tool = gitstore.OpEdit, "Edit"
					edited = append(edited, file)
				}
				ev.SetPath(Path(file))
				r.Content, r.HasContent = content(file), true
			} else {
				switch k := rng.IntN(100); {
				case k < 40: // read
					ev.SetPath(Path(file))
					r.Content, r.HasContent = content(file), true
				case k < 48: // edit
					version[file]++
					ev.Op, ev.Tool = gitstore.OpEdit, "Edit"
					ev.SetPath(Path(file))
					r.Content, r.HasContent = content(file), true
				case k < 53: // partial read: Claude Code archives the lines shown
					ev.SetPath(Path(file))
					ev.View = "lines:3-5"
					lines := bytes.SplitAfter(content(file), []byte("\n"))
					r.Content, r.HasContent = bytes.Join(lines[2:5], nil), true
				case k < 58: // a subagent's read
					ev.Agent, ev.Sidechain = fmt.Sprintf("agent-%03d", s), true
					ev.SetPath(Path(file))
					r.Content, r.HasContent = content(file), true
				default: // a conversation span
					ev.Op, ev.Tool, ev.View, ev.Source = gitstore.OpSpan, "", "", "sweep"
					r.Content = []byte(fmt.Sprintf(`{"kind":"assistant","role":"assistant","text":"Step %d of session %d: I looked at %s and will now change the function that keeps the order stable."}`, e, s, Path(file)))
					r.HasContent = true
				}
			}
			ev.Key = fmt.Sprintf("toolu_%03d_%04d", s, e)
			r.Event = ev
			recs = append(recs, r)
		}
		if _, err := st.Import(ctx, writer, recs, 500); err != nil {
			return Built{}, fmt.Errorf("import %s: %w", writer, err)
		}
	}
	return f.commits(ctx, dir, base, sessStart(f.Sessions).Add(time.Minute), sessStart(f.Sessions-3).Add(-time.Minute), version, parentState, edited)
}

// commits writes P, C and the wide commit with git fast-import.
func (f Fixture) commits(ctx context.Context, dir string, base, tC, tP time.Time, version, parentState, edited []int) (Built, error) {
	var fi bytes.Buffer
	blob := func(data []byte) {
		fmt.Fprintf(&fi, "data %d\n", len(data))
		fi.Write(data)
		fi.WriteByte('\n')
	}
	commit := func(ref string, mark int, when time.Time, from string, files map[string][]byte, deleteAll bool) {
		fmt.Fprintf(&fi, "commit %s\nmark :%d\ncommitter Dev <dev@example.com> %d +0000\n", ref, mark, when.Unix())
		blob([]byte("bench commit\n"))
		if from != "" {
			fmt.Fprintf(&fi, "from %s\n", from)
		}
		if deleteAll {
			fi.WriteString("deleteall\n")
		}
		names := make([]string, 0, len(files))
		for n := range files {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			fmt.Fprintf(&fi, "M 100644 inline %s\n", n)
			blob(files[n])
		}
	}
	parentFiles := map[string][]byte{}
	for i := range f.Files {
		parentFiles[Path(i)] = Content(i, parentState[i])
	}
	commit("refs/heads/main", 1, tP, "", parentFiles, false)
	// C: 40 edited files as the agents left them (5 changed again by a
	// human), 5 files the agents only read, 5 new ones.
	changed := map[string][]byte{}
	seen := map[int]bool{}
	var picks []int
	for _, i := range edited {
		if !seen[i] {
			seen[i] = true
			picks = append(picks, i)
		}
	}
	if len(picks) < 40 {
		return Built{}, fmt.Errorf("the last sessions edited %d files, want 40", len(picks))
	}
	for k, i := range picks[:40] {
		c := Content(i, version[i])
		if k%8 == 0 {
			c = append(c, "// changed by a human after the agent\n"...)
		}
		changed[Path(i)] = c
	}
	for k := 0; len(changed) < 45 && f.Files/2+k < f.Files; k++ {
		i := f.Files/2 + k
		if version[i] != parentState[i] || changed[Path(i)] != nil {
			continue
		}
		changed[Path(i)] = append(Content(i, version[i]), "// touched\n"...)
	}
	for k := range 5 {
		changed[fmt.Sprintf("docs/new%d.md", k)] = []byte(fmt.Sprintf("new file %d\n", k))
	}
	commit("refs/heads/main", 2, tC, ":1", changed, false)
	// The wide commit: its parent predates every session, and it changes
	// 50 files many sessions touched.
	commit("refs/heads/wide-base", 3, base.Add(-time.Hour), "", map[string][]byte{"README": []byte("base\n")}, true)
	wide := map[string][]byte{}
	for k := range 50 {
		i := k * 37 % f.Files
		wide[Path(i)] = Content(i, version[i])
	}
	commit("refs/heads/wide", 4, tC, ":3", wide, false)
	cmd := exec.CommandContext(ctx, "git", "-C", dir, "fast-import", "--quiet")
	cmd.Stdin = &fi
	if out, err := cmd.CombinedOutput(); err != nil {
		return Built{}, fmt.Errorf("git fast-import: %v: %s", err, out)
	}
	rev := func(r string) (string, error) {
		out, err := exec.CommandContext(ctx, "git", "-C", dir, "rev-parse", "--verify", r).Output()
		if err != nil {
			return "", fmt.Errorf("git rev-parse %s: %w", r, err)
		}
		return strings.TrimSpace(string(out)), nil
	}
	var bt Built
	bt.Dir = dir
	var err error
	if bt.Commit, err = rev("refs/heads/main"); err != nil {
		return Built{}, err
	}
	if bt.Parent, err = rev("refs/heads/main~1"); err != nil {
		return Built{}, err
	}
	if bt.Wide, err = rev("refs/heads/wide"); err != nil {
		return Built{}, err
	}
	return bt, nil
}
