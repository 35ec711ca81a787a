package meter_test

import (
	"context"
	"github.com/git-lossless/git-lossless/internal/tokens"
	"strings"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/meter"
)

// label is what the test says a read is, by hand, from the scenario
// (not from the meter's rule).
type label int

const (
	lFirst     label = iota // first read of the path in its context
	lExcluded               // denied: no content archived
	lChanged                // re-read, other bytes than the previous read
	lCompacted              // re-read, same bytes, after a compaction
	lSaveable               // re-read, same bytes, no compaction between
	lNotRead                // not a read (edit, compact)
)

type step struct {
	ev
	want label
}

var base = time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)

const (
	a1 = "package a\n\n// A returns one.\nfunc A() int { return 1 }\n"
	a2 = "package a\n\n// A returns two now, after the edit.\nfunc A() int { return 2 }\n"
	b1 = "package b\n\nimport \"strings\"\n\nfunc B(s string) string { return strings.ToUpper(s) }\n"
	c1 = "package c\n\nvar Table = map[string]int{\"one\": 1, \"two\": 2, \"three\": 3}\n"
	d1 = "line one of d\nline two of d\nline three of d\nline four of d\n"
	dp = "line one of d\nline two of d\n" // lines 1-2 of d1, as Claude Code archives a partial read
	e1 = "SECRET_TOKEN=abc\n"
)

// scenario is a small corpus with every kind of read: two sessions, a
// subagent, a compaction, a partial read, a denied file, a restore, an
// attach, and a read before the window.
func scenario() []step {
	at := func(m int) time.Time { return base.Add(time.Duration(m) * time.Minute) }
	s1, s2 := "s1-3f2a", "s2-77b0"
	return []step{
		{ev{at: at(1), session: s1, op: "read", path: "a.go", content: a1}, lFirst},
		{ev{at: at(2), session: s1, op: "read", path: "b.go", content: b1}, lFirst},
		{ev{at: at(3), session: s1, op: "read", path: "a.go", content: a1}, lSaveable},
		{ev{at: at(4), session: s1, op: "edit", path: "a.go", content: a2}, lNotRead},
		{ev{at: at(5), session: s1, op: "read", path: "a.go", content: a2}, lChanged},
		{ev{at: at(6), session: s1, op: "read", path: "a.go", content: a2}, lSaveable},
		{ev{at: at(7), session: s1, op: "compact"}, lNotRead},
		{ev{at: at(8), session: s1, op: "attach", path: "a.go", content: a2}, lCompacted},
		{ev{at: at(9), session: s1, op: "read", path: "a.go", content: a2}, lSaveable},
		{ev{at: at(10), session: s1, op: "read", path: ".env", content: e1}, lExcluded},
		{ev{at: at(11), session: s1, op: "read", path: ".env", content: e1}, lExcluded},
		{ev{at: at(12), session: s1, op: "read", path: "d.go", view: "lines:1-2", content: dp}, lFirst},
		{ev{at: at(13), session: s1, op: "read", path: "d.go", content: d1}, lChanged},
		// A subagent: its own context.
		{ev{at: at(14), session: s1, agent: "agent-9", op: "read", path: "a.go", content: a2}, lFirst},
		{ev{at: at(15), session: s1, agent: "agent-9", op: "read", path: "a.go", content: a2}, lSaveable},
		{ev{at: at(16), session: s1, agent: "agent-9", op: "restore", path: "b.go", content: b1}, lFirst},
		{ev{at: at(17), session: s1, agent: "agent-9", op: "restore", path: "b.go", content: b1}, lSaveable},
		// Another session; c.go was first read ten days before.
		{ev{at: at(-10 * 24 * 60), session: s2, op: "read", path: "c.go", content: c1}, lFirst},
		{ev{at: at(18), session: s2, op: "read", path: "a.go", content: a2}, lFirst},
		{ev{at: at(19), session: s2, op: "read", path: "c.go", content: c1}, lSaveable},
		{ev{at: at(20), session: s2, op: "read", path: "b.go", content: b1}, lFirst},
		{ev{at: at(21), session: s2, op: "compact"}, lNotRead},
		{ev{at: at(22), session: s2, op: "read", path: "b.go", content: b1}, lCompacted},
	}
}

// expect sums the hand labels into figures, counting tokens of the known
// strings with tokens.CountText.
func expect(t *testing.T, steps []step, keep func(step) bool) meter.Figures {
	t.Helper()
	var f meter.Figures
	for _, s := range steps {
		if s.want == lNotRead || !keep(s) {
			continue
		}
		f.Reads++
		if s.want == lExcluded {
			f.Uncounted++
			continue
		}
		n := count(t, s.content)
		f.Tokens += n
		switch s.want {
		case lChanged:
			f.ReReads++
			f.ReReadTokens += n
			f.Changed++
			f.ChangedTokens += n
		case lCompacted:
			f.ReReads++
			f.ReReadTokens += n
			f.Unchanged++
			f.AfterCompaction++
		case lSaveable:
			f.ReReads++
			f.ReReadTokens += n
			f.Unchanged++
			f.Saveable++
			f.SavedTokens += n
		}
	}
	if f.Reads > 0 {
		f.ReReadRate = float64(f.ReReads) / float64(f.Reads)
	}
	if f.ReReads > 0 {
		f.ChangedRate = float64(f.Changed) / float64(f.ReReads)
	}
	return f
}

func build(t *testing.T, steps []step) *repo {
	t.Helper()
	r := newRepo(t)
	for _, s := range steps {
		r.append(s.ev)
	}
	return r
}

