package claudecode

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/hooks"
	"github.com/git-lossless/git-lossless/internal/testkit"
	"github.com/git-lossless/git-lossless/internal/testkit/transcriptgen"
	"github.com/git-lossless/git-lossless/seal"
)

// swGitInit makes a repository (its path with symlinks resolved, as git
// reports its work tree).
func swGitInit(t testing.TB) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(dir, "repo")
	if out, err := exec.Command("git", "init", "-q", repo).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	return repo
}

func swGit(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func swOpen(t testing.TB, repo string) *gitstore.Store {
	t.Helper()
	off := false
	st, err := gitstore.OpenDir(repo, gitstore.Options{Fsync: &off})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// swCopySample copies the sample session (main transcript, subagent
// transcript and its meta file) to a Claude Code-like projects directory,
// replacing the recorded project directory /home/dev/project with root
// (when root is not empty) so that the files it names are inside the
// test's repository. It returns the main transcript's path.
func swCopySample(t testing.TB, root string) string {
	t.Helper()
	return testkit.CopySample(t, filepath.Join(t.TempDir(), "projects", "-home-dev-project"), root, "")
}

func swEvents(t testing.TB, st *gitstore.Store, q gitstore.Query) []gitstore.Event {
	t.Helper()
	evs, err := st.Events(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func swExtra(e gitstore.Event, k string) string {
	var s string
	_ = json.Unmarshal(e.Extra[k], &s)
	return s
}

func swSeq(t testing.TB, st *gitstore.Store, writer string) int64 {
	t.Helper()
	ws, err := st.Writers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range ws {
		if w.Name == writer {
			return w.Seq
		}
	}
	return 0
}

var swWriter = gitstore.WriterName("cc-", trSampleSession)

func TestSweepSampleSession(t *testing.T) {
	ctx := context.Background()
	repo := swGitInit(t)
	main := swCopySample(t, repo)
	st := swOpen(t, repo)

	stats, err := hooks.SweepSession(ctx, st, New(), main, hooks.SweepOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if stats.Transcripts != 2 || stats.Lines != 123 || stats.Invalid != 0 || stats.Bytes != swSize(t, main)+swSize(t, swSubPath(main)) || stats.Resets != 0 {
		t.Fatalf("stats %+v", stats)
	}
	// The post-resume Edit reuses toolu_main_0_1 (the sample's scripted
	// model numbers its calls per process): its key is the Read's, so the
	// store keeps the first.
	if stats.Evidence != 10 || stats.Compactions != 1 || stats.Deduped != 1 || stats.Appended != stats.Records-1 {
		t.Fatalf("stats %+v", stats)
	}

	// File evidence, in transcript time order.
	var got []string
	for _, e := range swEvents(t, st, gitstore.Query{Writers: []string{swWriter}}) {
		if e.Session != trSampleSession || e.Source != "sweep" || e.Key == "" || swExtra(e, "uuid") == "" || e.TS.IsZero() {
			t.Fatalf("event %s", e.Raw)
		}
		if e.Harness != Name || !strings.Contains(string(e.Raw), `"harness":"claude-code"`) {
			t.Fatalf("a swept event does not name its harness: %s", e.Raw)
		}
		if e.Sidechain != (e.Agent != "") {
			t.Fatalf("sidechain: %s", e.Raw)
		}
		if !swSeenOps[string(e.Op)] {
			continue
		}
		if e.Blob == "" {
			t.Fatalf("evidence without content: %s", e.Raw)
		}
		content, err := st.Objects().Blob(ctx, e.Blob)
		if err != nil {
			t.Fatal(err)
		}
		// Archived blobs are plain git blobs.
		if out := swGit(t, repo, "cat-file", "-p", e.Blob); out != string(content) {
			t.Fatalf("git cat-file %s = %q, want %q", e.Blob, out, content)
		}
		if e.Bytes != int64(len(content)) || e.SHA256 != fmt.Sprintf("%x", sha256.Sum256(content)) {
			t.Fatalf("size/hash of %s", e.Raw)
		}
		got = append(got, fmt.Sprintf("%s %s %s %s %s %s %q", e.Op, e.Path, e.View, e.Key, e.Tool, e.Agent, content))
	}
	mainGo1 := `"package main\n\nfunc main() { println(1) }\n"`
	want := []string{
		`read hello.txt full toolu_main_0_1 Read  "hello world\n"`,
		`read main.go lines:2-2 toolu_main_1_3 Read  ""`,
		`edit hello.txt full toolu_main_2_5 Edit  "hello there\n"`,
		`write notes.md full toolu_main_3_7 Write  "# notes\n"`,
		`read main.go full toolu_sub_0_11 Read ` + trSampleAgent + ` "package main\n\nfunc main() {}\n"`,
		`edit main.go full toolu_main_5_13 Edit  ` + mainGo1,
		`attach main.go full attach:392294db-24db-4461-a523-d7fa63458da3   ` + mainGo1,
		`attach notes.md full attach:5e0b1c1a-279a-4bca-b051-c6171c20df88   "# notes\n"`,
		`attach hello.txt full attach:8e7a35ff-8069-4e81-ad0e-32165abb8610   "hello there\n"`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("evidence:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// The compaction boundary, at the line's own time, before the
	// attachments it re-establishes.
	cs := swEvents(t, st, gitstore.Query{Writers: []string{swWriter}, Op: "compact"})
	if len(cs) != 1 || cs[0].Key != "compact:0ee68323-9c18-4592-b0b0-9f76c577885b" || swExtra(cs[0], "trigger") != "manual" ||
		cs[0].Blob != "" || cs[0].Agent != "" || !cs[0].TS.Equal(time.Date(2026, 12, 2, 16, 24, 7, 860e6, time.UTC)) {
		t.Fatalf("compact events %+v", cs)
	}
	for _, a := range swEvents(t, st, gitstore.Query{Writers: []string{swWriter}, Op: "attach"}) {
		if !a.TS.After(cs[0].TS) {
			t.Fatalf("attachment %s before the boundary", a.Key)
		}
	}

	// Spans: every user and assistant text, tool call and result, and
	// the compaction summary, as JSON.
	spans := swEvents(t, st, gitstore.Query{Writers: []string{swWriter}, Op: "span"})
	kinds := map[string]int{}
	var summary, firstUser map[string]any
	for _, e := range spans {
		b, err := st.Objects().Blob(ctx, e.Blob)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("span %s: %v", b, err)
		}
		if m["kind"] != swExtra(e, "kind") || !strings.HasPrefix(e.Key, "span:"+swExtra(e, "uuid")) {
			t.Fatalf("span %s / %s", e.Raw, b)
		}
		if !json.Valid(b) || !bytes.Equal(b, bytes.TrimSpace(b)) {
			t.Fatalf("span JSON %q", b)
		}
		kinds[swExtra(e, "kind")]++
		switch {
		case m["kind"] == "compact_summary":
			summary = m
		case m["kind"] == "user" && firstUser == nil:
			firstUser = m
		}
	}
	if kinds["user"] != 7 || kinds["assistant"] != 4 || kinds["tool_use"] != 8 || kinds["tool_result"] != 8 || kinds["compact_summary"] != 1 {
		t.Fatalf("span kinds %v", kinds)
	}
	if firstUser["text"] != "please edit" || firstUser["role"] != "user" {
		t.Fatalf("first user span %v", firstUser)
	}
	if s, _ := summary["text"].(string); !strings.Contains(s, "CG_OK") {
		t.Fatalf("summary span %v", summary)
	}
	// Tool spans of file tools carry the path (the deny list applies).
	for _, e := range swEvents(t, st, gitstore.Query{Writers: []string{swWriter}, Op: "span", Key: "span:8e054a00-7c41-4492-a3ae-b9ebef9f8634"}) {
		if e.Path != "hello.txt" || e.Tool != "Read" {
			t.Fatalf("read result span %s", e.Raw)
		}
	}
	if out := swGit(t, repo, "fsck", "--strict"); strings.Contains(out, "error") {
		t.Fatalf("fsck: %s", out)
	}

	// Nothing new: nothing appended, and fast.
	seq := swSeq(t, st, swWriter)
	again, err := hooks.SweepSession(ctx, st, New(), main, hooks.SweepOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if again.Appended != 0 || again.Records != 0 || again.Lines != 0 || again.Transcripts != 2 || swSeq(t, st, swWriter) != seq {
		t.Fatalf("second sweep %+v", again)
	}

	// Truncated: the cursor resets, and the re-sweep adds nothing new.
	full, err := os.ReadFile(main)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(main, int64(len(full)/2)); err != nil {
		t.Fatal(err)
	}
	tr, err := hooks.SweepTranscript(ctx, st, New(), main, hooks.SweepOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Resets != 1 || tr.Lines == 0 || tr.Appended != 0 || tr.Deduped != tr.Records || swSeq(t, st, swWriter) != seq {
		t.Fatalf("sweep after truncation %+v", tr)
	}
	// Written back in place (same inode, same prefix): the cursor goes on
	// from where it is.
	if err := os.WriteFile(main, full, 0o644); err != nil {
		t.Fatal(err)
	}
	tr, err = hooks.SweepTranscript(ctx, st, New(), main, hooks.SweepOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Resets != 0 || tr.Bytes <= 0 || tr.Bytes >= int64(len(full)) || tr.Appended != 0 || swSeq(t, st, swWriter) != seq {
		t.Fatalf("sweep after rewrite %+v", tr)
	}
	// Replaced by another file (new inode): reset, nothing new.
	tmp := main + ".tmp"
	if err := os.WriteFile(tmp, full, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, main); err != nil {
		t.Fatal(err)
	}
	tr, err = hooks.SweepTranscript(ctx, st, New(), main, hooks.SweepOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Resets != 1 || tr.Bytes != int64(len(full)) || tr.Appended != 0 || swSeq(t, st, swWriter) != seq {
		t.Fatalf("sweep after replacement %+v", tr)
	}
	// Rewritten with a different beginning, same inode: the prefix hash
	// catches it.
	changed := bytes.Replace(full, []byte(`"operation":"enqueue"`), []byte(`"operation":"ENQUEUE"`), 1)
	if err := os.WriteFile(main, changed, 0o644); err != nil {
		t.Fatal(err)
	}
	tr, err = hooks.SweepTranscript(ctx, st, New(), main, hooks.SweepOptions{})
	if err != nil || tr.Resets != 1 || tr.Appended != 0 {
		t.Fatalf("sweep after rewrite of the prefix %+v %v", tr, err)
	}
	if out := swGit(t, repo, "fsck", "--strict"); strings.Contains(out, "error") {
		t.Fatalf("fsck: %s", out)
	}
	rep, err := st.Verify(ctx, swWriter, seal.Options{})
	if err != nil || !rep.OK() {
		t.Fatalf("verify %+v %v", rep, err)
	}
}

func TestSweepSamplePathsOutsideRepo(t *testing.T) {
	// The sample as recorded names /home/dev/project, outside this
	// repository: paths are recorded absolute, contents are the same.
	ctx := context.Background()
	repo := swGitInit(t)
	main := swCopySample(t, "")
	st := swOpen(t, repo)
	if _, err := hooks.SweepSession(ctx, st, New(), main, hooks.SweepOptions{}); err != nil {
		t.Fatal(err)
	}
	evs := swEvents(t, st, gitstore.Query{Writers: []string{swWriter}, Path: "/home/dev/project/hello.txt", Op: "read"})
	if len(evs) != 1 || evs[0].View != "full" {
		t.Fatalf("%+v", evs)
	}
	b, err := st.Objects().Blob(ctx, evs[0].Blob)
	if err != nil || string(b) != "hello world\n" {
		t.Fatalf("%q %v", b, err)
	}
	sub := swEvents(t, st, gitstore.Query{Writers: []string{swWriter}, Agent: trSampleAgent, Op: "read"})
	if len(sub) != 1 || sub[0].Path != "/home/dev/project/main.go" || !sub[0].Sidechain {
		t.Fatalf("%+v", sub)
	}
}

func TestSweepCursorFile(t *testing.T) {
	ctx := context.Background()
	repo := swGitInit(t)
	main := swCopySample(t, repo)
	st := swOpen(t, repo)
	if _, err := hooks.SweepTranscript(ctx, st, New(), main, hooks.SweepOptions{}); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(main))
	file := filepath.Join(repo, ".git", "lossless", hooks.CursorDir(New()), hex.EncodeToString(sum[:16]))
	if cf, err := hooks.CursorFile(ctx, st, New(), main); err != nil || cf != file {
		t.Fatalf("cursor file %s %v, want %s", cf, err, file)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var c hooks.Cursor
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(main)
	dev, ino := swFileIdentity(fi)
	data, _ := os.ReadFile(main)
	pre := sha256.Sum256(data[:4096])
	if c.Offset != int64(len(data)) || c.Size != int64(len(data)) || c.Dev != dev || c.Ino != ino || c.Path != main ||
		c.PrefixLen != 4096 || c.Prefix != hex.EncodeToString(pre[:]) || c.Session != trSampleSession || len(c.Pending) != 0 {
		t.Fatalf("cursor %s", b)
	}
	// A corrupt cursor is a fresh start (the dedupe keys keep it harmless).
	if err := os.WriteFile(file, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := hooks.SweepTranscript(ctx, st, New(), main, hooks.SweepOptions{})
	if err != nil || s.Lines != 103 || s.Appended != 0 {
		t.Fatalf("%+v %v", s, err)
	}
	// A missing transcript is an fs.ErrNotExist error.
	if _, err := hooks.SweepTranscript(ctx, st, New(), main+".gone", hooks.SweepOptions{}); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing transcript: %v", err)
	}
	// A session without subagents, and a missing one.
	if _, err := hooks.SweepSession(ctx, st, New(), main+".gone", hooks.SweepOptions{}); err == nil {
		t.Fatal("missing main transcript: no error")
	}
}

// swSeenOps are the ops that put content into a context (the guard's
// evidence).
var swSeenOps = map[string]bool{"read": true, "write": true, "edit": true, "attach": true, "restore": true}

func swSize(t testing.TB, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

func swSubPath(main string) string {
	return filepath.Join(strings.TrimSuffix(main, ".jsonl"), "subagents", "agent-"+trSampleAgent+".jsonl")
}

// swAppend appends to a file.
func swAppend(t testing.TB, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestSweepAppendedWhileReading(t *testing.T) {
	ctx := context.Background()
	repo := swGitInit(t)
	st := swOpen(t, repo)
	path := filepath.Join(t.TempDir(), "s1.jsonl")
	file := filepath.Join(repo, "a.go")
	use := trToolUse("u1", "t1", "Read", `{"file_path":`+trQ(file)+`}`)
	res := trToolResult("u2", "t1", `"1\tpackage a\n2\t"`, "")
	// The call, and half of its result line (still being written).
	swAppend(t, path, use+"\n"+res[:len(res)/2])
	s, err := hooks.SweepTranscript(ctx, st, New(), path, hooks.SweepOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Lines != 1 || s.Appended != 1 || s.Bytes != int64(len(use)+1) {
		t.Fatalf("first sweep %+v", s)
	}
	c := readCursor(ctx, st, path)
	if c == nil || c.Offset != int64(len(use)+1) || len(c.Pending) != 1 || c.Pending[0].Path != file {
		t.Fatalf("cursor %+v", c)
	}
	// Nothing complete yet: nothing appended, cursor unchanged.
	s, err = hooks.SweepTranscript(ctx, st, New(), path, hooks.SweepOptions{})
	if err != nil || s.Lines != 0 || s.Appended != 0 {
		t.Fatalf("%+v %v", s, err)
	}
	// The rest arrives: the result pairs with the call the cursor kept.
	swAppend(t, path, res[len(res)/2:]+"\n")
	s, err = hooks.SweepTranscript(ctx, st, New(), path, hooks.SweepOptions{})
	if err != nil || s.Lines != 1 || s.Appended != 2 || s.Evidence != 1 {
		t.Fatalf("third sweep %+v %v", s, err)
	}
	evs := swEvents(t, st, gitstore.Query{Op: "read"})
	if len(evs) != 1 || evs[0].Path != "a.go" || evs[0].Key != "t1" || evs[0].Session != "s1" {
		t.Fatalf("%+v", evs)
	}
	if b, _ := st.Objects().Blob(ctx, evs[0].Blob); string(b) != "package a\n" {
		t.Fatalf("content %q", b)
	}
	if c := readCursor(ctx, st, path); c == nil || len(c.Pending) != 0 || c.Offset != int64(len(use)+len(res)+2) {
		t.Fatalf("cursor %+v", c)
	}
}

func TestSweepDenyList(t *testing.T) {
	ctx := context.Background()
	repo := swGitInit(t)
	st := swOpen(t, repo)
	secret := "API_TOKEN=hunter2-very-secret"
	env := filepath.Join(repo, ".env")
	// A symlink with an innocent name pointing at the secret file.
	link := filepath.Join(repo, "config.txt")
	if err := os.WriteFile(env, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(env, link); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "s2.jsonl")
	var b strings.Builder
	for i, f := range []string{env, link} {
		id := fmt.Sprint("t", i)
		b.WriteString(trToolUse(fmt.Sprint("a", i), id, "Read", `{"file_path":`+trQ(f)+`}`) + "\n")
		b.WriteString(trToolResult(fmt.Sprint("r", i), id, trQ("1\t"+secret+"\n2\t"),
			`{"type":"text","file":{"filePath":`+trQ(f)+`,"content":`+trQ(secret+"\n")+`,"numLines":2,"startLine":1,"totalLines":2}}`) + "\n")
	}
	swAppend(t, path, b.String())
	s, err := hooks.SweepTranscript(ctx, st, New(), path, hooks.SweepOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Appended != 6 {
		t.Fatalf("%+v", s)
	}
	for _, e := range swEvents(t, st, gitstore.Query{}) {
		if !e.Excluded || e.Blob != "" {
			t.Fatalf("not excluded: %s", e.Raw)
		}
	}
	out := swGit(t, repo, "cat-file", "--batch-all-objects", "--batch")
	if strings.Contains(out, "hunter2") {
		t.Fatal("the secret reached the object store")
	}
}

func TestSweepHostileTranscript(t *testing.T) {
	ctx := context.Background()
	repo := swGitInit(t)
	st := swOpen(t, repo)
	path := filepath.Join(t.TempDir(), "s3.jsonl")
	var b bytes.Buffer
	b.WriteString("garbage\n\xff\xfe\n{\"type\":\"user\"\n")
	b.WriteString("{\"type\":\"user\",\"uuid\":\"h1\",\"sessionId\":\"s3\",\"message\":{\"content\":\"bad \xff utf8\"}}\n")
	b.WriteString(`{"type":"mystery","sessionId":"s3"}` + "\n")
	b.WriteString(`{"type":"user","uuid":"h2","sessionId":"s3","message":{"content":[{"type":"tool_result","tool_use_id":"q","content":"x"}]},"toolUseResult":"a string"}` + "\n")
	b.WriteString(`{"type":"user","uuid":"big","sessionId":"s3","message":{"content":"` + strings.Repeat("z", 30<<20) + `"}}` + "\n")
	b.WriteString(`{"type":"user","sessionId":"s3","message":{"content":"no uuid: no key, not recorded"}}` + "\n")
	swAppend(t, path, b.String())
	s, err := hooks.SweepTranscript(ctx, st, New(), path, hooks.SweepOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Invalid != 3 || s.Appended != 3 || s.Lines != 8 {
		t.Fatalf("%+v", s)
	}
	evs := swEvents(t, st, gitstore.Query{Writers: []string{gitstore.WriterName("cc-", "s3")}, Op: "span"})
	if len(evs) != 3 {
		t.Fatalf("%d spans", len(evs))
	}
	for _, e := range evs {
		c, err := st.Objects().Blob(ctx, e.Blob)
		if err != nil || !json.Valid(c) {
			t.Fatalf("span %s: %v", e.Raw, err)
		}
	}
	s, err = hooks.SweepTranscript(ctx, st, New(), path, hooks.SweepOptions{})
	if err != nil || s.Appended != 0 || s.Lines != 0 {
		t.Fatalf("%+v %v", s, err)
	}
}

func TestSweepLargeInChunks(t *testing.T) {
	// A sweep bigger than MaxBatchBytes stores (and moves its cursor) in
	// several batches; the result is the same as in one.
	ctx := context.Background()
	repo := swGitInit(t)
	path := filepath.Join(t.TempDir(), "gen.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := transcriptgen.GenerateWith(f, transcriptgen.Options{Seed: 3, TargetBytes: 2 << 20, Root: repo, SessionID: "gen-1"}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	st := swOpen(t, repo)
	s1, err := hooks.SweepTranscript(ctx, st, New(), path, hooks.SweepOptions{MaxBatchBytes: 256 << 10})
	if err != nil {
		t.Fatal(err)
	}
	repo2 := swGitInit(t)
	st2 := swOpen(t, repo2)
	s2, err := hooks.SweepTranscript(ctx, st2, New(), path, hooks.SweepOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s1.Appended != s2.Appended || s1.Appended != s1.Records || s1.Evidence == 0 || s1.Compactions != 1 {
		t.Fatalf("chunked %+v\nwhole %+v", s1, s2)
	}
	w := gitstore.WriterName("cc-", "gen-1")
	a, b := swEvents(t, st, gitstore.Query{Writers: []string{w}}), swEvents(t, st2, gitstore.Query{Writers: []string{w}})
	if len(a) != len(b) || len(a) != s1.Appended {
		t.Fatalf("%d and %d events", len(a), len(b))
	}
	for i := range a {
		if a[i].Key != b[i].Key || a[i].Blob != b[i].Blob || a[i].View != b[i].View || a[i].Op != b[i].Op {
			t.Fatalf("event %d differs:\n%s\n%s", i, a[i].Raw, b[i].Raw)
		}
	}
	if out := swGit(t, repo, "fsck", "--strict"); strings.Contains(out, "error") {
		t.Fatalf("fsck: %s", out)
	}
}

// ---- benchmarks ----

// swBenchTranscript writes a generated transcript of about size bytes
// whose files are in repo. It is generated with a fixed root, then pointed
// at repo, so that every run sweeps the same lines whatever the length of
// the temporary directory's name.
func swBenchTranscript(b *testing.B, dir, repo string, size int) string {
	b.Helper()
	const root = "/lossless-bench-root"
	var buf bytes.Buffer
	if err := transcriptgen.GenerateWith(&buf, transcriptgen.Options{Seed: 1, TargetBytes: size, Root: root, SessionID: "bench-session"}); err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(dir, "bench-session.jsonl")
	if err := os.WriteFile(path, bytes.ReplaceAll(buf.Bytes(), []byte(root), []byte(repo)), 0o644); err != nil {
		b.Fatal(err)
	}
	return path
}

// BenchmarkSweep14MB sweeps a 14 MB generated transcript into a fresh
// repository (fsync as configured by default, and off).
func BenchmarkSweep14MB(b *testing.B) {
	for _, fsync := range []bool{true, false} {
		b.Run(fmt.Sprintf("fsync=%v", fsync), func(b *testing.B) {
			dir := b.TempDir()
			path := swBenchTranscript(b, dir, filepath.Join(dir, "repo"), 14<<20)
			fi, _ := os.Stat(path)
			b.SetBytes(fi.Size())
			var last hooks.SweepStats
			var cpu time.Duration
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				repo := filepath.Join(dir, "repo")
				os.RemoveAll(repo)
				if out, err := exec.Command("git", "init", "-q", repo).CombinedOutput(); err != nil {
					b.Fatalf("%v %s", err, out)
				}
				st, err := gitstore.OpenDir(repo, gitstore.Options{Fsync: &fsync})
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				c0 := swCPUTime()
				last, err = hooks.SweepTranscript(context.Background(), st, New(), path, hooks.SweepOptions{})
				cpu += swCPUTime() - c0
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(last.Records), "records")
			b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
		})
	}
}

// BenchmarkResweepNoop sweeps a session (main transcript and a subagent)
// that has nothing new.
func BenchmarkResweepNoop(b *testing.B) {
	dir := b.TempDir()
	repo := filepath.Join(dir, "repo")
	if out, err := exec.Command("git", "init", "-q", repo).CombinedOutput(); err != nil {
		b.Fatalf("%v %s", err, out)
	}
	path := filepath.Join(dir, "bench-session.jsonl")
	sub := filepath.Join(dir, "bench-session", "subagents", "agent-"+transcriptgen.SubagentID(1)+".jsonl")
	if err := os.MkdirAll(filepath.Dir(sub), 0o755); err != nil {
		b.Fatal(err)
	}
	f, _ := os.Create(path)
	sf, _ := os.Create(sub)
	if err := transcriptgen.GenerateWith(f, transcriptgen.Options{Seed: 1, TargetBytes: 14 << 20, Root: repo, SessionID: "bench-session", Subagent: sf}); err != nil {
		b.Fatal(err)
	}
	f.Close()
	sf.Close()
	st, err := gitstore.OpenDir(repo, gitstore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if _, err := hooks.SweepSession(ctx, st, New(), path, hooks.SweepOptions{}); err != nil {
		b.Fatal(err)
	}
	var cpu time.Duration
	defer func() { b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op") }()
	for b.Loop() {
		c0 := swCPUTime()
		s, err := hooks.SweepSession(ctx, st, New(), path, hooks.SweepOptions{})
		cpu += swCPUTime() - c0
		if err != nil || s.Appended != 0 || s.Lines != 0 || s.Transcripts != 2 {
			b.Fatalf("%+v %v", s, err)
		}
	}
}
