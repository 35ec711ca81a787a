package recall

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func lineRefs(ms []LineMatch) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Ref+" "+m.Line)
	}
	return out
}

func TestLineIndexMatch(t *testing.T) {
	x := NewLineIndex(0)
	x.Add("sp-a", "user:\nThe staging database listens on port 54329.\nUse the flag --dry-run first.")
	x.Add("sp-b", "assistant:\nI renamed parseConfigFile to loadSettings in cmd/tool/settings_loader.go\n\n  trailing spaces   ")
	x.Add("sp-c", "tool result:\nThe compaction threshold is tuned for quarterly reports.")
	for i := 0; i < 20; i++ {
		x.Add("sp-filler", fmt.Sprintf("line %d about the writer and the database", i))
	}
	if got := x.Len(); got != 28 {
		t.Fatalf("Len = %d, want 28 (the blank line skipped)", got)
	}
	cases := []struct {
		q    string
		want []string
	}{
		{"what was that port, 54329?", []string{"sp-a The staging database listens on port 54329."}},
		// Compound, whole; and a path's component.
		{"where did parseConfigFile go?", []string{"sp-b I renamed parseConfigFile to loadSettings in cmd/tool/settings_loader.go"}},
		// Stem: "compacting" meets "compaction".
		{"Is compacting tuned?", []string{"sp-c The compaction threshold is tuned for quarterly reports."}},
		// Fragment of a term ("settings_load" in "settings_loader.go").
		{"open settings_load please", []string{"sp-b I renamed parseConfigFile to loadSettings in cmd/tool/settings_loader.go"}},
		// Common and short words name nothing; "database" is in more
		// than an eighth of the lines.
		{"what did you do with the database and the file?", nil},
		{"", nil},
	}
	for _, c := range cases {
		got := lineRefs(x.Match(LineQuery{Text: c.q}))
		if !slices.Equal(got, c.want) {
			t.Errorf("Match(%q) = %q, want %q", c.q, got, c.want)
		}
	}
	// Several words: the line matching both ranks first, Max cuts.
	ms := x.Match(LineQuery{Text: "54329 quarterly parseConfigFile", Max: 2})
	if len(ms) != 2 {
		t.Fatalf("Max 2: got %d lines", len(ms))
	}
	// At points at the matched word.
	m := x.Match(LineQuery{Text: "54329"})[0]
	if m.At < 0 || !strings.HasPrefix(m.Line[m.At:], "54329") || !slices.Equal(m.Words, []string{"54329"}) {
		t.Errorf("match %+v: At does not point at 54329", m)
	}
	// Absent decides which words are looked up.
	var asked []string
	got := x.Match(LineQuery{Text: "54329 quarterly", Absent: func(w, term string) bool {
		asked = append(asked, w+"/"+term)
		return w != "54329"
	}})
	if !slices.Equal(lineRefs(got), []string{"sp-c The compaction threshold is tuned for quarterly reports."}) {
		t.Errorf("Absent false for 54329: got %q", lineRefs(got))
	}
	if !slices.Equal(asked, []string{"54329/54329", "quarterly/quarterli"}) {
		t.Errorf("Absent asked %q", asked)
	}
}

func TestLineIndexSecretsNotIndexed(t *testing.T) {
	x := NewLineIndex(0)
	key := "ghp_" + strings.Repeat("a1B2c3D4e5", 4)[:36]
	x.Add("sp-a", "the token is "+key+" for the mirror")
	if got := x.Match(LineQuery{Text: key}); len(got) != 0 {
		t.Errorf("a secret was indexed: %q", lineRefs(got))
	}
	if got := x.Match(LineQuery{Text: "mirror"}); len(got) != 1 {
		t.Errorf("the line's other words are indexed: got %q", lineRefs(got))
	}
}

func TestLineIndexDuplicateLinesOnce(t *testing.T) {
	x := NewLineIndex(0)
	x.Add("sp-a", "retry budget is 17 attempts")
	x.Add("sp-b", "retry budget is 17 attempts")
	got := x.Match(LineQuery{Text: "attempts", Max: 3})
	if len(got) != 1 || got[0].Ref != "sp-b" {
		t.Errorf("got %q, want the newer copy once", lineRefs(got))
	}
}

func TestLineIndexTrim(t *testing.T) {
	x := NewLineIndex(2000)
	for i := 0; i < 100; i++ {
		x.Add(fmt.Sprintf("sp-%d", i), fmt.Sprintf("marker%03d holds the value %d", i, i*7))
	}
	if n := x.Len(); n >= 100 || n == 0 {
		t.Fatalf("Len = %d after 100 lines with a 2000-byte cap", n)
	}
	if got := x.Match(LineQuery{Text: "marker000"}); len(got) != 0 {
		t.Errorf("the oldest line survived the cap: %q", lineRefs(got))
	}
	if got := x.Match(LineQuery{Text: "marker099"}); len(got) != 1 || got[0].Ref != "sp-99" {
		t.Errorf("the newest line is gone: %q", lineRefs(got))
	}
}
