package gitobj_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/storage/filesystem"
	kzlib "github.com/klauspost/compress/zlib"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/internal/gitobj"
	"github.com/git-lossless/git-lossless/internal/testkit/benchdata"
)

// The benchmarks here weigh this package's own code against go-git and
// klauspost/compress on an archive's own packs, as the package doc
// reports:
//
//	go test -run '^$' -bench 'Versus' -benchtime 2s ./internal/gitobj/

// interleave times a and b in alternation, rounds times each, and reports
// the median time of each per round and how much faster a is than b
// (percent; negative when slower): the machine is shared, and alternating
// exposes both to the same load.
func interleave(b *testing.B, rounds int, bytes int64, a, bb func()) {
	var ta, tb []time.Duration
	for range rounds {
		t0 := time.Now()
		a()
		t1 := time.Now()
		bb()
		ta, tb = append(ta, t1.Sub(t0)), append(tb, time.Since(t1))
	}
	med := func(d []time.Duration) time.Duration {
		slices.Sort(d)
		return d[len(d)/2]
	}
	ma, mb := med(ta), med(tb)
	b.ReportMetric(float64(ma.Microseconds())/1000, "ms-ours")
	b.ReportMetric(float64(mb.Microseconds())/1000, "ms-peer")
	if bytes > 0 {
		b.ReportMetric(float64(bytes)/ma.Seconds()/1e6, "MB/s-ours")
		b.ReportMetric(float64(bytes)/mb.Seconds()/1e6, "MB/s-peer")
	}
	b.ReportMetric(100*(float64(mb)/float64(ma)-1), "%ours-faster")
}

// archive builds an archive of n benchdata records through Import (one
// pack) and, when gc is set, repacks it with git gc --aggressive so that
// it holds deltas, and returns its common dir and the blob ids.
func archive(b *testing.B, n int, gc bool) (string, []string) {
	b.Helper()
	dir := b.TempDir()
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		b.Fatalf("git init: %v %s", err, out)
	}
	off := false
	st, err := gitstore.OpenDir(dir, gitstore.Options{Fsync: &off})
	if err != nil {
		b.Fatal(err)
	}
	recs := benchdata.Records(1, 0, 0, n)
	if gc {
		// An agent's session reads and edits the same files again and
		// again: every fourth record is a new version of one of a few
		// files, as the archive of a long session holds them, and git gc
		// deltifies those versions against each other.
		for i := range recs {
			if i%4 == 0 {
				v := append([]byte(fmt.Sprintf("// version %d\n", i)), benchdata.Source(2, i%37)...)
				recs[i].Content = append(v, fmt.Sprintf("\nfunc v%d() {}\n", i)...)
			}
		}
	}
	res, err := st.Import(context.Background(), "bench", recs, 100)
	if err != nil {
		b.Fatal(err)
	}
	if gc {
		if out, err := exec.Command("git", "-C", dir, "gc", "-q", "--aggressive", "--prune=now").CombinedOutput(); err != nil {
			b.Fatalf("git gc: %v %s", err, out)
		}
	}
	var ids []string
	for _, ev := range res.Events {
		if ev.Blob != "" {
			ids = append(ids, ev.Blob)
		}
	}
	return filepath.Join(dir, ".git"), ids
}

// BenchmarkVersusDeflate: the pack encoder against klauspost/compress's
// zlib at the same level (BestSpeed), on an archive's blobs.
func BenchmarkVersusDeflate(b *testing.B) {
	common, ids := archive(b, 2000, false)
	db := gitobj.NewDB(common, false)
	var objs [][]byte
	total := 0
	for _, id := range ids {
		_, body, err := db.Read(id)
		if err != nil {
			b.Fatal(err)
		}
		objs = append(objs, body)
		total += len(body)
	}
	e := gitobj.NewFastDeflaterForTest()
	zw, _ := kzlib.NewWriterLevel(nil, kzlib.BestSpeed)
	var buf []byte
	var kb bytes.Buffer
	outA, outB := 0, 0
	for b.Loop() {
		interleave(b, 15, int64(total), func() {
			outA = 0
			for _, o := range objs {
				buf = e.AppendZlib(buf[:0], o)
				outA += len(buf)
			}
		}, func() {
			outB = 0
			for _, o := range objs {
				kb.Reset()
				zw.Reset(&kb)
				zw.Write(o)
				zw.Close()
				outB += kb.Len()
			}
		})
	}
	b.ReportMetric(100*float64(outA)/float64(total), "%size-ours")
	b.ReportMetric(100*float64(outB)/float64(total), "%size-peer")
}

