package gitstore

// Integration tests that hold the store against the real git CLI, the
// second implementation of every format the store writes: objects are read
// back with `git cat-file`, checked with `git fsck --strict`, repacked with
// `git gc`, moved with `git push`/`git fetch`/`git clone --mirror`, and refs
// are raced against concurrent `git update-ref` and `git pack-refs`.
//
// Concurrency and crash tests run appenders as separate OS processes: the
// test binary re-executes itself with itChildEnv set, and TestMain turns
// such a child into a loop of Store.Append calls (see itChildMain).

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/internal/gitobj"
	"github.com/git-lossless/git-lossless/seal"
)

// itChildEnv switches the test binary into appender mode (itChildMain).
const itChildEnv = "GITSTORE_IT_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(itChildEnv) != "" {
		os.Exit(itChildMain())
	}
	if os.Getenv(qChildEnv) != "" {
		os.Exit(qChildMain())
	}
	home, err := os.MkdirTemp("", "gitstore-it-home-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// Isolate every git process and the store itself (which reads git's
	// config files and GIT_DIR too) from the user's configuration.
	for k, v := range map[string]string{
		"HOME":                home,
		"XDG_DATA_HOME":       filepath.Join(home, "data"),
		"XDG_CONFIG_HOME":     filepath.Join(home, "config"),
		"GIT_CONFIG_NOSYSTEM": "1",
		"GIT_CONFIG_GLOBAL":   os.DevNull,
		"GIT_AUTHOR_NAME":     "Integration Test",
		"GIT_AUTHOR_EMAIL":    "it@example.invalid",
		"GIT_COMMITTER_NAME":  "Integration Test",
		"GIT_COMMITTER_EMAIL": "it@example.invalid",
		"GIT_TERMINAL_PROMPT": "0",
		// No automatic gc or maintenance running behind a test's back.
		"GIT_CONFIG_COUNT":   "2",
		"GIT_CONFIG_KEY_0":   "gc.auto",
		"GIT_CONFIG_VALUE_0": "0",
		"GIT_CONFIG_KEY_1":   "maintenance.auto",
		"GIT_CONFIG_VALUE_1": "false",
	} {
		os.Setenv(k, v)
	}
	for _, k := range []string{"GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_INDEX_FILE",
		"GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE",
		"GIT_CEILING_DIRECTORIES", "GIT_CONFIG_PARAMETERS", "LOSSLESS_ARCHIVE_EXCLUDE"} {
		os.Unsetenv(k)
	}
	code := m.Run()
	os.RemoveAll(home)
	os.Exit(code)
}

// itChildMain appends GITSTORE_IT_N records (0: until killed) to writer
// GITSTORE_IT_WRITER of the repository GITSTORE_IT_DIR, one per Append,
// keyed GITSTORE_IT_PREFIX-<i>, each with distinct content. After every
// Append that returned successfully it prints "ok <key>" on stdout (an
// unbuffered write, so a parent that kills the process has seen exactly the
// appends that completed). Warnings go to stderr prefixed "warning: ".
func itChildMain() int {
	dir := os.Getenv("GITSTORE_IT_DIR")
	writer := os.Getenv("GITSTORE_IT_WRITER")
	prefix := os.Getenv("GITSTORE_IT_PREFIX")
	n, _ := strconv.Atoi(os.Getenv("GITSTORE_IT_N"))
	s, err := OpenDir(dir, Options{Warn: func(m string) { fmt.Fprintln(os.Stderr, "warning: "+m) }})
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		return 1
	}
	ctx := context.Background()
	for i := 0; n <= 0 || i < n; i++ {
		key := fmt.Sprintf("%s-%d", prefix, i)
		res, err := s.Append(ctx, writer, []Record{{
			Event:      Event{Op: "read", Source: "hook", Session: prefix, Path: "src/" + key + ".txt", Key: key},
			Content:    itContent(key),
			HasContent: true,
		}})
		if err != nil {
			fmt.Fprintf(os.Stderr, "append %s: %v\n", key, err)
			return 1
		}
		if len(res.Events) != 1 || res.Deduped != 0 {
			fmt.Fprintf(os.Stderr, "append %s: stored %d events, deduped %d\n", key, len(res.Events), res.Deduped)
			return 1
		}
		if _, err := os.Stdout.WriteString("ok " + key + "\n"); err != nil {
			return 1
		}
	}
	return 0
}

// itRaceBuild reports whether this binary was built with -race.
func itRaceBuild() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}

// itContent is the distinct file content archived for key.
func itContent(key string) []byte {
	return []byte(fmt.Sprintf("content of %s\n%s\n", key, strings.Repeat(key+" ", 8)))
}

