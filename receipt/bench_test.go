package receipt_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/receipt"
)

// The receipt benchmark fixture: a repository holding 100,000 events of
// 100 Claude Code-like sessions (one writer each, 1,000 events: reads,
// edits, partial reads, subagent reads and conversation spans over a pool
// of 2,000 files), one after the other, and two commits: P, the state of
// the 2,000 files before the last three sessions, and C, which changes 50
// files — 40 the last sessions edited (5 of them changed again by a
// human), 5 they read, 5 new. Built once (about a minute) and cached in
// os.TempDir() (LOSSLESS_BENCH_CACHE to put it elsewhere).
const (
	fxSessions  = 100
	fxPerWriter = 1000
	fxFiles     = 2000
	fxVersion   = "v2"
)

type fixture struct {
	dir      string
	commit   string // C
	wide     string // a commit whose window covers every session
	parent   string
	sessions int
}

var (
	fxOnce sync.Once
	fx     fixture
	fxErr  error
)

func benchFixture(b *testing.B) fixture {
	b.Helper()
	fxOnce.Do(func() {
		root := os.Getenv("LOSSLESS_BENCH_CACHE")
		if root == "" {
			root = os.TempDir()
		}
		dir := filepath.Join(root, "lossless-receipt-fixture-"+fxVersion)
		ids := filepath.Join(dir, ".git", "receipt-fixture-commits")
		if b, err := os.ReadFile(ids); err == nil {
			f := strings.Fields(string(b))
			if len(f) == 3 {
				fx = fixture{dir: dir, commit: f[0], wide: f[1], parent: f[2]}
				return
			}
		}
		os.RemoveAll(dir)
		fx, fxErr = buildFixture(dir)
		if fxErr == nil {
			fxErr = os.WriteFile(ids, []byte(fx.commit+" "+fx.wide+" "+fx.parent+"\n"), 0o644)
		}
		if fxErr != nil {
			os.RemoveAll(dir)
		}
	})
	if fxErr != nil {
		b.Fatal(fxErr)
	}
	return fx
}

func fxPath(i int) string { return fmt.Sprintf("pkg/d%02d/file%04d.go", i%40, i) }

func fxContent(path string, v int) []byte {
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "// %s, version %d\npackage d\n\n", path, v)
	for j := 0; buf.Len() < 500+v%7*60; j++ {
		fmt.Fprintf(&buf, "func f%d_%d(x int) int { return x*%d + %d } // keeps the order stable\n", v, j, j+1, v)
	}
	return buf.Bytes()
}

