package receipt_test

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/git-lossless/git-lossless/receipt/note"
)

func exampleBody(t testing.TB) []byte {
	t.Helper()
	r, err := note.Compute(exampleInput())
	if err != nil {
		t.Fatal(err)
	}
	body, err := r.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// The worked example in the package documentation is the Example's output,
// byte for byte: the spec and the code cannot drift apart.
func TestDocWorkedExample(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("note", "doc.go"))
	if err != nil {
		t.Fatal(err)
	}
	var block []string
	in, section := false, false
	for _, l := range strings.Split(string(src), "\n") {
		switch {
		case l == "// # Worked example":
			section = true
		case section && l == "//\t"+note.Header:
			in = true
			block = append(block, note.Header)
		case in && strings.HasPrefix(l, "//\t"):
			block = append(block, strings.TrimPrefix(l, "//\t"))
		case in:
			in = false
		}
		if !in && len(block) > 1 {
			break
		}
	}
	if len(block) < 10 {
		t.Fatalf("no worked example found in doc.go (%d lines)", len(block))
	}
	doc := strings.Join(block, "\n") + "\n"
	if got := string(exampleBody(t)); got != doc {
		t.Fatalf("doc.go's worked example differs from Example's output:\n--- doc\n%s--- code\n%s", doc, got)
	}
}

func TestRoundTrip(t *testing.T) {
	body := exampleBody(t)
	r, err := note.Parse(body)
	if err != nil {
		t.Fatal(err)
	}
	again, err := r.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, body) {
		t.Fatalf("round trip changed the text:\n%s\n%s", body, again)
	}
	orig, _ := note.Compute(exampleInput())
	if !reflect.DeepEqual(orig, r) {
		t.Fatalf("parsed receipt differs from the computed one:\n%+v\n%+v", orig, r)
	}
}

