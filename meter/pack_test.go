package meter_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/internal/testkit"
	"github.com/git-lossless/git-lossless/meter"
)

const (
	hotV1  = "package hot\n\n// Hot is read by every session.\nfunc Hot() string { return \"hot\" }\n"
	warmV1 = "package warm\n\nfunc Warm() int { return 3 }\n"
	warmV2 = "package warm\n\n// Warm changed on disk after the agents read it.\nfunc Warm() int { return 4 }\n"
	coldV1 = "cold file without a final newline"
)

// packRepo is a repository whose archive ranks, over the last 7 days:
// hot.go 5 reads, .env 4 (denied), gone.go 4 (deleted since), big.go 3
// (too big for the budget), warm.go 3 (changed on disk since), ../up.go 2
// (outside the work tree), blob.bin 2 (binary), cold.go 1; and old.go,
// read 10 times a month ago, outside the window.
func packRepo(t *testing.T) (*repo, string) {
	t.Helper()
	r := newRepo(t)
	var big strings.Builder
	for i := range 400 {
		big.WriteString("func big")
		big.WriteString(strings.Repeat("x", i%17))
		big.WriteString("() { println(\"a rather long line of the big file\") }\n")
	}
	at := func(m int) time.Time { return base.Add(time.Duration(m) * time.Minute) }
	m := 0
	read := func(session, p, content string, n int) {
		for range n {
			m++
			r.append(ev{at: at(m), session: session, op: "read", path: p, content: content})
		}
	}
	for k := range 10 {
		r.append(ev{at: base.Add(-30*24*time.Hour + time.Duration(k)*time.Minute), session: "old", op: "read", path: "old.go", content: "package old\n"})
	}
	read("s1", "hot.go", hotV1, 3)
	read("s2", "hot.go", hotV1, 2)
	read("s1", ".env", "TOKEN=1\n", 4)
	read("s2", "gone.go", "package gone\n", 4)
	read("s1", "big.go", big.String(), 3)
	read("s2", "warm.go", warmV1, 3)
	read("s1", "../up.go", "package up\n", 2)
	read("s2", "blob.bin", "not binary when read\n", 2)
	read("s3", "cold.go", coldV1, 1)

	r.write("hot.go", hotV1)
	r.write("warm.go", warmV2)
	r.write(".env", "TOKEN=1\n")
	r.write("big.go", big.String())
	r.write("blob.bin", "bin\x00ary\n")
	r.write("cold.go", coldV1)
	r.write("old.go", "package old\n")
	if err := os.WriteFile(filepath.Join(filepath.Dir(r.dir), "up.go"), []byte("package up\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return r, big.String()
}

// TestPackContent: ranking, reasons, blob ids (held to git hash-object),
// the budget (held to an independent count of the whole text) and the
// text's shape.
func TestPackContent(t *testing.T) {
	r, _ := packRepo(t)
	ctx := context.Background()
	p, err := meter.BuildPack(ctx, r.st, meter.PackOptions{Budget: 600})
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		reads  int
		reason string
	}
	wants := []struct {
		path string
		want
	}{
		{"hot.go", want{5, meter.ReasonIn}},
		{".env", want{4, meter.ReasonDenied}},
		{"gone.go", want{4, meter.ReasonGone}},
		{"big.go", want{3, meter.ReasonOverBudget}},
		{"warm.go", want{3, meter.ReasonIn}},
		{"../up.go", want{2, meter.ReasonOutside}},
		{"blob.bin", want{2, meter.ReasonBinary}},
		{"cold.go", want{1, meter.ReasonIn}},
	}
	if len(p.Files) != len(wants) {
		t.Fatalf("%d files considered, want %d: %+v", len(p.Files), len(wants), p.Files)
	}
	var sum int64
	for i, w := range wants {
		f := p.Files[i]
		if f.Path != w.path || f.Reads != w.reads || f.Reason != w.reason || f.In != (w.reason == meter.ReasonIn) {
			t.Errorf("rank %d: %+v, want %s with %d reads, %s", i, f, w.path, w.reads, w.reason)
		}
		if f.Blob != "" {
			if got := r.git("hash-object", "--", f.Path); got != f.Blob {
				t.Errorf("%s: blob %s, git hash-object says %s", f.Path, f.Blob, got)
			}
		}
		if f.In {
			sum += f.Tokens
			if !bytes.Contains(p.Text, []byte("=== "+f.Path+" (blob "+f.Blob+") ===\n")) {
				t.Errorf("%s is in but its header is not in the text", f.Path)
			}
		}
	}
	if p.Reads != 24 {
		t.Errorf("reads in the window = %d, want 24", p.Reads)
	}
	byPath := map[string]meter.PackFile{}
	for _, f := range p.Files {
		byPath[f.Path] = f
	}
	if !byPath["warm.go"].Changed || byPath["hot.go"].Changed || byPath["cold.go"].Changed {
		t.Errorf("changed since last read: warm %v hot %v cold %v, want true false false", byPath["warm.go"].Changed, byPath["hot.go"].Changed, byPath["cold.go"].Changed)
	}
	if byPath["big.go"].Tokens <= 600 {
		t.Errorf("big.go counts %d tokens, the test needs it over the budget", byPath["big.go"].Tokens)
	}

	// Exact budget: the whole text counted in one piece.
	total := count(t, string(p.Text))
	if total != p.Tokens || total > p.Budget {
		t.Errorf("text counts %d tokens; pack says %d, budget %d", total, p.Tokens, p.Budget)
	}
	header := p.Text[:bytes.Index(p.Text, []byte("=== "))]
	if got := count(t, string(header)) + sum; got != total {
		t.Errorf("header + sections = %d tokens, the text %d: sections are not additive", got, total)
	}
	// Files in path order, content verbatim, a newline added only where
	// the file lacks one; nothing of the left-out files.
	text := string(p.Text)
	ic, ih, iw := strings.Index(text, "=== cold.go "), strings.Index(text, "=== hot.go "), strings.Index(text, "=== warm.go ")
	if !(ic >= 0 && ic < ih && ih < iw) {
		t.Errorf("sections not in path order: cold %d hot %d warm %d", ic, ih, iw)
	}
	for _, c := range []string{hotV1, warmV2, coldV1 + "\n=== end of cold.go ===\n"} {
		if !strings.Contains(text, c) {
			t.Errorf("text lacks %q", c)
		}
	}
	for _, c := range []string{warmV1, "TOKEN", "=== old.go", "=== gone.go", "=== big.go", "up.go", "=== blob.bin", "=== .env"} {
		if strings.Contains(text, c) {
			t.Errorf("text holds %q:\n%s", c, text)
		}
	}
	if !strings.HasPrefix(text, "# git lossless pack:") || !strings.Contains(string(header), "7d") || !strings.Contains(string(header), "600 o200k tokens") {
		t.Errorf("header: %q", header)
	}

	// The window ends at the newest read, not at the clock: naming that
	// end explicitly gives the same bytes, a later end drops the reads.
	same, err := meter.BuildPack(ctx, r.st, meter.PackOptions{Budget: 600, Now: p.Until})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(same.Text, p.Text) {
		t.Error("Now = the newest read changes the text")
	}
	later, err := meter.BuildPack(ctx, r.st, meter.PackOptions{Budget: 600, Now: p.Until.Add(30 * 24 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if len(later.Files) != 0 || later.Reads != 0 {
		t.Errorf("a window a month later still ranks %d files", len(later.Files))
	}
	if _, err := meter.BuildPack(ctx, r.st, meter.PackOptions{Budget: 10}); err == nil {
		t.Error("a budget below the header's tokens is accepted")
	}
}

// TestPackByteStable: two builds, a build after more reads that do not
// change the choice, and a build after `git gc --aggressive --prune=now`
// (every archived object repacked, the derived index deleted so events
// are read from the packs) give the same bytes.
func TestPackByteStable(t *testing.T) {
	r, _ := packRepo(t)
	ctx := context.Background()
	opt := meter.PackOptions{Budget: 600}
	build := func() []byte {
		t.Helper()
		p, err := meter.BuildPack(ctx, r.st, opt)
		if err != nil {
			t.Fatal(err)
		}
		return p.Text
	}
	one, two := build(), build()
	if !bytes.Equal(one, two) {
		t.Fatalf("two builds differ:\n%s\n---\n%s", one, two)
	}
	loose := r.git("count-objects")
	if strings.HasPrefix(loose, "0 objects") {
		t.Fatalf("no loose objects before gc (%s): the gc would test nothing", loose)
	}
	r.git("gc", "--aggressive", "--prune=now", "--quiet")
	if got := r.git("count-objects"); !strings.HasPrefix(got, "0 objects") {
		t.Fatalf("after gc: %s", got)
	}
	if err := os.RemoveAll(filepath.Join(r.dir, ".git", "lossless", "index")); err != nil {
		t.Fatal(err)
	}
	r.open()
	if three := build(); !bytes.Equal(one, three) {
		t.Fatalf("the build after git gc differs:\n%s\n---\n%s", one, three)
	}
	// More reads of files already in: counts change, the text does not.
	r.append(ev{at: base.Add(-time.Minute), session: "s9", op: "read", path: "cold.go", content: coldV1})
	p, err := meter.BuildPack(ctx, r.st, opt)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(one, p.Text) || p.Reads != 25 {
		t.Errorf("one more read of cold.go: reads %d, text changed %v", p.Reads, !bytes.Equal(one, p.Text))
	}
	// A change on disk of a file in the pack changes it.
	r.write("hot.go", hotV1+"// edited\n")
	if four := build(); bytes.Equal(one, four) {
		t.Error("editing hot.go on disk leaves the pack unchanged")
	}
}

// TestPackLeavesOutSecrets: a hot file whose current content holds a
// credential (made-up values of every kind testkit plants) is left out
// of the pack with reason "secret", and no byte of the credential reaches
// the text or the JSON listing; the file beside it, read as often and
// clean, goes in.
func TestPackLeavesOutSecrets(t *testing.T) {
	for kind, value := range testkit.PlantedSecrets(7) {
		t.Run(kind, func(t *testing.T) {
			r := newRepo(t)
			leaky := "package cfg\n\nconst key = \"" + value + "\"\n"
			switch kind {
			case "password":
				leaky = "DATABASE_URL=postgres://app:" + value + "@db.internal:5432/app\n"
			case "aws-key": // found by its name: alone, 40 base64 characters are no credential
				leaky = "AWS_SECRET_ACCESS_KEY=" + value + "\n"
			}
			for i := range 3 {
				r.append(ev{at: base.Add(time.Duration(i) * time.Minute), session: "s1", op: "read", path: "cfg.go", content: "package cfg\n"})
				r.append(ev{at: base.Add(time.Duration(i)*time.Minute + time.Second), session: "s1", op: "read", path: "ok.go", content: "package ok\n"})
			}
			r.write("cfg.go", leaky)
			r.write("ok.go", "package ok\n")
			p, err := meter.BuildPack(context.Background(), r.st, meter.PackOptions{Budget: 5000})
			if err != nil {
				t.Fatal(err)
			}
			reasons := map[string]string{}
			for _, f := range p.Files {
				reasons[f.Path] = f.Reason
			}
			if reasons["cfg.go"] != meter.ReasonSecret || reasons["ok.go"] != meter.ReasonIn {
				t.Fatalf("reasons %v, want cfg.go %q and ok.go %q", reasons, meter.ReasonSecret, meter.ReasonIn)
			}
			js, err := json.Marshal(p.Files)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(p.Text, []byte(value)) || bytes.Contains(js, []byte(value)) {
				t.Fatalf("the %s credential reached the pack", kind)
			}
		})
	}
}
