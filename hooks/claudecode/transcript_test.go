package claudecode

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/git-lossless/git-lossless/hooks/claudecode/cctranscript"
	"github.com/git-lossless/git-lossless/hooks/transcript"
	"github.com/git-lossless/git-lossless/internal/testkit/transcriptgen"
)

// The generator's own test and the parser's benchmark over its output
// stay with the generator; the parser's tests are in hooks/transcript.
// The sample transcripts and line builders below are shared by the sweep,
// facts and payload tests.

const (
	trSampleSession = "9e33e208-2b1c-4064-b54f-efdf0f79781b"
	trSampleAgent   = "ab8f45f825081b44d"
)

// trSampleDir holds the real transcripts Claude Code 2.1.328 wrote.
var trSampleDir = filepath.Join("..", "..", "testdata", "claude-code-2.1.328", "transcripts", "-home-dev-project")

func trLine(typ, uuid, extra string) string {
	return `{"parentUuid":null,"isSidechain":false,"type":"` + typ + `",` + extra + `,"uuid":"` + uuid +
		`","timestamp":"2026-12-02T16:24:00.000Z","cwd":"/p","sessionId":"s1","version":"2.1.328"}`
}

func trToolUse(uuid, id, name, input string) string {
	return trLine("assistant", uuid, `"message":{"role":"assistant","content":[{"type":"tool_use","id":"`+id+`","name":"`+name+`","input":`+input+`}]}`)
}

func trToolResult(uuid, id, content, tur string) string {
	extra := `"message":{"role":"user","content":[{"tool_use_id":"` + id + `","type":"tool_result","content":` + content + `}]}`
	if tur != "" {
		extra += `,"toolUseResult":` + tur
	}
	return trLine("user", uuid, extra)
}

func trQ(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// trCheckSeenLoose compares evidence without the sample's session checks.
// trCorpusValues reads a corpus file: "go test fuzz v1", then one value
// per line: []byte("..."), string("..."), uint16(n), bool(b).
func trCorpusValues(b []byte) ([]string, error) {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) < 2 || lines[0] != "go test fuzz v1" {
		return nil, fmt.Errorf("not a fuzz corpus entry")
	}
	var out []string
	for _, l := range lines[1:] {
		open := strings.IndexByte(l, '(')
		if open < 0 || !strings.HasSuffix(l, ")") {
			return nil, fmt.Errorf("bad value %q", l)
		}
		v := l[open+1 : len(l)-1]
		switch l[:open] {
		case "[]byte", "string":
			s, err := strconv.Unquote(v)
			if err != nil {
				return nil, fmt.Errorf("bad value %q: %v", l, err)
			}
			v = s
		case "uint16", "bool":
		default:
			return nil, fmt.Errorf("unsupported value %q", l)
		}
		out = append(out, v)
	}
	return out, nil
}

// trParseAll parses a whole transcript, checking offsets as it goes.
func trParseAll(t testing.TB, r io.Reader) ([]*transcript.Line, *cctranscript.Parser) {
	t.Helper()
	p := cctranscript.NewParser(r, 0)
	var out []*transcript.Line
	var last int64
	for {
		tl, err := p.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if tl.Start != last || tl.End <= tl.Start || tl.End != p.Offset() {
			t.Fatalf("offsets %d-%d after %d (parser at %d)", tl.Start, tl.End, last, p.Offset())
		}
		last = tl.End
		out = append(out, tl)
	}
	return out, p
}

func trItems[T any](lines []*transcript.Line) []T {
	var out []T
	for _, l := range lines {
		for _, it := range l.Items {
			if x, ok := it.(T); ok {
				out = append(out, x)
			}
		}
	}
	return out
}

func TestTranscriptGenerator(t *testing.T) {
	var a, b, sub bytes.Buffer
	if err := transcriptgen.Generate(&a, 7, 3<<20); err != nil {
		t.Fatal(err)
	}
	if err := transcriptgen.Generate(&b, 7, 3<<20); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("same seed, different transcripts")
	}
	if a.Len() < 3<<20 || a.Len() > 3<<20+(1<<20) {
		t.Fatalf("size %d", a.Len())
	}
	for i, l := range bytes.Split(bytes.TrimSuffix(a.Bytes(), []byte("\n")), []byte("\n")) {
		if !json.Valid(l) {
			t.Fatalf("line %d is not JSON: %.200s", i, l)
		}
	}
	lines, p := trParseAll(t, bytes.NewReader(a.Bytes()))
	if p.Stats().Invalid != 0 || p.Offset() != int64(a.Len()) {
		t.Fatalf("%+v", p.Stats())
	}
	types := map[string]int{}
	for _, l := range lines {
		types[l.Type]++
	}
	for _, typ := range []string{"api-request-shape", "api-request-blob", "api-request", "attachment", "user", "assistant", "system", "queue-operation"} {
		if types[typ] == 0 {
			t.Errorf("no %s lines", typ)
		}
	}
	if n := len(trItems[*transcript.CompactBoundary](lines)); n != 1 {
		t.Errorf("%d compactions", n)
	}
	ops := map[string]int{}
	agent := transcriptgen.SubagentID(7)
	for _, fs := range trItems[*transcript.FileSeen](lines) {
		k := fs.Op
		if fs.Agent != "" {
			if fs.Agent != agent || !fs.Sidechain {
				t.Fatalf("subagent evidence %+v", fs.LineMeta)
			}
			k = "sub-" + k
		}
		if !fs.HasContent {
			if k != "sub-edit" {
				t.Errorf("%s %s (%s) without content", fs.Op, fs.Path, fs.Tool)
			}
			k += "-nocontent"
		}
		ops[string(k)]++
		if fs.Op == "read" && fs.Agent == "" && fs.View != "full" && !strings.HasPrefix(fs.View, "lines:") {
			t.Errorf("view %q", fs.View)
		}
	}
	for _, k := range []string{"read", "edit", "write", "attach", "sub-read"} {
		if ops[k] == 0 {
			t.Errorf("no %s evidence: %v", k, ops)
		}
	}
	// The subagent's lines can go to their own transcript.
	a.Reset()
	if err := transcriptgen.GenerateWith(&a, transcriptgen.Options{Seed: 7, TargetBytes: 1 << 20, Subagent: &sub, Root: "/w"}); err != nil {
		t.Fatal(err)
	}
	sl, _ := trParseAll(t, bytes.NewReader(sub.Bytes()))
	ml, _ := trParseAll(t, bytes.NewReader(a.Bytes()))
	if len(sl) == 0 || len(trItems[*transcript.FileSeen](sl)) == 0 {
		t.Fatal("no subagent transcript")
	}
	for _, l := range ml {
		if l.Agent != "" {
			t.Fatalf("subagent line in the main transcript: %+v", l.LineMeta)
		}
	}
	for _, l := range sl {
		if l.Type == "user" && (l.Agent != agent || !l.Sidechain) {
			t.Fatalf("subagent line %+v", l.LineMeta)
		}
	}
	for _, fs := range trItems[*transcript.FileSeen](ml) {
		if !strings.HasPrefix(fs.Path, "/w/") {
			t.Fatalf("path %s outside the root", fs.Path)
		}
	}
}

func BenchmarkTranscriptParse14MB(b *testing.B) {
	var buf bytes.Buffer
	if err := transcriptgen.Generate(&buf, 1, 14<<20); err != nil {
		b.Fatal(err)
	}
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for b.Loop() {
		p := cctranscript.NewParser(bytes.NewReader(data), 0)
		for {
			if _, err := p.Next(); err != nil {
				break
			}
		}
	}
}
