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
