package harnesses

import (
	"strings"
	"testing"
)

// TestList: the default harness is Claude Code (hook command lines of
// every earlier install name none), names and prefixes are unique, no
// prefix starts another (a writer's harness is never ambiguous), and a
// writer maps back to its harness.
func TestList(t *testing.T) {
	hs := All()
	if len(hs) == 0 || Default().Name() != "claude-code" || Default().Prefix() != "cc-" {
		t.Fatalf("default harness %v", Default())
	}
	names, prefixes := map[string]bool{}, map[string]bool{}
	for _, h := range hs {
		if h.Name() == "" || h.Prefix() == "" || names[h.Name()] || prefixes[h.Prefix()] {
			t.Fatalf("harness %q prefix %q: empty or twice", h.Name(), h.Prefix())
		}
		names[h.Name()], prefixes[h.Prefix()] = true, true
		if got, ok := ByName(h.Name()); !ok || got.Prefix() != h.Prefix() {
			t.Errorf("ByName(%q) = %v %v", h.Name(), got, ok)
		}
		if got, ok := OfWriter(h.Prefix() + "0b1c-session"); !ok || got.Name() != h.Name() {
			t.Errorf("OfWriter(%s...) = %v %v", h.Prefix(), got, ok)
		}
	}
	for p := range prefixes {
		for q := range prefixes {
			if p != q && strings.HasPrefix(q, p) {
				t.Errorf("prefix %q starts %q", p, q)
			}
		}
	}
	if len(Names()) != len(hs) {
		t.Errorf("Names %v", Names())
	}
	for _, w := range []string{"proxy-0123abcd-localhost_8080", "cli-0123abcd", "mcp-0123abcd", "golden"} {
		if h, ok := OfWriter(w); ok {
			t.Errorf("OfWriter(%q) = %s, want no harness", w, h.Name())
		}
	}
	if _, ok := ByName("no-such-harness"); ok {
		t.Error("ByName found no-such-harness")
	}
}

// TestFlag: "" is the default harness, a name its harness, and an unknown
// name an error listing every harness.
func TestFlag(t *testing.T) {
	if h, err := Flag(""); err != nil || h.Name() != Default().Name() {
		t.Errorf(`Flag(""): %v, %v`, h, err)
	}
	for _, n := range Names() {
		if h, err := Flag(n); err != nil || h.Name() != n {
			t.Errorf("Flag(%q): %v, %v", n, h, err)
		}
	}
	_, err := Flag("cursor")
	if err == nil || !strings.Contains(err.Error(), `--harness "cursor"`) {
		t.Fatalf(`Flag("cursor"): %v`, err)
	}
	for _, n := range Names() {
		if !strings.Contains(err.Error(), n) {
			t.Errorf("the error %q does not name %s", err, n)
		}
	}
}