func TestTokenQuoting(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "-"},
		{"-", `"-"`},
		{"main", `"main"`},
		{"src/app.go", "src/app.go"},
		{"a b.txt", `"a b.txt"`},
		{"café.md", `"café.md"`},
		{"bad\xff.txt", `"bad\xff.txt"`},
		{`q"uote`, `"q\"uote"`},
		{"tab\tx", `"tab\tx"`},
		{"new\nline", `"new\nline"`},
	} {
		if got := note.Token(tc.in); got != tc.want {
			t.Errorf("Token(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

// A receipt with awkward strings round-trips byte for byte.
func TestRoundTripAwkwardStrings(t *testing.T) {
	in := exampleInput()
	for i := range in.Events {
		in.Events[i].Session = "sess with space"
	}
	in.Events[6].Agent, in.Events[7].Agent = "main", "main"
	ch := in.Changes[2]
	ch.Path = "docs/caf\xe9 <draft> \"notes\".md"
	in.Changes[2] = ch
	in.Changes = append(in.Changes[:2], in.Changes[3], ch)
	in.Changes[2], in.Changes[3] = in.Changes[3], in.Changes[2]
	r, err := note.Compute(in)
	if err != nil {
		t.Fatal(err)
	}
	body, err := r.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	p, err := note.Parse(body)
	if err != nil {
		t.Fatalf("%v\n%s", err, body)
	}
	if !reflect.DeepEqual(p, r) {
		t.Fatalf("awkward strings did not round-trip:\n%s", body)
	}
	if !bytes.Contains(body, []byte(`"docs/caf\xe9 <draft> \"notes\".md"`)) || !bytes.Contains(body, []byte(`agent "main"`)) {
		t.Fatalf("strings not quoted as specified:\n%s", body)
	}
}

// Every non-canonical variant of a valid body is rejected.
func TestParseRejectsNonCanonical(t *testing.T) {
	body := string(exampleBody(t))
	lines := strings.Split(strings.TrimSuffix(body, "\n"), "\n")
	join := func(ls []string) string { return strings.Join(ls, "\n") + "\n" }
	replaceLine := func(prefix string, f func(string) string) string {
		out := append([]string(nil), lines...)
		for i, l := range out {
			if strings.HasPrefix(l, prefix) {
				out[i] = f(l)
				return join(out)
			}
		}
		t.Fatalf("no line starting with %q", prefix)
		return ""
	}
	drop := func(prefix string) string {
		var out []string
		done := false
		for _, l := range lines {
			if !done && strings.HasPrefix(l, prefix) {
				done = true
				continue
			}
			out = append(out, l)
		}
		return join(out)
	}
	cases := map[string]string{
		"empty":                  "",
		"no final newline":       strings.TrimSuffix(body, "\n"),
		"extra final newline":    body + "\n",
		"CRLF":                   strings.ReplaceAll(body, "\n", "\r\n"),
		"other version":          strings.Replace(body, "receipt v1", "receipt v2", 1),
		"trailing space":         replaceLine("commit ", func(l string) string { return l + " " }),
		"double space":           replaceLine("path M written", func(l string) string { return strings.Replace(l, " ", "  ", 1) }),
		"upper-case hex":         replaceLine("tree ", strings.ToUpper),
		"short id":               replaceLine("commit ", func(l string) string { return l[:len(l)-1] }),
		"leading zero":           replaceLine("committed ", func(l string) string { return "committed 0" + l[len("committed "):] }),
		"negative":               replaceLine("committed ", func(l string) string { return "committed -" + l[len("committed "):] }),
		"window not at commit":   replaceLine("window ", func(l string) string { return l[:len(l)-1] + "1" }),
		"bad time":               replaceLine("issued ", func(l string) string { return "issued 2026-01-02 03:12:00Z" }),
		"quoted bare path":       replaceLine("path A unseen", func(l string) string { return strings.Replace(l, "docs/notes.md", `"docs/notes.md"`, 1) }),
		"unknown status":         replaceLine("path A unseen", func(l string) string { return strings.Replace(l, "unseen", "unknown", 1) }),
		"unknown line":           join(append(append([]string{}, lines[:8]...), append([]string{"colour blue"}, lines[8:]...)...)),
		"missing tokenizer":      drop("tokenizer "),
		"missing spans line":     drop("spans c2"),
		"missing total":          drop("tokens total"),
		"missing coverage":       drop("coverage contexts"),
		"duplicate path":         replaceLine("path A unseen", func(l string) string { return l + "\n" + l }),
		"unsorted paths":         replaceLine("path A excluded", func(l string) string { return strings.Replace(l, ".env", "zzz.env", 1) }),
		"blob on excluded":       replaceLine("path A excluded", func(l string) string { return strings.Replace(l, " - w1#6", " "+strings.Repeat("a", 40)+" w1#6", 1) }),
		"dangling writer ref":    replaceLine("path M written", func(l string) string { return strings.Replace(l, "w1#5", "w2#5", 1) }),
		"zero seq":               replaceLine("path M written", func(l string) string { return strings.Replace(l, "w1#5", "w1#0", 1) }),
		"dangling context":       replaceLine("read c2 partial read f45", func(l string) string { return strings.Replace(l, "read c2", "read c3", 1) }),
		"wrong span count":       replaceLine("spans c1", func(l string) string { return strings.Replace(l, "spans c1 2", "spans c1 3", 1) }),
		"non-maximal span run":   replaceLine("spans c1", func(l string) string { return strings.Replace(l, "w1#1-2", "w1#1,w1#2", 1) }),
		"ref past the writer":    replaceLine("spans c1", func(l string) string { return strings.Replace(l, "w1#1-2", "w1#1-2,w1#9", 1) }),
		"huge run":               replaceLine("spans c1", func(l string) string { return "spans c1 4194304 w1#1-4194304" }),
		"wrong token total":      replaceLine("tokens total", func(l string) string { return strings.Replace(l, "files 62", "files 63", 1) }),
		"wrong coverage count":   replaceLine("coverage paths", func(l string) string { return strings.Replace(l, "written 1", "written 2", 1) }),
		"unsorted ops":           replaceLine("read c1 current edit", func(l string) string { return strings.Replace(l, " edit ", " read,edit ", 1) }),
		"head below range":       replaceLine("writer w1", func(l string) string { return strings.Replace(l, "head 9", "head 7", 1) }),
		"bad seal":               replaceLine("writer w1", func(l string) string { return l[:len(l)-1] }),
		"note with trailing sp":  replaceLine("note Observed", func(l string) string { return l + " " }),
		"note before coverage":   join(append([]string{}, append(append(append([]string{}, lines[:len(lines)-8]...), "note early"), lines[len(lines)-8:]...)...)),
		"context ids out of seq": replaceLine("context c2", func(l string) string { return strings.Replace(l, "context c2", "context c3", 1) }),
	}
	for name, text := range cases {
		_, err := note.Parse([]byte(text))
		if err == nil {
			t.Errorf("%s: accepted:\n%s", name, text)
			continue
		}
		t.Logf("%s: %v", name, err)
	}
}

// Parse never panics, and whatever it accepts is canonical.
func FuzzParse(f *testing.F) {
	body := exampleBody(f)
	f.Add(body)
	f.Add([]byte(note.Header + "\n"))
	f.Add(bytes.Replace(body, []byte("docs/notes.md"), []byte(`"docs/a b.md"`), 1))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := note.Parse(data)
		if err != nil {
			return
		}
		again, err := r.Marshal()
		if err != nil {
			t.Fatalf("accepted but cannot re-encode: %v", err)
		}
		if !bytes.Equal(again, data) {
			t.Fatalf("accepted a non-canonical text:\n%q\n%q", data, again)
		}
	})
}
