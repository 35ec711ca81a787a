package secrets

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/git-lossless/git-lossless/internal/rescan"
)

// benchText is about 4 MiB of transcript: the real sample transcripts
// repeated, with an `env` tool result holding made-up credentials every
// 100 KiB or so, as a session that ran `env` now and then.
func benchText(b *testing.B) []byte {
	b.Helper()
	files, _ := filepath.Glob("../testdata/claude-code-2.1.328/transcripts/*/*.jsonl")
	sub, _ := filepath.Glob("../testdata/claude-code-2.1.328/transcripts/*/*/subagents/*.jsonl")
	var sample []byte
	for _, f := range append(files, sub...) {
		c, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		sample = append(sample, c...)
	}
	if len(sample) == 0 {
		b.Fatal("no sample transcripts")
	}
	g := newGen(42)
	var out bytes.Buffer
	for out.Len() < 4<<20 {
		for off := 0; off < len(sample); off += 100 << 10 {
			out.Write(sample[off:min(len(sample), off+100<<10)])
			env := fmt.Sprintf("HOME=/home/dev\nGITHUB_TOKEN=%s\nAWS_ACCESS_KEY_ID=%s\nPGPASSWORD=%s\n",
				keys(g)["github-token"], keys(g)["aws-access-key-id"], g.pick(alnum, 14))
			fmt.Fprintf(&out, "{\"type\":\"user\",\"message\":{\"content\":[{\"type\":\"tool_result\",\"content\":%s}]}}\n", mustJSON(env))
		}
	}
	return out.Bytes()
}

// BenchmarkScan is the scanner on transcript text, one core. Target:
// 200 MB/s or more.
func BenchmarkScan(b *testing.B) {
	text := benchText(b)
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for b.Loop() {
		if len(Scan(text)) == 0 {
			b.Fatal("nothing found")
		}
	}
}

// BenchmarkScanRegexpBaseline is the regexp-only peer (internal/rescan) on
// the same text, for the ratio.
func BenchmarkScanRegexpBaseline(b *testing.B) {
	text := benchText(b)
	rules := rescan.Rules()
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for b.Loop() {
		if rescan.Count(rules, text) == 0 {
			b.Fatal("nothing found")
		}
	}
}

// BenchmarkScanSourceFile is one 8 KiB source file with no secret: the
// cost the post-tool-use hook adds to a Read.
func BenchmarkScanSourceFile(b *testing.B) {
	src, err := os.ReadFile("scan.go")
	if err != nil {
		b.Fatal(err)
	}
	src = src[:min(len(src), 8<<10)]
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		Scan(src)
	}
}
