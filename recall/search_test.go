package recall

import (
	"context"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/internal/testkit"
)

// qualityArchive is a fixed corpus: 300 filler spans over three sessions,
// and planted spans each query must find first.
func qualityArchive(t *testing.T) (*archive, map[string]string) {
	a := newArchive(t)
	rng := rand.New(rand.NewPCG(1, 2))
	planted := map[string]string{}
	sessions := []string{"s-one", "s-two", "s-three"}
	for b := range 10 {
		var recs []gitstore.Record
		for i := range 30 {
			kind := []string{"user", "assistant", "tool_result"}[i%3]
			recs = append(recs, a.span(sessions[b%3], kind, filler(rng, 20+rng.IntN(60))))
		}
		a.add("cc-"+sessions[b%3], recs...)
	}
	plant := func(name, writer, session string, r gitstore.Record) {
		res := a.add(writer, r)
		planted[name] = res.Events[0].Writer + "#" + itoa(res.Events[0].Seq)
	}
	plant("exact", "cc-s-one", "s-one", a.span("s-one", "assistant", "the flamingo stood on one leg near the "+filler(rng, 10)))
	plant("stem", "cc-s-two", "s-two", a.span("s-two", "user", "why did the compaction of the transcript lose the "+filler(rng, 5)))
	plant("typo", "cc-s-three", "s-three", a.span("s-three", "assistant", "deploy it to kubernetes on "+filler(rng, 8)))
	plant("file", "cc-s-one", "s-one", a.file("s-one", "read", "hooks/transcript.go", []byte("package hooks\n")))
	plant("file2", "cc-s-two", "s-two", a.file("s-two", "edit", "hooks/sweep.go", []byte("package hooks // sweep\n")))
	plant("tool", "cc-s-two", "s-two", a.toolUse("s-two", "Bash", map[string]any{"command": "go test ./recall/ -run TestZebraCrossing"}))
	return a, planted
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func TestSearchQuality(t *testing.T) {
	a, planted := qualityArchive(t)
	ix := a.open()
	for _, c := range []struct{ name, query, want string }{
		{"exact term", "flamingo", "exact"},
		{"stem", "compacting", "stem"},
		{"stem, plural", "transcripts compacted", "stem"},
		{"one-letter typo: substitution", "kubernetis", "typo"},
		{"one-letter typo: transposition", "kuberntes", "typo"},
		{"one-letter typo: deletion", "kubrnetes", "typo"},
		{"one-letter typo: insertion", "kubbernetes", "typo"},
		{"path fragment", "transcr", "file"},
		{"path fragment across a dot", "eep.g", "file2"},
		{"path", "hooks/sweep.go", "file2"},
		{"camelCase part", "zebra", "tool"},
		{"camelCase whole", "TestZebraCrossing", "tool"},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := search(t, ix, Query{Text: c.query})
			if len(res.Hits) == 0 {
				t.Fatalf("%q: no hits", c.query)
			}
			if got := res.Hits[0].ID; got != planted[c.want] {
				t.Errorf("%q: first hit %s (%s %q), want the planted %s", c.query, got, res.Hits[0].Kind, res.Hits[0].Snippet, planted[c.want])
			}
		})
	}
	// An exact match outranks a fragment, and a fragment a typo.
	res := search(t, ix, Query{Text: "flamingo"})
	if res.Total != 1 {
		t.Errorf("flamingo: %d hits, want 1", res.Total)
	}
	if h := res.Hits[0]; !strings.Contains(h.Snippet, "flamingo") || len([]rune(h.Snippet)) > 200 || strings.Contains(h.Snippet, "\n") {
		t.Errorf("snippet %q: want one line of at most 200 characters around the match", h.Snippet)
	}
	if res := search(t, ix, Query{Text: "xylophone"}); res.Total != 0 {
		t.Errorf("a word in no span: %d hits", res.Total)
	}
	if _, err := ix.Search(context.Background(), Query{Text: " ;; "}); err != ErrEmptyQuery {
		t.Errorf("empty query: %v, want ErrEmptyQuery", err)
	}
}

