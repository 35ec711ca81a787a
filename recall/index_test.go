package recall

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/git-lossless/git-lossless/gitstore"
)

// smallArchive has three writers of 40 filler spans each.
func smallArchive(t *testing.T) *archive {
	a := newArchive(t)
	rng := rand.New(rand.NewPCG(7, 7))
	for w := range 3 {
		s := fmt.Sprintf("s%d", w)
		for range 2 {
			var recs []gitstore.Record
			for range 20 {
				recs = append(recs, a.span(s, "assistant", filler(rng, 30)))
			}
			a.add("cc-"+s, recs...)
		}
	}
	return a
}

func TestIncrementalUpdate(t *testing.T) {
	a := smallArchive(t)
	ix := a.open()
	st := ix.Stats()
	if !st.Rebuilt || len(st.WritersRead) != 3 || st.DocsAdded != 120 || st.Docs != 120 {
		t.Fatalf("first open: %+v", st)
	}
	// Nothing moved: nothing is read.
	ix = a.open()
	if st := ix.Stats(); st.Rebuilt || len(st.WritersRead) != 0 || st.EventsRead != 0 || st.Docs != 120 {
		t.Fatalf("second open read something: %+v", st)
	}
	// One new batch on one writer: only it is read, only its new events.
	a.add("cc-s1", a.span("s1", "user", "where is the narwhal"), a.span("s1", "assistant", "the narwhal swims"))
	ix = a.open()
	st = ix.Stats()
	if st.Rebuilt || !slices.Equal(st.WritersRead, []string{"cc-s1"}) || st.EventsRead != 2 || st.DocsAdded != 2 || st.Docs != 122 {
		t.Fatalf("after one batch: %+v", st)
	}
	res := search(t, ix, Query{Text: "narwhal"})
	if res.Total != 2 {
		t.Fatalf("narwhal: %d hits, want 2", res.Total)
	}
	// A fresh Index (another process) sees the same on disk.
	if res := search(t, a.open(Options{NoUpdate: true}), Query{Text: "narwhal"}); res.Total != 2 {
		t.Fatalf("narwhal from disk: %d hits", res.Total)
	}
	// A new writer.
	a.add("cc-s9", a.span("s9", "user", "a narwhal again"))
	ix = a.open()
	if st := ix.Stats(); !slices.Equal(st.WritersRead, []string{"cc-s9"}) || st.EventsRead != 1 {
		t.Fatalf("new writer: %+v", st)
	}
	if res := search(t, ix, Query{Text: "narwhal"}); res.Total != 3 {
		t.Fatalf("narwhal: %d hits, want 3", res.Total)
	}
}

// TestManyBatchesWalkLimit: more new batches than are read commit by
// commit are read in bulk, still only the new events.
func TestManyBatchesWalkLimit(t *testing.T) {
	a := smallArchive(t)
	a.open()
	for i := range walkLimit + 6 {
		a.add("cc-s2", a.span("s2", "user", fmt.Sprintf("batch number %d of the walrus", i)))
	}
	ix := a.open()
	st := ix.Stats()
	if !slices.Equal(st.WritersRead, []string{"cc-s2"}) || st.EventsRead != walkLimit+6 || st.Rebuilt {
		t.Fatalf("%+v", st)
	}
	if res := search(t, ix, Query{Text: "walrus"}); res.Total != walkLimit+6 {
		t.Fatalf("walrus: %d hits", res.Total)
	}
}

func TestSegmentsStayFew(t *testing.T) {
	a := newArchive(t)
	const n = 100
	for i := range n {
		a.add("cc-s", a.span("s", "user", fmt.Sprintf("update %d mentions the okapi", i)))
		ix := a.open()
		if segs := ix.Stats().Segments; segs > 8 {
			t.Fatalf("after %d updates: %d segments", i+1, segs)
		}
	}
	ix := a.open()
	if res := search(t, ix, Query{Text: "okapi", Limit: 1000}); res.Total != n {
		t.Fatalf("okapi: %d hits, want %d", res.Total, n)
	}
	files := segmentFiles(t, a.indexDir(t.Context()))
	if len(files) != ix.Stats().Segments {
		t.Errorf("%d segment files on disk, the manifest lists %d: merged-away files were not removed", len(files), ix.Stats().Segments)
	}
}

