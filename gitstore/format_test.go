package gitstore

// The tests in this file keep FORMAT.md honest. The golden vectors live in
// ../testdata/format/ as plain files; FORMAT.md quotes each of them in a
// fenced block preceded by "<!-- vector: NAME -->". The tests check, byte
// for byte, that
//
//   - the store, writing the golden events, produces exactly the vectors
//     (event lines, seals, object ids, real `git cat-file`/`git ls-tree`
//     output, the witness file);
//   - the document quotes every vector exactly, and quotes no vector that
//     does not exist;
//   - the shell recipes quoted in the document, run with bash, real git and
//     sha256sum against a repository the store built, print exactly the
//     quoted output, and catch a flipped byte the way verify does.
//
// After an intended format change, `go test ./gitstore -run Format
// -update-format` rewrites the generated vectors and the quoted blocks;
// review the diff like code.

import (
	"bytes"
	"compress/zlib"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/seal"
)

var updateFormat = flag.Bool("update-format", false, "rewrite ../testdata/format and the vectors FORMAT.md quotes")

const (
	goldenWriter  = "golden"
	goldenDir     = "../testdata/format"
	goldenDoc     = "FORMAT.md"
	goldenSecret  = "GOLDEN-SECRET-must-never-be-archived-7c1e"
	goldenRepoTag = "/home/dev/proj"
)

// goldenBatches are the golden events, as two appends, with the commit time
// of each batch. Every field that could vary (ts, repo) is fixed.
func goldenBatches() (batches [][]Record, commitTimes []time.Time) {
	at := func(s string) time.Time {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			panic(err)
		}
		return t
	}
	ev := func(ts, op, tool, key, path string) Event {
		e := Event{TS: at(ts), Session: "sess-1", Repo: goldenRepoTag, Source: "hook", Op: Op(op), Tool: tool, Key: key}
		e.SetPath(path)
		return e
	}
	content := func(e Event, c string) Record {
		return Record{Event: e, Content: []byte(c), HasContent: true}
	}

	// 1: a full read of hello.txt (the seeds' test vector: "hello\n").
	e1 := ev("2026-01-02T03:04:05Z", "read", "Read", "toolu_01", "hello.txt")
	e1.View = "full"
	// 2: a partial read: the blob is the file version, view says what part
	// the agent was shown.
	e2 := ev("2026-01-02T03:04:06.5Z", "read", "Read", "toolu_02", "src/main.go")
	e2.View = "lines:2-3"
	// 3: a read of a denied path: recorded, content withheld even though
	// the caller passed it.
	e3 := ev("2026-01-02T03:04:07Z", "read", "Read", "toolu_03", ".env")
	e3.View = "full"
	// 4: a subagent's edit; non-ASCII and HTML characters stay raw.
	e4 := ev("2026-01-02T03:04:08.25Z", "edit", "Edit", "toolu_04", "docs/café <draft> & notes.md")
	e4.Agent, e4.Sidechain = "agent-a7f3", true
	// 5 (second batch): a write to a path that is not valid UTF-8, carrying
	// two fields this version does not know (as a newer writer would).
	e5 := ev("2026-01-02T03:05:00.123456789Z", "write", "Write", "toolu_05", "bad\xff.txt")
	e5.Extra = map[string]json.RawMessage{
		"model": json.RawMessage(`"future-model-1"`),
		"usage": json.RawMessage(`{ "in": 12, "out": 3 }`),
	}
	batches = [][]Record{
		{
			content(e1, "hello\n"),
			content(e2, "package main\n\nfunc main() {}\n"),
			content(e3, "API_KEY="+goldenSecret+"\n"),
			content(e4, "# Café\n\nEdited by a subagent.\n"),
		},
		{content(e5, "new file\n")},
	}
	commitTimes = []time.Time{at("2026-01-02T03:04:09Z"), at("2026-01-02T03:05:01Z")}
	return batches, commitTimes
}

// goldenEnv isolates the store and git from the machine's configuration.
func goldenEnv(t *testing.T) {
	t.Helper()
	t.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("LOSSLESS_ARCHIVE_EXCLUDE", "")
	t.Setenv("LC_ALL", "C")
}