func buildFixture(dir string) (fixture, error) {
	ctx := context.Background()
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		return fixture{}, fmt.Errorf("git init: %v %s", err, out)
	}
	off := false
	st, err := gitstore.OpenDir(dir, gitstore.Options{Fsync: &off})
	if err != nil {
		return fixture{}, err
	}
	base := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)
	version := make([]int, fxFiles) // current version of each file on "disk"
	content := func(i int) []byte { return fxContent(fxPath(i), version[i]) }
	rng := rand.New(rand.NewPCG(7, 7))
	var parentState []int
	var edited []int // files the last three sessions edit
	sessStart := func(s int) time.Time { return base.Add(time.Duration(s) * 10 * time.Minute) }
	for s := range fxSessions {
		if s == fxSessions-3 {
			parentState = append([]int(nil), version...)
		}
		writer := fmt.Sprintf("cc-bench-%03d", s)
		session := fmt.Sprintf("bench-session-%03d", s)
		var recs []gitstore.Record
		at := sessStart(s)
		for e := range fxPerWriter {
			ts := at.Add(time.Duration(e) * 500 * time.Millisecond)
			ev := gitstore.Event{TS: ts, Session: session, Source: "hook", View: "full", Tool: "Read", Op: "read"}
			r := gitstore.Record{}
			f := rng.IntN(fxFiles)
			if s >= fxSessions-3 && e < 14*2 {
				// The last sessions read, then edit, 14 files each.
				f = (s-(fxSessions-3))*14 + e/2
				if e%2 == 1 {
					version[f]++
					ev.Op, ev.Tool = "edit", "Edit"
					edited = append(edited, f)
				}
				ev.SetPath(fxPath(f))
				r.Content, r.HasContent = content(f), true
			} else {
				switch k := rng.IntN(100); {
				case k < 40: // read
					ev.SetPath(fxPath(f))
					r.Content, r.HasContent = content(f), true
				case k < 48: // edit
					version[f]++
					ev.Op, ev.Tool = "edit", "Edit"
					ev.SetPath(fxPath(f))
					r.Content, r.HasContent = content(f), true
				case k < 53: // partial read
					ev.SetPath(fxPath(f))
					ev.View = "lines:3-5"
					lines := bytes.SplitAfter(content(f), []byte("\n"))
					r.Content, r.HasContent = bytes.Join(lines[2:5], nil), true
				case k < 58: // a subagent's read
					ev.Agent, ev.Sidechain = fmt.Sprintf("agent-%03d", s), true
					ev.SetPath(fxPath(f))
					r.Content, r.HasContent = content(f), true
				default: // a conversation span
					ev.Op, ev.Tool, ev.View, ev.Source = "span", "", "", "sweep"
					r.Content = []byte(fmt.Sprintf(`{"kind":"assistant","role":"assistant","text":"Step %d of session %d: I looked at %s and will now change the function that keeps the order stable."}`, e, s, fxPath(f)))
					r.HasContent = true
				}
			}
			ev.Key = fmt.Sprintf("toolu_%03d_%04d", s, e)
			r.Event = ev
			recs = append(recs, r)
		}
		if _, err := st.Import(ctx, writer, recs, 500); err != nil {
			return fixture{}, fmt.Errorf("import %s: %w", writer, err)
		}
	}
	// The commits, with git fast-import.
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
	for i := range fxFiles {
		parentFiles[fxPath(i)] = fxContent(fxPath(i), parentState[i])
	}
	tP := sessStart(fxSessions - 3).Add(-time.Minute)
	commit("refs/heads/main", 1, tP, "", parentFiles, false)
	// C: 40 edited files as the agents left them (5 changed again by a
	// human), 5 files the agents only read, 5 new ones.
	changed := map[string][]byte{}
	seen := map[int]bool{}
	var picks []int
	for _, f := range edited {
		if !seen[f] {
			seen[f] = true
			picks = append(picks, f)
		}
	}
	picks = picks[:40]
	for k, f := range picks {
		c := fxContent(fxPath(f), version[f])
		if k%8 == 0 {
			c = append(c, "// changed by a human after the agent\n"...)
		}
		changed[fxPath(f)] = c
	}
	for k := 0; len(changed) < 45; k++ {
		f := 1000 + k
		if version[f] != parentState[f] {
			continue
		}
		changed[fxPath(f)] = append(fxContent(fxPath(f), version[f]), "// touched\n"...)
	}
	for k := range 5 {
		changed[fmt.Sprintf("docs/new%d.md", k)] = []byte(fmt.Sprintf("new file %d\n", k))
	}
	tC := sessStart(fxSessions).Add(time.Minute)
	commit("refs/heads/main", 2, tC, ":1", changed, false)
	// The wide commit: a root-like commit whose parent predates every
	// session, changing 50 files many sessions touched.
	commit("refs/heads/wide-base", 3, base.Add(-time.Hour), "", map[string][]byte{"README": []byte("base\n")}, true)
	wide := map[string][]byte{}
	for i := range 50 {
		wide[fxPath(i*37%fxFiles)] = fxContent(fxPath(i*37%fxFiles), version[i*37%fxFiles])
	}
	commit("refs/heads/wide", 4, tC, ":3", wide, false)
	cmd := exec.Command("git", "-C", dir, "fast-import", "--quiet")
	cmd.Stdin = &fi
	if out, err := cmd.CombinedOutput(); err != nil {
		return fixture{}, fmt.Errorf("fast-import: %v %s", err, out)
	}
	rev := func(r string) string {
		out, _ := exec.Command("git", "-C", dir, "rev-parse", r).Output()
		return strings.TrimSpace(string(out))
	}
	return fixture{dir: dir, commit: rev("refs/heads/main"), wide: rev("refs/heads/wide"), parent: rev("refs/heads/main~1")}, nil
}

