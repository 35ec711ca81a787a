package blame_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/git-lossless/git-lossless/blame"
	"github.com/git-lossless/git-lossless/gitstore"
)

// TestWhyNamesWhatTheContextHadSeen: --why lists exactly the files the
// writing context had read before the write, each at the version it read
// and whether that version was still current, with the request and the
// call; nothing another context read, nothing read after.
func TestWhyNamesWhatTheContextHadSeen(t *testing.T) {
	r := newRepo(t)
	calc := doc{}.insert(0, "", "package calc", "", "func Add(a, b int) int { return a + b }")
	util1 := []byte("package calc\n\nconst Version = 1\n")
	util2 := []byte("package calc\n\nconst Version = 2\n")
	readme := []byte("# calc\n")
	r.writeFile("calc.go", calc.bytes())
	r.writeFile("util.go", util1)
	r.writeFile("README.md", readme)
	r.commit("Pat", "start")

	r.span(alpha, "user", "", "span:u1", `{"kind":"user","role":"user","text":"add Sub to calc.go, token sk-ant-api03-`+strings.Repeat("x", 90)+`"}`)
	rc := r.event(alpha, "read", "Read", "", "calc.go", calc.bytes())
	ru := r.event(alpha, "read", "Read", "", "util.go", util1)
	rr := r.event(alpha, "read", "Read", "", "README.md", readme)
	r.event(beta, "read", "Read", "", "NOTES.md", []byte("beta's notes\n"))
	// Another context changes util.go: alpha's version of it is stale.
	r.event(beta, "edit", "apply_patch", "call_b", "util.go", util2)
	r.writeFile("util.go", util2)
	r.span(alpha, "tool_use", "Edit", "span:t1", `{"kind":"tool_use","role":"assistant","id":"toolu_w","tool":"Edit","input":{"file_path":"calc.go","new_string":"func Sub"}}`)
	next := calc.insert(len(calc), alpha.writer, "func Sub(a, b int) int { return a - b }")
	w := r.event(alpha, "edit", "Edit", "toolu_w", "calc.go", next.bytes())
	r.writeFile("calc.go", next.bytes())
	r.event(alpha, "read", "Read", "", "LATER.md", []byte("read after the write\n"))
	r.commit("Pat", "sub")

	why, err := blame.WhyLine(context.Background(), r.st, "HEAD", "calc.go", 4, blame.WhyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	o := why.Line.Origin
	if o == nil || o.Writer != alpha.writer || o.Seq != w.Seq || o.Call != "toolu_w" || o.Tool != "Edit" {
		t.Fatalf("origin %+v, want alpha's edit seq %d", o, w.Seq)
	}
	want := map[string]struct {
		blob    string
		current bool
	}{
		"calc.go":   {rc.Blob, true},
		"util.go":   {ru.Blob, false},
		"README.md": {rr.Blob, true},
	}
	if len(why.Seen) != len(want) {
		t.Fatalf("seen %+v, want exactly %v", why.Seen, want)
	}
	for _, s := range why.Seen {
		wv, ok := want[s.Path]
		if !ok {
			t.Errorf("seen %s, which the context had not read before the write", s.Path)
			continue
		}
		if s.Blob != wv.blob || s.Blob != gitstore.BlobID(map[string][]byte{"calc.go": calc.bytes(), "util.go": util1, "README.md": readme}[s.Path]) {
			t.Errorf("%s: version %s, want %s", s.Path, s.Blob, wv.blob)
		}
		if s.CurrentAtWrite != wv.current {
			t.Errorf("%s: current %v, want %v", s.Path, s.CurrentAtWrite, wv.current)
		}
		if s.Op != "read" {
			t.Errorf("%s: op %s", s.Path, s.Op)
		}
	}
	if !strings.HasPrefix(why.Request, "add Sub to calc.go") || strings.Contains(why.Request, "sk-ant-api03") {
		t.Errorf("request %q: want the user's words with the key masked", why.Request)
	}
	if why.Call == nil || !strings.Contains(string(why.Call.Input), `"new_string":"func Sub"`) {
		t.Errorf("call %+v", why.Call)
	}
	if len(why.Receipts) != 0 {
		t.Errorf("receipts %+v for a commit that has none", why.Receipts)
	}

	// A person's line has no origin, and says so.
	why, err = blame.WhyLine(context.Background(), r.st, "HEAD", "calc.go", 1, blame.WhyOptions{})
	if !errors.Is(err, blame.ErrNoOrigin) || why == nil || why.Line.Origin != nil {
		t.Fatalf("a person's line: %v %+v", err, why)
	}
	if _, err := blame.WhyLine(context.Background(), r.st, "HEAD", "calc.go", 99, blame.WhyOptions{}); err == nil {
		t.Fatal("line 99 of a 4-line file was explained")
	}
}

// TestBlameRequests: with Requests, each agent line carries the user
// request its context made before that write (the script's request names
// the call), the same text --why gives, and a person's line none.
func TestBlameRequests(t *testing.T) {
	r := newRepo(t)
	script(t, r)
	lines, err := blame.File(context.Background(), r.st, "", "calc.go", blame.Options{Requests: true})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, l := range lines {
		if l.Origin == nil {
			continue
		}
		n++
		if want := "please work on calc.go, call " + l.Origin.Call; l.Origin.Request != want {
			t.Errorf("line %d: request %q, want %q", l.N, l.Origin.Request, want)
		}
	}
	if n == 0 {
		t.Fatal("no agent line")
	}
	why, err := blame.WhyLine(context.Background(), r.st, "", "calc.go", len(lines), blame.WhyOptions{})
	if err != nil || why.Request != "please work on calc.go, call "+why.Line.Origin.Call {
		t.Fatalf("--why request %q (%v)", why.Request, err)
	}
}