// itGit runs git in dir and returns its stdout; it fails the test on a
// non-zero exit.
func itGit(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, errOut, err := itGitRaw(dir, nil, args...)
	if err != nil {
		t.Fatalf("git %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out, errOut)
	}
	return string(out)
}

// itGitIn is itGit with stdin.
func itGitIn(t testing.TB, dir string, stdin []byte, args ...string) string {
	t.Helper()
	out, errOut, err := itGitRaw(dir, stdin, args...)
	if err != nil {
		t.Fatalf("git %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out, errOut)
	}
	return string(out)
}

func itGitRaw(dir string, stdin []byte, args ...string) (stdout, stderr []byte, err error) {
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.Bytes(), e.Bytes(), err
}

// itInit creates a repository (bare with "--bare") and returns its path.
func itInit(t testing.TB, args ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo")
	itGit(t, filepath.Dir(dir), append(append([]string{"init", "-q", "-b", "main"}, args...), dir)...)
	return dir
}

// itFsck runs `git fsck --strict --full` and fails on any error or
// warning (dangling objects left by lost compare-and-swap rounds are
// expected and not reported with --no-dangling).
func itFsck(t testing.TB, dir string) {
	t.Helper()
	out, errOut, err := itGitRaw(dir, nil, "fsck", "--strict", "--full", "--no-dangling", "--no-progress")
	var problems []string
	for _, l := range strings.Split(string(errOut), "\n") {
		// "notice: HEAD points to an unborn branch" is not a problem.
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "notice:") {
			problems = append(problems, l)
		}
	}
	if err != nil || len(problems) > 0 || len(bytes.TrimSpace(out)) > 0 {
		t.Fatalf("git fsck --strict in %s: %v\nstdout: %s\nstderr: %s", dir, err, out, errOut)
	}
}

// itCatFile returns the bytes git itself reads for a blob.
func itCatFile(t testing.TB, dir, id string) []byte {
	t.Helper()
	if typ := strings.TrimSpace(itGit(t, dir, "cat-file", "-t", id)); typ != "blob" {
		t.Fatalf("git cat-file -t %s = %q, want blob", id, typ)
	}
	out, errOut, err := itGitRaw(dir, nil, "cat-file", "blob", id)
	if err != nil {
		t.Fatalf("git cat-file blob %s: %v\n%s", id, err, errOut)
	}
	return out
}

// itCheckRefFiles fails when any file under <gitDir>/refs/lossless is not
// a lock file and not exactly one full object id and a newline naming a
// commit, when packed-refs holds a malformed lossless line, and unless C
// git lists exactly the lossless refs on disk, all good.
func itCheckRefFiles(t testing.TB, gitDir string) {
	t.Helper()
	onDisk := map[string]bool{}
	root := filepath.Join(gitDir, "refs", "lossless")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.HasSuffix(d.Name(), ".lock") {
			return nil // judged separately
		}
		if len(b) != 41 || b[40] != '\n' || !gitobj.IsID(string(b[:40])) {
			t.Errorf("malformed ref file %s: %q", p, b)
			return nil
		}
		if typ := strings.TrimSpace(itGit(t, gitDir, "cat-file", "-t", string(b[:40]))); typ != "commit" {
			t.Errorf("ref file %s names a %s", p, typ)
		}
		rel, _ := filepath.Rel(gitDir, p)
		onDisk[filepath.ToSlash(rel)] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(gitDir, "packed-refs")); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if !strings.Contains(line, RefPrefix) {
				continue
			}
			id, name, ok := strings.Cut(line, " ")
			if !ok || !gitobj.IsID(id) || !strings.HasPrefix(name, RefPrefix) {
				t.Errorf("malformed packed-refs line %q", line)
			}
			onDisk[name] = true
		}
	}
	// C git must see every lossless ref as a good ref.
	out, errOut, err := itGitRaw(gitDir, nil, "for-each-ref", "--format=%(objecttype) %(refname)", RefPrefix)
	if err != nil || len(bytes.TrimSpace(errOut)) > 0 {
		t.Fatalf("git for-each-ref: %v\n%s", err, errOut)
	}
	seen := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if line == "" {
			continue
		}
		seen++
		typ, name, _ := strings.Cut(line, " ")
		if typ != "commit" || !onDisk[name] {
			t.Errorf("git for-each-ref: %q", line)
		}
	}
	if seen != len(onDisk) {
		t.Errorf("git for-each-ref lists %d lossless refs, %d are on disk:\n%s", seen, len(onDisk), out)
	}
}

// itMarshal returns each event as `log --json` prints it, in order.
func itMarshal(t testing.TB, evs []Event) []string {
	t.Helper()
	out := make([]string, len(evs))
	for i, e := range evs {
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = string(b)
	}
	return out
}

func itEqualLines(t testing.TB, what string, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d events, want %d", what, len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s: event %d differs:\n got %s\nwant %s", what, i, got[i], want[i])
		}
	}
}

// itVerifyAll verifies every writer and fails on any break; it returns the
// entries per writer.
func itVerifyAll(t testing.TB, s *Store) map[string]int64 {
	t.Helper()
	ctx := context.Background()
	ws, err := s.Writers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, w := range ws {
		if w.Err != "" {
			t.Errorf("writer %s: %s", w.Name, w.Err)
			continue
		}
		rep, err := s.Verify(ctx, w.Name, seal.Options{})
		if err != nil {
			t.Fatalf("verify %s: %v", w.Name, err)
		}
		if !rep.OK() {
			t.Errorf("verify %s: %+v", w.Name, *rep.Break)
		}
		if rep.Entries != w.Seq {
			t.Errorf("verify %s: %d entries, head says %d", w.Name, rep.Entries, w.Seq)
		}
		out[w.Name] = rep.Entries
	}
	return out
}

