package main

import (
	"context"
	"encoding/json"
	"github.com/git-lossless/git-lossless/internal/cli"
	"github.com/git-lossless/git-lossless/internal/tokens"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/meter"
)

// TestMeterAndPackCLI drives `git lossless meter` and `git lossless pack`
// as a user types them, over a repository whose archive the test writes
// through gitstore (as the hooks do) with known contents: the figures
// equal counts the test makes itself over the known strings, the table
// and the groupings show them, bad flags are usage errors, and the pack is
// the same bytes twice and after `git gc --aggressive --prune=now`.
func TestMeterAndPackCLI(t *testing.T) {
	sb := newSandbox(t)
	repo := sb.initRepo("proj")
	if d, err := filepath.EvalSymlinks(repo); err == nil {
		repo = d
	}
	off := false
	st, err := gitstore.OpenDir(repo, gitstore.Options{Fsync: &off})
	if err != nil {
		t.Fatal(err)
	}
	const (
		a1 = "package a\n\n// A names the first answer; the comment is long so that a.go\n// holds more tokens than notes.md in every grouping.\nfunc A() string { return \"first\" }\n"
		a2 = "package a\n\n// A names the second answer; the comment is long so that a.go\n// holds more tokens than notes.md in every grouping.\nfunc A() string { return \"second, after an edit\" }\n"
		b1 = "# Notes\n\nThe build runs `go test ./...` before every push.\n"
	)
	now := time.Now().UTC().Truncate(time.Second)
	seq := 0
	add := func(at time.Time, session, agent, op, path, content string) {
		t.Helper()
		seq++
		r := gitstore.Record{Event: gitstore.Event{TS: at, Session: session, Agent: agent, Sidechain: agent != "",
			Source: "hook", Op: gitstore.Op(op), View: "full", Tool: "Read", Key: "toolu_" + strconv.Itoa(seq)}}
		if op == "compact" {
			r.Source, r.View, r.Tool = "sweep", "", ""
		} else {
			r.SetPath(path)
			r.Content, r.HasContent = []byte(content), true
		}
		if _, err := st.Append(context.Background(), gitstore.WriterName("cc-", session), []gitstore.Record{r}); err != nil {
			t.Fatal(err)
		}
	}
	m := func(n int) time.Time { return now.Add(-2*time.Hour + time.Duration(n)*time.Minute) }
	add(now.Add(-48*time.Hour), "sess-1", "", "read", "notes.md", b1) // first, outside a 24h window
	add(m(1), "sess-1", "", "read", "a.go", a1)                       // first
	add(m(2), "sess-1", "", "read", "a.go", a1)                       // saveable
	add(m(3), "sess-1", "", "read", "a.go", a2)                       // changed
	add(m(4), "sess-1", "", "compact", "", "")                        //
	add(m(5), "sess-1", "", "read", "a.go", a2)                       // unchanged after a compaction
	add(m(6), "sess-1", "", "read", "notes.md", b1)                   // unchanged after a compaction
	add(m(7), "sess-1", "sub-1", "read", "a.go", a2)                  // first (another context)
	add(m(8), "sess-2", "", "restore", "notes.md", b1)                // first
	add(m(9), "sess-2", "", "read", "notes.md", b1)                   // saveable
	tok := func(s string) int64 {
		n, err := tokens.CountText(s)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	ta1, ta2, tb1 := tok(a1), tok(a2), tok(b1)

	type meterJSON struct {
		By        string        `json:"by"`
		Contexts  int           `json:"contexts"`
		Totals    meter.Figures `json:"totals"`
		RowsTotal int           `json:"rows_total"`
		Rows      []meter.Row   `json:"rows"`
	}
	meterJ := func(args ...string) meterJSON {
		t.Helper()
		var got meterJSON
		out := sb.ok(repo, append([]string{"meter", "--json"}, args...)...).stdout
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("meter --json: %v\n%s", err, out)
		}
		return got
	}
	got := meterJ()
	want := meter.Figures{
		Reads: 9, Tokens: 4*tb1 + 2*ta1 + 3*ta2,
		ReReads: 5, ReReadTokens: ta1 + ta2 + ta2 + tb1 + tb1,
		Changed: 1, ChangedTokens: ta2,
		Unchanged: 4, AfterCompaction: 2, Saveable: 2, SavedTokens: ta1 + tb1,
		ReReadRate: 5.0 / 9.0, ChangedRate: 0.2,
	}
	if got.Totals != want || got.Contexts != 3 || got.By != "file" {
		t.Errorf("meter --json: %+v\nwant totals %+v, 3 contexts, by file", got, want)
	}
	if got.RowsTotal != 2 || len(got.Rows) != 2 || got.Rows[0].Key != "a.go" || got.Rows[0].Reads != 5 || got.Rows[1].Key != "notes.md" || got.Rows[1].Reads != 4 || got.Rows[1].SavedTokens != tb1 {
		t.Errorf("rows by file: %+v", got.Rows)
	}
	// A 24h window drops notes.md's first read but still calls its read
	// after the compaction a re-read.
	w := meterJ("--since", "24h")
	if w.Totals.Reads != 8 || w.Totals.ReReads != 5 || w.Totals.SavedTokens != want.SavedTokens {
		t.Errorf("--since 24h: %+v", w.Totals)
	}
	if s := meterJ("--session", "sess-2", "--by", "session"); s.Totals.Reads != 2 || s.Totals.SavedTokens != tb1 || len(s.Rows) != 1 || s.Rows[0].Key != "sess-2" {
		t.Errorf("--session sess-2 --by session: %+v", s)
	}
	if a := meterJ("--by", "agent"); a.RowsTotal != 3 {
		t.Errorf("--by agent: %d rows, want 3 contexts", a.RowsTotal)
	} else {
		keys := map[string]bool{}
		for _, r := range a.Rows {
			keys[r.Key] = true
		}
		if !keys["sess-1 main"] || !keys["sess-1 sub-1"] || !keys["sess-2 main"] {
			t.Errorf("--by agent rows: %v", keys)
		}
	}
	if r := meterJ("--by", "repo"); len(r.Rows) != 1 || r.Rows[0].Key != repo || r.Rows[0].Figures != want {
		t.Errorf("--by repo: %+v, want one row %s", r.Rows, repo)
	}
	table := sb.ok(repo, "meter").stdout
	for _, s := range []string{"read tokens (o200k)", "re-reads", "saved", cli.Commas(want.SavedTokens), "a.go", "notes.md", "FILE"} {
		if !strings.Contains(table, s) {
			t.Errorf("meter table lacks %q:\n%s", s, table)
		}
	}
	if out := sb.ok(repo, "meter", "--limit", "1").stdout; !strings.Contains(out, "(1 of 2 rows") || strings.Contains(out, "notes.md") {
		t.Errorf("--limit 1:\n%s", out)
	}
	for _, bad := range [][]string{{"meter", "--by", "colour"}, {"meter", "--since", "soon"}, {"meter", "extra"}, {"pack", "--budget", "0"}, {"pack", "--since", "x"}} {
		if r := sb.run(repo, bad...); r.code != exitUsage {
			t.Errorf("%v: exit %d, want %d\n%s", bad, r.code, exitUsage, r.stderr)
		}
	}
	if out := sb.ok(repo, "meter", "--help").stdout; !strings.Contains(out, "would have answered") {
		t.Errorf("meter --help does not define saved tokens:\n%s", out)
	}

	// pack: the working tree holds a.go as last read and notes.md changed.
	writeFile(t, filepath.Join(repo, "a.go"), []byte(a2))
	writeFile(t, filepath.Join(repo, "notes.md"), []byte(b1+"\nAnd lint.\n"))
	one := sb.ok(repo, "pack", "--budget", "400").stdout
	two := sb.ok(repo, "pack", "--budget", "400").stdout
	if one != two || !strings.Contains(one, a2) || !strings.Contains(one, "And lint.") {
		t.Fatalf("pack twice:\n%s\n---\n%s", one, two)
	}
	sb.git(repo, "gc", "--aggressive", "--prune=now", "--quiet")
	if err := os.RemoveAll(filepath.Join(repo, ".git", "lossless", "index")); err != nil {
		t.Fatal(err)
	}
	if three := sb.ok(repo, "pack", "--budget", "400").stdout; three != one {
		t.Errorf("pack after git gc differs:\n%s\n---\n%s", one, three)
	}
	var p struct {
		Budget int64            `json:"budget"`
		Tokens int64            `json:"tokens"`
		Window string           `json:"window"`
		Files  []meter.PackFile `json:"files"`
	}
	out := sb.ok(repo, "pack", "--budget", "400", "--json").stdout
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("pack --json: %v\n%s", err, out)
	}
	if p.Budget != 400 || p.Window != "7d" || p.Tokens != tok(one) || len(p.Files) != 2 {
		t.Fatalf("pack --json: %+v (text counts %d)", p, tok(one))
	}
	for _, f := range p.Files {
		hash := strings.TrimSpace(sb.git(repo, "hash-object", "--", f.Path))
		if !f.In || f.Reason != meter.ReasonIn || f.Blob != hash || !strings.Contains(one, "=== "+f.Path+" (blob "+hash+") ===") {
			t.Errorf("pack file %+v: want in, blob %s", f, hash)
		}
		if f.Changed != (f.Path == "notes.md") {
			t.Errorf("%s: changed since last read = %v", f.Path, f.Changed)
		}
	}
	if p.Files[0].Path != "a.go" || p.Files[0].Reads != 5 || p.Files[1].Reads != 4 {
		t.Errorf("ranking: %+v", p.Files)
	}
}