// goldenGit runs git in dir with an environment that cannot redirect it to
// another repository, and returns stdout.
func goldenGit(t *testing.T, dir string, stdin []byte, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = goldenCmdEnv()
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return out
}

func goldenCmdEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
			"GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE", "GIT_CEILING_DIRECTORIES":
			continue
		}
		env = append(env, kv)
	}
	return env
}

type goldenRepo struct {
	dir     string // work tree; the repository is dir/.git
	store   *Store
	results []AppendResult
}

// buildGoldenRepo writes the golden events through the store into a fresh
// repository made by `git init`.
func buildGoldenRepo(t *testing.T) *goldenRepo {
	t.Helper()
	goldenEnv(t)
	dir := t.TempDir()
	goldenGit(t, dir, nil, "init", "-q")
	wt, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	batches, times := goldenBatches()
	var clock time.Time
	off := false
	gd := filepath.Join(wt, ".git")
	st, err := Open(Location{GitDir: gd, CommonDir: gd, WorkTree: wt}, Options{Fsync: &off, Now: func() time.Time { return clock }})
	if err != nil {
		t.Fatal(err)
	}
	g := &goldenRepo{dir: wt, store: st}
	for i, recs := range batches {
		clock = times[i]
		res, err := st.Append(context.Background(), goldenWriter, recs)
		if err != nil {
			t.Fatal(err)
		}
		g.results = append(g.results, res)
	}
	return g
}

func (g *goldenRepo) events() []Event {
	var out []Event
	for _, r := range g.results {
		out = append(out, r.Events...)
	}
	return out
}

func (g *goldenRepo) git(t *testing.T, args ...string) []byte {
	t.Helper()
	return goldenGit(t, g.dir, nil, args...)
}

// goldenVectors returns every generated vector by file name: what the code
// and real git say today.
func goldenVectors(t *testing.T, g *goldenRepo) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	evs := g.events()

	// The events.jsonl blob of each batch, as git prints it.
	for i, r := range g.results {
		out[fmt.Sprintf("golden-%d.jsonl", i+1)] = g.git(t, "cat-file", "-p", r.Commit+":events.jsonl")
	}
	out["golden-commit.txt"] = g.git(t, "cat-file", "-p", "refs/lossless/"+goldenWriter)
	out["golden-ls-tree.txt"] = g.git(t, "ls-tree", "-r", "refs/lossless/"+goldenWriter+"~1")
	// golden-witness.txt is checked by package anchor, which writes the
	// witness (anchor/witness_test.go).

	// The summary: every value a reimplementation needs to match.
	var b strings.Builder
	fmt.Fprintf(&b, "# git-lossless format v%d golden vectors (generated by gitstore/format_test.go)\n", FormatVersion)
	fmt.Fprintf(&b, "writer: %s\n", goldenWriter)
	fmt.Fprintf(&b, "genesis: %s\n", seal.Genesis(goldenWriter))
	for _, e := range evs {
		fmt.Fprintf(&b, "seal %d: %s\n", e.Seq, seal.Hash(e.Raw))
	}
	for _, e := range evs {
		if e.Blob == "" {
			fmt.Fprintf(&b, "content %d: none (excluded=%v)\n", e.Seq, e.Excluded)
			continue
		}
		fmt.Fprintf(&b, "content %d: blob %s sha256 %s bytes %d tokens %d\n", e.Seq, e.Blob, e.SHA256, e.Bytes, e.Tokens)
	}
	for i, r := range g.results {
		tree := strings.TrimSpace(string(g.git(t, "rev-parse", r.Commit+"^{tree}")))
		ev := strings.TrimSpace(string(g.git(t, "rev-parse", r.Commit+":events.jsonl")))
		fmt.Fprintf(&b, "batch %d: events.jsonl %s tree %s commit %s\n", i+1, ev, tree, r.Commit)
	}
	out["golden.txt"] = []byte(b.String())

	// A prune record, as the entry that would follow the golden chain.
	out["prune.jsonl"] = append(goldenPruneLine(t, evs), '\n')
	return out
}

