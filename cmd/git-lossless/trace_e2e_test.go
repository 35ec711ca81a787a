package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/internal/testkit/agenttracetest"
)

// TestTraceExportE2E: real commits, agent writes archived by `record`
// (a Claude Code writer, a Codex writer), a person's lines between and
// after them. trace export's records validate against the Agent Trace
// schema; there is one per commit git rev-list lists, in its order, with
// git's committer time; the agent's lines are ranges of their sessions'
// conversations and the person's lines human ranges; the counts agree
// with git diff --numstat; a second run gives the same bytes; a range
// limits the records.
func TestTraceExportE2E(t *testing.T) {
	sb := newSandbox(t)
	repo := sb.initRepo("repo")
	a, b := filepath.Join(repo, "a.txt"), filepath.Join(repo, "b.txt")

	// 1: a person writes a.txt.
	writeFile(t, a, []byte("h1\nh2\n"))
	sb.git(repo, "add", "a.txt")
	sb.git(repo, "commit", "-qm", "person")

	// 2: Claude Code (writer cc-s1, session s1) reads a.txt, inserts two
	// lines; the person appends one before committing.
	sb.ok(repo, "record", "--op", "read", "--writer", "cc-s1", "--session", "s1", "a.txt")
	writeFile(t, a, []byte("h1\nagent one\nagent two\nh2\n"))
	sb.ok(repo, "record", "--op", "write", "--writer", "cc-s1", "--session", "s1", "a.txt")
	writeFile(t, a, []byte("h1\nagent one\nagent two\nh2\nh3 by hand\n"))
	sb.git(repo, "commit", "-qam", "agent and person")

	// 3: Codex (writer codex-s2, session s2) writes b.txt; a.txt loses a line.
	writeFile(t, b, []byte("codex 1\ncodex 2\ncodex 3\n"))
	sb.ok(repo, "record", "--op", "write", "--writer", "codex-s2", "--session", "s2", "b.txt")
	writeFile(t, a, []byte("h1\nagent one\nagent two\nh2\n"))
	sb.git(repo, "add", "a.txt", "b.txt")
	sb.git(repo, "commit", "-qm", "codex")

	// 4: a person's commit on a side branch, merged with a merge commit
	// (left out: it adds nothing against its first parent of its own).
	sb.git(repo, "checkout", "-qb", "side", "HEAD~1")
	writeFile(t, filepath.Join(repo, "c.txt"), []byte("side\n"))
	sb.git(repo, "add", "c.txt")
	sb.git(repo, "commit", "-qm", "side")
	sb.git(repo, "checkout", "-q", "main")
	sb.git(repo, "merge", "-q", "--no-ff", "-m", "merge side", "side")

	sb.ok(repo, "trace", "export", "-o", "trace.jsonl")
	out, err := os.ReadFile(filepath.Join(repo, "trace.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(filepath.Join(repo, "trace.jsonl")); fi.Mode().Perm() != 0o600 {
		t.Errorf("trace.jsonl mode %v, want 0600", fi.Mode().Perm())
	}
	recs := agenttracetest.Load(t).ValidateLines(t, out)

	revs := strings.Fields(sb.git(repo, "rev-list", "--reverse", "--no-merges", "HEAD"))
	if len(revs) != 4 {
		t.Fatalf("git rev-list --no-merges: %q", revs)
	}
	if len(recs) != len(revs) {
		t.Fatalf("%d records for %d commits:\n%s", len(recs), len(revs), out)
	}
	for i, r := range recs {
		if got := r["vcs"].(map[string]any)["revision"]; got != revs[i] {
			t.Errorf("record %d names %v, git rev-list %s", i, got, revs[i])
		}
		unix, err := strconv.ParseInt(strings.TrimSpace(sb.git(repo, "log", "-1", "--format=%ct", revs[i])), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		if ct := time.Unix(unix, 0).UTC().Format(time.RFC3339); r["timestamp"] != ct {
			t.Errorf("record %d timestamp %v, git's committer time %s", i, r["timestamp"], ct)
		}
	}

	// What each commit's record attributes, as "path:start:end:type:url".
	want := map[string][]string{
		"main^1~2": {"a.txt:1:2:human:"},
		"main^1~1": {"a.txt:2:3:ai:git-lossless:session/s1", "a.txt:5:5:human:"},
		"main^1":   {"b.txt:1:3:ai:git-lossless:session/s2"},
		"side":     {"c.txt:1:1:human:"},
	}
	wantOf := map[string][]string{}
	for rev, w := range want {
		wantOf[strings.TrimSpace(sb.git(repo, "rev-parse", rev))] = w
	}
	for i, r := range recs {
		var got []string
		for _, f := range r["files"].([]any) {
			fm := f.(map[string]any)
			for _, c := range fm["conversations"].([]any) {
				cm := c.(map[string]any)
				url, _ := cm["url"].(string)
				for _, rg := range cm["ranges"].([]any) {
					rm := rg.(map[string]any)
					got = append(got, joinVals(fm["path"], rm["start_line"], rm["end_line"], cm["contributor"].(map[string]any)["type"], url))
				}
			}
		}
		if w, ok := wantOf[revs[i]]; !ok || strings.Join(got, " ") != strings.Join(w, " ") {
			t.Errorf("record %d (%s) attributes %q, want %q", i, revs[i], got, w)
		}
		// The counts are git's.
		meta := r["metadata"].(map[string]any)["com.github.git-lossless"].(map[string]any)
		numstat := sb.git(repo, "diff", "--numstat", revs[i]+"^!")
		if i == 0 {
			numstat = sb.git(repo, "diff", "--numstat", "4b825dc642cb6eb9a060e54bf8d69288fbee4904", revs[i])
		}
		var files []string
		for _, f := range meta["files"].([]any) {
			fm := f.(map[string]any)
			files = append(files, joinVals(fm["added"], fm["removed"], fm["path"]))
		}
		var gitFiles []string
		for _, l := range strings.Split(strings.TrimSpace(numstat), "\n") {
			gitFiles = append(gitFiles, strings.Join(strings.Fields(l), ":"))
		}
		if strings.Join(files, " ") != strings.Join(gitFiles, " ") {
			t.Errorf("record %d: files %q, git diff --numstat %q", i, files, gitFiles)
		}
	}
	// The writes behind the agent ranges, in record order: their harness
	// (named from the writer), writer, op and line in the write's version.
	var writes []string
	for _, r := range recs {
		meta := r["metadata"].(map[string]any)["com.github.git-lossless"].(map[string]any)
		for _, f := range meta["files"].([]any) {
			for _, w := range asSlice(f.(map[string]any)["writes"]) {
				wm := w.(map[string]any)
				writes = append(writes, joinVals(wm["harness"], wm["writer"], wm["session"], wm["op"], wm["start_line"], wm["line"]))
			}
		}
	}
	if strings.Join(writes, " ") != "claude-code:cc-s1:s1:write:2:2 codex:codex-s2:s2:write:1:1" {
		t.Errorf("writes in metadata: %q", writes)
	}

	// Deterministic: stdout is the file's bytes; a range limits it.
	if r := sb.ok(repo, "trace", "export"); r.stdout != string(out) {
		t.Errorf("a second run differs:\n%s\n%s", r.stdout, out)
	}
	r := sb.ok(repo, "trace", "export", "main~1..main")
	if lines := strings.Split(strings.TrimSpace(r.stdout), "\n"); len(lines) != 1 || !strings.Contains(lines[0], `"path":"c.txt"`) {
		t.Errorf("main~1..main gives:\n%s\nwant the side commit's record alone", r.stdout)
	}
}

// joinVals joins values as "a:b:c" (numbers as JSON decodes them, whole).
func joinVals(vs ...any) string {
	var s []string
	for _, v := range vs {
		switch x := v.(type) {
		case float64:
			s = append(s, strconv.FormatFloat(x, 'f', -1, 64))
		case nil:
			s = append(s, "")
		default:
			s = append(s, x.(string))
		}
	}
	return strings.Join(s, ":")
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}