func TestDeletedIndexIsRebuilt(t *testing.T) {
	a := smallArchive(t)
	a.open()
	if err := os.RemoveAll(a.indexDir(t.Context())); err != nil {
		t.Fatal(err)
	}
	ix := a.open()
	if st := ix.Stats(); !st.Rebuilt || st.Docs != 120 {
		t.Fatalf("%+v", st)
	}
	if len(segmentFiles(t, a.indexDir(t.Context()))) == 0 {
		t.Fatal("no segment written")
	}
	// Delete just the manifest: also rebuilt.
	os.Remove(filepath.Join(a.indexDir(t.Context()), manifestName))
	if st := a.open().Stats(); !st.Rebuilt || st.Docs != 120 {
		t.Fatalf("%+v", st)
	}
}

func TestCorruptIndexIsRebuilt(t *testing.T) {
	for _, c := range []struct {
		name  string
		spoil func(t *testing.T, dir string)
	}{
		{"flipped byte in the page table", func(t *testing.T, dir string) {
			flipAt(t, segmentFiles(t, dir)[0], func(s *segment) uint64 { return s.secOff[secPageCRCs] + 2 })
		}},
		{"flipped byte in the footer", func(t *testing.T, dir string) {
			flipAt(t, segmentFiles(t, dir)[0], func(s *segment) uint64 { return uint64(len(s.data)) - 30 })
		}},
		{"truncated segment", func(t *testing.T, dir string) {
			f := segmentFiles(t, dir)[0]
			b, _ := os.ReadFile(f)
			os.WriteFile(f, b[:len(b)-10], 0o600)
		}},
		{"segment gone", func(t *testing.T, dir string) {
			os.Remove(segmentFiles(t, dir)[0])
		}},
		{"garbage manifest", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, manifestName), []byte("lossless recall manifest 1 tokenizer 1\nseg x\n"), 0o600)
		}},
		{"foreign manifest version", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, manifestName), []byte("lossless recall manifest 9\n"), 0o600)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := smallArchive(t)
			a.add("cc-s0", a.span("s0", "user", "the pangolin"))
			a.open()
			c.spoil(t, a.indexDir(t.Context()))
			ix := a.open()
			st := ix.Stats()
			if !st.Rebuilt || st.Docs != 121 {
				t.Fatalf("%+v", st)
			}
			if res := search(t, ix, Query{Text: "pangolin"}); res.Total != 1 {
				t.Fatalf("pangolin: %d hits", res.Total)
			}
			if st := a.open().Stats(); st.Rebuilt {
				t.Fatalf("rebuilt twice: %+v", st)
			}
		})
	}
}

// TestDamagedPage: a byte flipped inside the data is found when its page
// is first read (pages are checked lazily, so that an open does not read
// the whole index): the search leaves the damaged segment's hits out and
// warns, and the next Open rebuilds the index.
func TestDamagedPage(t *testing.T) {
	a := smallArchive(t)
	a.add("cc-s0", a.span("s0", "user", "the pangolin"))
	a.open()
	flipAt(t, segmentFiles(t, a.indexDir(t.Context()))[0], func(s *segment) uint64 {
		i, ok := s.findTerm([]byte("pangolin"))
		if !ok {
			t.Fatal("pangolin not in the segment")
		}
		off, _, _, _ := s.dictEnt(i)
		return s.secOff[secTermBytes] + uint64(off) + 2
	})
	a.warns = nil
	ix := a.open()
	if st := ix.Stats(); st.Rebuilt {
		t.Fatalf("the damage was found before a page was read: %+v", st)
	}
	if res := search(t, ix, Query{Text: "pangolin"}); res.Total != 0 {
		t.Fatalf("pangolin from a damaged segment: %+v", res)
	}
	if !strings.Contains(strings.Join(a.warns, "\n"), "damaged") {
		t.Errorf("no warning: %q", a.warns)
	}
	ix = a.open()
	if st := ix.Stats(); !st.Rebuilt || st.Docs != 121 {
		t.Fatalf("after the damage was found: %+v", st)
	}
	if res := search(t, ix, Query{Text: "pangolin"}); res.Total != 1 {
		t.Fatalf("pangolin after the rebuild: %d hits", res.Total)
	}
}