// goldenPruneLine is the canonical line of a prune record removing the
// content of golden entry 2, chained after the golden head.
func goldenPruneLine(t *testing.T, evs []Event) []byte {
	t.Helper()
	last, victim := evs[len(evs)-1], evs[1]
	pruned, err := json.Marshal([]struct {
		Blob   string `json:"blob"`
		SHA256 string `json:"sha256"`
	}{{victim.Blob, victim.SHA256}})
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := time.Parse(time.RFC3339, "2026-01-03T00:00:00Z")
	e := Event{Seq: last.Seq + 1, Prev: seal.Hash(last.Raw), TS: ts, Repo: goldenRepoTag, Source: "cli", Op: "prune",
		Extra: map[string]json.RawMessage{"pruned": pruned, "reason": json.RawMessage(`"user asked"`)}}
	line, err := e.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	return line
}

func formatVector(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(goldenDir, name))
	if err != nil {
		t.Fatalf("vector %s: %v (run with -update-format to create it)", name, err)
	}
	return b
}

func formatWriteVector(t *testing.T, name string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(goldenDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(goldenDir, name), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestFormatGoldenVectors: the store writes exactly the documented bytes.
func TestFormatGoldenVectors(t *testing.T) {
	g := buildGoldenRepo(t)
	got := goldenVectors(t, g)
	names := make([]string, 0, len(got))
	for n := range got {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if *updateFormat {
			formatWriteVector(t, n, got[n])
			continue
		}
		if want := formatVector(t, n); !bytes.Equal(got[n], want) {
			t.Errorf("vector %s differs from what the code writes:\n--- testdata/format/%s\n%s--- code\n%s", n, n, want, got[n])
		}
	}
	g.git(t, "fsck", "--strict", "--no-progress")
	rep, err := g.store.Verify(context.Background(), goldenWriter, seal.Options{})
	if err != nil || !rep.OK() || rep.Entries != 5 || rep.Batches != 2 {
		t.Fatalf("verify golden: %+v %v", rep, err)
	}
	// C git names every recorded content as the events do, and prints it
	// back byte for byte.
	batches, _ := goldenBatches()
	var recs []Record
	for _, b := range batches {
		recs = append(recs, b...)
	}
	for i, e := range g.events() {
		if e.Blob == "" {
			continue
		}
		content := recs[i].Content
		if id := strings.TrimSpace(string(goldenGit(t, g.dir, content, "hash-object", "--stdin"))); id != e.Blob {
			t.Errorf("entry %d: git hash-object says %s, the event says %s", e.Seq, id, e.Blob)
		}
		if got := g.git(t, "cat-file", "-p", e.Blob); !bytes.Equal(got, content) {
			t.Errorf("entry %d: git cat-file -p prints %q, recorded %q", e.Seq, got, content)
		}
	}
	// The denied path's content reached no object.
	all := g.git(t, "cat-file", "--batch-all-objects", "--batch")
	if bytes.Contains(all, []byte(goldenSecret)) {
		t.Fatal("the golden .env content reached an object")
	}
}

// TestFormatGoldenIndependent recomputes the documented values with the
// standard library alone (no seal, no Canonical) from the vector files, so
// that a bug shared by the code and its vectors still shows.
func TestFormatGoldenIndependent(t *testing.T) {
	kv := map[string]string{}
	for _, line := range strings.Split(string(formatVector(t, "golden.txt")), "\n") {
		if k, v, ok := strings.Cut(line, ": "); ok && !strings.HasPrefix(line, "#") {
			kv[k] = v
		}
	}
	hexsum := func(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }
	if want := hexsum([]byte("git-lossless seal v1 golden")); kv["genesis"] != want {
		t.Errorf("genesis = %s, sha256 says %s", kv["genesis"], want)
	}
	prev := kv["genesis"]
	seq := 0
	for _, name := range []string{"golden-1.jsonl", "golden-2.jsonl", "prune.jsonl"} {
		body := formatVector(t, name)
		if !bytes.HasSuffix(body, []byte("\n")) {
			t.Fatalf("%s does not end in a newline", name)
		}
		for _, line := range bytes.Split(bytes.TrimSuffix(body, []byte("\n")), []byte("\n")) {
			seq++
			var m map[string]any
			if err := json.Unmarshal(line, &m); err != nil {
				t.Fatalf("%s entry %d: %v", name, seq, err)
			}
			if m["prev"] != prev || m["seq"] != float64(seq) {
				t.Errorf("%s entry %d: seq %v prev %v, want %d %s", name, seq, m["seq"], m["prev"], seq, prev)
			}
			// Compact, sorted, no HTML escaping: re-encoding with those rules
			// reproduces the stored bytes exactly (Go's encoder sorts map keys).
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(m); err != nil {
				t.Fatal(err)
			}
			if re := bytes.TrimSuffix(buf.Bytes(), []byte("\n")); !bytes.Equal(re, line) {
				t.Errorf("%s entry %d is not in canonical form:\nstored %s\nsorted %s", name, seq, line, re)
			}
			prev = hexsum(line)
			if s, ok := kv[fmt.Sprintf("seal %d", seq)]; ok && s != prev {
				t.Errorf("seal %d = %s, sha256 of the line is %s", seq, s, prev)
			}
		}
	}
	if seq != 6 {
		t.Fatalf("%d entries in the vectors, want 6", seq)
	}
	// Content: blob ids and sha256 of the golden contents.
	batches, _ := goldenBatches()
	seq = 0
	for _, recs := range batches {
		for _, r := range recs {
			seq++
			v := kv[fmt.Sprintf("content %d", seq)]
			if r.Path == ".env" {
				if v != "none (excluded=true)" {
					t.Errorf("content %d = %q, want none (excluded=true)", seq, v)
				}
				continue
			}
			blob := fmt.Sprintf("blob %d\x00%s", len(r.Content), r.Content)
			h := formatSHA1([]byte(blob))
			want := fmt.Sprintf("blob %s sha256 %s bytes %d tokens %d", h, hexsum(r.Content), len(r.Content), (len(r.Content)+3)/4)
			if v != want {
				t.Errorf("content %d = %q, want %q", seq, v, want)
			}
		}
	}
}

func formatSHA1(b []byte) string { s := sha1.Sum(b); return hex.EncodeToString(s[:]) }

// TestFormatCanonicalRoundTrip: every stored golden line parses and
// re-encodes to the same bytes, unknown fields included.
func TestFormatCanonicalRoundTrip(t *testing.T) {
	for _, name := range []string{"golden-1.jsonl", "golden-2.jsonl", "prune.jsonl"} {
		for _, line := range bytes.Split(bytes.TrimSuffix(formatVector(t, name), []byte("\n")), []byte("\n")) {
			e, err := ParseEvent(line)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			e.Raw = nil
			re, err := e.Canonical()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(re, line) {
				t.Errorf("%s: round trip changed the line:\nstored %s\nre-enc %s", name, line, re)
			}
		}
	}
	e, err := ParseEvent(bytes.TrimSpace(formatVector(t, "golden-2.jsonl")))
	if err != nil {
		t.Fatal(err)
	}
	if string(e.Extra["model"]) != `"future-model-1"` || string(e.Extra["usage"]) != `{"in":12,"out":3}` {
		t.Errorf("unknown fields not preserved: %q", e.Extra)
	}
	if e.RawPath() != "bad\xff.txt" {
		t.Errorf("path64 does not give back the raw path: %q", e.RawPath())
	}
}

// TestFormatPruneRecord: verify reads the documented prune record format
// and reports the pruned entry as pruned, and as blob-missing without it.
func TestFormatPruneRecord(t *testing.T) {
	var lines [][]byte
	for _, name := range []string{"golden-1.jsonl", "golden-2.jsonl"} {
		lines = append(lines, bytes.Split(bytes.TrimSuffix(formatVector(t, name), []byte("\n")), []byte("\n"))...)
	}
	pruneLine := bytes.TrimSuffix(formatVector(t, "prune.jsonl"), []byte("\n"))
	batches, _ := goldenBatches()
	content := map[string][]byte{}
	for _, recs := range batches {
		for _, r := range recs {
			if r.Path != ".env" {
				content[BlobID(r.Content)] = r.Content
			}
		}
	}
	victim := BlobID(batches[0][1].Content)
	for _, withRecord := range []bool{true, false} {
		src := &formatMemSource{content: content}
		delete(src.content, victim)
		all := lines
		if withRecord {
			all = append(append([][]byte{}, lines...), pruneLine)
		}
		blobs := map[string]bool{}
		for id := range src.content {
			blobs[id] = true
		}
		src.batches = []seal.Batch{{Commit: "c1", Seq: int64(len(all)), Seal: seal.Hash(all[len(all)-1]), Lines: all, Blobs: blobs}}
		rep, err := seal.Verify(context.Background(), src, goldenWriter, seal.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if withRecord {
			if !rep.OK() || len(rep.Pruned) != 1 || rep.Pruned[0].Seq != 2 || rep.Pruned[0].Kind != seal.Pruned {
				t.Errorf("with the prune record: break %+v pruned %+v", rep.Break, rep.Pruned)
			}
		} else if rep.OK() || rep.Break.Kind != seal.BlobMissing || rep.Break.Seq != 2 {
			t.Errorf("without the prune record: break %+v", rep.Break)
		}
	}
}

type formatMemSource struct {
	batches []seal.Batch
	content map[string][]byte
}

func (m *formatMemSource) Batches(context.Context, string) ([]seal.Batch, error) {
	return m.batches, nil
}
func (m *formatMemSource) Checkpoints(context.Context, string) ([]seal.Checkpoint, error) {
	return nil, nil
}
func (m *formatMemSource) Content(_ context.Context, id string) ([]byte, error) {
	if b, ok := m.content[id]; ok {
		return b, nil
	}
	return nil, seal.ErrMissing
}

// docVectorRe finds the blocks FORMAT.md quotes: a marker line, then a
// fenced block whose body is the vector.
var docVectorRe = regexp.MustCompile("(?s)<!-- vector: ([A-Za-z0-9._-]+) -->\n```[a-z]*\n(.*?)```\n")

// TestFormatDocQuotesVectors: FORMAT.md quotes every vector byte for byte.
func TestFormatDocQuotesVectors(t *testing.T) {
	doc, err := os.ReadFile(goldenDoc)
	if err != nil {
		t.Fatal(err)
	}
	if *updateFormat {
		doc = docVectorRe.ReplaceAllFunc(doc, func(m []byte) []byte {
			name := string(docVectorRe.FindSubmatch(m)[1])
			fence := m[bytes.Index(m, []byte("```")):]
			lang := fence[:bytes.IndexByte(fence, '\n')+1]
			return []byte(fmt.Sprintf("<!-- vector: %s -->\n%s%s```\n", name, lang, formatVector(t, name)))
		})
		if err := os.WriteFile(goldenDoc, doc, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	quoted := map[string]bool{}
	for _, m := range docVectorRe.FindAllSubmatch(doc, -1) {
		name := string(m[1])
		quoted[name] = true
		if want := formatVector(t, name); !bytes.Equal(m[2], want) {
			t.Errorf("FORMAT.md quotes %s differently from testdata/format/%s:\n--- doc\n%s--- file\n%s", name, name, m[2], want)
		}
	}
	if n := bytes.Count(doc, []byte("<!-- vector:")); n != len(docVectorRe.FindAll(doc, -1)) {
		t.Errorf("FORMAT.md has %d vector markers but only %d are followed by a fenced block", n, len(docVectorRe.FindAll(doc, -1)))
	}
	ents, err := os.ReadDir(goldenDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) == 0 {
		t.Fatal("no vectors in testdata/format")
	}
	for _, e := range ents {
		if !quoted[e.Name()] {
			t.Errorf("testdata/format/%s is not quoted in FORMAT.md", e.Name())
		}
	}
	// Every break kind the verifier can report is documented.
	for _, k := range []seal.Kind{seal.ContentChanged, seal.BlobMissing, seal.EntryEdited, seal.EntryReordered, seal.ChainForked, seal.AnchorMismatch, seal.Unsealed, seal.Pruned} {
		if !bytes.Contains(doc, []byte("| `"+string(k)+"` |")) {
			t.Errorf("FORMAT.md's table of break kinds lacks %s", k)
		}
	}
}

// formatNeedShell finds bash and sha256sum; outside CI their absence skips.
func formatNeedShell(t *testing.T) {
	t.Helper()
	for _, p := range []string{"bash", "sha256sum", "sed", "tr", "head", "tail", "cut"} {
		if _, err := exec.LookPath(p); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s not found; CI must run the shell recipes", p)
			}
			t.Skipf("%s not found", p)
		}
	}
}

// formatRunScript runs a quoted script with bash in dir.
func formatRunScript(t *testing.T, dir, script string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := exec.Command("bash", filepath.Join(formatAbs(t, goldenDir), script))
	cmd.Dir = dir
	cmd.Env = goldenCmdEnv()
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err = cmd.Run()
	return so.String(), se.String(), err
}

func formatAbs(t *testing.T, d string) string {
	a, err := filepath.Abs(d)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestFormatShellRecipe: the one-entry recipe prints the quoted output, and
// its lines agree pairwise and with the code.
func TestFormatShellRecipe(t *testing.T) {
	formatNeedShell(t)
	g := buildGoldenRepo(t)
	out, errOut, err := formatRunScript(t, g.dir, "recipe.sh")
	if err != nil || errOut != "" {
		t.Fatalf("recipe.sh: %v\n%s%s", err, out, errOut)
	}
	if *updateFormat {
		formatWriteVector(t, "recipe.out", []byte(out))
	}
	if want := string(formatVector(t, "recipe.out")); out != want {
		t.Errorf("recipe.sh printed\n%s\nFORMAT.md says\n%s", out, want)
	}
	var vals []string
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		vals = append(vals, strings.TrimSuffix(l, "  -")) // sha256sum names stdin "-"
	}
	evs := g.events()
	want := []string{
		seal.Genesis(goldenWriter), seal.Genesis(goldenWriter), // 1: genesis = entry 1's prev
		seal.Hash(evs[0].Raw), seal.Hash(evs[0].Raw), // 2: entry 1 = entry 2's prev
		seal.Hash(evs[3].Raw), seal.Hash(evs[3].Raw), seal.Hash(evs[3].Raw), // 3: batch seal
		evs[0].SHA256, evs[0].SHA256, // 4: content sha256
		evs[0].Blob, evs[0].Blob, // and git id
	}
	if strings.Join(vals, "\n") != strings.Join(want, "\n") {
		t.Errorf("recipe values:\n%s\nwant:\n%s", strings.Join(vals, "\n"), strings.Join(want, "\n"))
	}
}

// TestFormatShellChain: the whole-chain shell verifier agrees with verify
// on the golden repository and on a copy with one flipped content byte.
func TestFormatShellChain(t *testing.T) {
	formatNeedShell(t)
	g := buildGoldenRepo(t)
	out, errOut, err := formatRunScript(t, g.dir, "verify-chain.sh")
	if err != nil || errOut != "" {
		t.Fatalf("verify-chain.sh: %v\n%s%s", err, out, errOut)
	}
	if *updateFormat {
		formatWriteVector(t, "verify-chain.out", []byte(out))
	}
	if want := string(formatVector(t, "verify-chain.out")); out != want {
		t.Errorf("verify-chain.sh printed\n%s\nFORMAT.md says\n%s", out, want)
	}
	head := g.events()[4]
	if want := fmt.Sprintf("OK %s: 5 entries, head %s\n", goldenWriter, seal.Hash(head.Raw)); out != want {
		t.Errorf("verify-chain.sh = %q, want %q", out, want)
	}

	// Flip one byte of entry 2's blob: both verifiers must object.
	victim := g.events()[1]
	formatFlipBlob(t, filepath.Join(g.dir, ".git"), victim.Blob)
	out, _, err = formatRunScript(t, g.dir, "verify-chain.sh")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || !strings.Contains(out, "entry 2: blob "+victim.Blob) {
		t.Errorf("verify-chain.sh on a flipped byte: %v %q", err, out)
	}
	rep, err := g.store.Verify(context.Background(), goldenWriter, seal.Options{})
	if err != nil || rep.OK() || rep.Break.Kind != seal.ContentChanged || rep.Break.Seq != 2 {
		t.Errorf("verify on a flipped byte: %+v %v", rep.Break, err)
	}
}

// TestFormatShellChainPruned removes entry 2's content the documented way
// with plain git (batch trees rewritten without the blob, events.jsonl
// unchanged, then a prune record appended) and checks that verify and the
// shell verifier both report the entry as pruned, not broken.
func TestFormatShellChainPruned(t *testing.T) {
	formatNeedShell(t)
	g := buildGoldenRepo(t)
	evs := g.events()
	victim := evs[1]
	ref := "refs/lossless/" + goldenWriter
	parent := ""
	for _, r := range g.results {
		var blobs bytes.Buffer
		for _, l := range strings.Split(strings.TrimSpace(string(g.git(t, "ls-tree", r.Commit+":blobs"))), "\n") {
			if l != "" && !strings.Contains(l, victim.Blob) {
				blobs.WriteString(l + "\n")
			}
		}
		sub := strings.TrimSpace(string(goldenGit(t, g.dir, blobs.Bytes(), "mktree")))
		evID := strings.TrimSpace(string(g.git(t, "rev-parse", r.Commit+":events.jsonl")))
		root := fmt.Sprintf("100644 blob %s\tevents.jsonl\n040000 tree %s\tblobs\n", evID, sub)
		tree := strings.TrimSpace(string(goldenGit(t, g.dir, []byte(root), "mktree")))
		_, msg, _ := strings.Cut(string(g.git(t, "cat-file", "commit", r.Commit)), "\n\n")
		args := []string{"-c", "user.name=git-lossless", "-c", "user.email=git-lossless@localhost", "commit-tree", tree}
		if parent != "" {
			args = append(args, "-p", parent)
		}
		parent = strings.TrimSpace(string(goldenGit(t, g.dir, []byte(msg), append(args, "-F", "-")...)))
	}
	g.git(t, "update-ref", ref, parent, g.results[1].Commit)
	pruned, _ := json.Marshal([]map[string]string{{"blob": victim.Blob, "sha256": victim.SHA256}})
	if _, err := g.store.Append(context.Background(), goldenWriter, []Record{{Event: Event{Op: "prune", Source: "cli",
		Extra: map[string]json.RawMessage{"pruned": pruned}}}}); err != nil {
		t.Fatal(err)
	}
	g.git(t, "gc", "-q", "--prune=now")
	g.git(t, "fsck", "--strict", "--no-progress")
	if err := exec.Command("git", "-C", g.dir, "cat-file", "-e", victim.Blob).Run(); err == nil {
		t.Fatal("the pruned blob survived git gc")
	}
	rep, err := g.store.Verify(context.Background(), goldenWriter, seal.Options{})
	if err != nil || !rep.OK() || len(rep.Pruned) != 1 || rep.Pruned[0].Seq != 2 {
		t.Fatalf("verify after pruning: break %+v pruned %+v %v", rep.Break, rep.Pruned, err)
	}
	out, errOut, err := formatRunScript(t, g.dir, "verify-chain.sh")
	if err != nil || errOut != "" || !strings.HasPrefix(out, "entry 2: pruned\nOK golden: 6 entries, head "+rep.Head+"\n") {
		t.Fatalf("verify-chain.sh after pruning: %v %q %q", err, out, errOut)
	}
}

// formatFlipBlob replaces a loose blob's content with the same bytes but the
// first one flipped, keeping the object's name: a bit rot or a tamper.
func formatFlipBlob(t *testing.T, gitDir, id string) {
	t.Helper()
	p := filepath.Join(gitDir, "objects", id[:2], id[2:])
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := zlib.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	obj, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	nul := bytes.IndexByte(obj, 0)
	obj[nul+1] ^= 0x01
	var buf bytes.Buffer
	zw := zlib.NewWriter(&buf)
	zw.Write(obj)
	zw.Close()
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, buf.Bytes(), 0o444); err != nil {
		t.Fatal(err)
	}
}
