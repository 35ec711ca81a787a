package claudecode

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/hooks"
)

// restoreRig is a session whose main context worked on files in a known
// order (the rig's clock gives each hook run its own second):
//
//	d.go read; gone.go read (then deleted); ch.go read (then changed);
//	.env read (deny-listed); b.go read three times; e.go edited; a.go read.
func restoreRig(t *testing.T) *hookRig {
	r := newHookRig(t)
	for _, f := range []struct{ name, content string }{
		{"d.go", "package d\n"}, {"gone.go", "package gone\n"}, {"ch.go", "package ch\n"}, {".env", "KEY=secret-value\n"},
	} {
		r.read("", "toolu_"+f.name, r.write(f.name, f.content), f.content)
	}
	b := r.write("b.go", "package b\n")
	for _, id := range []string{"toolu_b1", "toolu_b2", "toolu_b3"} {
		r.read("", id, b, "package b\n")
	}
	e := r.write("e.go", "package e // edited\n")
	r.post("", "Edit", "toolu_e", map[string]any{"file_path": e, "old_string": "x", "new_string": "edited"}, map[string]any{"filePath": e})
	r.read("", "toolu_a", r.write("a.go", "package a\n"), "package a\n")
	if err := os.Remove(filepath.Join(r.dir, "gone.go")); err != nil {
		t.Fatal(err)
	}
	r.write("ch.go", "package ch // changed since\n")
	return r
}

// manifestLines returns the file lines of a manifest, in order.
func manifestLines(text string) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "- ") {
			out = append(out, l)
		}
	}
	return out
}

func TestManifestRanksAndAnnotatesThroughSessionStart(t *testing.T) {
	r := restoreRig(t)
	out, errs, code := r.hook("SessionStart", map[string]any{"source": "compact"})
	if code != 0 || errs != "" {
		t.Fatalf("session-start: %d %q", code, errs)
	}
	var o struct {
		H struct {
			Event string `json:"hookEventName"`
			Text  string `json:"additionalContext"`
		} `json:"hookSpecificOutput"`
	}
	if err := json.Unmarshal([]byte(out), &o); err != nil || o.H.Event != "SessionStart" {
		t.Fatalf("session-start output %q: %v", out, err)
	}
	text := o.H.Text
	if !strings.Contains(text, "this session (sess-1) was compacted") || !strings.Contains(text, "git lossless restore --session sess-1") {
		t.Fatalf("manifest head or tail missing:\n%s", text)
	}
	// Edited first, then by touches, then most recent first.
	want := []struct{ path, state string }{
		{"e.go", "edited by you, 1 touches, last 10:00:08; unchanged since you saw it"},
		{"b.go", "read, 3 touches, last 10:00:07; unchanged since you saw it"},
		{"a.go", "read, 1 touches, last 10:00:09; unchanged since you saw it"},
		{".env", "read, 1 touches, last 10:00:04; excluded (deny list: content never archived)"},
		{"ch.go", "read, 1 touches, last 10:00:03; changed since you saw it"},
		{"gone.go", "read, 1 touches, last 10:00:02; deleted"},
		{"d.go", "read, 1 touches, last 10:00:01; unchanged since you saw it"},
	}
	lines := manifestLines(text)
	if len(lines) != len(want) {
		t.Fatalf("manifest lists %d files, want %d:\n%s", len(lines), len(want), text)
	}
	for i, w := range want {
		if lines[i] != "- "+w.path+": "+w.state {
			t.Errorf("line %d = %q, want %q", i, lines[i], "- "+w.path+": "+w.state)
		}
	}
	// On resume the same working set, saying so.
	out, _, _ = r.hook("SessionStart", map[string]any{"source": "resume"})
	if !strings.Contains(out, "was resumed") {
		t.Errorf("resume manifest: %q", out)
	}
	// startup and clear print nothing.
	for _, src := range []string{"startup", "clear"} {
		if out, errs, _ := r.hook("SessionStart", map[string]any{"source": src}); out != "" || errs != "" {
			t.Errorf("session-start %s printed %q %q", src, out, errs)
		}
	}
}

