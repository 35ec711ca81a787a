package recall

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"slices"
	"strings"
	"testing"
)

func TestStem(t *testing.T) {
	// Pairs from Porter's published vocabulary and output.
	for in, want := range map[string]string{
		"caresses": "caress", "ponies": "poni", "ties": "ti", "caress": "caress", "cats": "cat",
		"feed": "feed", "agreed": "agre", "plastered": "plaster", "bled": "bled", "motoring": "motor",
		"sing": "sing", "conflated": "conflat", "troubled": "troubl", "sized": "size", "hopping": "hop",
		"tanned": "tan", "falling": "fall", "hissing": "hiss", "fizzed": "fizz", "failing": "fail",
		"filing": "file", "happy": "happi", "sky": "sky", "relational": "relat", "conditional": "condit",
		"rational": "ration", "valenci": "valenc", "hesitanci": "hesit", "digitizer": "digit",
		"conformabli": "conform", "radicalli": "radic", "differentli": "differ", "vileli": "vile",
		"analogousli": "analog", "vietnamization": "vietnam", "predication": "predic", "operator": "oper",
		"feudalism": "feudal", "decisiveness": "decis", "hopefulness": "hope", "callousness": "callous",
		"formaliti": "formal", "sensitiviti": "sensit", "sensibiliti": "sensibl", "triplicate": "triplic",
		"formative": "form", "formalize": "formal", "electriciti": "electr", "electrical": "electr",
		"hopeful": "hope", "goodness": "good", "revival": "reviv", "allowance": "allow", "inference": "infer",
		"airliner": "airlin", "gyroscopic": "gyroscop", "adjustable": "adjust", "defensible": "defens",
		"irritant": "irrit", "replacement": "replac", "adjustment": "adjust", "dependent": "depend",
		"adoption": "adopt", "homologou": "homolog", "communism": "commun", "activate": "activ",
		"angulariti": "angular", "homologous": "homolog", "effective": "effect", "bowdlerize": "bowdler",
		"probate": "probat", "rate": "rate", "cease": "ceas", "controll": "control", "roll": "roll",
		"generalizations": "gener", "oscillators": "oscil", "compaction": "compact", "compacting": "compact",
		"compacted": "compact", "transcripts": "transcript", "is": "is", "a": "a",
	} {
		var z stemmer
		if got := string(stem(nil, []byte(in), &z)); got != want {
			t.Errorf("stem(%q) = %q, want %q", in, got, want)
		}
	}
}

func terms(s string) []string {
	var a analyzer
	var out []string
	b := []byte(s)
	eachToken(b, func(st, e int) {
		a.terms(b[st:e], func(t []byte, _, _ int) { out = append(out, string(t)) })
	})
	return out
}

