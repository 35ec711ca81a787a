package blame_test

import (
	"context"
	"strings"
	"testing"

	"github.com/git-lossless/git-lossless/blame"
)

var (
	alpha = agent{writer: "cc-alpha", session: "alpha", harness: "claude-code"}
	beta  = agent{writer: "codex-beta", session: "beta", harness: "codex"}
)

// script builds the history the blame tests share: a person and two agent
// contexts of different harnesses editing calc.go over five commits, and
// an uncommitted agent edit. It returns the bookkeeping of the file as it
// is in the working tree and at HEAD.
func script(t *testing.T, r *repo) (work, head doc) {
	t.Helper()
	const f = "calc.go"
	d := doc{}.insert(0, "",
		"package calc",
		"",
		"// Add adds two numbers.",
		"func Add(a, b int) int {",
		"\treturn a + b",
		"}")
	r.writeFile(f, d.bytes())
	r.commit("Pat", "add")

	// Agent alpha reads the file and adds Mul after Add.
	agentEdit := func(a agent, tool, call string, next doc) doc {
		r.event(a, "read", "Read", "", f, d.bytes())
		r.span(a, "user", "", "span:"+call+":u", `{"kind":"user","role":"user","text":"please work on calc.go, call `+call+`"}`)
		r.span(a, "tool_use", tool, "span:"+call, `{"kind":"tool_use","role":"assistant","id":"`+call+`","tool":"`+tool+`","input":{"file_path":"calc.go"}}`)
		r.event(a, "edit", tool, call, f, next.bytes())
		r.writeFile(f, next.bytes())
		return next
	}
	d = agentEdit(alpha, "Edit", "toolu_1", d.insert(len(d), alpha.writer,
		"",
		"// Mul multiplies two numbers.",
		"func Mul(a, b int) int {",
		"\treturn a * b",
		"}"))
	r.commit("Pat", "mul")

	// Agent beta adds Sub; the person changes one of its lines and adds
	// Div before committing.
	d = agentEdit(beta, "apply_patch", "call_2", d.insert(len(d), beta.writer,
		"",
		"// Sub subtracts b from a.",
		"func Sub(a, b int) int {",
		"\treturn a - b",
		"}"))
	d = d.set(d.find(t, "\treturn a - b"), "", "\treturn a - b // checked")
	d = d.insert(len(d), "",
		"",
		"// Div divides a by b.",
		"func Div(a, b int) int {",
		"\treturn a / b",
		"}")
	r.writeFile(f, d.bytes())
	r.commit("Pat", "sub and div")

	// Agent alpha rewrites Mul's body and adds a helper near the top.
	next := d.set(d.find(t, "\treturn a * b"), alpha.writer, "\treturn mulChecked(a, b)")
	next = next.insert(2, alpha.writer,
		"// mulChecked multiplies, panicking on overflow.",
		"func mulChecked(a, b int) int {",
		"\tc := a * b",
		"\tif a != 0 && c/a != b {",
		"\t\tpanic(\"overflow\")",
		"\t}",
		"\treturn c",
		"}",
		"")
	d = agentEdit(alpha, "Write", "toolu_3", next)
	r.commit("Pat", "checked mul")

	// The person rewrites the agent's comment on Mul.
	d = d.set(d.find(t, "// Mul multiplies two numbers."), "", "// Mul returns a times b.")
	r.writeFile(f, d.bytes())
	r.commit("Pat", "doc")
	head = d

	// Uncommitted: beta adds a last function.
	d = agentEdit(beta, "apply_patch", "call_4", d.insert(len(d), beta.writer,
		"",
		"// Neg negates a.",
		"func Neg(a int) int { return -a }"))
	return d, head
}