func TestManifestBudget(t *testing.T) {
	r := restoreRig(t)
	st := r.store()
	full, err := manifest(context.Background(), st, r.session, "", "compact", hooks.ManifestBudget)
	if err != nil || len(manifestLines(full)) != 7 || len(full) > hooks.ManifestBudget {
		t.Fatalf("manifest at the default budget (%d chars): %v\n%s", len(full), err, full)
	}
	const budget = 1000 // the tail naming the MCP tools takes about half
	cut, err := manifest(context.Background(), st, r.session, "", "compact", budget)
	if err != nil {
		t.Fatal(err)
	}
	lines := manifestLines(cut)
	if len(cut) > budget || len(lines) < 2 || len(lines) > 7 {
		t.Fatalf("manifest at budget %d: %d chars, %d lines:\n%s", budget, len(cut), len(lines), cut)
	}
	more := regexp.MustCompile(`- \.\.\. and (\d+) more files`).FindStringSubmatch(cut)
	if more == nil || more[1] != strconv.Itoa(8-len(lines)) {
		t.Fatalf("cut manifest does not say how many files it left out:\n%s", cut)
	}
	// The most important files are the ones kept.
	if !strings.HasPrefix(lines[0], "- e.go:") || !strings.HasPrefix(lines[1], "- b.go:") {
		t.Fatalf("cut manifest kept the wrong files:\n%s", cut)
	}
	if m, err := manifest(context.Background(), st, "no-such-session", "", "compact", hooks.ManifestBudget); err != nil || m != "" {
		t.Fatalf("manifest of an empty session: %q %v", m, err)
	}
}

// TestRestoreCountsAsSeen: after a compaction the guard denies an edit of
// a file seen only before it; `restore` prints its current content, and
// from then on the real pre-tool-use hook allows the edit — and denies it
// again once the file changes on disk after what restore printed.
func TestRestoreCountsAsSeen(t *testing.T) {
	r := newHookRig(t)
	a := r.write("a.go", "package a\n")
	r.read("", "toolu_ra", a, "package a\n")
	appendTranscript(t, r.tpath, r.ccReadUse("", "u1", r.now(), "toolu_ra", a), r.ccBoundary("", "ub", r.now()))
	if reason := r.guard("", "toolu_e1", a); !strings.Contains(reason, "compacted") || !strings.Contains(reason, "git lossless restore --session sess-1 --files "+a) {
		t.Fatalf("edit after compaction: %q", reason)
	}
	out, err := hooks.Restore(context.Background(), r.store(), hooks.RestoreOptions{Harness: New(), Session: r.session, Files: []string{a}, Now: r.now()})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "=== a.go (unchanged since you saw it; current content, full) ===\npackage a\n=== end of a.go ===") {
		t.Fatalf("restore printed:\n%s", out)
	}
	evs := r.events("restore")
	if len(evs) != 1 || evs[0].Path != "a.go" || evs[0].Blob != gitstore.BlobID([]byte("package a\n")) || evs[0].Source != "cli" || evs[0].Agent != "" {
		t.Fatalf("restore recorded %v", evKeys(evs))
	}
	if reason := r.guard("", "toolu_e2", a); reason != "" {
		t.Fatalf("edit after restore denied: %s", reason)
	}
	r.write("a.go", "package a // changed after the restore\n")
	if reason := r.guard("", "toolu_e3", a); !strings.Contains(reason, "changed on disk") {
		t.Fatalf("drift after restore: %q", reason)
	}
	// A restore into a subagent's context vouches for that context only.
	out, err = hooks.Restore(context.Background(), r.store(), hooks.RestoreOptions{Harness: New(), Session: r.session, Agent: "sub9", Files: []string{"a.go"}, Now: r.now()})
	if err != nil || !strings.Contains(out, "not in the archive for this context") {
		t.Fatalf("subagent restore: %v\n%s", err, out)
	}
	if reason := r.guard("sub9", "toolu_e4", a); reason != "" {
		t.Fatalf("subagent edit after its restore denied: %s", reason)
	}
	if reason := r.guard("", "toolu_e5", a); reason == "" {
		t.Fatal("a subagent's restore vouched for the main context")
	}
}