func TestSearchFilters(t *testing.T) {
	a, planted := qualityArchive(t)
	ix := a.open()
	all := search(t, ix, Query{Text: "alpha", Limit: 1000})
	if all.Total < 50 {
		t.Fatalf("alpha: %d hits; the filler should hold it often", all.Total)
	}
	bySession := map[string]int{}
	byKind := map[string]int{}
	for _, h := range all.Hits {
		bySession[h.Session]++
		byKind[h.Kind]++
	}
	for s, n := range bySession {
		res := search(t, ix, Query{Text: "alpha", Session: s, Limit: 1000})
		if res.Total != n {
			t.Errorf("session %s: %d hits, want %d", s, res.Total, n)
		}
		for _, h := range res.Hits {
			if h.Session != s {
				t.Errorf("session filter %s let through %s of %s", s, h.ID, h.Session)
			}
		}
	}
	for k, n := range byKind {
		res := search(t, ix, Query{Text: "alpha", Kind: k, Limit: 1000})
		if res.Total != n {
			t.Errorf("kind %s: %d hits, want %d", k, res.Total, n)
		}
	}
	if byKind[KindUserPrompt] == 0 || byKind[KindAssistantText] == 0 || byKind[KindToolResult] == 0 {
		t.Errorf("kinds %v: want user_prompt, assistant_text, tool_result", byKind)
	}
	// The stored names are aliases of the reported ones.
	if res := search(t, ix, Query{Text: "alpha", Kind: "user", Limit: 1000}); res.Total != byKind[KindUserPrompt] {
		t.Errorf("kind user: %d hits, want %d", res.Total, byKind[KindUserPrompt])
	}
	res := search(t, ix, Query{Text: "hooks", Kind: KindFile})
	if res.Total != 2 {
		t.Errorf("kind file: %d hits, want the 2 file versions", res.Total)
	}
	if res := search(t, ix, Query{Text: "flamingo", Session: "s-two"}); res.Total != 0 {
		t.Errorf("flamingo in s-two: %d hits, want 0", res.Total)
	}
	if res := search(t, ix, Query{Text: "flamingo", Session: "s-one"}); res.Total != 1 || res.Hits[0].ID != planted["exact"] {
		t.Errorf("flamingo in s-one: %+v", res)
	}
}

func TestSearchCursor(t *testing.T) {
	a, _ := qualityArchive(t)
	ix := a.open()
	first := search(t, ix, Query{Text: "alpha bravo"})
	if first.Total < 30 {
		t.Fatalf("%d hits: too few to page", first.Total)
	}
	seen := map[string]bool{}
	pages := 0
	q := Query{Text: "alpha bravo", Limit: 7}
	var last float64 = 1e9
	for {
		res := search(t, ix, q)
		pages++
		if res.Total != first.Total {
			t.Fatalf("page %d: total %d, want %d", pages, res.Total, first.Total)
		}
		for _, h := range res.Hits {
			if seen[h.ID] {
				t.Fatalf("page %d repeats %s", pages, h.ID)
			}
			seen[h.ID] = true
			if h.Score > last+1e-9 {
				t.Errorf("page %d: score %f after %f: not ranked", pages, h.Score, last)
			}
			last = h.Score
		}
		if res.Next == "" {
			break
		}
		if len(res.Hits) != 7 {
			t.Fatalf("page %d: %d hits before the last page", pages, len(res.Hits))
		}
		q.Cursor = res.Next
	}
	if len(seen) != first.Total {
		t.Errorf("pages covered %d hits of %d", len(seen), first.Total)
	}
	if _, err := ix.Search(context.Background(), Query{Text: "charlie", Cursor: q.Cursor}); err == nil {
		t.Error("a cursor of another query was accepted")
	}
	if _, err := ix.Search(context.Background(), Query{Text: "alpha bravo", Cursor: "garbage!"}); err == nil {
		t.Error("a garbage cursor was accepted")
	}
}

func TestSnippet(t *testing.T) {
	p := testkit.PlantedSecrets(9)
	long := strings.Repeat("lorem ipsum dolor sit amet ", 40)
	text := long + "\n\nthe heron and the otter\n" + long
	s := snippet(text, map[string]bool{"heron": true, "otter": true})
	if !strings.Contains(s, "the heron and the otter") || !strings.HasPrefix(s, "…") || !strings.HasSuffix(s, "…") ||
		len([]rune(s)) > 200 || strings.ContainsAny(s, "\n\t") {
		t.Errorf("snippet %q", s)
	}
	// A secret across the window's edge is masked whole, not cut.
	text = strings.Repeat("x ", 30) + "heron " + strings.Repeat("y ", 60) + "token " + p["github"] + " tail"
	s = snippet(text, map[string]bool{"heron": true})
	if strings.Contains(s, p["github"][:8]) {
		t.Errorf("snippet %q shows part of a secret", s)
	}
	if s := snippet("short text", nil); s != "short text" {
		t.Errorf("no match: %q", s)
	}
}
