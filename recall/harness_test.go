package recall

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// TestHarness: hits, digests and file versions name the harness of their
// event — its "harness" field, else the one Options.HarnessOf gives its
// writer, else none — and Query.Harness and DigestQuery.Harness keep one
// harness's; the index stores only the field (the mapping is applied at
// search time), so an index built without a mapping answers with one.
func TestHarness(t *testing.T) {
	a := newArchive(t)
	add := func(writer, harness, session, word string) {
		sp := a.span(session, "user", "look at "+word+" and sharedword")
		fv := a.file(session, "read", word+".go", []byte("package p\n"))
		sp.Harness, fv.Harness = harness, harness
		a.add(writer, sp, fv)
	}
	add("cc-old", "", "old", "claudeold")          // before the field: told by the prefix
	add("codex-new", "codex", "new", "codexfield") // the field
	add("codex-bare", "", "bare", "codexbare")     // no field, told by the prefix
	add("oc-mix", "claude-code", "mix", "mixword") // the field wins over the prefix
	add("golden", "", "", "cliword")               // no harness
	ofWriter := func(w string) string {
		for p, h := range map[string]string{"cc-": "claude-code", "codex-": "codex", "oc-": "opencode"} {
			if strings.HasPrefix(w, p) {
				return h
			}
		}
		return ""
	}
	want := map[string]string{"cc-old": "claude-code", "codex-new": "codex", "codex-bare": "codex", "oc-mix": "claude-code", "golden": ""}

	// Built without a mapping: only the field counts.
	ix := a.open()
	for _, h := range search(t, ix, Query{Text: "sharedword", Limit: 20}).Hits {
		if h.Writer == "codex-new" && h.Harness != "codex" || h.Writer == "cc-old" && h.Harness != "" {
			t.Errorf("without a mapping: %s harness %q", h.Writer, h.Harness)
		}
	}
	ix.Close()

	ix = a.open(Options{HarnessOf: ofWriter})
	defer ix.Close()
	res := search(t, ix, Query{Text: "sharedword", Limit: 20})
	if len(res.Hits) != len(want) {
		t.Fatalf("%d hits, want %d", len(res.Hits), len(want))
	}
	for _, h := range res.Hits {
		if h.Harness != want[h.Writer] {
			t.Errorf("hit of %s: harness %q, want %q", h.Writer, h.Harness, want[h.Writer])
		}
	}
	for h, writers := range map[string][]string{"claude-code": {"cc-old", "oc-mix"}, "codex": {"codex-bare", "codex-new"}, "opencode": nil} {
		res := search(t, ix, Query{Text: "sharedword", Limit: 20, Harness: h})
		var got []string
		for _, hit := range res.Hits {
			got = append(got, hit.Writer)
		}
		slices.Sort(got)
		if strings.Join(got, ",") != strings.Join(writers, ",") || res.Total != len(writers) {
			t.Errorf("Harness %s: hits of %v, want %v", h, got, writers)
		}
	}
	// A page cursor is bound to the harness filter too.
	p1 := search(t, ix, Query{Text: "sharedword", Limit: 1, Harness: "codex"})
	if p1.Next == "" {
		t.Fatal("no next page")
	}
	if _, err := ix.Search(context.Background(), Query{Text: "sharedword", Limit: 1, Harness: "claude-code", Cursor: p1.Next}); err == nil {
		t.Error("a cursor of a codex search continued a claude-code one")
	}

	ds, err := ix.Digests(context.Background(), DigestQuery{})
	if err != nil || len(ds) != len(want) {
		t.Fatalf("digests: %v, %d", err, len(ds))
	}
	for _, d := range ds {
		if d.Harness != want[d.Writer] || !strings.Contains(d.String(), "harness "+d.Harness) && d.Harness != "" {
			t.Errorf("digest of %s: harness %q, want %q (%s)", d.Writer, d.Harness, want[d.Writer], d.String())
		}
	}
	ds, err = ix.Digests(context.Background(), DigestQuery{Harness: "codex"})
	if err != nil || len(ds) != 2 {
		t.Errorf("digests of codex: %v, %d", err, len(ds))
	}
	vs, err := ix.FileHistory(context.Background(), "codexbare.go", "")
	if err != nil || len(vs) != 1 || vs[0].Harness != "codex" || !strings.Contains(vs[0].String(), "(codex)") {
		t.Errorf("file history: %v %+v", err, vs)
	}
}
