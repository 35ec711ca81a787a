package codex

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/git-lossless/git-lossless/hooks/transcript"
)

// cxSeedLines returns the sample rollouts' lines, and pairs of a call and
// its output, as fuzz seeds.
func cxSeedLines(f *testing.F) [][]byte {
	files, err := filepath.Glob(filepath.Join(cxSamples, "*", "rollout-*.jsonl"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no sample rollouts: %v", err)
	}
	var seeds [][]byte
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		lines := bytes.SplitAfter(data, []byte("\n"))
		seeds = append(seeds, lines[0])
		for i := 1; i+1 < len(lines); i++ {
			seeds = append(seeds, append(append([]byte{}, lines[i]...), lines[i+1]...))
		}
	}
	return seeds
}

// FuzzReader feeds anything to the rollout reader, whole and resumed at
// its middle: it must not panic, offsets must add up, spans must be
// valid JSON, keys well formed, and an invalid line must yield nothing.
func FuzzReader(f *testing.F) {
	seeds := cxSeedLines(f)
	if len(seeds) < 50 {
		f.Fatalf("only %d seeds", len(seeds))
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		meta := &SessionMeta{ID: "t", SessionID: "s", Cwd: "/w"}
		r := NewReader(bytes.NewReader(data), 0, nil)
		var end int64
		for {
			l, err := r.Next()
			if err != nil {
				break
			}
			if l.Start != end || l.End <= l.Start {
				t.Fatalf("offsets %d-%d after %d", l.Start, l.End, end)
			}
			end = l.End
			cxCheckLine(t, l)
		}
		if end > int64(len(data)) || (end < int64(len(data)) && bytes.IndexByte(data[end:], '\n') >= 0) {
			t.Fatalf("stopped at %d of %d", end, len(data))
		}
		// Resumed in the middle with a meta and the pending calls.
		mid := int64(bytes.IndexByte(data, '\n') + 1)
		r2 := NewReader(bytes.NewReader(data[mid:]), mid, meta)
		r2.SetPending(r.Pending())
		for {
			l, err := r2.Next()
			if err != nil {
				break
			}
			cxCheckLine(t, l)
			for _, it := range l.Items {
				if m := it.Meta(); m.SessionID != "s" {
					t.Fatalf("session %q", m.SessionID)
				}
			}
		}
	})
}

func cxCheckLine(t *testing.T, l *Line) {
	if l.Invalid && (len(l.Items) > 0 || l.Skipped || l.Call != nil || l.Meta != nil) {
		t.Fatalf("invalid line with content: %+v", l)
	}
	for _, it := range l.Items {
		if s := transcript.SpanJSON(it); s != nil {
			if !json.Valid(s) {
				t.Fatalf("span is not JSON: %q", s)
			}
			if transcript.SpanKind(it) == "" {
				t.Fatalf("span without kind: %T", it)
			}
		}
		var key string
		switch x := it.(type) {
		case *transcript.TextSpan:
			key = x.Key
		case *transcript.ToolUse:
			key = x.SpanKey
		case *transcript.ToolResult:
			key = x.SpanKey
		case *transcript.CompactSummary:
			key = x.Key
		case *transcript.CompactBoundary:
			if x.Key != "" && !strings.HasPrefix(x.Key, "compact:") {
				t.Fatalf("boundary key %q", x.Key)
			}
			continue
		default:
			t.Fatalf("unexpected item %T", it)
		}
		if key != "" && !strings.HasPrefix(key, "span:") {
			t.Fatalf("span key %q", key)
		}
	}
	if c := l.Call; c != nil && (c.Use == nil) == (c.Result == nil) {
		t.Fatalf("call with use and result both or neither: %+v", c)
	}
}

// FuzzParsePatch feeds any patch and any file: parsing, the guard's view
// and applying must not panic, and what applies is well formed text.
func FuzzParsePatch(f *testing.F) {
	vs := cxVectors(f)
	for i, v := range vs {
		if i%3 != 0 {
			continue
		}
		file := ""
		for _, c := range v.Files {
			file = c
			break
		}
		f.Add(v.Patch, file)
	}
	f.Fuzz(func(t *testing.T, patch, file string) {
		p, err := ParsePatch(patch)
		if err != nil {
			if p != nil {
				t.Fatal("error with a patch")
			}
			return
		}
		ch := p.Changes("/w")
		if len(ch) != len(p.Hunks) {
			t.Fatalf("%d changes for %d hunks", len(ch), len(p.Hunks))
		}
		for _, f := range p.NeedsSeen("/w", func(string) bool { return true }) {
			if !filepath.IsAbs(f) {
				t.Fatalf("needs-seen %q not absolute", f)
			}
		}
		for _, h := range p.Hunks {
			if h.Kind != UpdateFile {
				continue
			}
			out, err := ApplyUpdate([]byte(file), h.Chunks)
			if err != nil {
				continue
			}
			if !utf8.Valid(out) || (len(out) > 0 && out[len(out)-1] != '\n' && out[len(out)-1] != '\r') {
				t.Fatalf("applied %q to %q: %q", patch, file, out)
			}
		}
		res, err := p.Apply("/w", func(string) ([]byte, error) { return []byte(file), nil })
		if err == nil {
			for _, r := range res {
				if !filepath.IsAbs(r.Path) || (r.Deleted && r.Content != nil) {
					t.Fatalf("result %+v", r)
				}
			}
		}
	})
}

// FuzzDecodePayload feeds anything to the hook payload decoder: what it
// accepts has a session and absolute paths, and the accessors do not
// panic.
func FuzzDecodePayload(f *testing.F) {
	files, err := filepath.Glob(filepath.Join(cxSamples, "*", "hooks", "*.json"))
	if err != nil || len(files) < 40 {
		f.Fatalf("hook samples: %d %v", len(files), err)
	}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := DecodePayload(bytes.NewReader(data))
		if err != nil {
			return
		}
		if p.SessionID == "" || (p.Cwd != "" && !filepath.IsAbs(p.Cwd)) {
			t.Fatalf("accepted %+v", p)
		}
		if tp := p.ContextTranscript(); tp != "" && !filepath.IsAbs(tp) {
			t.Fatalf("transcript %q", tp)
		}
		_, _ = p.Command()
		_, _ = p.ResponseText()
		_, _, _, _ = p.Patch()
	})
}

// FuzzExecOutput: framing never loses the output: a framed text ends
// with its output.
func FuzzExecOutput(f *testing.F) {
	f.Add("Chunk ID: 8530d1\nWall time: 0.0000 seconds\nProcess exited with code 0\nOriginal token count: 3\nOutput:\nhello world\n")
	f.Add("Exit code: 0\nWall time: 0.2 seconds\nOutput:\nSuccess.\n")
	f.Add("apply_patch <<'EOF'\n*** Begin Patch\n*** End Patch\nEOF\n")
	f.Fuzz(func(t *testing.T, s string) {
		o := ParseExecOutput(s)
		if !strings.HasSuffix(s, o.Output) || (!o.Framed && o.Output != s) {
			t.Fatalf("%q: %+v", s, o)
		}
		if patch, _, ok := ShellPatch(s); ok && !strings.Contains(s, patch) {
			t.Fatalf("%q: patch %q", s, patch)
		}
	})
}