func TestBlameMatchesBookkeeping(t *testing.T) {
	r := newRepo(t)
	work, head := script(t, r)
	ctx := context.Background()
	for _, c := range []struct {
		rev string
		d   doc
	}{{"", work}, {"HEAD", head}} {
		lines, err := blame.File(ctx, r.st, c.rev, "calc.go", blame.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(lines) != len(c.d) {
			t.Fatalf("rev %q: %d lines, want %d", c.rev, len(lines), len(c.d))
		}
		agentLines := 0
		for i, l := range lines {
			want := c.d[i]
			if l.Text != want.text {
				t.Fatalf("rev %q line %d: text %q, want %q", c.rev, i+1, l.Text, want.text)
			}
			got := ""
			if l.Origin != nil {
				got = l.Origin.Writer
				agentLines++
			}
			if got != want.owner {
				t.Errorf("rev %q line %d %q: origin %q, want %q", c.rev, i+1, l.Text, got, want.owner)
			}
		}
		if agentLines == 0 {
			t.Fatalf("rev %q: no agent line", c.rev)
		}
		// The commit of every line is git blame's.
		gitCommits := gitBlameCommits(t, r, c.rev, "calc.go")
		for i, l := range lines {
			if l.Commit != gitCommits[i] {
				t.Errorf("rev %q line %d: commit %s, git blame says %s", c.rev, i+1, l.Commit, gitCommits[i])
			}
		}
	}
}

// gitBlameCommits is git blame's commit per line, read from its plain
// porcelain output by the test itself.
func gitBlameCommits(t *testing.T, r *repo, rev, path string, flags ...string) []string {
	t.Helper()
	args := append([]string{"blame", "--porcelain"}, flags...)
	if rev != "" {
		args = append(args, rev)
	}
	out := r.git(append(args, "--", path)...)
	var commits []string
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && len(f[0]) == 40 && !strings.HasPrefix(line, "\t") {
			commits = append(commits, f[0])
		}
	}
	return commits
}

// TestBlameMovesAndCopies: a person moves an agent's function within the
// file and copies another into a new file; with -M -C the lines keep the
// agent as origin, as git blame -M -C keeps their first commit, and the
// commits agree with git's line by line. (The file has no blank lines, so
// which of two equal lines moved is never a matter of choice.)
func TestBlameMovesAndCopies(t *testing.T) {
	r := newRepo(t)
	fn := func(owner, name, body string) doc {
		return doc{}.insert(0, owner, "// "+name+" is one of the test's functions, "+strings.ToLower(name)+" by name.",
			"func "+name+"(a int) int {", "\treturn "+body, "}")
	}
	d := doc{{"package moves", ""}}
	r.writeFile("moves.go", d.bytes())
	r.commit("Pat", "start")
	next := append(append(append(append(doc{}, d...), fn(alpha.writer, "First", "a + 1")...), fn(alpha.writer, "Second", "a * 2")...), fn(alpha.writer, "Third", "-a")...)
	r.event(alpha, "read", "Read", "", "moves.go", d.bytes())
	r.event(alpha, "edit", "Edit", "toolu_m", "moves.go", next.bytes())
	d = append(next, fn("", "Fourth", "a - 4")...)
	r.writeFile("moves.go", d.bytes())
	r.commit("Pat", "functions")

	// Move Second after Third; copy First into a new file.
	first, second := d[1:5], d[5:9]
	moved := append(append(append(append(doc{}, d[:1]...), first...), d[9:13]...), second...)
	moved = append(moved, d[13:]...)
	r.writeFile("moves.go", moved.bytes())
	copied := append(doc{{"package moves", ""}}, first...)
	r.writeFile("copy.go", copied.bytes())
	r.commit("Pat", "move and copy")

	for _, c := range []struct {
		file string
		d    doc
	}{{"moves.go", moved}, {"copy.go", copied}} {
		lines, err := blame.File(context.Background(), r.st, "HEAD", c.file, blame.Options{Moves: true, Copies: true})
		if err != nil {
			t.Fatal(err)
		}
		gitCommits := gitBlameCommits(t, r, "HEAD", c.file, "-M", "-C")
		if len(lines) != len(c.d) || len(gitCommits) != len(c.d) {
			t.Fatalf("%s: %d lines, git %d, want %d", c.file, len(lines), len(gitCommits), len(c.d))
		}
		// The case is exercised only if git itself followed the lines:
		// the moved function (Second in moves.go, First in copy.go) is
		// older than the commit that moved it.
		sig := "func Second(a int) int {"
		if c.file == "copy.go" {
			sig = "func First(a int) int {"
		}
		if head := r.git("rev-parse", "HEAD"); gitCommits[c.d.find(t, sig)] == head {
			t.Fatalf("%s: git blame -M -C did not follow the moved lines", c.file)
		}
		for i, l := range lines {
			got := ""
			if l.Origin != nil {
				got = l.Origin.Writer
			}
			if got != c.d[i].owner {
				t.Errorf("%s line %d %q: origin %q, want %q", c.file, i+1, l.Text, got, c.d[i].owner)
			}
			if l.Commit != gitCommits[i] {
				t.Errorf("%s line %d: commit %s, git blame -M -C says %s", c.file, i+1, l.Commit, gitCommits[i])
			}
		}
	}
	// Without -C the copy is the copying commit's, and so a person's.
	lines, err := blame.File(context.Background(), r.st, "HEAD", "copy.go", blame.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lines {
		if l.Origin != nil {
			t.Errorf("without -C, copy.go line %d %q has origin %s", l.N, l.Text, l.Origin.Writer)
		}
	}
}
