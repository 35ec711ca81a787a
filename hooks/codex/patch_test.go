package codex

import (
	"bufio"
	"encoding/json"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// cxVector is a line of testdata/patch-vectors.jsonl: what Codex 0.169.0's
// own apply_patch did with a patch (see gen_patch_vectors.go).
type cxVector struct {
	Name  string             `json:"name"`
	Patch string             `json:"patch"`
	Files map[string]string  `json:"files"`
	OK    bool               `json:"ok"`
	After map[string]*string `json:"after"`
	Out   string             `json:"out"`
}

func cxVectors(t testing.TB) []cxVector {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "patch-vectors.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []cxVector
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var v cxVector
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) < 100 {
		t.Fatalf("only %d vectors", len(out))
	}
	return out
}

const cxCwd = "/w"

// cxApply parses and applies a vector's patch to its files, and returns
// the files afterwards (relative paths).
func cxApply(v cxVector) (map[string]string, error) {
	p, err := ParsePatch(v.Patch)
	if err != nil {
		return nil, err
	}
	res, err := p.Apply(cxCwd, func(abs string) ([]byte, error) {
		rel, _ := filepath.Rel(cxCwd, abs)
		c, ok := v.Files[rel]
		if !ok {
			return nil, fs.ErrNotExist
		}
		return []byte(c), nil
	})
	if err != nil {
		return nil, err
	}
	after := maps.Clone(v.Files)
	if after == nil {
		after = map[string]string{}
	}
	for _, r := range res {
		rel, _ := filepath.Rel(cxCwd, r.Path)
		if r.Deleted {
			delete(after, rel)
		} else {
			after[rel] = string(r.Content)
		}
	}
	return after, nil
}

// TestPatchVectors replays every vector: where Codex applied the patch,
// Apply must leave every file byte for byte as Codex did; where Codex
// failed, ParsePatch or Apply must fail.
func TestPatchVectors(t *testing.T) {
	vs := cxVectors(t)
	applied, failed := 0, 0
	for _, v := range vs {
		after, err := cxApply(v)
		if !v.OK {
			failed++
			if err == nil {
				t.Errorf("%s: Codex failed (%q), we applied it:\n%s", v.Name, v.Out, v.Patch)
			}
			continue
		}
		applied++
		if err != nil {
			t.Errorf("%s: Codex applied it, we failed: %v\n%s", v.Name, err, v.Patch)
			continue
		}
		want := map[string]string{}
		for p, c := range v.After {
			if c != nil {
				want[p] = *c
			}
		}
		if !maps.Equal(after, want) {
			t.Errorf("%s: files differ\npatch:\n%s\nbefore: %q\ncodex:  %q\nours:   %q", v.Name, v.Patch, v.Files, want, after)
		}
	}
	if applied < 50 || failed < 50 {
		t.Fatalf("vectors too one-sided: %d applied, %d failed", applied, failed)
	}
}

// TestPatchNamedOutcomes pins the named vectors' outcomes, so that a
// regenerated vector file that lost a case, or changed what Codex does,
// fails here and says which.
func TestPatchNamedOutcomes(t *testing.T) {
	want := map[string]bool{
		"sample-run1": true, "multi-file": true, "move-and-update": true, "delete": true,
		"delete-missing": false, "add-blank-lines": true, "add-unprefixed-blank-line": false,
		"add-overwrites": true, "crlf-file": true, "hunk-does-not-apply": false,
		"context-not-found": false, "update-missing": false, "partial-failure": false,
		"eof-marker-not-at-end": false, "blank-lines-before-first-chunk": false,
		"space-line-between-chunks": false, "chunks-out-of-order": false, "eof-chunk-before-cursor": false,
		"move-indented-is-context": false, "indented-header-is-context": false,
		"padded-eof-marker-is-context": false, "lines-after-eof-marker": false, "tab-prefixed-line": false,
		"empty-update-hunk": false, "header-only-chunk": false, "invalid-hunk-header": false,
		"no-hunks": false, "no-begin": false, "no-end": false, "padded-markers": true, "heredoc": true,
		"heredoc-mismatched-quotes": false, "move-onto-itself": true, "lone-cr": false, "lone-cr-ends-lines": true,
	}
	got := map[string]cxVector{}
	for _, v := range cxVectors(t) {
		got[v.Name] = v
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		v, ok := got[name]
		if !ok {
			t.Errorf("vector %s missing", name)
			continue
		}
		if v.OK != want[name] {
			t.Errorf("%s: Codex ok=%v, want %v (%q)", name, v.OK, want[name], v.Out)
		}
	}
	// What Codex wrote in the cases whose result matters most.
	exact := map[string]map[string]string{
		"crlf-file":                         {"w.txt": "one\r\nTWO\r\ntwo and a half\r\nthree\r\n"},
		"crlf-no-final-newline":             {"w.txt": "one\r\ntwo\r\nthree\r\n"},
		"mixed-endings":                     {"m.txt": "a\nB\nc\r\n"},
		"fuzzy-trailing-space-context-kept": {"f.txt": "a  \nB\nc\n"},
		"fuzzy-removed-and-readded":         {"f.txt": "a\nb\n"},
		"pure-addition-goes-last":           {"f.txt": "a\nb\nc\nX\n"},
		"add-blank-lines":                   {"notes.md": "# Notes\n\nfirst\n\n\nlast\n"},
		"move-and-update":                   {"src/bin/new.rs": "fn run() {\n    let cli = Cli::parse();\n    dispatch(cli)\n}\n"},
		"move-onto-itself":                  {},
		"no-final-newline":                  {"n.txt": "A\nb\n"},
		"lone-cr-ends-lines":                {"f.txt": "a\rb\nC\r"},
		"lone-cr-preferred":                 {"f.txt": "A\rN\rb\nc\n"},
	}
	for name, files := range exact {
		v := got[name]
		after, err := cxApply(v)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if !maps.Equal(after, files) {
			t.Errorf("%s: got %q, want %q", name, after, files)
		}
	}
}