// flipAt flips the byte of the segment file at the offset at returns.
func flipAt(t *testing.T, file string, at func(s *segment) uint64) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	s, err := openSegment(file, b, true)
	if err != nil {
		t.Fatal(err)
	}
	off := at(s)
	b = bytes.Clone(b)
	b[off] ^= 0x40
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestNoUpdate(t *testing.T) {
	a := smallArchive(t)
	ix := a.open(Options{NoUpdate: true})
	if st := ix.Stats(); !st.Stale || st.Docs != 0 {
		t.Fatalf("NoUpdate without an index: %+v", st)
	}
	if _, err := os.Stat(filepath.Join(a.indexDir(t.Context()), manifestName)); err == nil {
		t.Fatal("NoUpdate wrote an index")
	}
	a.open()
	a.add("cc-s0", a.span("s0", "user", "the axolotl"))
	ix = a.open(Options{NoUpdate: true})
	if st := ix.Stats(); !st.Stale || st.Docs != 120 {
		t.Fatalf("%+v", st)
	}
	if res := search(t, ix, Query{Text: "axolotl"}); res.Total != 0 {
		t.Fatal("NoUpdate read past the index")
	}
	// Span still reads the new span from the archive.
	sp, err := ix.Span(context.Background(), "cc-s0#41")
	if err != nil || !strings.Contains(strings.Join(sp.Lines, "\n"), "axolotl") {
		t.Fatalf("span not in the index: %v %+v", err, sp)
	}
}