func all(step) bool { return true }

// TestMeterFigures: every figure, in total and per file, session, agent
// and repository, equals the sum of the scenario's hand labels with
// tokens counted independently over the known strings.
func TestMeterFigures(t *testing.T) {
	steps := scenario()
	r := build(t, steps)
	ctx := context.Background()
	rep, err := meter.Meter(ctx, r.st, meter.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := expect(t, steps, all)
	if rep.Totals != want {
		t.Errorf("totals\n got %+v\nwant %+v", rep.Totals, want)
	}
	// The scenario has each kind at least once, so no figure is
	// vacuously zero.
	if want.Changed == 0 || want.AfterCompaction == 0 || want.Saveable == 0 || want.Uncounted == 0 || want.SavedTokens == 0 {
		t.Fatalf("scenario lacks a kind: %+v", want)
	}
	if rep.Contexts != 3 {
		t.Errorf("contexts = %d, want 3 (s1 main, s1 agent-9, s2 main)", rep.Contexts)
	}

	groups := map[meter.By]func(step) string{
		meter.ByFile:    func(s step) string { return s.path },
		meter.BySession: func(s step) string { return s.session },
		meter.ByAgent: func(s step) string {
			if s.agent == "" {
				return s.session + " main"
			}
			return s.session + " " + s.agent
		},
		meter.ByRepo: func(step) string { return r.dir },
	}
	for by, key := range groups {
		rows, err := rep.Rows(by)
		if err != nil {
			t.Fatal(err)
		}
		keys := map[string]bool{}
		for _, s := range steps {
			if s.want != lNotRead {
				keys[key(s)] = true
			}
		}
		if len(rows) != len(keys) {
			t.Errorf("by %s: %d rows, want %d", by, len(rows), len(keys))
		}
		for i, row := range rows {
			w := expect(t, steps, func(s step) bool { return key(s) == row.Key })
			if row.Figures != w {
				t.Errorf("by %s, %s\n got %+v\nwant %+v", by, row.Key, row.Figures, w)
			}
			if i > 0 && rows[i-1].Tokens < row.Tokens {
				t.Errorf("by %s: rows not in token order at %s", by, row.Key)
			}
		}
	}
	if _, err := rep.Rows("colour"); err == nil {
		t.Error("an unknown grouping is accepted")
	}
}

// TestMeterWindowAndSession: --since counts only the reads in the window
// but decides re-reads on the whole history (c.go's second read, ten days
// after the first, stays a saveable re-read); --session counts one
// session.
func TestMeterWindowAndSession(t *testing.T) {
	steps := scenario()
	r := build(t, steps)
	ctx := context.Background()
	since := base.Add(-time.Hour)
	rep, err := meter.Meter(ctx, r.st, meter.Options{Since: since})
	if err != nil {
		t.Fatal(err)
	}
	want := expect(t, steps, func(s step) bool { return !s.at.Before(since) })
	if rep.Totals != want {
		t.Errorf("window totals\n got %+v\nwant %+v", rep.Totals, want)
	}
	if all := expect(t, steps, all); want.Reads != all.Reads-1 || want.Saveable != all.Saveable {
		t.Errorf("the window should drop exactly c.go's first read: %+v vs %+v", want, all)
	}
	rep, err = meter.Meter(ctx, r.st, meter.Options{Session: "s2-77b0"})
	if err != nil {
		t.Fatal(err)
	}
	if want := expect(t, steps, func(s step) bool { return s.session == "s2-77b0" }); rep.Totals != want {
		t.Errorf("session totals\n got %+v\nwant %+v", rep.Totals, want)
	}
}

// TestMeterTokenCache: the counts land in the cache receipts use, and a
// second run (a new counter, as a new process has) counts nothing.
func TestMeterTokenCache(t *testing.T) {
	steps := scenario()
	r := build(t, steps)
	ctx := context.Background()
	cold, err := meter.Meter(ctx, r.st, meter.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if cold.Counts.Counted == 0 || cold.Counts.Cached != 0 {
		t.Fatalf("cold run: %+v, want everything counted", cold.Counts)
	}
	warm, err := meter.Meter(ctx, r.st, meter.Options{Counter: tokens.NewCounter(ctx, r.st)})
	if err != nil {
		t.Fatal(err)
	}
	if warm.Counts.Counted != 0 || warm.Counts.Cached != cold.Counts.Unique {
		t.Errorf("warm run: %+v, want all %d from the cache", warm.Counts, cold.Counts.Unique)
	}
	if warm.Totals != cold.Totals {
		t.Errorf("cached counts differ: %+v vs %+v", warm.Totals, cold.Totals)
	}
}

func TestParseByAndFormatAge(t *testing.T) {
	for _, s := range []string{"file", "session", "agent", "repo"} {
		if b, err := meter.ParseBy(s); err != nil || string(b) != s {
			t.Errorf("ParseBy(%q) = %q, %v", s, b, err)
		}
	}
	if _, err := meter.ParseBy("files"); err == nil || !strings.Contains(err.Error(), "file, session") {
		t.Errorf("ParseBy(files): %v", err)
	}
	for d, want := range map[time.Duration]string{7 * 24 * time.Hour: "7d", 14 * 24 * time.Hour: "14d", 24 * time.Hour: "1d", 30 * time.Hour: "30h", 30 * time.Minute: "30m", 90 * time.Second: "1m30s"} {
		if got := meter.FormatAge(d); got != want {
			t.Errorf("FormatAge(%v) = %q, want %q", d, got, want)
		}
	}
}