func TestRestoreWorkingSetAnnotationsAndBudget(t *testing.T) {
	r := restoreRig(t)
	st := r.store()
	out, err := hooks.Restore(context.Background(), st, hooks.RestoreOptions{Harness: New(), Session: r.session, Now: r.now()})
	if err != nil {
		t.Fatal(err)
	}
	// In working-set order, each annotated.
	order := []string{
		"=== e.go (unchanged since you saw it; current content, full) ===\npackage e // edited\n",
		"=== b.go (unchanged since you saw it; current content, full) ===\npackage b\n",
		"=== a.go (unchanged since you saw it; current content, full) ===\npackage a\n",
		"=== .env: excluded by the deny list; content not shown",
		"=== ch.go (changed since you saw it; current content, full) ===\npackage ch // changed since\n",
		"=== gone.go: deleted; nothing to show",
		"=== d.go (unchanged since you saw it; current content, full) ===\npackage d\n",
	}
	at := 0
	for _, w := range order {
		i := strings.Index(out[at:], w)
		if i < 0 {
			t.Fatalf("restore output lacks (in order) %q:\n%s", w, out)
		}
		at += i + len(w)
	}
	if strings.Contains(out, "secret-value") {
		t.Fatal("restore printed a deny-listed file")
	}
	if n := len(r.events("restore")); n != 5 {
		t.Fatalf("%d restore events, want 5 (every file printed)", n)
	}

	// Budget: files are cut at a line boundary and recorded as the part
	// printed; what does not fit at all is named, not printed.
	big := strings.Repeat("// a line of forty characters, padded..\n", 100) // 4,000 chars
	p := r.write("big.go", big)
	r.read("", "toolu_big", p, big)
	out, err = hooks.Restore(context.Background(), st, hooks.RestoreOptions{Harness: New(), Session: r.session, Files: []string{"a.go", "big.go", "d.go"}, Budget: 1010, Now: r.now()})
	if err != nil {
		t.Fatal(err)
	}
	// a.go (10) fits, big.go is cut to 25 whole lines (1,000 chars), d.go
	// no longer fits.
	if !strings.Contains(out, "=== big.go (unchanged since you saw it; current content, lines:1-25) ===\n"+big[:1000]+"=== end of big.go ===") {
		t.Fatalf("big.go not cut at the budget:\n%s", out)
	}
	if !strings.Contains(out, "=== d.go: unchanged since you saw it; over the budget, not shown (restore it alone with --files)") {
		t.Fatalf("d.go not reported over the budget:\n%s", out)
	}
	var partial bool
	for _, e := range r.events("restore") {
		if e.Path == "big.go" {
			partial = e.View == "lines:1-25" && e.Blob == gitstore.BlobID([]byte(big[:1000]))
		}
	}
	if !partial {
		t.Fatalf("the cut restore of big.go was not recorded as lines:1-25: %v", evKeys(r.events("restore")))
	}

	// The default budget is 8,000 characters of content.
	if hooks.RestoreBudget != 8000 {
		t.Fatalf("RestoreBudget = %d, want 8000", hooks.RestoreBudget)
	}
	for _, n := range []string{"x1.go", "x2.go", "x3.go"} {
		r.read("", "toolu_"+n, r.write(n, big), big)
	}
	out, err = hooks.Restore(context.Background(), st, hooks.RestoreOptions{Harness: New(), Session: r.session, Files: []string{"x1.go", "x2.go", "x3.go"}, Now: r.now()})
	if err != nil {
		t.Fatal(err)
	}
	shown := 0
	for _, l := range strings.SplitAfter(out, "\n") {
		if strings.HasPrefix(l, "// a line") {
			shown += len(l)
		}
	}
	if shown != 8000 || !strings.Contains(out, "x3.go: unchanged since you saw it; over the budget") {
		t.Fatalf("default budget printed %d characters of content, want 8000:\n%s", shown, out)
	}
}
