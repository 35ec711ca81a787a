package gitobj_test

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/git-lossless/git-lossless/internal/gitobj"
	"github.com/git-lossless/git-lossless/internal/testkit/benchdata"
)

// benchCompress compares the pack encoder with compress/flate at BestSpeed
// on objs, each its own stream as in a pack, reporting the output as a
// percentage of the input.
func benchCompress(b *testing.B, objs [][]byte) {
	total := 0
	for _, o := range objs {
		total += len(o)
	}
	b.Run("fast", func(b *testing.B) {
		e := gitobj.NewFastDeflaterForTest()
		b.SetBytes(int64(total))
		out := 0
		var buf []byte
		for b.Loop() {
			out = 0
			for _, o := range objs {
				buf = e.AppendZlib(buf[:0], o)
				out += len(buf)
			}
		}
		b.ReportMetric(100*float64(out)/float64(total), "%size")
	})
	b.Run("flate", func(b *testing.B) {
		zw, _ := zlib.NewWriterLevel(nil, zlib.BestSpeed)
		b.SetBytes(int64(total))
		out := 0
		var buf bytes.Buffer
		for b.Loop() {
			out = 0
			for _, o := range objs {
				buf.Reset()
				zw.Reset(&buf)
				zw.Write(o)
				zw.Close()
				out += buf.Len()
			}
		}
		b.ReportMetric(100*float64(out)/float64(total), "%size")
	})
}

// BenchmarkDeflate: source files of 1 to 8 KiB (internal/testkit/benchdata).
func BenchmarkDeflate(b *testing.B) {
	var files [][]byte
	for i := range 400 {
		files = append(files, benchdata.Source(1, i))
	}
	benchCompress(b, files)
}

// BenchmarkDeflateRepo: every object of the repository named by
// LOSSLESS_DEFLATE_REPO (skipped when unset). The figures in fastDeflater's
// doc are of the repository the 14 MB sweep benchmark writes, kept with
// the scratch program of hooks' BenchmarkSweep14MB or any sweep:
//
//	LOSSLESS_DEFLATE_REPO=/path/to/repo go test -run '^$' -bench DeflateRepo ./internal/gitobj/
func BenchmarkDeflateRepo(b *testing.B) {
	repo := os.Getenv("LOSSLESS_DEFLATE_REPO")
	if repo == "" {
		b.Skip("LOSSLESS_DEFLATE_REPO not set")
	}
	cmd := exec.Command("git", "-C", repo, "cat-file", "--batch-all-objects", "--batch", "--unordered")
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("cat-file: %v", err)
	}
	br := bufio.NewReader(bytes.NewReader(out))
	var objs [][]byte
	for {
		hdr, err := br.ReadString('\n')
		if err == io.EOF {
			break
		}
		f := strings.Fields(hdr)
		if err != nil || len(f) != 3 {
			b.Fatalf("cat-file header %q: %v", hdr, err)
		}
		n, _ := strconv.Atoi(f[2])
		body := make([]byte, n+1)
		if _, err := io.ReadFull(br, body); err != nil {
			b.Fatal(err)
		}
		objs = append(objs, body[:n])
	}
	b.Logf("%d objects", len(objs))
	benchCompress(b, objs)
}

// BenchmarkDeflateSizes times the fast encoder on prefixes of
// concatenated benchdata sources, to show its per-stream costs.
func BenchmarkDeflateSizes(b *testing.B) {
	var text []byte
	for i := 0; len(text) < 1<<16; i++ {
		text = append(text, benchdata.Source(2, i)...)
	}
	for _, n := range []int{100, 300, 1 << 10, 4 << 10, 16 << 10, 64 << 10} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			e := gitobj.NewFastDeflaterForTest()
			var buf []byte
			b.SetBytes(int64(n))
			for b.Loop() {
				buf = e.AppendZlib(buf[:0], text[:n])
			}
			b.ReportMetric(100*float64(len(buf))/float64(n), "%size")
		})
	}
}
