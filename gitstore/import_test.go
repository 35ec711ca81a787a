package gitstore

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/internal/gitobj/gitobjtest"
	"github.com/git-lossless/git-lossless/seal"
)

func sourceText(i int) []byte { return gitobjtest.SourceText(i) }

func importRecords(n int, session string) []Record {
	recs := make([]Record, n)
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i := range recs {
		recs[i] = Record{
			Event: Event{
				TS: base.Add(time.Duration(i) * time.Millisecond), Op: "read", Source: "sweep",
				Session: session, Path: fmt.Sprintf("src/pkg%d/file%d.go", i%13, i), View: "full", Tool: "Read",
			},
			Content: sourceText(i), HasContent: true,
		}
	}
	return recs
}

func TestImportThousandInBatches(t *testing.T) {
	dir := gitInit(t)
	s, err := OpenDir(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	recs := importRecords(1000, "s-import")
	// A denied path never reaches an object, as with Append.
	recs[10].Path = "config/.env"
	secret := string(recs[10].Content)
	res, err := s.Import(ctx, "imp", recs, 50)
	if err != nil {
		t.Fatal(err)
	}
	if res.Batches != 20 || len(res.Events) != 1000 || res.Commit == "" || res.Pack == "" {
		t.Fatalf("result: %d batches, %d events, commit %q, pack %q", res.Batches, len(res.Events), res.Commit, res.Pack)
	}
	if !res.Events[10].Excluded || res.Events[10].Blob != "" {
		t.Fatalf("denied record stored content: %+v", res.Events[10])
	}
	if res.Events[999].Seq != 1000 || res.Events[999].Commit != res.Commit || res.Events[0].Commit == res.Commit {
		t.Fatalf("seq/commit: %+v / %+v", res.Events[0], res.Events[999])
	}
	// Everything went into one pack: no loose objects at all.
	if out := gitRun(t, dir, "count-objects", "-v"); !strings.Contains(out, "count: 0\n") || !strings.Contains(out, "packs: 1\n") {
		t.Fatalf("count-objects:\n%s", out)
	}
	gitRun(t, dir, "fsck", "--strict", "--no-dangling")
	if got := gitRun(t, dir, "rev-list", "--count", RefPrefix+"imp"); strings.TrimSpace(got) != "20" {
		t.Fatalf("rev-list --count = %s", got)
	}
	for _, i := range []int{0, 1, 499, 999} {
		ev := res.Events[i]
		if got := gitRun(t, dir, "cat-file", "blob", ev.Blob); got != string(recs[i].Content) {
			t.Fatalf("cat-file %d: %d bytes, want %d", i, len(got), len(recs[i].Content))
		}
		if ev.Blob != BlobID(recs[i].Content) {
			t.Fatalf("blob id %d", i)
		}
	}
	if out, err := exec.Command("git", "-C", dir, "cat-file", "-e", BlobID([]byte(secret))).CombinedOutput(); err == nil {
		t.Fatalf("denied content is in the archive: %s", out)
	}

	rep, err := s.Verify(ctx, "imp", seal.Options{})
	if err != nil || !rep.OK() || rep.Entries != 1000 || rep.Batches != 20 || rep.Blobs != 999 {
		t.Fatalf("verify %+v %v", rep, err)
	}
	evs, err := s.Events(ctx, Query{Session: "s-import"})
	if err != nil || len(evs) != 1000 {
		t.Fatalf("events %d %v", len(evs), err)
	}
	for i, e := range evs {
		if e.Seq != int64(i+1) || e.Path != recs[i].Path || e.Writer != "imp" {
			t.Fatalf("event %d: %+v", i, e)
		}
	}
	// The index is current: a fresh reader with the index removed agrees.
	os.RemoveAll(filepath.Join(dir, ".git", "lossless", "index"))
	s2, _ := OpenDir(dir, Options{})
	evs2, err := s2.Events(ctx, Query{Path: recs[500].Path})
	if err != nil || len(evs2) != 1 || string(evs2[0].Raw) != string(evs[500].Raw) {
		t.Fatalf("events after reindex %d %v", len(evs2), err)
	}

	// A regular Append on top: loose objects on a packed head.
	ar, err := s.Append(ctx, "imp", []Record{{Event: Event{Op: "edit", Source: "hook", Session: "s-import", Path: "a.go"}, Content: []byte("package a\n"), HasContent: true}})
	if err != nil || len(ar.Events) != 1 || ar.Events[0].Seq != 1001 {
		t.Fatalf("append on import: %+v %v", ar, err)
	}
	rep, err = s.Verify(ctx, "imp", seal.Options{})
	if err != nil || !rep.OK() || rep.Entries != 1001 || rep.Batches != 21 {
		t.Fatalf("verify after append %+v %v", rep, err)
	}
	gitRun(t, dir, "fsck", "--strict", "--no-dangling")
	if evs, _ := s.Events(ctx, Query{Session: "s-import"}); len(evs) != 1001 {
		t.Fatalf("events after append: %d", len(evs))
	}

	// Import again on a head that has loose objects; and after git gc.
	if _, err := s.Import(ctx, "imp", importRecords(30, "s-second"), 7); err != nil {
		t.Fatal(err)
	}
	gitRun(t, dir, "gc", "-q", "--prune=now")
	s3, _ := OpenDir(dir, Options{})
	rep, err = s3.Verify(ctx, "imp", seal.Options{})
	if err != nil || !rep.OK() || rep.Entries != 1031 || rep.Batches != 26 {
		t.Fatalf("verify after gc %+v %v", rep, err)
	}
}

// Import and Append share the batch encoding: the same events with the
// same clock give the same commit.
func TestImportMatchesAppend(t *testing.T) {
	clock := func() time.Time { return time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC) }
	recs := importRecords(12, "same")
	for i := range recs {
		recs[i].Repo = "/src/same" // else each repository's own path
	}
	var heads []string
	for _, bulk := range []bool{false, true} {
		dir := gitInit(t)
		s, err := OpenDir(dir, Options{Now: clock})
		if err != nil {
			t.Fatal(err)
		}
		var head string
		if bulk {
			res, err := s.Import(context.Background(), "w", recs, 5)
			if err != nil {
				t.Fatal(err)
			}
			head = res.Commit
		} else {
			for i := 0; i < len(recs); i += 5 {
				res, err := s.Append(context.Background(), "w", recs[i:min(i+5, len(recs))])
				if err != nil {
					t.Fatal(err)
				}
				head = res.Commit
			}
		}
		heads = append(heads, head)
	}
	if heads[0] != heads[1] {
		t.Fatalf("append head %s, import head %s", heads[0], heads[1])
	}
}

