package tokens_test

import (
	"context"
	"github.com/git-lossless/git-lossless/internal/tokens"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
)

// The count cache is content-addressed: one blob shown one way is counted
// once however many events show it, and once for every later counter of
// the repository; what is cached is what the codec counts.
func TestTokenCounterCache(t *testing.T) {
	r := newRepo(t)
	at := time.Now().UTC().Add(-time.Hour)
	code := "package main\n\nfunc main() {\n\tprintln(\"hello, world\")\n}\n"
	span := `{"kind":"assistant","role":"assistant","text":"I read a.go."}`
	contents := []string{code, code, code, code, span, ""}
	evs := r.record("cli-tok",
		rec{at: at, session: "s", op: "read", path: "a.go", content: code},
		rec{at: at.Add(time.Second), session: "s", agent: "sub", op: "read", path: "a.go", content: code},
		rec{at: at.Add(2 * time.Second), session: "t", op: "read", path: "b.go", content: code}, // same blob, other path
		rec{at: at.Add(3 * time.Second), session: "s", op: "read", path: "a.go", content: code, view: "lines:3-4"},
		rec{at: at.Add(4 * time.Second), session: "s", op: "span", content: span},
		rec{at: at.Add(5 * time.Second), session: "s", op: "edit", path: "c.go", none: true},
	)
	ptrs := make([]*gitstore.Event, len(evs))
	for i := range evs {
		ptrs[i] = &evs[i]
	}
	want := make([]int64, len(evs))
	for i, e := range ptrs {
		if e.Blob == "" {
			continue
		}
		n, err := tokens.CountText(tokens.ModelText(e, []byte(contents[i])))
		if err != nil {
			t.Fatal(err)
		}
		want[i] = n
	}
	if want[0] == 0 || want[3] >= want[0] || want[4] == 0 {
		t.Fatalf("reference counts %v: the full text, a part of it and a span must count differently", want)
	}
	ctx := context.Background()
	tc := tokens.NewCounter(ctx, r.st)
	if tc.Dir == "" {
		t.Fatal("no cache directory")
	}
	// Leftovers of the previous cache layout are retired by the first write.
	old := filepath.Join(filepath.Dir(tc.Dir), "tokens-o200k")
	if err := os.MkdirAll(old, 0o700); err != nil {
		t.Fatal(err)
	}
	got := tc.CountAll(ctx, ptrs)
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("counts %v, want %v", got, want)
		}
	}
	if s := tc.Stats(); s.Unique != 3 || s.Counted != 3 || s.Cached != 0 {
		t.Fatalf("first count: %+v, want 3 distinct (full, lines:3-4, span) counted", s)
	}
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Errorf("the old cache directory is still there: %v", err)
	}
	cache, err := os.ReadFile(filepath.Join(tc.Dir, "counts.txt"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(cache), "\n"), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], evs[0].Blob+" full ") {
		t.Fatalf("cache file:\n%s", cache)
	}

	// A new counter (another process) finds every count in the cache, and
	// ignores a torn last line.
	f, err := os.OpenFile(filepath.Join(tc.Dir, "counts.txt"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(evs[0].Blob + " lines:1-1 12")
	f.Close()
	tc2 := tokens.NewCounter(ctx, r.st)
	got = tc2.CountAll(ctx, ptrs)
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("cached counts %v, want %v", got, want)
		}
	}
	if s := tc2.Stats(); s.Cached != 3 || s.Counted != 0 {
		t.Fatalf("second count: %+v, want all 3 from the cache", s)
	}
	// The cache is derived: deleting it only costs recounting.
	if err := os.RemoveAll(tc.Dir); err != nil {
		t.Fatal(err)
	}
	tc3 := tokens.NewCounter(ctx, r.st)
	tc3.Workers = 1
	if got := tc3.CountAll(ctx, ptrs); got[0] != want[0] || tc3.Stats().Counted != 3 {
		t.Fatalf("after deleting the cache: %v %+v", got, tc3.Stats())
	}
}

// A count that cannot be made (the blob is gone) is -1 and not cached.
func TestTokenCounterMissingBlob(t *testing.T) {
	r := newRepo(t)
	ev := gitstore.Event{Writer: "x", Seq: 1, Op: "read", View: "full", Blob: strings.Repeat("ab", 20)}
	tc := tokens.NewCounter(t.Context(), r.st)
	if got := tc.CountAll(context.Background(), []*gitstore.Event{&ev}); got[0] != -1 {
		t.Fatalf("count of a missing blob = %d, want -1", got[0])
	}
	if s := tc.Stats(); s.Failed != 1 {
		t.Fatalf("stats %+v", s)
	}
	if _, err := os.Stat(filepath.Join(tc.Dir, "counts.txt")); !os.IsNotExist(err) {
		t.Fatalf("a failed count was cached: %v", err)
	}
}