func openFixture(b *testing.B, f fixture) *gitstore.Store {
	b.Helper()
	st, err := gitstore.OpenDir(f.dir, gitstore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	return st
}

// BenchmarkReceiptBuild: the receipt of a commit touching 50 files in a
// repository holding 100,000 events. Target: 200 ms.
func BenchmarkReceiptBuild(b *testing.B) {
	f := benchFixture(b)
	ctx := context.Background()
	for _, mode := range []string{"tokens=cached", "tokens=cold", "tokens=off"} {
		b.Run(mode, func(b *testing.B) {
			st := openFixture(b, f)
			r, err := receipt.Build(ctx, st, f.commit, receipt.Options{NoTokens: mode == "tokens=off"})
			if err != nil {
				b.Fatal(err)
			}
			cache := filepath.Join(f.dir, ".git", "lossless", "receipts", "tokens-o200k")
			b.ResetTimer()
			for range b.N {
				if mode == "tokens=cold" {
					b.StopTimer()
					os.RemoveAll(cache)
					b.StartTimer()
				}
				if _, err := receipt.Build(ctx, st, f.commit, receipt.Options{NoTokens: mode == "tokens=off"}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(r.Paths)), "paths")
			b.ReportMetric(float64(r.Coverage.Events), "events/receipt")
			b.ReportMetric(float64(len(r.Reads)), "reads")
		})
	}
}

// BenchmarkReceiptBuildWide: a commit whose window covers all 100 sessions
// and whose 50 files nearly all of them touched: the receipt takes in
// every session's events. A stress figure, not a target.
func BenchmarkReceiptBuildWide(b *testing.B) {
	f := benchFixture(b)
	ctx := context.Background()
	st := openFixture(b, f)
	r, err := receipt.Build(ctx, st, f.wide, receipt.Options{})
	if err != nil {
		b.Fatal(err)
	}
	body, _ := r.Marshal()
	b.ResetTimer()
	for range b.N {
		if _, err := receipt.Build(ctx, st, f.wide, receipt.Options{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(r.Contexts)), "contexts")
	b.ReportMetric(float64(r.Coverage.Events), "events/receipt")
	b.ReportMetric(float64(len(body)), "receipt-bytes")
}

// BenchmarkReceiptSave: clear-sign the receipt and store it as a signed
// note (blob, tree, signed commit, fsync, ref under its lock).
func BenchmarkReceiptSave(b *testing.B) {
	f := benchFixture(b)
	ctx := context.Background()
	st := openFixture(b, f)
	r, err := receipt.Build(ctx, st, f.commit, receipt.Options{})
	if err != nil {
		b.Fatal(err)
	}
	k := theKey(b)
	b.ResetTimer()
	for range b.N {
		if _, _, err := receipt.Save(ctx, st, r, k); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReceiptVerify: verify the stored receipt of that commit.
// Target: 100 ms.
func BenchmarkReceiptVerify(b *testing.B) {
	f := benchFixture(b)
	ctx := context.Background()
	st := openFixture(b, f)
	k := theKey(b)
	r, err := receipt.Build(ctx, st, f.commit, receipt.Options{})
	if err != nil {
		b.Fatal(err)
	}
	if _, _, err := receipt.Save(ctx, st, r, k); err != nil {
		b.Fatal(err)
	}
	kr := keyring(b, k)
	s, err := receipt.Load(ctx, st, k.Writer(), f.commit)
	if err != nil {
		b.Fatal(err)
	}
	if res := receipt.Verify(ctx, st, s, kr); !res.OK() {
		b.Fatalf("verify: %+v", res.Problems)
	}
	b.ResetTimer()
	for range b.N {
		if res := receipt.Verify(ctx, st, s, kr); !res.OK() {
			b.Fatal(res.Problems)
		}
	}
}