func TestParsePatchHunks(t *testing.T) {
	p, err := ParsePatch("*** Begin Patch\n*** Add File: a/new.txt\n+x\n+\n*** Delete File: gone.txt\n*** Update File: src/old.go\n*** Move to: src/new.go\n@@ func f() {\n context\n-old\n+new\n@@\n+tail\n*** End of File\n*** End Patch")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Hunks) != 3 {
		t.Fatalf("%d hunks", len(p.Hunks))
	}
	add, del, up := p.Hunks[0], p.Hunks[1], p.Hunks[2]
	if add.Kind != AddFile || add.Path != "a/new.txt" || add.Contents != "x\n\n" || add.Line != 2 {
		t.Errorf("add %+v", add)
	}
	if del.Kind != DeleteFile || del.Path != "gone.txt" || del.Line != 5 {
		t.Errorf("delete %+v", del)
	}
	if up.Kind != UpdateFile || up.Path != "src/old.go" || up.MoveTo != "src/new.go" || up.Line != 6 || len(up.Chunks) != 2 {
		t.Fatalf("update %+v", up)
	}
	c0, c1 := up.Chunks[0], up.Chunks[1]
	if !c0.HasContext || c0.Context != "func f() {" || !slices.Equal(c0.Old, []string{"context", "old"}) || !slices.Equal(c0.New, []string{"context", "new"}) || c0.EOF {
		t.Errorf("chunk 0 %+v", c0)
	}
	if c1.HasContext || len(c1.Old) != 0 || !slices.Equal(c1.New, []string{"tail"}) || !c1.EOF {
		t.Errorf("chunk 1 %+v", c1)
	}
	ch := p.Changes("/repo")
	want := []Change{{Op: OpAdd, Path: "/repo/a/new.txt"}, {Op: OpDelete, Path: "/repo/gone.txt"}, {Op: OpMove, Path: "/repo/src/old.go", To: "/repo/src/new.go"}}
	if !slices.Equal(ch, want) {
		t.Errorf("changes %+v", ch)
	}
}

func TestParsePatchErrors(t *testing.T) {
	for _, tc := range []struct{ name, patch, msg string }{
		{"empty", "", "first line"},
		{"no end", "*** Begin Patch\n*** Delete File: a", "last line"},
		{"bad header", "*** Begin Patch\n*** Remove File: a\n*** End Patch", "not a valid hunk header"},
		{"empty update", "*** Begin Patch\n*** Update File: a\n*** End Patch", "is empty"},
		{"bad chunk line", "*** Begin Patch\n*** Update File: a\n@@\n?x\n*** End Patch", "unexpected line"},
		{"second chunk without @@", "*** Begin Patch\n*** Update File: a\n-x\n*** End of File\n-y\n*** End Patch", "@@ context marker"},
		{"invalid utf-8", "*** Begin Patch\n*** Add File: a\n+\xff\n*** End Patch", "UTF-8"},
	} {
		_, err := ParsePatch(tc.patch)
		var pe *PatchError
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: error %v, want a PatchError saying %q", tc.name, err, tc.msg)
		}
	}
}