// TestIntegrationGitRoundTrip archives awkward contents and checks them
// with C git: byte-exact `cat-file`, identical ids from `hash-object`,
// trailers parsed by git, fsck; then gc (packs replace loose objects, the
// index is deleted), push to a bare repository, clone --mirror and fetch:
// every copy verifies and yields the same events.
func TestIntegrationGitRoundTrip(t *testing.T) {
	ctx := context.Background()
	repo := itInit(t)
	gitDir := filepath.Join(repo, ".git")
	s, err := OpenDir(repo, Options{})
	if err != nil {
		t.Fatal(err)
	}
	all256 := make([]byte, 256)
	for i := range all256 {
		all256[i] = byte(i)
	}
	big := make([]byte, 1<<20)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range big {
		big[i] = byte(rng.UintN(256))
	}
	contents := map[string][]byte{
		"hello.txt":   []byte("hello\n"),
		"empty":       {},
		"all256.bin":  all256,
		"nul.bin":     []byte("a\x00b\x00\x00c\x00"),
		"only-nul":    {0},
		"invalid.txt": []byte("caf\xe9 \xff\xfe \xc3\x28 \xed\xa0\x80 end"),
		"crlf.txt":    []byte("line one\r\nline two\r\n\r\n"),
		"no-eol.txt":  []byte("no newline at end"),
		"big.bin":     big,
		"utf8.md":     []byte("ünïcødé ✓ 日本語\n"),
	}
	names := make([]string, 0, len(contents))
	for n := range contents {
		names = append(names, n)
	}
	sort.Strings(names)

	// One writer appends one record at a time, another whole batches,
	// including the same content twice.
	var stored []Event
	for _, n := range names {
		res, err := s.Append(ctx, "alpha", []Record{{Event: Event{Op: "read", Source: "cli", Path: "dir/" + n}, Content: contents[n], HasContent: true}})
		if err != nil {
			t.Fatal(err)
		}
		stored = append(stored, res.Events...)
	}
	var batch []Record
	for _, n := range names {
		batch = append(batch, Record{Event: Event{Op: "edit", Source: "hook", Path: n, Session: "s-beta"}, Content: contents[n], HasContent: true})
	}
	batch = append(batch, Record{Event: Event{Op: "write", Source: "hook", Path: "again"}, Content: contents["hello.txt"], HasContent: true})
	res, err := s.Append(ctx, "beta", batch)
	if err != nil {
		t.Fatal(err)
	}
	stored = append(stored, res.Events...)
	if len(stored) != 2*len(names)+1 {
		t.Fatalf("stored %d events", len(stored))
	}

	want := map[string][]byte{} // blob id -> content
	for _, e := range stored {
		c, ok := contents[filepath.Base(e.Path)]
		if e.Path == "again" {
			c, ok = contents["hello.txt"], true
		}
		if !ok {
			t.Fatalf("unexpected path %q", e.Path)
		}
		want[e.Blob] = c
		sum := sha256.Sum256(c)
		if e.SHA256 != hex.EncodeToString(sum[:]) || e.Bytes != int64(len(c)) {
			t.Errorf("%s: sha256 %s bytes %d", e.Path, e.SHA256, e.Bytes)
		}
		if id := strings.TrimSpace(itGitIn(t, repo, c, "hash-object", "--stdin")); id != e.Blob {
			t.Errorf("%s: git hash-object says %s, event names %s", e.Path, id, e.Blob)
		}
	}
	if want[BlobID(nil)] == nil || BlobID(nil) != "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391" {
		t.Errorf("empty blob not stored as git's empty blob")
	}
	checkBlobs := func(dir string) {
		t.Helper()
		for id, c := range want {
			if got := itCatFile(t, dir, id); !bytes.Equal(got, c) {
				t.Errorf("%s: git cat-file returns %d bytes that differ from the %d archived", id, len(got), len(c))
			}
		}
	}
	checkBlobs(repo)
	itFsck(t, repo)
	itCheckRefFiles(t, gitDir)

	// git parses the trailers, and reads the batch tree as the store wrote it.
	seqs := strings.Fields(itGit(t, repo, "log", "--format=%(trailers:key=Lossless-Seq,valueonly)", "refs/lossless/alpha"))
	if len(seqs) != len(names) || seqs[0] != strconv.Itoa(len(names)) || seqs[len(seqs)-1] != "1" {
		t.Errorf("git log trailers Lossless-Seq = %v", seqs)
	}
	if w := strings.TrimSpace(itGit(t, repo, "log", "-1", "--format=%(trailers:key=Lossless-Writer,valueonly)", "refs/lossless/beta")); w != "beta" {
		t.Errorf("Lossless-Writer trailer = %q", w)
	}
	evLines := strings.Split(strings.TrimSuffix(itGit(t, repo, "show", "refs/lossless/beta:events.jsonl"), "\n"), "\n")
	if len(evLines) != len(names)+1 {
		t.Fatalf("beta events.jsonl has %d lines", len(evLines))
	}
	for i, l := range evLines {
		if l != string(res.Events[i].Raw) {
			t.Errorf("events.jsonl line %d = %s, want %s", i, l, res.Events[i].Raw)
		}
	}
	tree := itGit(t, repo, "ls-tree", "-r", "refs/lossless/beta")
	for _, e := range res.Events {
		if !strings.Contains(tree, "blob "+e.Blob+"\tblobs/"+e.Blob+"\n") {
			t.Errorf("batch tree lacks blobs/%s:\n%s", e.Blob, tree)
		}
	}

	// Let this long-lived store open go-git's view of a pack, then add
	// objects, so that the gc below replaces a pack the store has open.
	itGit(t, repo, "repack", "-q", "-a", "-d")
	if b, err := s.Objects().Blob(ctx, stored[0].Blob); err != nil || !bytes.Equal(b, want[stored[0].Blob]) {
		t.Fatalf("Blob from the first pack: %v", err)
	}
	res, err = s.Append(ctx, "gamma", []Record{{Event: Event{Op: "read", Source: "cli", Path: "late.txt"}, Content: []byte("written between repacks\n"), HasContent: true}})
	if err != nil {
		t.Fatal(err)
	}
	want[res.Events[0].Blob] = []byte("written between repacks\n")
	stored = append(stored, res.Events...)

	before, err := s.Events(ctx, Query{})
	if err != nil {
		t.Fatal(err)
	}
	wantLog := itMarshal(t, before)
	if len(wantLog) != len(stored) {
		t.Fatalf("log has %d events, stored %d", len(wantLog), len(stored))
	}

	// gc: everything packed, nothing lost; the index is only a cache.
	itGit(t, repo, "gc", "-q", "--prune=now")
	if cnt := itGit(t, repo, "count-objects", "-v"); !strings.Contains(cnt, "\ncount: 0\n") && !strings.HasPrefix(cnt, "count: 0\n") {
		t.Errorf("loose objects remain after gc:\n%s", cnt)
	}
	if err := os.RemoveAll(filepath.Join(gitDir, "lossless", "index")); err != nil {
		t.Fatal(err)
	}
	checkBlobs(repo)
	itFsck(t, repo)
	for _, st := range []struct {
		name string
		s    func() *Store
	}{
		{"long-lived store", func() *Store { return s }},
		{"fresh store", func() *Store {
			s2, err := OpenDir(repo, Options{})
			if err != nil {
				t.Fatal(err)
			}
			return s2
		}},
	} {
		s := st.s()
		got := itVerifyAll(t, s)
		if got["alpha"] != int64(len(names)) || got["beta"] != int64(len(names)+1) || got["gamma"] != 1 {
			t.Errorf("%s after gc: entries %v", st.name, got)
		}
		evs, err := s.Events(ctx, Query{})
		if err != nil {
			t.Fatal(err)
		}
		itEqualLines(t, st.name+": log after gc", itMarshal(t, evs), wantLog)
		for id, c := range want {
			b, err := s.Objects().Blob(ctx, id)
			if err != nil || !bytes.Equal(b, c) {
				t.Errorf("%s: Blob(%s) after gc: %v", st.name, id, err)
			}
		}
	}

	// A store opened on a packed repository writes no loose copy of
	// content a pack holds, and the chain continues across the repack.
	// (A store that saw no packs when it first wrote keeps writing loose
	// copies: harmless, by design, see objectDB.hasPacks.)
	s, err = OpenDir(repo, Options{})
	if err != nil {
		t.Fatal(err)
	}
	res2, err := s.Append(ctx, "alpha", []Record{{Event: Event{Op: "read", Source: "cli", Path: "dir/hello.txt"}, Content: contents["hello.txt"], HasContent: true}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.odb.LoosePath(res2.Events[0].Blob)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("packed blob %s was written loose again (%v)", res2.Events[0].Blob, err)
	}
	itFsck(t, repo)
	after, err := s.Events(ctx, Query{})
	if err != nil {
		t.Fatal(err)
	}
	wantLog = itMarshal(t, after)
	if len(wantLog) != len(stored)+1 {
		t.Fatalf("log has %d events after one more append", len(wantLog))
	}

	// Transport: push the archive refs to a bare repository, mirror-clone
	// it and fetch them into a fresh one. Each copy verifies (no witness
	// there: the chain and the content alone) and reads the same events.
	bare := itInit(t, "--bare")
	itGit(t, repo, "push", "-q", bare, "refs/lossless/*:refs/lossless/*")
	mirror := filepath.Join(t.TempDir(), "mirror.git")
	itGit(t, filepath.Dir(mirror), "clone", "-q", "--mirror", bare, mirror)
	fresh := itInit(t)
	itGit(t, fresh, "fetch", "-q", bare, "refs/lossless/*:refs/lossless/*")
	for _, dir := range []string{bare, mirror, fresh} {
		itFsck(t, dir)
		checkBlobs(dir)
		s2, err := OpenDir(dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		got := itVerifyAll(t, s2)
		if got["alpha"] != int64(len(names)+1) || got["beta"] != int64(len(names)+1) || len(got) != 3 {
			t.Errorf("%s: entries %v", dir, got)
		}
		evs, err := s2.Events(ctx, Query{})
		if err != nil {
			t.Fatal(err)
		}
		itEqualLines(t, "log in "+dir, itMarshal(t, evs), wantLog)
		// The copy is a working archive, but alpha is the first clone's:
		// a copy appends to writers of its own (FORMAT.md section 2).
		if _, err := s2.Append(ctx, "alpha", []Record{{Event: Event{Op: "read", Source: "cli", Path: "x"}, Content: []byte(dir), HasContent: true}}); !errors.Is(err, ErrNotOwner) {
			t.Fatalf("append to the first clone's alpha in %s: %v, want ErrNotOwner", dir, err)
		}
		if _, err := s2.Append(ctx, "alpha-copy", []Record{{Event: Event{Op: "read", Source: "cli", Path: "x"}, Content: []byte(dir), HasContent: true}}); err != nil {
			t.Fatalf("append in %s: %v", dir, err)
		}
		itVerifyAll(t, s2)
		itFsck(t, dir)
	}
}

// TestIntegrationStalePackHandle: a long-lived store (an MCP server, a
// proxy) must not trust its cached view of the packs after an outside
// `git gc` removed objects: content archived again must really be written.
func TestIntegrationStalePackHandle(t *testing.T) {
	ctx := context.Background()
	repo := itInit(t)
	// The repository has packs before the store opens, so the store
	// consults its pack view when it writes.
	seed, err := OpenDir(repo, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := seed.Append(ctx, "keep", []Record{{Event: Event{Op: "read", Source: "cli", Path: "k"}, Content: []byte("kept\n"), HasContent: true}}); err != nil {
		t.Fatal(err)
	}
	itGit(t, repo, "gc", "-q", "--prune=now")

	s, err := OpenDir(repo, Options{})
	if err != nil {
		t.Fatal(err)
	}
	content := []byte("archived, dropped, archived again\n")
	rec := func(w string) Event {
		t.Helper()
		res, err := s.Append(ctx, w, []Record{{Event: Event{Op: "read", Source: "cli", Path: "p"}, Content: content, HasContent: true}})
		if err != nil {
			t.Fatal(err)
		}
		return res.Events[0]
	}
	e := rec("gone")
	itGit(t, repo, "gc", "-q", "--prune=now")
	// The store opens its pack view while the blob is packed...
	if b, err := s.Objects().Blob(ctx, e.Blob); err != nil || !bytes.Equal(b, content) {
		t.Fatalf("Blob after gc: %q %v", b, err)
	}
	// ...then the user drops that writer and collects its objects.
	itGit(t, repo, "update-ref", "-d", "refs/lossless/gone")
	itGit(t, repo, "reflog", "expire", "--expire=now", "--all")
	itGit(t, repo, "gc", "-q", "--prune=now")
	if _, _, err := itGitRaw(repo, nil, "cat-file", "-e", e.Blob); err == nil {
		t.Fatalf("setup: blob %s survived gc", e.Blob)
	}
	// Reads through the same store see the new packs.
	for w, n := range itVerifyAll(t, s) {
		if w != "keep" || n != 1 {
			t.Errorf("writer %s: %d entries", w, n)
		}
	}
	// Archiving the same content again must store it.
	e2 := rec("again")
	if e2.Blob != e.Blob {
		t.Fatalf("blob id changed: %s %s", e2.Blob, e.Blob)
	}
	if _, _, err := itGitRaw(repo, nil, "cat-file", "-e", e2.Blob); err != nil {
		t.Fatalf("blob %s re-archived by a long-lived store is not in the repository", e2.Blob)
	}
	if got := itCatFile(t, repo, e2.Blob); !bytes.Equal(got, content) {
		t.Fatalf("cat-file after re-archive: %q", got)
	}
	itFsck(t, repo)
	itVerifyAll(t, s)
}

// TestIntegrationConcurrentProcesses races 8 processes x 200 appends on one
// writer and 8 processes x 50 on 8 writers of their own, while C git
// updates unrelated refs and packs all refs (lossless ones included)
// underneath. Nothing may be lost or duplicated, every chain verifies, and
// git finds the repository sound.
func TestIntegrationConcurrentProcesses(t *testing.T) {
	procs, per, soloPer := 8, 200, 50
	switch {
	case testing.Short():
		procs, per, soloPer = 4, 50, 20
	case itRaceBuild():
		// Children are race-instrumented too (5-10x slower); the race
		// detector looks for in-process races, which need no volume.
		per, soloPer = 25, 10
		t.Logf("race detector build: %d appends per process on the shared writer instead of 200", per)
	}
	repo := itInit(t)
	gitDir := filepath.Join(repo, ".git")
	// Durability against power loss is not what this test is about (the
	// crash test keeps fsync on); without it the 1,600 contended appends
	// take a third less time. It also exercises git config lossless.fsync.
	itGit(t, repo, "config", "lossless.fsync", "false")
	itGit(t, repo, "commit", "-q", "--allow-empty", "-m", "one")
	itGit(t, repo, "commit", "-q", "--allow-empty", "-m", "two")
	commits := [2]string{strings.TrimSpace(itGit(t, repo, "rev-parse", "HEAD~1")), strings.TrimSpace(itGit(t, repo, "rev-parse", "HEAD"))}

	type child struct {
		writer, prefix string
		n              int
		cmd            *exec.Cmd
		out, errOut    bytes.Buffer
	}
	var children []*child
	for p := 0; p < procs; p++ {
		children = append(children,
			&child{writer: "same", prefix: fmt.Sprintf("same-p%d", p), n: per},
			&child{writer: fmt.Sprintf("solo-%d", p), prefix: fmt.Sprintf("solo-p%d", p), n: soloPer})
	}

	// C git noise on unrelated refs, with pack-refs --all mixed in.
	stop := make(chan struct{})
	var noise sync.WaitGroup
	var updates, packs, packFails int
	var noiseErr error
	noise.Add(1)
	go func() {
		defer noise.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if i%8 == 7 {
				if _, errOut, err := itGitRaw(repo, nil, "pack-refs", "--all"); err != nil {
					packFails++
					if packFails == 1 {
						t.Logf("git pack-refs --all: %v: %s", err, errOut)
					}
				} else {
					packs++
				}
				continue
			}
			ref := fmt.Sprintf("refs/heads/noise-%d", i%5)
			if _, errOut, err := itGitRaw(repo, nil, "update-ref", ref, commits[i%2]); err != nil {
				noiseErr = fmt.Errorf("git update-ref %s: %v: %s", ref, err, errOut)
				return
			}
			updates++
		}
	}()

	start := time.Now()
	for _, c := range children {
		c.cmd = exec.Command(os.Args[0], "-test.run=^$")
		// One P per child: 16 single-minded processes share the cores;
		// with more, each spends much of its time in parallel GC.
		c.cmd.Env = append(os.Environ(), itChildEnv+"=1", "GOMAXPROCS=1", "GITSTORE_IT_DIR="+repo,
			"GITSTORE_IT_WRITER="+c.writer, "GITSTORE_IT_PREFIX="+c.prefix, "GITSTORE_IT_N="+strconv.Itoa(c.n))
		c.cmd.Stdout, c.cmd.Stderr = &c.out, &c.errOut
		if err := c.cmd.Start(); err != nil {
			t.Fatal(err)
		}
	}
	var failed []string
	for _, c := range children {
		if err := c.cmd.Wait(); err != nil {
			failed = append(failed, fmt.Sprintf("%s on %s: %v: %s", c.prefix, c.writer, err, c.errOut.String()))
		}
	}
	close(stop)
	noise.Wait()
	t.Logf("%d processes x %d appends on one writer, %d x %d on their own, in %v; C git: %d update-ref, %d pack-refs (%d failed)",
		procs, per, procs, soloPer, time.Since(start).Round(time.Millisecond), updates, packs, packFails)
	if len(failed) > 0 {
		t.Fatalf("appenders failed:\n%s", strings.Join(failed, "\n"))
	}
	if noiseErr != nil {
		t.Fatal(noiseErr)
	}
	if packs == 0 {
		t.Errorf("git pack-refs never succeeded: packed refs were not exercised")
	}

	// Every child reported every append.
	for _, c := range children {
		if n := strings.Count(c.out.String(), "ok "); n != c.n {
			t.Errorf("%s reported %d appends, want %d", c.prefix, n, c.n)
		}
	}

	ctx := context.Background()
	s, err := OpenDir(repo, Options{})
	if err != nil {
		t.Fatal(err)
	}
	wantKeys := map[string]map[string]bool{}
	for _, c := range children {
		if wantKeys[c.writer] == nil {
			wantKeys[c.writer] = map[string]bool{}
		}
		for i := 0; i < c.n; i++ {
			wantKeys[c.writer][fmt.Sprintf("%s-%d", c.prefix, i)] = true
		}
	}
	for w, keys := range wantKeys {
		evs, err := s.Events(ctx, Query{Writers: []string{w}})
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]int{}
		seqs := map[int64]bool{}
		for _, e := range evs {
			seen[e.Key]++
			seqs[e.Seq] = true
			if !bytes.Equal(itContentFor(t, s, e), itContent(e.Key)) {
				t.Errorf("%s#%d: archived content is not %s's", w, e.Seq, e.Key)
			}
		}
		if len(evs) != len(keys) || len(seqs) != len(keys) {
			t.Errorf("writer %s: %d events (%d distinct seqs), want %d", w, len(evs), len(seqs), len(keys))
		}
		for k := range keys {
			if seen[k] != 1 {
				t.Errorf("writer %s: key %s stored %d times", w, k, seen[k])
			}
		}
		for k := range seen {
			if !keys[k] {
				t.Errorf("writer %s: unexpected key %s", w, k)
			}
		}
	}
	// One batch commit per append on the contended writer.
	if n := strings.TrimSpace(itGit(t, repo, "rev-list", "--count", "refs/lossless/same")); n != strconv.Itoa(procs*per) {
		t.Errorf("refs/lossless/same has %s commits, want %d", n, procs*per)
	}
	got := itVerifyAll(t, s)
	if len(got) != procs+1 || got["same"] != int64(procs*per) {
		t.Errorf("verified writers: %v", got)
	}
	itFsck(t, repo)
	itCheckRefFiles(t, gitDir)
	if b, _ := os.ReadFile(filepath.Join(gitDir, "packed-refs")); !bytes.Contains(b, []byte(RefPrefix)) {
		t.Errorf("packed-refs holds no lossless ref: pack-refs never packed them")
	}
	if locks, _ := s.Locks(ctx); len(locks) > 0 {
		t.Errorf("locks left behind: %+v", locks)
	}
	for i := 0; i < 5; i++ {
		if got := strings.TrimSpace(itGit(t, repo, "rev-parse", fmt.Sprintf("refs/heads/noise-%d", i))); got != commits[0] && got != commits[1] {
			t.Errorf("noise-%d = %s", i, got)
		}
	}

	// Packed and loose: after a final pack-refs the store reads packed
	// values and writes loose ones over them.
	itGit(t, repo, "pack-refs", "--all")
	if _, err := os.Stat(filepath.Join(gitDir, "refs", "lossless", "same")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("pack-refs --all left refs/lossless/same loose (%v)", err)
	}
	if _, err := s.Append(ctx, "same", []Record{{Event: Event{Op: "read", Source: "cli", Key: "after-pack"}, Content: []byte("after pack\n"), HasContent: true}}); err != nil {
		t.Fatal(err)
	}
	if n := strings.TrimSpace(itGit(t, repo, "rev-list", "--count", "refs/lossless/same")); n != strconv.Itoa(procs*per+1) {
		t.Errorf("after pack-refs: %s commits", n)
	}
	itVerifyAll(t, s)
	itCheckRefFiles(t, gitDir)
}

// itLockFiles describes every lock-like file under refs/lossless.
func itLockFiles(gitDir string) string {
	var b strings.Builder
	filepath.WalkDir(filepath.Join(gitDir, "refs", "lossless"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(d.Name(), ".lock") {
			body, _ := os.ReadFile(p)
			fmt.Fprintf(&b, "\n  %s: %q", p, body)
		}
		return nil
	})
	return b.String()
}

// itContentFor returns the archived bytes of an event, read by git.
func itContentFor(t testing.TB, s *Store, e Event) []byte {
	t.Helper()
	b, err := s.Objects().Blob(context.Background(), e.Blob)
	if err != nil {
		t.Fatalf("blob of %s#%d: %v", e.Writer, e.Seq, err)
	}
	return b
}

// TestIntegrationCrashKill SIGKILLs appending processes at random moments
// (seeded; GITSTORE_CRASH_SEED overrides), round after round. Whatever the
// kills leave behind (stale ref locks, temporary object files, half-built
// batches, a stale index) must not lose an acknowledged append, break a
// chain, corrupt a ref, or stop the next append.
func TestIntegrationCrashKill(t *testing.T) {
	seed := uint64(20261202)
	if v := os.Getenv("GITSTORE_CRASH_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		seed = n
	}
	t.Logf("seed %d (set GITSTORE_CRASH_SEED to replay)", seed)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	rounds, perRound := 5, 4
	if testing.Short() || itRaceBuild() {
		rounds = 2
	}
	repo := itInit(t)
	gitDir := filepath.Join(repo, ".git")
	ctx := context.Background()

	var mu sync.Mutex
	acked := map[string]string{} // key -> writer
	staleRemoved := 0
	writers := []string{"crash", "crash", "crash", "crash-solo"}

	for r := 0; r < rounds; r++ {
		type child struct {
			cmd    *exec.Cmd
			lines  chan struct{}
			done   chan struct{}
			errOut bytes.Buffer
			writer string
		}
		var kids []*child
		for i := 0; i < perRound; i++ {
			c := &child{lines: make(chan struct{}, 1<<16), done: make(chan struct{}), writer: writers[i%len(writers)]}
			c.cmd = exec.Command(os.Args[0], "-test.run=^$")
			c.cmd.Env = append(os.Environ(), itChildEnv+"=1", "GOMAXPROCS=1", "GITSTORE_IT_DIR="+repo,
				"GITSTORE_IT_WRITER="+c.writer, "GITSTORE_IT_PREFIX="+fmt.Sprintf("r%d-p%d", r, i), "GITSTORE_IT_N=0")
			c.cmd.Stderr = &c.errOut
			out, err := c.cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := c.cmd.Start(); err != nil {
				t.Fatal(err)
			}
			go func() {
				defer close(c.done)
				sc := bufio.NewScanner(out)
				for sc.Scan() {
					key, ok := strings.CutPrefix(sc.Text(), "ok ")
					if !ok {
						continue
					}
					mu.Lock()
					acked[key] = c.writer
					mu.Unlock()
					c.lines <- struct{}{}
				}
			}()
			kids = append(kids, c)
		}
		// Kill each child, in random order, after a random number of its
		// own acknowledged appends and a random further delay, so the kill
		// lands anywhere inside an append.
		order := rng.Perm(len(kids))
		for _, i := range order {
			c := kids[i]
			want := 1 + rng.IntN(6)
			deadline := time.After(30 * time.Second)
			for n := 0; n < want; n++ {
				select {
				case <-c.lines:
				case <-c.done:
					t.Fatalf("round %d: child on %s exited early: %v\n%s", r, c.writer, c.cmd.Wait(), c.errOut.String())
				case <-deadline:
					t.Fatalf("round %d: child on %s made no progress in 30s\n%s", r, c.writer, c.errOut.String())
				}
			}
			time.Sleep(time.Duration(rng.IntN(3000)) * time.Microsecond)
			if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			// Reap it at once, as a real parent does: until then the dead
			// process is a zombie, which kill(pid, 0) reports as alive.
			<-c.done
			err := c.cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("round %d: child on %s ended with %v, not by SIGKILL\n%s", r, c.writer, err, c.errOut.String())
			}
		}
		for _, c := range kids {
			staleRemoved += strings.Count(c.errOut.String(), "removed stale lock")
		}

		// The next appends succeed, whatever the kills left.
		var warned []string
		s, err := OpenDir(repo, Options{Warn: func(m string) { warned = append(warned, m) }})
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range []string{"crash", "crash-solo"} {
			key := fmt.Sprintf("after-r%d-%s", r, w)
			res, err := s.Append(ctx, w, []Record{{Event: Event{Op: "read", Source: "cli", Key: key}, Content: itContent(key), HasContent: true}})
			if err != nil {
				t.Fatalf("round %d: append after kill: %v\nlock files: %s", r, err, itLockFiles(gitDir))
			}
			if len(res.Events) != 1 {
				t.Fatalf("round %d: append after kill stored %d events", r, len(res.Events))
			}
			acked[key] = w
		}
		for _, m := range warned {
			if strings.Contains(m, "removed stale lock") {
				staleRemoved++
			}
		}
		itCheckRefFiles(t, gitDir)
	}
	t.Logf("%d appends acknowledged over %d rounds; %d stale locks removed by later appends", len(acked), rounds, staleRemoved)

	s, err := OpenDir(repo, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := itVerifyAll(t, s)
	if len(got) != 2 {
		t.Errorf("writers after crashes: %v", got)
	}
	itFsck(t, repo)
	itCheckRefFiles(t, gitDir)
	evs, err := s.Events(ctx, Query{})
	if err != nil {
		t.Fatal(err)
	}
	present := map[string]string{}
	for _, e := range evs {
		if prev, dup := present[e.Key]; dup {
			t.Errorf("key %s stored twice (%s and %s)", e.Key, prev, e.Writer)
		}
		present[e.Key] = e.Writer
		if !bytes.Equal(itContentFor(t, s, e), itContent(e.Key)) {
			t.Errorf("%s#%d: content is not %s's", e.Writer, e.Seq, e.Key)
		}
	}
	for k, w := range acked {
		if present[k] != w {
			t.Errorf("acknowledged append %s on %s is missing (found on %q)", k, w, present[k])
		}
	}
	// Every ref lock is gone or stale (its process is dead): none may be
	// judged held, which would stall the next append of that writer.
	locks, err := s.Locks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range locks {
		if !l.Stale {
			t.Errorf("lock %s left by a killed process is not recognised as stale", l.Path)
		}
	}
	if _, err := s.CleanStaleLocks(ctx); err != nil {
		t.Fatal(err)
	}
	if locks, _ := s.Locks(ctx); len(locks) > 0 {
		t.Errorf("locks remain after cleaning: %+v", locks)
	}
}

// TestIntegrationStaleLocks plants the lock files a killed process or a
// busy C git leaves and checks how appends and the lock report treat them.
func TestIntegrationStaleLocks(t *testing.T) {
	ctx := context.Background()
	repo := itInit(t)
	refs := filepath.Join(repo, ".git", "refs", "lossless")
	var warned []string
	s, err := OpenDir(repo, Options{Warn: func(m string) { warned = append(warned, m) }})
	if err != nil {
		t.Fatal(err)
	}
	rec := func(s *Store, w, key string) error {
		_, err := s.Append(ctx, w, []Record{{Event: Event{Op: "read", Source: "cli", Key: key}, Content: itContent(key), HasContent: true}})
		return err
	}
	for _, w := range []string{"a", "b", "c"} {
		if err := rec(s, w, w+"-0"); err != nil {
			t.Fatal(err)
		}
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	deadPid := dead.Process.Pid
	plant := func(w, body string) string {
		t.Helper()
		p := filepath.Join(refs, w+".lock")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	lockA := plant("a", fmt.Sprintf("lossless-pid %d\n", deadPid))
	lockB := plant("b", fmt.Sprintf("lossless-pid %d\n", deadPid))
	lockC := plant("c", "") // C git's lock, just created: held

	locks, err := s.Locks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	judged := map[string]LockInfo{}
	for _, l := range locks {
		judged[l.Path] = l
	}
	if len(locks) != 3 || !judged[lockA].Stale || !strings.Contains(judged[lockA].Why, strconv.Itoa(deadPid)) || !judged[lockB].Stale || judged[lockC].Stale {
		t.Fatalf("locks: %+v", locks)
	}
	// An append removes a dead process's lock itself.
	if err := rec(s, "a", "a-1"); err != nil {
		t.Fatalf("append over a dead process's lock: %v", err)
	}
	if _, err := os.Stat(lockA); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("stale lock %s still there", lockA)
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "removed stale lock") {
		t.Errorf("warnings: %q", warned)
	}
	// CleanStaleLocks removes the dead one and keeps the held one.
	removed, err := s.CleanStaleLocks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 || removed[0].Path != lockB {
		t.Errorf("CleanStaleLocks removed %+v", removed)
	}
	if _, err := os.Stat(lockC); err != nil {
		t.Fatalf("held lock removed: %v", err)
	}
	// A held foreign lock makes an append wait, then fail clearly; the
	// ref is untouched.
	before := itGit(t, repo, "rev-parse", "refs/lossless/c")
	short, err := OpenDir(repo, Options{LockTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	err = rec(short, "c", "c-1")
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), lockC) {
		t.Fatalf("append under a held lock: %v", err)
	}
	if after := itGit(t, repo, "rev-parse", "refs/lossless/c"); after != before {
		t.Fatalf("ref moved under a held lock")
	}
	// Once it is old, anyone's lock is stale.
	old := time.Now().Add(-2 * StaleLockAge)
	if err := os.Chtimes(lockC, old, old); err != nil {
		t.Fatal(err)
	}
	if err := rec(short, "c", "c-1"); err != nil {
		t.Fatalf("append over an old lock: %v", err)
	}
	for w, n := range itVerifyAll(t, s) {
		want := map[string]int64{"a": 2, "b": 1, "c": 2}[w]
		if n != want {
			t.Errorf("writer %s: %d entries, want %d", w, n, want)
		}
	}
	itFsck(t, repo)
	itCheckRefFiles(t, filepath.Join(repo, ".git"))
}

// TestIntegrationLockLikeWriterNames: writer names that contain ".lock"
// without ending in it are valid refs for git and for ValidWriter; they
// must be listed, read and verified like any other, and never be taken
// for a lock (an old one would be "cleaned": the ref deleted).
func TestIntegrationLockLikeWriterNames(t *testing.T) {
	ctx := context.Background()
	repo := itInit(t)
	s, err := OpenDir(repo, Options{})
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"my.lockfile", "a.lock.b", "lock", "plain"}
	for _, w := range names {
		if err := ValidWriter(w); err != nil {
			t.Fatalf("setup: %v", err)
		}
		if _, err := s.Append(ctx, w, []Record{{Event: Event{Op: "read", Source: "cli", Path: w}, Content: itContent(w), HasContent: true}}); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * StaleLockAge)
	for _, w := range names {
		if err := os.Chtimes(filepath.Join(repo, ".git", "refs", "lossless", w), old, old); err != nil {
			t.Fatal(err)
		}
	}
	if locks, err := s.Locks(ctx); err != nil || len(locks) != 0 {
		t.Errorf("Locks() = %+v, %v", locks, err)
	}
	if removed, err := s.CleanStaleLocks(ctx); err != nil || len(removed) != 0 {
		t.Errorf("CleanStaleLocks() removed %+v, %v", removed, err)
	}
	got := itVerifyAll(t, s)
	for _, w := range names {
		if got[w] != 1 {
			t.Errorf("writer %s: verified %d entries (writers %v)", w, got[w], got)
		}
	}
	evs, err := s.Events(ctx, Query{})
	if err != nil || len(evs) != len(names) {
		t.Errorf("Events: %d, %v", len(evs), err)
	}
	itCheckRefFiles(t, filepath.Join(repo, ".git"))
}

// TestIntegrationUnknownFields: lines written by a newer version (fields
// this one does not know, batch built by hand with git plumbing and sealed
// with seal.Hash/seal.Genesis) verify, read back with the fields intact
// and byte-exact, and the chain continues after them. Changing such a
// field afterwards is caught: the seal covers it.
func TestIntegrationUnknownFields(t *testing.T) {
	ctx := context.Background()
	repo := itInit(t)
	const writer = "future"
	content := []byte("written by a newer git-lossless\n")
	blob := strings.TrimSpace(itGitIn(t, repo, content, "hash-object", "-w", "--stdin"))
	sum := sha256.Sum256(content)
	line1 := fmt.Sprintf(`{"blob":"%s","bytes":%d,"ctx_window":{"model":"m-9","tokens":[1,2,3]},"op":"read","path":"future.txt","prev":"%s","seq":1,"sha256":"%s","source":"newer","ts":"2026-01-02T03:04:05.000000000Z","view":"sym:Main","x_attest":"sig:ab\u00fc","zz_flag":true}`,
		blob, len(content), seal.Genesis(writer), hex.EncodeToString(sum[:]))
	line2 := fmt.Sprintf(`{"excluded":true,"op":"read","path":".env","prev":"%s","retention":null,"seq":2,"source":"newer","ts":"2026-01-02T03:04:06.000000000Z"}`, seal.Hash([]byte(line1)))
	commit := itCommitBatch(t, repo, writer, "", []string{line1, line2}, []string{blob})
	itGit(t, repo, "update-ref", "refs/lossless/"+writer, commit)
	itFsck(t, repo)

	for _, l := range []string{line1, line2} {
		e, err := ParseEvent([]byte(l))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(e.Raw, []byte(l)) {
			t.Errorf("Raw = %s", e.Raw)
		}
		canon, err := e.Canonical()
		if err != nil || string(canon) != l {
			t.Errorf("Canonical() = %s, %v\nwant %s", canon, err, l)
		}
		plain, _ := json.Marshal(Event{Raw: e.Raw})
		if string(plain) != l {
			t.Errorf("MarshalJSON = %s", plain)
		}
	}
	e1, _ := ParseEvent([]byte(line1))
	if string(e1.Extra["ctx_window"]) != `{"model":"m-9","tokens":[1,2,3]}` || string(e1.Extra["x_attest"]) != `"sig:ab\u00fc"` || string(e1.Extra["zz_flag"]) != "true" || len(e1.Extra) != 3 {
		t.Errorf("Extra = %q", e1.Extra)
	}
	if e1.Blob != blob || e1.Seq != 1 || e1.Op != "read" || e1.View != "sym:Main" {
		t.Errorf("known fields: %+v", e1)
	}

	s, err := OpenDir(repo, Options{})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := s.Verify(ctx, writer, seal.Options{})
	if err != nil || !rep.OK() || rep.Entries != 2 || rep.Blobs != 1 {
		t.Fatalf("verify: %+v %v", rep, err)
	}
	// Read twice: from the commits (building the index), then the index.
	for pass := 0; pass < 2; pass++ {
		evs, err := s.Events(ctx, Query{Writers: []string{writer}})
		if err != nil || len(evs) != 2 {
			t.Fatalf("pass %d: %d events, %v", pass, len(evs), err)
		}
		for i, want := range []string{line1, line2} {
			if string(evs[i].Raw) != want {
				t.Errorf("pass %d: line %d = %s", pass, i, evs[i].Raw)
			}
			b, _ := json.Marshal(evs[i])
			if wantJSON := `{"writer":"future",` + want[1:]; string(b) != wantJSON {
				t.Errorf("pass %d: log --json line = %s\nwant %s", pass, b, wantJSON)
			}
		}
	}
	// This version appends after the newer lines; they stay as they were.
	// (A newer version appending in this clone would have recorded the
	// writer as this clone's; that bookkeeping is what markOwn writes.)
	s.markOwn(writer)
	res, err := s.Append(ctx, writer, []Record{{Event: Event{Op: "read", Source: "cli", Path: "now.txt"}, Content: []byte("now\n"), HasContent: true}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Events[0].Seq != 3 || res.Events[0].Prev != seal.Hash([]byte(line2)) {
		t.Errorf("appended %d prev %s", res.Events[0].Seq, res.Events[0].Prev)
	}
	if rep, err := s.Verify(ctx, writer, seal.Options{}); err != nil || !rep.OK() || rep.Entries != 3 {
		t.Fatalf("verify after append: %+v %v", rep, err)
	}
	if got := itGit(t, repo, "show", commit+":events.jsonl"); got != line1+"\n"+line2+"\n" {
		t.Errorf("the newer batch changed: %s", got)
	}
	itFsck(t, repo)

	// The unknown fields are sealed: change one and verify breaks.
	edited2 := strings.Replace(line1, `"m-9"`, `"m-8"`, 1)
	forged2 := itCommitBatch(t, repo, writer, "", []string{edited2, line2}, []string{blob})
	itGit(t, repo, "update-ref", "refs/lossless/"+writer, forged2)
	rep, err = s.Verify(ctx, writer, seal.Options{})
	if err != nil || rep.OK() || rep.Break.Kind != seal.EntryEdited || rep.Break.Seq != 1 {
		t.Fatalf("edited unknown field: %+v %v", rep, err)
	}
}

// itCommitBatch builds a batch commit the way FORMAT.md describes, with C
// git plumbing only: events.jsonl and blobs/<id> in a tree, trailers in the
// message, parent optional. The last line's seq and seal go in the
// trailers as a writer computes them.
func itCommitBatch(t testing.TB, repo, writer, parent string, lines []string, blobs []string) string {
	t.Helper()
	body := strings.Join(lines, "\n") + "\n"
	events := strings.TrimSpace(itGitIn(t, repo, []byte(body), "hash-object", "-w", "--stdin"))
	var sub strings.Builder
	for _, b := range blobs {
		fmt.Fprintf(&sub, "100644 blob %s\t%s\n", b, b)
	}
	root := fmt.Sprintf("100644 blob %s\tevents.jsonl\n", events)
	if len(blobs) > 0 {
		subTree := strings.TrimSpace(itGitIn(t, repo, []byte(sub.String()), "mktree"))
		root += fmt.Sprintf("040000 tree %s\tblobs\n", subTree)
	}
	tree := strings.TrimSpace(itGitIn(t, repo, []byte(root), "mktree"))
	var last struct {
		Seq int64 `json:"seq"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil {
		t.Fatal(err)
	}
	msg := fmt.Sprintf("lossless: %d events on %s\n\nLossless-Format: 1\nLossless-Writer: %s\nLossless-Seq: %d\nLossless-Seal: %s\n",
		len(lines), writer, writer, last.Seq, seal.Hash([]byte(lines[len(lines)-1])))
	args := []string{"commit-tree", tree}
	if parent != "" {
		args = append(args, "-p", parent)
	}
	return strings.TrimSpace(itGitIn(t, repo, []byte(msg), append(args, "-F", "-")...))
}

// itInflate returns the inflated bytes of a loose object file.
func itInflate(t testing.TB, p string) []byte {
	t.Helper()
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := zlib.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	return b
}

// TestIntegrationLooseObjectFormat: every object file the store writes is
// one C git would write for the same object (zlib of "type len\0body",
// read-only), so git reads it and gc can pack it.
func TestIntegrationLooseObjectFormat(t *testing.T) {
	ctx := context.Background()
	repo := itInit(t)
	s, err := OpenDir(repo, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, "w", []Record{
		{Event: Event{Op: "read", Source: "cli", Path: "a"}, Content: []byte("a\n"), HasContent: true},
		{Event: Event{Op: "read", Source: "cli", Path: "b"}, Content: []byte{0, 1, 2}, HasContent: true},
	}); err != nil {
		t.Fatal(err)
	}
	objects := filepath.Join(repo, ".git", "objects")
	n := 0
	err = filepath.WalkDir(objects, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(objects, p)
		if strings.HasPrefix(rel, "info") || strings.HasPrefix(rel, "pack") {
			return nil
		}
		id := strings.ReplaceAll(filepath.ToSlash(rel), "/", "")
		if !gitobj.IsID(id) {
			t.Errorf("stray file in objects: %s", rel)
			return nil
		}
		n++
		st, _ := os.Stat(p)
		if st.Mode().Perm()&0o222 != 0 {
			t.Errorf("object %s is writable (%v)", id, st.Mode())
		}
		raw := itInflate(t, p)
		nul := bytes.IndexByte(raw, 0)
		typ, _, _ := strings.Cut(string(raw[:nul]), " ")
		if gitobj.ObjectID(typ, raw[nul+1:]) != id {
			t.Errorf("object %s does not hash to its name", id)
		}
		if got := strings.TrimSpace(itGit(t, repo, "cat-file", "-t", id)); got != typ {
			t.Errorf("git says %s is a %s, header says %s", id, got, typ)
		}
		body := itGit(t, repo, "cat-file", typ, id)
		if body != string(raw[nul+1:]) {
			t.Errorf("git reads %s differently", id)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// 2 blobs, events.jsonl, blobs tree, root tree, commit.
	if n != 6 {
		t.Errorf("%d loose objects, want 6", n)
	}
	itFsck(t, repo)
}