// TestUnwritableIndex: when the index directory cannot be made, search
// works from an index in memory, with a warning.
func TestUnwritableIndex(t *testing.T) {
	a := smallArchive(t)
	p := filepath.Join(a.st.Location().CommonDir, "lossless", "recall")
	os.MkdirAll(filepath.Dir(p), 0o700)
	if err := os.WriteFile(p, []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	a.warns = nil
	ix := a.open()
	if st := ix.Stats(); !st.InMemory || st.Docs != 120 {
		t.Fatalf("%+v", st)
	}
	if len(a.warns) == 0 {
		t.Error("no warning")
	}
	if res := search(t, ix, Query{Text: "alpha"}); res.Total == 0 {
		t.Error("no hits from the in-memory index")
	}
}

// TestRewrittenWriterIsReindexed: a prune rewrites a writer's history;
// the writer is indexed whole again, its old documents dropped.
func TestRewrittenWriterIsReindexed(t *testing.T) {
	a := smallArchive(t)
	a.add("cc-s1", a.span("s1", "user", "the quokka is happy"), a.span("s1", "user", "the quokka smiles"))
	ix := a.open()
	if res := search(t, ix, Query{Text: "quokka"}); res.Total != 2 {
		t.Fatalf("quokka: %d", res.Total)
	}
	_, err := a.st.Prune(context.Background(), "cc-s1", func(e *gitstore.Event) bool { return e.Seq == 42 }, "test", false)
	if err != nil {
		t.Fatal(err)
	}
	ix = a.open()
	st := ix.Stats()
	if !slices.Equal(st.WritersRead, []string{"cc-s1"}) || st.EventsRead < 40 {
		t.Fatalf("after the prune: %+v", st)
	}
	res := search(t, ix, Query{Text: "quokka"})
	if res.Total != 1 || res.Hits[0].ID != "cc-s1#41" {
		t.Fatalf("quokka after pruning #42: %+v", res)
	}
	if st.Docs != 121 {
		t.Errorf("%d live documents, want 121 (no duplicates of the rewritten writer)", st.Docs)
	}
	// The next update merges the dead documents away eventually; a fresh
	// Open agrees.
	if res := search(t, a.open(Options{NoUpdate: true}), Query{Text: "alpha", Limit: 1000}); res.Total == 0 {
		t.Fatal("nothing after reopen")
	}
}

// TestConcurrentUpdates: goroutines append and open at the same time,
// each with its own Open (its own lock file descriptor); the index ends
// correct.
func TestConcurrentUpdates(t *testing.T) {
	a := newArchive(t)
	const writers, batches = 4, 8
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range batches {
				writer := fmt.Sprintf("cc-w%d", w)
				r := a.span(fmt.Sprintf("w%d", w), "user", fmt.Sprintf("concurrent ibex %d %d", w, b))
				if _, err := a.st.Append(context.Background(), writer, []gitstore.Record{r}); err != nil {
					errs <- err
					return
				}
				ix, err := Open(context.Background(), a.st, Options{})
				if err != nil {
					errs <- err
					return
				}
				if _, err := ix.Search(context.Background(), Query{Text: "ibex"}); err != nil {
					errs <- err
				}
				ix.Close()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	ix := a.open()
	if res := search(t, ix, Query{Text: "ibex", Limit: 1000}); res.Total != writers*batches {
		t.Fatalf("ibex: %d hits, want %d (%+v)", res.Total, writers*batches, ix.Stats())
	}
	if st := ix.Stats(); st.InMemory {
		t.Errorf("%+v", st)
	}
}

// TestConcurrentProcesses: two processes update the same index at once.
func TestConcurrentProcesses(t *testing.T) {
	if os.Getenv("RECALL_HELPER_DIR") != "" {
		t.Skip("helper")
	}
	a := smallArchive(t)
	for i := range 30 {
		a.add(fmt.Sprintf("cc-p%d", i), a.span("p", "user", fmt.Sprintf("process tapir %d", i)))
	}
	var cmds []*exec.Cmd
	for range 3 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperOpen$", "-test.count=1")
		cmd.Env = append(os.Environ(), "RECALL_HELPER_DIR="+a.dir)
		cmds = append(cmds, cmd)
	}
	outs := make([][]byte, len(cmds))
	var wg sync.WaitGroup
	for i, c := range cmds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], _ = c.CombinedOutput()
		}()
	}
	wg.Wait()
	for i, c := range cmds {
		if !c.ProcessState.Success() {
			t.Fatalf("helper %d failed:\n%s", i, outs[i])
		}
	}
	ix := a.open()
	if st := ix.Stats(); st.Rebuilt || len(st.WritersRead) != 0 || st.Docs != 150 {
		t.Fatalf("after the helpers: %+v", st)
	}
	if res := search(t, ix, Query{Text: "tapir", Limit: 1000}); res.Total != 30 {
		t.Fatalf("tapir: %d hits", res.Total)
	}
}

// TestHelperOpen is run by TestConcurrentProcesses in other processes.
func TestHelperOpen(t *testing.T) {
	dir := os.Getenv("RECALL_HELPER_DIR")
	if dir == "" {
		t.Skip("run by TestConcurrentProcesses")
	}
	st, err := gitstore.OpenDir(dir, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ix, err := Open(context.Background(), st, Options{Warn: func(s string) { t.Log(s) }})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	res, err := ix.Search(context.Background(), Query{Text: "tapir", Limit: 1000})
	if err != nil || res.Total != 30 {
		t.Fatalf("tapir: %v %d", err, res.Total)
	}
}

func TestReindex(t *testing.T) {
	a := smallArchive(t)
	a.open()
	before := segmentFiles(t, a.indexDir(t.Context()))
	if err := Reindex(context.Background(), a.st); err != nil {
		t.Fatal(err)
	}
	after := segmentFiles(t, a.indexDir(t.Context()))
	if len(after) != 1 || slices.Equal(before, after) {
		t.Fatalf("segments before %v, after %v", before, after)
	}
	if st := a.open().Stats(); st.Rebuilt || st.Docs != 120 {
		t.Fatalf("%+v", st)
	}
}

func TestIndexFileModes(t *testing.T) {
	a := smallArchive(t)
	a.open()
	dir := a.indexDir(t.Context())
	fi, err := os.Stat(dir)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("index dir: %v %v", fi.Mode(), err)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		fi, _ := e.Info()
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", e.Name(), fi.Mode().Perm())
		}
	}
}

