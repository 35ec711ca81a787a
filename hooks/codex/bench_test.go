package codex

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var cxCallID = regexp.MustCompile(`call_[0-9]+`)

// cxBigRollout builds a rollout of about size bytes: the run1 sample's
// session_meta, then the body lines of every sample rollout over and
// over, each round with fresh call ids (so calls pair with their outputs
// as in a real session). With big, each round also reads a 64 KiB source
// file through exec_command, as a session that reads real code does.
func cxBigRollout(tb testing.TB, size int, big bool) []byte {
	files, err := filepath.Glob(filepath.Join(cxSamples, "*", "rollout-*.jsonl"))
	if err != nil || len(files) != 4 {
		tb.Fatalf("sample rollouts: %v %v", files, err)
	}
	var head []byte
	var body [][]byte
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		lines := bytes.SplitAfter(data, []byte("\n"))
		if strings.Contains(f, cxRun1) {
			head = lines[0]
		}
		for _, l := range lines[1:] {
			if len(l) > 0 {
				body = append(body, l)
			}
		}
	}
	var src strings.Builder
	for i := 0; src.Len() < 64<<10; i++ {
		fmt.Fprintf(&src, "func f%d(x int) string {\n\treturn fmt.Sprintf(\"%%d: \\\"%d\\\"\", x)\n}\n\n", i, i)
	}
	var buf bytes.Buffer
	buf.Write(head)
	for round := 0; buf.Len() < size; round++ {
		for _, l := range body {
			buf.Write(cxCallID.ReplaceAllFunc(l, func(id []byte) []byte {
				return fmt.Appendf(nil, "call_%d_%s", round, id[len("call_"):])
			}))
		}
		if big {
			id := fmt.Sprintf("big_%d", round)
			fmt.Fprintf(&buf, `{"timestamp":"2026-12-05T15:15:11.779Z","ordinal":1,"type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"{\"cmd\": \"cat big.go\"}","call_id":%q}}`+"\n", id)
			out := "Chunk ID: 1\nWall time: 0.0000 seconds\nProcess exited with code 0\nOriginal token count: 9000\nOutput:\n" + src.String()
			fmt.Fprintf(&buf, `{"timestamp":"2026-12-05T15:15:12.786Z","ordinal":2,"type":"response_item","payload":{"type":"function_call_output","call_id":%q,"output":%s}}`+"\n", id, cxQuote(out))
		}
	}
	return buf.Bytes()
}

func cxQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func cxBenchRead(b *testing.B, big bool) {
	data := cxBigRollout(b, 64<<20, big)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	items := 0
	for b.Loop() {
		r := NewReader(bytes.NewReader(data), 0, nil)
		for {
			l, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			items += len(l.Items)
		}
		if r.Offset() != int64(len(data)) || len(r.Pending()) != 0 || r.Stats().Invalid != 0 {
			b.Fatalf("offset %d of %d, %d pending, %+v", r.Offset(), len(data), len(r.Pending()), r.Stats())
		}
	}
	if items == 0 {
		b.Fatal("no items")
	}
}

// BenchmarkReader reads a 64 MiB rollout made of the sample lines: the
// target is at least 100 MB/s (issue 20).
func BenchmarkReader(b *testing.B) { cxBenchRead(b, false) }

// BenchmarkReaderCode is BenchmarkReader with a 64 KiB file read through
// the shell in every round: more bytes in outputs, which are scanned.
func BenchmarkReaderCode(b *testing.B) { cxBenchRead(b, true) }

// TestBigRollout checks what the benchmark reads: every round's items,
// calls paired.
func TestBigRollout(t *testing.T) {
	data := cxBigRollout(t, 2<<20, true)
	r := NewReader(bytes.NewReader(data), 0, nil)
	lines := cxReadAll(t, r, 0)
	shell := 0
	for _, l := range lines {
		if c := l.Call; c != nil && c.Result != nil && c.Kind == CallShell && c.Output.Framed {
			shell++
		}
	}
	st := r.Stats()
	rounds := strings.Count(string(data), `"cmd\": \"cat big.go\"`)
	if st.Invalid != 0 || len(r.Pending()) != 0 || rounds < 5 || shell != rounds*4 || st.Items != rounds*(25+2) {
		t.Errorf("%d rounds, %d shell outputs, stats %+v, %d pending", rounds, shell, st, len(r.Pending()))
	}
}

// BenchmarkApplyUpdate applies a three-chunk patch to a 5000-line file,
// one chunk of which only the lenient passes find (what a sweep's replay
// costs per patched file).
func BenchmarkApplyUpdate(b *testing.B) {
	var file strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&file, "\tline %d := compute(%d) // \u2013 note\n", i, i)
	}
	p, err := ParsePatch("*** Begin Patch\n*** Update File: f\n@@\n \tline 10 := compute(10) // \u2013 note\n-\tline 11 := compute(11) // \u2013 note\n+\tline 11 := changed()\n" +
		"@@ line 2500 := compute(2500) // - note\n-\tline 2501 := compute(2501) // - note\n+\tline 2501 := changed()\n" +
		"@@\n-\tline 4999 := compute(4999) // \u2013 note\n+\tthe end\n*** End of File\n*** End Patch")
	if err != nil {
		b.Fatal(err)
	}
	old := []byte(file.String())
	b.SetBytes(int64(len(old)))
	b.ReportAllocs()
	for b.Loop() {
		out, err := ApplyUpdate(old, p.Hunks[0].Chunks)
		if err != nil || !bytes.HasSuffix(out, []byte("\tthe end\n")) {
			b.Fatal(err)
		}
	}
}