func TestTerms(t *testing.T) {
	for in, want := range map[string][]string{
		"Running the tests.":              {"run", "the", "test"},
		"hooks/sweep.go":                  {"hook", "sweep.go", "sweep", "go"},
		"tool_use":                        {"tool_use", "tool", "us"},
		"SweepSession(ctx)":               {"sweepsession", "sweep", "session", "ctx"},
		"HTTPServer":                      {"httpserver"},
		"parseHTTPResponse":               {"parsehttpresponse", "pars", "http", "respons"},
		"v1.2.3 and git-lossless --flags": {"v1.2.3", "v1", "2", "3", "and", "git-lossless", "git", "lossless", "flag"},
		"Café DÉJÀ vu":                    {"café", "déjà", "vu"},
		"end. next-":                      {"end", "next"},
		strings.Repeat("x", 70):           nil,
		"a_" + strings.Repeat("y", 70):    {"a"},
	} {
		if got := terms(in); !slices.Equal(got, want) {
			t.Errorf("terms(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestExtractText(t *testing.T) {
	doc := `{"kind":"tool_result","role":"user","tool_use_id":"toolu_1","content":[{"type":"text","text":"line \"one\"\nline\ttwo \u00e9\ud83d\ude00"},{"type":"image","source":{"type":"base64","data":"AAAA"}}],"n":12,"ok":true,"x":null}`
	text, from, _ := extractText(nil, []byte(doc))
	if got, want := string(text), "line \"one\"\nline\ttwo é😀\n"; got != want || from != -1 {
		t.Errorf("extractText = %q (%d), want %q", got, from, want)
	}
	text, from, to := extractText(nil, []byte(`{"format":"x","summary":"the sum","messages":[{"message":{"role":"user","content":"hi"}}]}`))
	if string(text[from:to]) != "the sum" || !bytes.Contains(text, []byte("hi\n")) {
		t.Errorf("summary range %d-%d of %q", from, to, text)
	}
	for _, bad := range []string{`{"a":"unterminated`, `{"a":1`, `[1,2`, `"\x"`, `{"a" 1}`, strings.Repeat("[", 300) + strings.Repeat("]", 300)} {
		text, _, _ := extractText(nil, []byte(bad))
		if string(text) != bad {
			t.Errorf("%q: not indexed as raw bytes: %q", bad, text)
		}
	}
}

func TestSegmentRoundTrip(t *testing.T) {
	d := &segData{
		docs: []docMeta{
			{Writer: "cc-a", Session: "s", Kind: KindUserPrompt, Source: "sweep", Seq: 1, TS: 5, Bytes: 10, Len: 3, Epoch: 2, Head: "hello"},
			{Writer: "cc-b", Session: "s2", Kind: KindFile, Path: "a/b.go", Op: "read", View: "full", Seq: 7, TS: 9, Len: 2, Flags: flagBlob, Blob: [20]byte{1, 2, 3}},
		},
		terms: []string{"alpha", "beta", "gamma"},
		post:  [][]uint32{{0, 2, 1, 1}, {1, 5}, {0, 1}},
	}
	enc, err := encodeSegment(d)
	if err != nil {
		t.Fatal(err)
	}
	s, err := openSegment("x", enc, true)
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range d.docs {
		if got := s.meta(i); got != m {
			t.Errorf("doc %d: %+v, want %+v", i, got, m)
		}
	}
	if i, ok := s.findTerm([]byte("beta")); !ok || i != 1 {
		t.Errorf("findTerm beta: %d %v", i, ok)
	}
	if _, ok := s.findTerm([]byte("delta")); ok {
		t.Error("findTerm found delta")
	}
	var got []uint32
	s.postings(0, func(doc int, tf uint32) { got = append(got, uint32(doc), tf) })
	if !slices.Equal(got, d.post[0]) {
		t.Errorf("postings %v", got)
	}
	var tri []int
	s.trigramTerms(uint32('a')<<16|uint32('m')<<8|uint32('m'), func(t int) { tri = append(tri, t) })
	if !slices.Equal(tri, []int{2}) {
		t.Errorf("trigram amm: %v", tri)
	}
	back, err := s.decode(func(int) bool { return true })
	if err != nil || !slices.Equal(back.terms, d.terms) || len(back.docs) != 2 {
		t.Errorf("decode: %v %+v", err, back)
	}
	// Any changed byte fails a checksum: the footer's when the segment
	// is opened, a page's when that page is read.
	for i := 0; i < len(enc); i += 7 {
		c := bytes.Clone(enc)
		c[i] ^= 1
		s, err := openSegment("x", c, true)
		if err != nil {
			continue
		}
		intact := true
		for sec := range secPageCRCs {
			intact = s.check(sec, 0, uint64(len(s.sec[sec]))) && intact
		}
		if intact || !s.bad.Load() {
			t.Fatalf("byte %d flipped: not noticed", i)
		}
	}
}

// FuzzSegment: whatever the bytes (with a valid checksum or without one
// checked), opening and reading a segment is an error or a result, never
// a panic or a hang.
func FuzzSegment(f *testing.F) {
	d := &segData{
		docs:  []docMeta{{Writer: "w", Kind: "k", Seq: 1, Len: 2}, {Writer: "w", Kind: "file", Path: "p/q.go", Seq: 2, Len: 1}},
		terms: []string{"abcd", "bcde", "zz"},
		post:  [][]uint32{{0, 1}, {0, 1, 1, 3}, {1, 1}},
	}
	enc, _ := encodeSegment(d)
	f.Add(enc)
	f.Add(enc[:len(enc)/2])
	f.Add([]byte(segMagic + strings.Repeat("\x00", footerSize)))
	f.Fuzz(func(t *testing.T, data []byte) {
		exercise(data, false)
		// The same bytes with their checksum fixed: what only the bounds
		// checks stand against.
		if len(data) >= len(segMagic)+footerSize {
			c := bytes.Clone(data)
			at := len(c) - len(segEndMagic) - 4
			binary.LittleEndian.PutUint32(c[at:], crc32.Checksum(c[:at], castagnoli()))
			exercise(c, true)
		}
	})
}

func exercise(data []byte, verify bool) {
	s, err := openSegment("fuzz", data, verify)
	if err != nil {
		return
	}
	setLive(s, &manifest{writers: map[string]writerState{"w": {}}})
	for d := range min(s.nDocs, 1000) {
		_ = s.meta(d)
		s.isLive(d)
		s.docLen(d)
		s.docTS(d)
	}
	for i := range min(s.nStrs, 1000) {
		s.strAt(uint32(i))
	}
	s.findString("w")
	for t := range min(s.nTerms, 1000) {
		s.termAt(t)
		s.postings(t, func(int, uint32) {})
	}
	s.findTerm([]byte("bcde"))
	for _, g := range []uint32{0x616263, 0x626364, 0} {
		s.trigramCount(g)
		s.trigramTerms(g, func(int) {})
	}
	s.decode(func(int) bool { return true })
	setLive(s, &manifest{writers: map[string]writerState{"w": {}}})
	for d := range min(s.nDocs, 1000) {
		s.isLive(d)
	}
	for sec := range nSections {
		s.check(sec, 0, uint64(len(s.sec[sec])))
	}
}

// TestJSONTokensMatchText: tokenizing a span document straight from its
// JSON (escapes taken for separators, \u escapes unescaped, skipped keys
// left out) yields the terms its extracted text does.
func TestJSONTokensMatchText(t *testing.T) {
	docs := []string{
		`{"kind":"user","role":"user","text":"Fix the flaky\ntest in hooks/sweep.go, \"quoted\" and tab\tseparated."}`,
		`{"kind":"tool_use","role":"assistant","id":"toolu_01ABC","tool":"Edit","input":{"file_path":"/p/recall/index.go","old_string":"func open(","new_string":"func openIndex(","replace_all":false,"n":3}}`,
		`{"kind":"tool_result","role":"user","tool_use_id":"toolu_01ABC","content":[{"type":"text","text":"caf\u00e9 na\u00efve \ud83d\ude00 done"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgoAAAANSUhEUg"}}]}`,
		`{"kind":"assistant","role":"assistant","text":"a\\nb \\u0041 c:\\\\path\\\\to\\\\file.txt \u001b[31mred\u001b[0m"}`,
		`{"format":"git-lossless proxy span v1","id":"sp-x","kind":"summary","summary":"the sum","messages":[{"index":1,"message":{"role":"user","content":"Hello  World_wide-web v1.2.3"}}],"pins":["pin one"]}`,
		`not json at all, "just" text`,
	}
	terms := func(b *builder) []string {
		var out []string
		for _, id := range b.ids {
			out = append(out, b.terms[id])
		}
		slices.Sort(out)
		return out
	}
	for _, doc := range docs {
		direct := newBuilder(1)
		direct.ids = nil
		direct.skip = nil
		if end, ok := direct.json([]byte(doc), 0, nil, 0); !ok || !onlySpace([]byte(doc)[end:]) {
			direct.ids = direct.ids[:0]
			direct.scan([]byte(doc), 0, false)
		}
		text, _, _ := extractText(nil, []byte(doc))
		plain := newBuilder(1)
		plain.scan(text, 0, false)
		if got, want := terms(direct), terms(plain); !slices.Equal(got, want) {
			t.Errorf("%s:\nfrom the JSON  %q\nfrom the text  %q", doc, got, want)
		}
	}
}