// TestOldFormatIsRebuilt: an index of format 2 (no exact-form terms: see
// tokenize.go) would rank every form of a stem alike if it were read; it
// is rebuilt instead, whether its manifest says so or only a segment's
// footer does.
func TestOldFormatIsRebuilt(t *testing.T) {
	for _, c := range []struct {
		name    string
		header  string
		version uint32
	}{
		{"format 2 manifest and segments", "lossless recall manifest 2 tokenizer 1", 2},
		// Each check alone: the manifest's first line, a segment's footer.
		{"a format 2 manifest", "lossless recall manifest 2 tokenizer 1", segVersion},
		{"a format 2 segment under a current manifest", manifestHeader, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := newArchive(t)
			a.add("cc-old", a.span("s-old", "assistant", "we will migrate the ledger tables tonight"))
			a.add("cc-old", a.span("s-old", "assistant", "we will migrating the ledger tables tonight"))
			a.open()
			downgrade(t, a.indexDir(t.Context()), c.header, c.version)
			ix := a.open()
			if st := ix.Stats(); !st.Rebuilt || st.Docs != 2 {
				t.Fatalf("an index of format 2 was not rebuilt: %+v", st)
			}
			res := search(t, ix, Query{Text: "migrate"})
			if len(res.Hits) != 2 || !(res.Hits[0].Score > res.Hits[1].Score) || !strings.Contains(res.Hits[0].Snippet, "migrate the") {
				t.Fatalf("migrate after the rebuild: the exact word does not outrank its stem: %+v", res.Hits)
			}
		})
	}
}

// downgrade rewrites the index in dir as format 2 wrote it: its segments
// without exact-form terms, their footers saying version, the manifest's
// first line header (and its segment lines matching the new files).
func downgrade(t *testing.T, dir, header string, version uint32) {
	t.Helper()
	man, err := os.ReadFile(filepath.Join(dir, manifestName))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(man), "\n"), "\n")
	lines[0] = header
	for i, l := range lines {
		f := strings.Fields(l)
		if len(f) != 4 || f[0] != "seg" {
			continue
		}
		file := filepath.Join(dir, f[1])
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		s, err := openSegment(file, b, true)
		if err != nil {
			t.Fatal(err)
		}
		d, err := s.decode(func(int) bool { return true })
		if err != nil {
			t.Fatal(err)
		}
		forms := 0
		var old segData
		old.docs = d.docs
		for k, term := range d.terms {
			if isForm([]byte(term)) {
				forms++
				continue
			}
			old.terms = append(old.terms, term)
			old.post = append(old.post, d.post[k])
		}
		if forms == 0 {
			t.Fatalf("%s holds no exact-form term: downgrading it would test nothing", f[1])
		}
		b, err = encodeSegment(&old)
		if err != nil {
			t.Fatal(err)
		}
		foot := len(b) - footerSize
		binary.LittleEndian.PutUint32(b[foot:], version)
		at := len(b) - len(segEndMagic) - 4
		crcStart := binary.LittleEndian.Uint32(b[foot+32+8*secPageCRCs:])
		binary.LittleEndian.PutUint32(b[at:], crc32.Checksum(b[crcStart:at], castagnoli()))
		if err := os.WriteFile(file, b, 0o600); err != nil {
			t.Fatal(err)
		}
		lines[i] = fmt.Sprintf("seg %s %d %08x", f[1], len(b), segCRC(b))
	}
	if err := os.WriteFile(filepath.Join(dir, manifestName), []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}