func TestImportDedupeKeys(t *testing.T) {
	dir := gitInit(t)
	s, err := OpenDir(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := s.Append(ctx, "k", []Record{{Event: Event{Op: "read", Source: "hook", Key: "toolu_3"}}}); err != nil {
		t.Fatal(err)
	}
	recs := importRecords(20, "k")
	for i := range recs {
		recs[i].Key = fmt.Sprintf("toolu_%d", i%10) // 0..9 twice; 3 stored already
	}
	res, err := s.Import(ctx, "k", recs, 4)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Events) != 9 || res.Deduped != 11 || res.Events[0].Seq != 2 {
		t.Fatalf("dedupe: %d events, %d deduped, first seq %d", len(res.Events), res.Deduped, res.Events[0].Seq)
	}
	again, err := s.Import(ctx, "k", recs, 4)
	if err != nil || len(again.Events) != 0 || again.Deduped != 20 || again.Commit != "" {
		t.Fatalf("re-import: %+v %v", again, err)
	}
	rep, err := s.Verify(ctx, "k", seal.Options{})
	if err != nil || !rep.OK() || rep.Entries != 10 {
		t.Fatalf("verify %+v %v", rep, err)
	}
}

// Imports racing appends from other processes (here: other Store handles,
// which share no mutex) all land, each exactly once, on one chain.
func TestImportConcurrentAppends(t *testing.T) {
	dir := gitInit(t)
	ctx := context.Background()
	imp, err := OpenDir(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := OpenDir(dir, Options{})
			if err != nil {
				errs <- err
				return
			}
			for i := range 40 {
				c := fmt.Sprintf("append %d %d\n", g, i)
				if _, err := st.Append(ctx, "race", []Record{{Event: Event{Op: "read", Source: "hook"}, Content: []byte(c), HasContent: true}}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for range 5 {
		if _, err := imp.Import(ctx, "race", importRecords(100, "bulk"), 10); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	rep, err := imp.Verify(ctx, "race", seal.Options{})
	if err != nil || !rep.OK() || rep.Entries != 580 {
		t.Fatalf("verify %+v %v", rep, err)
	}
	gitRun(t, dir, "fsck", "--strict", "--no-dangling")
}

// The native pack reader reads what git gc writes: deltified entries (ofs
// deltas, chains) as well as whole ones, without falling back to go-git.
func TestPackReaderReadsGitDeltas(t *testing.T) {
	dir := gitInit(t)
	s, err := OpenDir(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// Versions of one file, each a small edit of the last: gc deltifies them.
	base := sourceText(3)
	var recs []Record
	var contents [][]byte
	for i := range 40 {
		c := append([]byte(fmt.Sprintf("// version %d\n", i)), base...)
		c = append(c, fmt.Sprintf("\nfunc v%d() {}\n", i)...)
		contents = append(contents, c)
		recs = append(recs, Record{Event: Event{Op: "edit", Source: "hook", Path: "a.go"}, Content: c, HasContent: true})
	}
	if _, err := s.Import(ctx, "d", recs, 10); err != nil {
		t.Fatal(err)
	}
	gitRun(t, dir, "gc", "-q", "--aggressive", "--prune=now")
	out := gitRun(t, dir, "verify-pack", "-v", filepath.Join(dir, ".git", "objects", "pack", packName(t, dir)))
	if !strings.Contains(out, "chain length = ") {
		t.Fatalf("git gc wrote no deltas:\n%s", out)
	}
	s2, _ := OpenDir(dir, Options{})
	for _, c := range contents {
		typ, body, err := s2.odb.ReadPackedNative(BlobID(c))
		if err != nil || typ != "blob" || string(body) != string(c) {
			t.Fatalf("native read of %s: %s %v", BlobID(c), typ, err)
		}
	}
	rep, err := s2.Verify(ctx, "d", seal.Options{})
	if err != nil || !rep.OK() || rep.Entries != 40 {
		t.Fatalf("verify %+v %v", rep, err)
	}
}

func packName(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(dir, ".git", "objects", "pack"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".idx") {
			return e.Name()
		}
	}
	t.Fatal("no pack")
	return ""
}

func TestFinderMatchesBytesIndex(t *testing.T) {
	data := []byte(strings.Repeat(`{"op":"read","prev":"00ab","session":"s-1","ts":"2026"}`+"\n", 50) + `{"op":"read","session":"session-042"}` + "\n")
	for _, needle := range []string{`"session":"session-042"`, `"session":"s-1"`, `"op":"read"`, `"x"`, `{`, "\n", `2026"}`, `"session":"session-04`} {
		f := newFinder([]byte(needle), data[:100])
		for off := 0; off <= len(data); off += 7 {
			if got, want := f.index(data[off:]), bytes.Index(data[off:], []byte(needle)); got != want {
				t.Fatalf("%q at %d: %d, want %d", needle, off, got, want)
			}
		}
	}
}
