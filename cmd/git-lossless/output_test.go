package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// goFormatting matches what Go's %v of a struct, map, pointer or nil
// prints, and fmt's own complaints: never meant for a reader.
var goFormatting = regexp.MustCompile(`\{[A-Z][A-Za-z]*:[^ ]|map\[|&\{|%!|<nil>|\b0x[0-9a-f]{6,}\b`)

// badPlural matches a count of one with a plural noun.
var badPlural = regexp.MustCompile(`(?:^|[^0-9.,])1 (writers|entries|batches|events|files|spans|sessions|commits|blobs|lines|requests|chains|refs|objects|contexts|receipts|versions|transcripts|records|hooks|checks|tools|messages|alarms|remotes|checkpoints)\b`)

// TestNoGoFormattingInOutput runs the commands a user runs most, and
// every command's --help, on a small archive with one writer (so counts
// of one come up) and checks their output reads as prose: no Go value
// formatting, no "1 writers".
func TestNoGoFormattingInOutput(t *testing.T) {
	a := newSmallArchive(t, map[string]string{"main.go": "package main\n\nfunc main() {}\n"})
	a.must([]string{"record", "--op", "read", "--session", "s1", "main.go"})
	cli := func(args ...string) (int, string) {
		code, out, errOut := a.cli(args...)
		return code, out + errOut
	}
	transcript, _ := filepath.Abs("../../testdata/claude-code-2.1.328/transcripts/-home-dev-project/9e33e208-2b1c-4064-b54f-efdf0f79781b.jsonl")
	runs := [][]string{
		{"log"}, {"verify"}, {"heads"}, {"locks"}, {"who"}, {"recall", "digests"}, {"meter"}, {"pack"},
		{"handoff"}, {"savings"}, {"push", "--dry-run"}, {"sync", "--dry-run"}, {"doctor"}, {"help"}, {"help", "environment"},
		{"sweep", transcript}, {"sweep", transcript}, {"reindex"}, {"stats", "HEAD"},
	}
	for _, c := range commands() {
		if _, external := externals[c.Name]; !external { // another program's, tested there
			runs = append(runs, []string{c.Name, "--help"})
		}
	}
	for _, args := range runs {
		code, out := cli(args...)
		if code == exitUsage || code == exitError {
			t.Errorf("git lossless %s: exit %d\n%s", strings.Join(args, " "), code, out)
		}
		if strings.TrimSpace(out) == "" {
			t.Errorf("git lossless %s printed nothing", strings.Join(args, " "))
		}
		if m := goFormatting.FindString(out); m != "" {
			t.Errorf("git lossless %s prints Go formatting %q:\n%s", strings.Join(args, " "), m, out)
		}
		if m := badPlural.FindString(out); m != "" {
			t.Errorf("git lossless %s prints %q:\n%s", strings.Join(args, " "), strings.TrimSpace(m), out)
		}
	}
}
