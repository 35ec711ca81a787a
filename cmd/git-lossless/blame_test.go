package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-lossless/git-lossless/blame"
	"github.com/git-lossless/git-lossless/internal/testkit"
)

// TestBlameCommand: a real Claude Code session (the sample transcript,
// main context and subagent, imported as the hooks would have swept it),
// a context recorded through the CLI and a person edit the same files over
// three commits. blame gives every line the owner the test's own
// bookkeeping gives it, the commit git blame gives it, and its porcelain
// is git's line porcelain plus lossless-* keys; --why names what the
// subagent had read before its edit.
func TestBlameCommand(t *testing.T) {
	sb := newSandbox(t)
	repo := sb.initRepo("repo")
	repo, _ = filepath.EvalSymlinks(repo)
	at := func(when string) []string {
		return []string{"GIT_AUTHOR_DATE=" + when, "GIT_COMMITTER_DATE=" + when}
	}
	commit := func(when, msg string) {
		t.Helper()
		sb.git(repo, "add", "-A")
		cmd := []string{"-c", "user.name=Pat", "commit", "-q", "-m", msg}
		env := sb.env
		sb.env = append(append([]string{}, sb.env...), at(when)...)
		sb.git(repo, cmd...)
		sb.env = env
	}
	put := func(name, content string) { writeFile(t, filepath.Join(repo, name), []byte(content)) }
	// Before the session (which ran on 2026-12-02), the person's files.
	put("hello.txt", "hello world\n")
	put("main.go", "package main\n\nfunc main() {}\n")
	commit("2026-12-01T10:00:00Z", "start")

	// The session: hello.txt edited twice, notes.md written, main.go
	// edited by a subagent. Import archives it; its files are then on
	// disk as it left them, and the person adds a line before committing.
	projects := filepath.Join(sb.root, "projects")
	main := testkit.CopySample(t, filepath.Join(projects, strings.ReplaceAll(repo, "/", "-")), repo, "")
	// The scripted model numbered its calls per process, so the edit after
	// --resume reuses the first Read's call id, and the archive (which
	// dedupes by call id) would keep the Read only. A real model's ids are
	// unique: give that edit its own.
	b, err := os.ReadFile(main)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	resumed := false
	for i, l := range lines {
		resumed = resumed || strings.Contains(l, `"new_string":"again"`)
		if resumed {
			lines[i] = strings.ReplaceAll(l, "toolu_main_0_1", "toolu_resumed_1")
		}
	}
	if !resumed {
		t.Fatal("the sample has no post-resume edit")
	}
	writeFile(t, main, []byte(strings.Join(lines, "")))
	sb.ok(repo, "import", "--quiet", projects)
	put("hello.txt", "hello again\n")
	put("notes.md", "# notes\nwritten by Pat\n")
	put("main.go", "package main\n\nfunc main() { println(1) }\n")
	commit("2026-12-03T10:00:00Z", "session")

	// A context through the CLI reads notes.md and adds two lines.
	sb.ok(repo, "record", "--op", "read", "--writer", "cli-ctx", "--session", "s2", "notes.md")
	put("notes.md", "# notes\nwritten by Pat\n- first item from the cli context\n- second item from the cli context\n")
	sb.ok(repo, "record", "--op", "edit", "--writer", "cli-ctx", "--session", "s2", "--key", "call-cli", "notes.md")
	// The person changes the second item before committing.
	put("notes.md", "# notes\nwritten by Pat\n- first item from the cli context\n- second item, reworded by Pat\n")
	commit("2099-01-01T10:00:00Z", "items")

	cc := "cc-" + testkit.SampleSession
	want := map[string][]string{ // per line: the writer, "" a person
		"hello.txt": {cc},
		"notes.md":  {cc, "", "cli-ctx", ""},
		"main.go":   {"", "", cc},
	}
	for file, owners := range want {
		r := sb.ok(repo, "blame", "--json", file)
		var doc struct {
			Path  string       `json:"path"`
			Lines []blame.Line `json:"lines"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || strings.Count(strings.TrimSpace(r.stdout), "\n") != 0 {
			t.Fatalf("blame --json %s is not one document: %v\n%s", file, err, r.stdout)
		}
		if doc.Path != file || len(doc.Lines) != len(owners) {
			t.Fatalf("blame --json %s: %s", file, r.stdout)
		}
		var commits []string
		for _, l := range strings.Split(sb.git(repo, "blame", "--line-porcelain", file), "\n") {
			if f := strings.Fields(l); len(f) >= 3 && len(f[0]) == 40 {
				commits = append(commits, f[0])
			}
		}
		for i, l := range doc.Lines {
			got := ""
			if l.Origin != nil {
				got = l.Origin.Writer
			}
			if got != owners[i] {
				t.Errorf("%s line %d %q: origin %q, want %q", file, i+1, l.Text, got, owners[i])
			}
			if i >= len(commits) || l.Commit != commits[i] {
				t.Errorf("%s line %d: commit %s, git blame says %v", file, i+1, l.Commit, commits)
			}
		}
	}
	// The edit of main.go is the main context's (its subagent only read
	// the file), through the Edit call the transcript names.
	r := sb.ok(repo, "blame", "--json", "-L", "3,3", "main.go")
	var one struct{ Lines []blame.Line }
	json.Unmarshal([]byte(r.stdout), &one)
	if len(one.Lines) != 1 || one.Lines[0].Origin == nil || one.Lines[0].Origin.Agent != "" || one.Lines[0].Origin.Harness != "claude-code" ||
		one.Lines[0].Origin.Op != "edit" || one.Lines[0].Origin.Tool != "Edit" || one.Lines[0].Origin.Call != "toolu_main_5_13" ||
		one.Lines[0].Origin.Model != "claude-opus-5-5" {
		t.Fatalf("main.go:3: %s", r.stdout)
	}

	// --porcelain is git's --line-porcelain with lossless-* lines added.
	ours := sb.ok(repo, "blame", "--porcelain", "notes.md").stdout
	var kept []string
	agentKeys := 0
	for _, l := range strings.SplitAfter(ours, "\n") {
		if strings.HasPrefix(l, "lossless-") {
			if strings.HasPrefix(l, "lossless-writer cli-ctx") || strings.HasPrefix(l, "lossless-writer "+cc) {
				agentKeys++
			}
			continue
		}
		kept = append(kept, l)
	}
	if gitOut, _, err := sb.gitRaw(repo, nil, "blame", "--line-porcelain", "notes.md"); err != nil || strings.Join(kept, "") != string(gitOut) {
		t.Errorf("porcelain without lossless-* lines differs from git's (%v):\n%s\n---\n%s", err, strings.Join(kept, ""), gitOut)
	}
	if agentKeys != 2 || strings.Count(ours, "lossless-origin human\n") != 2 {
		t.Errorf("porcelain keys: %d agent writers\n%s", agentKeys, ours)
	}

	// The default output: git's columns with the origin.
	def := sb.ok(repo, "blame", "notes.md").stdout
	if lines := strings.Split(strings.TrimSuffix(def, "\n"), "\n"); len(lines) != 4 ||
		!strings.Contains(lines[0], "claude-code:9e33e208 claude-opus-5-5") || !strings.Contains(lines[1], " - ") || !strings.HasSuffix(lines[2], ") - first item from the cli context") {
		t.Errorf("blame notes.md:\n%s", def)
	}

	// --why: before its edit of main.go the main context had edited
	// hello.txt, written notes.md and read line 2 of main.go (its
	// subagent's whole read is the subagent's, not its own).
	r = sb.ok(repo, "blame", "--why", "main.go:3", "--json")
	var why blame.Why
	if err := json.Unmarshal([]byte(r.stdout), &why); err != nil {
		t.Fatalf("--why --json: %v\n%s", err, r.stdout)
	}
	blobOf := func(s string) string { return strings.TrimSpace(sb.gitIn(repo, []byte(s), "hash-object", "--stdin")) }
	wantSeen := []blame.Seen{
		{Path: "hello.txt", Op: "edit", Blob: blobOf("hello there\n"), View: "full", CurrentAtWrite: true},
		{Path: "main.go", Op: "read", Blob: blobOf(""), View: "lines:2-2"},
		{Path: "notes.md", Op: "write", Blob: blobOf("# notes\n"), View: "full", CurrentAtWrite: true},
	}
	if len(why.Seen) != len(wantSeen) {
		t.Fatalf("--why main.go:3 seen %+v, want %+v", why.Seen, wantSeen)
	}
	for i, w := range wantSeen {
		g := why.Seen[i]
		g.TS = w.TS
		if g != w {
			t.Errorf("--why main.go:3 seen[%d] %+v, want %+v", i, why.Seen[i], w)
		}
	}
	if why.Call == nil || !strings.Contains(string(why.Call.Input), "println(1)") {
		t.Errorf("--why main.go:3 call %+v", why.Call)
	}
	if why.Request == "" {
		t.Errorf("--why main.go:3: no request")
	}
	text := sb.ok(repo, "blame", "--why", "main.go:3").stdout
	for _, w := range []string{"main.go:3", "written by claude-code:9e33e208 claude-opus-5-5 at", "the context had seen 3 files before the write:", "partial   main.go  read"} {
		if !strings.Contains(text, w) {
			t.Errorf("--why text lacks %q:\n%s", w, text)
		}
	}
	if r := sb.ok(repo, "blame", "--why", "notes.md:2"); !strings.Contains(r.stdout, "no archived agent write made this line") {
		t.Errorf("--why of a person's line:\n%s", r.stdout)
	}

	// Bad input: a clear error, exit 2 for usage, 3 when git refuses.
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"blame"}, 2, "blame takes [REV] [--] FILE"},
		{[]string{"blame", "-L", "x", "notes.md"}, 2, "-L takes A,B"},
		{[]string{"blame", "-L", "3,2", "notes.md"}, 2, "-L takes A,B"},
		{[]string{"blame", "--why", "notes.md"}, 2, "--why takes FILE:LINE"},
		{[]string{"blame", "--why", "notes.md:0"}, 2, "LINE a number from 1"},
		{[]string{"blame", "--json", "--porcelain", "notes.md"}, 2, "cannot be combined"},
		{[]string{"blame", "../outside.txt"}, 2, "outside the work tree"},
		{[]string{"blame", "missing.txt"}, 3, "missing.txt"},
		{[]string{"blame", "no-such-rev", "notes.md"}, 3, "no-such-rev"},
		{[]string{"blame", "-L", "9,9", "notes.md"}, 3, "notes.md"},
	} {
		r := sb.run(repo, c.args...)
		if r.code != c.code || !strings.Contains(r.stderr, c.want) || strings.Count(strings.TrimSpace(r.stderr), "\n") > 1 {
			t.Errorf("%v: exit %d, stderr %q; want exit %d naming %q", c.args, r.code, r.stderr, c.code, c.want)
		}
	}
	// The cache of added lines is private.
	fi, err := os.Stat(filepath.Join(repo, ".git", "lossless", "blame", "added"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("cache file: %v %v", fi, err)
	}
}
