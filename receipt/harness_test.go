package receipt_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/git-lossless/git-lossless/receipt/note"
)

// TestContextHarness: a context line names its harness when it is known
// (the events' field, else their writer's prefix through Input.HarnessOf),
// the worked example issued with the mapping differs from the one without
// it exactly as the package doc says, both parse back to the same bytes,
// a receipt without the field (every receipt issued before it existed)
// still parses with no harness, several harnesses are listed in byte
// order, and a harness written as "-" is not canonical.
func TestContextHarness(t *testing.T) {
	ccIsClaude := func(w string) string {
		if strings.HasPrefix(w, "cc-") {
			return "claude-code"
		}
		return ""
	}
	in := exampleInput()
	in.HarnessOf = ccIsClaude
	r, err := note.Compute(in)
	if err != nil {
		t.Fatal(err)
	}
	with := marshal(t, r)
	old := string(exampleBody(t))
	var want []string
	for _, l := range strings.Split(old, "\n") {
		if strings.HasPrefix(l, "context ") {
			l += " harness claude-code"
		}
		want = append(want, l)
	}
	if with != strings.Join(want, "\n") {
		t.Fatalf("with a mapping:\n%s\nwant:\n%s", with, strings.Join(want, "\n"))
	}
	src, err := os.ReadFile(filepath.Join("note", "doc.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(with, "\n") {
		if strings.HasPrefix(l, "context ") && !strings.Contains(string(src), "//\t"+l+"\n") {
			t.Errorf("note/doc.go does not show the context line %q", l)
		}
	}
	for body, h := range map[string]string{with: "claude-code", old: ""} {
		p, err := note.Parse([]byte(body))
		if err != nil {
			t.Fatalf("parse: %v\n%s", err, body)
		}
		if marshal(t, p) != body {
			t.Errorf("parse and marshal changed the body")
		}
		for _, c := range p.Contexts {
			if c.Harness != h {
				t.Errorf("parsed context harness %q, want %q", c.Harness, h)
			}
		}
		if got := strings.Join(p.Harnesses(), ","); got != h {
			t.Errorf("Harnesses() = %q, want %q", got, h)
		}
	}

	// The field alone names the harness without a mapping; two harnesses
	// in one context are listed in byte order.
	in = exampleInput()
	for i := range in.Events {
		in.Events[i].Harness = "opencode"
	}
	in.Events[2].Harness = "codex"
	r, err = note.Compute(in)
	if err != nil {
		t.Fatal(err)
	}
	if r.Contexts[0].Harness != "codex,opencode" || r.Contexts[1].Harness != "opencode" {
		t.Errorf("contexts %q %q", r.Contexts[0].Harness, r.Contexts[1].Harness)
	}
	body := marshal(t, r)
	if !strings.Contains(body, " harness codex,opencode\n") {
		t.Errorf("body:\n%s", body)
	}
	if _, err := note.Parse([]byte(body)); err != nil {
		t.Errorf("parse: %v", err)
	}
	lines := strings.Split(old, "\n")
	c1 := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "context c1 ") })
	if c1 < 0 {
		t.Fatal("no context line c1")
	}
	for _, bad := range []string{" harness -", " harness", " harnesses claude-code", " harness claude-code extra"} {
		ls := slices.Clone(lines)
		ls[c1] += bad
		b := strings.Join(ls, "\n")
		if _, err := note.Parse([]byte(b)); err == nil {
			t.Errorf("a context line ending %q parsed", bad)
		}
	}
}

func marshal(t *testing.T, r *note.Receipt) string {
	t.Helper()
	b, err := r.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