// BenchmarkVersusDelta: applyDelta against go-git's packfile.PatchDelta on
// every delta git gc wrote into an archive's pack.
func BenchmarkVersusDelta(b *testing.B) {
	common, _ := archive(b, 2000, true)
	bases, deltas, err := gitobj.PackDeltasForTest(common)
	if err != nil {
		b.Fatal(err)
	}
	if len(deltas) < 100 {
		b.Fatalf("only %d deltas", len(deltas))
	}
	total := 0
	for i := range deltas {
		want, err := gitobj.ApplyDeltaForTest(bases[i], deltas[i])
		got, err2 := packfile.PatchDelta(bases[i], deltas[i])
		if err != nil || err2 != nil || !bytes.Equal(got, want) {
			b.Fatalf("delta %d: the two disagree (%v, %v)", i, err, err2)
		}
		total += len(want)
	}
	b.Logf("%d deltas, %d bytes out", len(deltas), total)
	for b.Loop() {
		interleave(b, 15, int64(total), func() {
			for i := range deltas {
				gitobj.ApplyDeltaForTest(bases[i], deltas[i])
			}
		}, func() {
			for i := range deltas {
				packfile.PatchDelta(bases[i], deltas[i])
			}
		})
	}
}

// BenchmarkVersusPackRead: reading every blob of a gc'd archive (deltas
// included) by the native reader, and by go-git's filesystem storage with
// KeepDescriptors, each opened afresh per round as a new process would.
func BenchmarkVersusPackRead(b *testing.B) {
	common, ids := archive(b, 2000, true)
	for b.Loop() {
		interleave(b, 9, 0, func() {
			db := gitobj.NewDB(common, false)
			for _, id := range ids {
				if _, _, err := db.ReadPackedNative(id); err != nil {
					b.Fatal(err)
				}
			}
		}, func() {
			sto := filesystem.NewStorageWithOptions(osfs.New(common), cache.NewObjectLRU(16*cache.MiByte), filesystem.Options{KeepDescriptors: true})
			for _, id := range ids {
				obj, err := sto.EncodedObject(plumbing.AnyObject, plumbing.NewHash(id))
				if err != nil {
					b.Fatal(err)
				}
				rd, _ := obj.Reader()
				io.Copy(io.Discard, rd)
				rd.Close()
			}
			sto.Close()
		})
	}
}

// BenchmarkVersusIdxRead: a fresh process's lookup of a few ids in a gc'd
// 20,000-event archive's pack index, by packread.go's reader (binary
// search in the file as read) and by go-git's idxfile (decoded into a
// MemoryIndex).
func BenchmarkVersusIdxRead(b *testing.B) {
	common, ids := archive(b, 20000, true)
	var hs [][20]byte
	for _, id := range ids[:20] {
		hs = append(hs, [20]byte(plumbing.NewHash(id)))
	}
	idxs, _ := filepath.Glob(filepath.Join(common, "objects", "pack", "*.idx"))
	if len(idxs) != 1 {
		b.Fatalf("%d packs", len(idxs))
	}
	for b.Loop() {
		interleave(b, 41, 0, func() {
			if n := gitobj.IdxLookupForTest(common, hs); n != len(hs) {
				b.Fatalf("found %d of %d", n, len(hs))
			}
		}, func() {
			f, err := os.Open(idxs[0])
			if err != nil {
				b.Fatal(err)
			}
			idx := idxfile.NewMemoryIndex()
			if err := idxfile.NewDecoder(bufio.NewReader(f)).Decode(idx); err != nil {
				b.Fatal(err)
			}
			f.Close()
			for _, h := range hs {
				if _, err := idx.FindOffset(plumbing.Hash(h)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
