package codex

import (
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckUnifiedDiff(t *testing.T) {
	for _, tc := range []struct {
		name, old, new, diff, err string
	}{
		{"sample run1", "hello world\n", "hello codex\n", "@@ -1 +1 @@\n-hello world\n+hello codex\n", ""},
		{"sample run1, another old", "hello there\n", "hello codex\n", "@@ -1 +1 @@\n-hello world\n+hello codex\n", "old line 1"},
		{"sample run1, another new", "hello world\n", "hello codex!\n", "@@ -1 +1 @@\n-hello world\n+hello codex\n", "new line 1"},
		{"two hunks", "a\nb\nc\nd\ne\nf\ng\n", "a\nB\nc\nd\ne\nF\ng\n", "@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n@@ -5,3 +5,3 @@\n e\n-f\n+F\n g\n", ""},
		{"line ending differs", "a\r\nb\r\n", "a\r\nB\n", "@@ -1,2 +1,2 @@\n a\r\n-b\r\n+B\r\n", "new line 2"},
		{"no final newline", "a\nb", "a\nB", "@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+B\n\\ No newline at end of file\n", ""},
		{"newline added", "a\nb", "a\nb\n", "@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n", ""},
		{"deletion", "a\nb\n", "a\n", "@@ -2 +1,0 @@\n-b\n", ""},
		{"into an empty file", "", "x\n", "@@ -0,0 +1 @@\n+x\n", ""},
		{"with file headers", "a\n", "b\n", "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n", ""},
		{"short hunk", "a\nb\n", "a\nB\n", "@@ -1,2 +1,2 @@\n-b\n", "old line 1"},
		{"hunk missing lines", "a\nb\n", "a\nB\n", "@@ -1,3 +1,2 @@\n a\n-b\n+B\n", "short"},
		{"bad header", "a\n", "b\n", "@@ -x +1 @@\n-a\n+b\n", "bad hunk header"},
		{"junk", "a\n", "b\n", "hello\n", "before any hunk"},
		{"no hunk but a change", "a\n", "b\n", "", "no hunk"},
		{"no hunk, no change", "a\n", "a\n", "", ""},
	} {
		err := CheckUnifiedDiff([]byte(tc.old), []byte(tc.new), tc.diff)
		if (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.err)
		}
	}
}

// TestApplyExact checks that ApplyExact agrees with Apply whenever it
// succeeds, and refuses the cases that need Codex's lenient passes.
func TestApplyExact(t *testing.T) {
	exact, refused := 0, 0
	for _, v := range cxVectors(t) {
		if !v.OK {
			continue
		}
		p, err := ParsePatch(v.Patch)
		if err != nil {
			t.Fatal(err)
		}
		read := func(abs string) ([]byte, error) {
			rel, _ := filepath.Rel(cxCwd, abs)
			if c, ok := v.Files[rel]; ok {
				return []byte(c), nil
			}
			return nil, fs.ErrNotExist
		}
		want, err := p.Apply(cxCwd, read)
		if err != nil {
			t.Fatalf("%s: %v", v.Name, err)
		}
		got, err := p.ApplyExact(cxCwd, read)
		if err != nil {
			refused++
			if v.Name == "sample-run1" || v.Name == "multi-file" || v.Name == "crlf-file" {
				t.Errorf("%s: ApplyExact refused: %v", v.Name, err)
			}
			continue
		}
		exact++
		if len(got) != len(want) {
			t.Fatalf("%s: %d results, Apply %d", v.Name, len(got), len(want))
		}
		for i := range got {
			if got[i].Path != want[i].Path || got[i].Deleted != want[i].Deleted || string(got[i].Content) != string(want[i].Content) {
				t.Errorf("%s: %+v, Apply %+v", v.Name, got[i], want[i])
			}
		}
		if strings.HasPrefix(v.Name, "fuzzy-") || v.Name == "trim-before-unicode" {
			t.Errorf("%s: a fuzzy match passed ApplyExact", v.Name)
		}
	}
	if exact < 30 || refused < 10 {
		t.Errorf("%d exact, %d refused", exact, refused)
	}
}