func TestApplyUpdateFailures(t *testing.T) {
	chunks := func(patch string) []Chunk {
		p, err := ParsePatch(patch)
		if err != nil {
			t.Fatal(err)
		}
		return p.Hunks[0].Chunks
	}
	c := chunks("*** Begin Patch\n*** Update File: f\n@@\n-b\n+B\n*** End Patch")
	if _, err := ApplyUpdate([]byte("a\xff\nb\n"), c); err == nil || !strings.Contains(err.Error(), "UTF-8") {
		t.Errorf("invalid UTF-8: %v", err)
	}
	if _, err := ApplyUpdate([]byte("a\nc\n"), c); err == nil || !strings.Contains(err.Error(), "failed to find expected lines") {
		t.Errorf("missing lines: %v", err)
	}
	got, err := ApplyUpdate([]byte("a\nb\n"), c)
	if err != nil || string(got) != "a\nB\n" {
		t.Errorf("apply: %q %v", got, err)
	}
	// Apply names the file and changes nothing when a later hunk fails.
	p, _ := ParsePatch("*** Begin Patch\n*** Add File: new\n+x\n*** Update File: f\n@@\n-zzz\n+A\n*** End Patch")
	res, err := p.Apply("/w", func(string) ([]byte, error) { return []byte("a\n"), nil })
	var pe *PatchError
	if res != nil || !errors.As(err, &pe) || pe.Path != "/w/f" || pe.Line != 4 {
		t.Errorf("partial failure: %v %v", res, err)
	}
	// A read error that is not "missing" is passed on, not taken for one.
	p, _ = ParsePatch("*** Begin Patch\n*** Delete File: f\n*** End Patch")
	if _, err := p.Apply("/w", func(string) ([]byte, error) { return nil, fs.ErrPermission }); !errors.Is(err, fs.ErrPermission) {
		t.Errorf("read error: %v", err)
	}
	if _, err := (&Patch{}).Apply("/w", nil); !errors.Is(err, ErrNoHunks) {
		t.Errorf("no hunks: %v", err)
	}
}

func TestNeedsSeen(t *testing.T) {
	p, err := ParsePatch(strings.Join([]string{"*** Begin Patch",
		"*** Add File: fresh.txt", "+x",
		"*** Add File: exists.txt", "+y",
		"*** Update File: fresh.txt", "@@", "-x", "+X",
		"*** Update File: /abs/upd.txt", "@@", "-a", "+b",
		"*** Delete File: del.txt",
		"*** Update File: mv.txt", "*** Move to: onto.txt", "@@", "-m", "+M",
		"*** Update File: mv2.txt", "*** Move to: free.txt", "@@", "-m", "+M",
		"*** Update File: del.txt", "@@", "-z", "+Z",
		"*** End Patch"}, "\n"))
	if err != nil {
		t.Fatal(err)
	}
	onDisk := map[string]bool{"/r/exists.txt": true, "/r/onto.txt": true, "/abs/upd.txt": true, "/r/del.txt": true, "/r/mv.txt": true, "/r/mv2.txt": true}
	got := p.NeedsSeen("/r", func(f string) bool { return onDisk[f] })
	want := []string{"/r/exists.txt", "/abs/upd.txt", "/r/del.txt", "/r/mv.txt", "/r/onto.txt", "/r/mv2.txt"}
	if !slices.Equal(got, want) {
		t.Errorf("NeedsSeen = %q, want %q", got, want)
	}
	// Final takes the patch as applied (this one would fail in Codex at
	// its last hunk: del.txt is gone by then): the last hunk on a file
	// says what is left.
	written, removed := p.Final("/r")
	if w := []string{"/r/fresh.txt", "/r/exists.txt", "/abs/upd.txt", "/r/del.txt", "/r/onto.txt", "/r/free.txt"}; !slices.Equal(written, w) {
		t.Errorf("written %q, want %q", written, w)
	}
	if r := []string{"/r/mv.txt", "/r/mv2.txt"}; !slices.Equal(removed, r) {
		t.Errorf("removed %q, want %q", removed, r)
	}
}

// TestFinalMatchesApply checks Final against Apply on every vector Codex
// applied: the files Apply writes and removes are the ones Final names.
func TestFinalMatchesApply(t *testing.T) {
	n := 0
	for _, v := range cxVectors(t) {
		if !v.OK {
			continue
		}
		p, err := ParsePatch(v.Patch)
		if err != nil {
			t.Fatal(err)
		}
		res, err := p.Apply(cxCwd, func(abs string) ([]byte, error) {
			rel, _ := filepath.Rel(cxCwd, abs)
			if c, ok := v.Files[rel]; ok {
				return []byte(c), nil
			}
			return nil, fs.ErrNotExist
		})
		if err != nil {
			t.Fatalf("%s: %v", v.Name, err)
		}
		var w, r []string
		for _, x := range res {
			if x.Deleted {
				r = append(r, x.Path)
			} else {
				w = append(w, x.Path)
			}
		}
		fw, fr := p.Final(cxCwd)
		if !slices.Equal(w, fw) || !slices.Equal(r, fr) {
			t.Errorf("%s: Final %q %q, Apply %q %q", v.Name, fw, fr, w, r)
		}
		n++
	}
	if n < 50 {
		t.Fatalf("%d vectors", n)
	}
}
