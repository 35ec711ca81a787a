package cctranscript

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/git-lossless/git-lossless/hooks/transcript"
)

// Seeds live in testdata/fuzz/<FuzzName>/ (committed): `go test` runs them
// as regression cases, `go test -fuzz FuzzParseLine` grows them.

var trViewRE = regexp.MustCompile(`^(full|lines:[0-9]+-[0-9]+)$`)

// FuzzParseLine feeds lines (the input split at newlines, so that a seed
// can hold a call and its result) to one parser: it must never panic,
// every span must be valid JSON, and evidence must be well formed.
func FuzzParseLine(f *testing.F) {
	f.Fuzz(trFuzzParseLine)
}

func trFuzzParseLine(t *testing.T, data []byte) {
	{
		p := NewParser(bytes.NewReader(data), 0)
		var end int64
		for {
			tl, err := p.Next()
			if err != nil {
				break
			}
			end = tl.End
			if tl.Invalid && (len(tl.Items) > 0 || tl.Skipped) {
				t.Fatalf("invalid line with items or skipped: %+v", tl)
			}
			for _, it := range tl.Items {
				if s := transcript.SpanJSON(it); s != nil {
					if !json.Valid(s) {
						t.Fatalf("span is not JSON: %q", s)
					}
					if transcript.SpanKind(it) == "" {
						t.Fatalf("span without kind: %T", it)
					}
				}
				switch x := it.(type) {
				case *transcript.FileSeen:
					if x.Key == "" || x.Path == "" || !strings.Contains("read write edit attach", string(x.Op)) {
						t.Fatalf("evidence %+v", x)
					}
					if x.HasContent && !trViewRE.MatchString(x.View) {
						t.Fatalf("view %q", x.View)
					}
					if x.Op == "attach" && !strings.HasPrefix(x.Key, "attach:") {
						t.Fatalf("attach key %q", x.Key)
					}
				case *transcript.CompactBoundary:
					if x.Key != "" && x.Key != "compact:"+x.UUID {
						t.Fatalf("compact key %q", x.Key)
					}
				}
			}
		}
		if p.Offset() != end || end > int64(len(data)) {
			t.Fatalf("offset %d, last line end %d, input %d", p.Offset(), end, len(data))
		}
		if i := bytes.LastIndexByte(data, '\n'); int64(i+1) != p.Offset() {
			t.Fatalf("offset %d, last newline at %d", p.Offset(), i)
		}
	}
}

// FuzzNumberedText checks the line-number stripper: on any text it never
// panics and its answer is consistent; numbering text in either render
// style and stripping it gives the text back.
func FuzzNumberedText(f *testing.F) {
	f.Fuzz(trFuzzNumberedText)
}

func trFuzzNumberedText(t *testing.T, text string, start uint16, oldStyle bool) {
	{
		if out, first, last, ok := StripLineNumbers(text); ok {
			if first < 0 || last < first || strings.Count(out, "\n") != last-first {
				t.Fatalf("StripLineNumbers(%q) = %q %d %d", text, out, first, last)
			}
		} else if out != "" || first != 0 || last != 0 {
			t.Fatalf("not ok but %q %d %d", out, first, last)
		}
		n := int(start) + 1
		var b strings.Builder
		for i, l := range strings.Split(text, "\n") {
			if i > 0 {
				b.WriteByte('\n')
			}
			if oldStyle {
				num := strconv.Itoa(n + i)
				b.WriteString(strings.Repeat(" ", max(0, 6-len(num))) + num + "→")
			} else {
				b.WriteString(strconv.Itoa(n+i) + "\t")
			}
			b.WriteString(l)
		}
		out, first, last, ok := StripLineNumbers(b.String())
		if !ok || out != text || first != n || last != n+strings.Count(text, "\n") {
			t.Fatalf("round trip of %q (start %d, old %v): %q %d %d %v", text, n, oldStyle, out, first, last, ok)
		}
	}
}

// TestTranscriptFuzzSeedCorpora fails when a fuzz target's committed seed
// corpus is missing or empty, and runs every seed through the target's
// body (so `-run Transcript` covers them too).
func TestTranscriptFuzzSeedCorpora(t *testing.T) {
	for _, name := range []string{"FuzzParseLine", "FuzzNumberedText"} {
		dir := filepath.Join("testdata", "fuzz", name)
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatalf("seed corpus %s: %v", dir, err)
		}
		n := 0
		for _, e := range ents {
			if e.IsDir() {
				continue
			}
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			vals, err := trCorpusValues(b)
			if err != nil {
				t.Fatalf("%s/%s: %v", dir, e.Name(), err)
			}
			t.Run(name+"/"+e.Name(), func(t *testing.T) {
				switch name {
				case "FuzzParseLine":
					if len(vals) != 1 {
						t.Fatalf("%d values", len(vals))
					}
					trFuzzParseLine(t, []byte(vals[0]))
				case "FuzzNumberedText":
					if len(vals) != 3 {
						t.Fatalf("%d values", len(vals))
					}
					start, err1 := strconv.ParseUint(vals[1], 10, 16)
					old, err2 := strconv.ParseBool(vals[2])
					if err1 != nil || err2 != nil {
						t.Fatalf("values %q", vals)
					}
					trFuzzNumberedText(t, vals[0], uint16(start), old)
				}
			})
			n++
		}
		if n == 0 {
			t.Fatalf("seed corpus %s is empty", dir)
		}
	}
}

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
