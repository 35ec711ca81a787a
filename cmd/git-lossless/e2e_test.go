package main

// End-to-end tests: the real git-lossless binary, built once in TestMain,
// run as OS processes against real repositories, with the real git CLI as
// the second implementation that reads, checks, repacks, moves and
// tampers with what the binary wrote. Every process runs in a sandbox: its
// own HOME and XDG dirs, no system or global git config, no GIT_* or
// LOSSLESS_* variables from the caller.

import (
	"bytes"
	"compress/zlib"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/internal/testkit"
	"github.com/git-lossless/git-lossless/seal"
)

// e2eBin is the binary under test.
var e2eBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "git-lossless-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// Built with the caller's environment (its build cache), with the
	// hook-only program and the MCP server's beside it as `go install
	// ./cmd/...` puts them: install then writes those programs into the
	// settings, so every test that installs hooks (the real Claude Code
	// ones included) runs the hooks through git-lossless-hook, and `git
	// lossless mcp` runs git-lossless-mcp.
	bins, err := testkit.BuildPrograms(dir, "git-lossless", "git-lossless-hook", "git-lossless-mcp")
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	e2eBin = bins[0]
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// sandbox is one test's isolated world.
type sandbox struct {
	t    *testing.T
	root string
	home string
	data string // XDG_DATA_HOME
	env  []string
}

func newSandbox(t *testing.T) *sandbox {
	t.Helper()
	root := t.TempDir()
	sb := &sandbox{t: t, root: root, home: filepath.Join(root, "home"), data: filepath.Join(root, "data")}
	for _, d := range []string{sb.home, sb.data, filepath.Join(root, "config")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "GIT_") || strings.HasPrefix(k, "LOSSLESS_") || strings.HasPrefix(k, "XDG_") || k == "HOME" {
			continue
		}
		sb.env = append(sb.env, kv)
	}
	sb.env = append(sb.env,
		"HOME="+sb.home,
		"XDG_DATA_HOME="+sb.data,
		"XDG_CONFIG_HOME="+filepath.Join(root, "config"),
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL="+os.DevNull,
		"GIT_AUTHOR_NAME=E2E Test",
		"GIT_AUTHOR_EMAIL=e2e@example.invalid",
		"GIT_COMMITTER_NAME=E2E Test",
		"GIT_COMMITTER_EMAIL=e2e@example.invalid",
		"GIT_TERMINAL_PROMPT=0",
		// No automatic gc or maintenance running behind a test's back.
		"GIT_CONFIG_COUNT=2",
		"GIT_CONFIG_KEY_0=gc.auto", "GIT_CONFIG_VALUE_0=0",
		"GIT_CONFIG_KEY_1=maintenance.auto", "GIT_CONFIG_VALUE_1=false",
	)
	return sb
}

// setenv sets a variable for every later process of this sandbox.
func (sb *sandbox) setenv(k, v string) {
	out := sb.env[:0:0]
	for _, kv := range sb.env {
		if !strings.HasPrefix(kv, k+"=") {
			out = append(out, kv)
		}
	}
	sb.env = append(out, k+"="+v)
}

func (sb *sandbox) gitRaw(dir string, stdin []byte, args ...string) (stdout, stderr []byte, err error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = sb.env
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.Bytes(), e.Bytes(), err
}

// git runs git in dir and returns stdout, failing the test on an error.
func (sb *sandbox) git(dir string, args ...string) string {
	sb.t.Helper()
	return sb.gitIn(dir, nil, args...)
}

func (sb *sandbox) gitIn(dir string, stdin []byte, args ...string) string {
	sb.t.Helper()
	out, errOut, err := sb.gitRaw(dir, stdin, args...)
	if err != nil {
		sb.t.Fatalf("git %s (in %s): %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), dir, err, out, errOut)
	}
	return string(out)
}

// initRepo creates a repository under the sandbox ("--bare" for a bare
// one) and returns its path.
func (sb *sandbox) initRepo(name string, args ...string) string {
	sb.t.Helper()
	dir := filepath.Join(sb.root, name)
	sb.git(sb.root, append(append([]string{"init", "-q", "-b", "main"}, args...), dir)...)
	return dir
}

// fsck fails the test unless `git fsck --strict` finds nothing wrong.
func (sb *sandbox) fsck(dir string) {
	sb.t.Helper()
	out, errOut, err := sb.gitRaw(dir, nil, "fsck", "--strict", "--full", "--no-dangling", "--no-progress")
	var problems []string
	for _, l := range strings.Split(string(errOut)+string(out), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "notice:") {
			problems = append(problems, l)
		}
	}
	if err != nil || len(problems) > 0 {
		sb.t.Fatalf("git fsck --strict in %s: %v\n%s", dir, err, strings.Join(problems, "\n"))
	}
}

// fsckFails asserts git itself finds the repository damaged.
func (sb *sandbox) fsckFails(dir, want string) {
	sb.t.Helper()
	out, errOut, err := sb.gitRaw(dir, nil, "fsck", "--full", "--no-dangling", "--no-progress")
	if err == nil {
		sb.t.Fatalf("git fsck finds nothing wrong in %s", dir)
	}
	if want != "" && !strings.Contains(string(out)+string(errOut), want) {
		sb.t.Errorf("git fsck output lacks %q:\n%s%s", want, out, errOut)
	}
}

type result struct {
	stdout, stderr string
	code           int
}

// run runs the binary with working directory dir. Whatever the outcome it
// must not panic.
func (sb *sandbox) run(dir string, args ...string) result {
	sb.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, e2eBin, args...)
	cmd.Dir = dir
	cmd.Env = sb.env
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	r := result{stdout: o.String(), stderr: e.String()}
	if ctx.Err() != nil {
		sb.t.Fatalf("git-lossless %s: timed out\n%s", strings.Join(args, " "), r.stderr)
	}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		sb.t.Fatalf("git-lossless %s: %v", strings.Join(args, " "), err)
	}
	if strings.Contains(r.stderr, "panic:") || strings.Contains(r.stderr, "goroutine ") {
		sb.t.Fatalf("git-lossless %s panicked:\n%s", strings.Join(args, " "), r.stderr)
	}
	return r
}

// ok runs the binary and fails the test unless it exits 0.
func (sb *sandbox) ok(dir string, args ...string) result {
	sb.t.Helper()
	r := sb.run(dir, args...)
	if r.code != 0 {
		sb.t.Fatalf("git-lossless %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r
}

// logEvent is one line of `log --json`, decoded, with the line itself.
type logEvent struct {
	Writer   string `json:"writer"`
	Seq      int64  `json:"seq"`
	Op       string `json:"op"`
	Path     string `json:"path"`
	Path64   string `json:"path64"`
	Blob     string `json:"blob"`
	SHA256   string `json:"sha256"`
	Bytes    int64  `json:"bytes"`
	Excluded bool   `json:"excluded"`
	Key      string `json:"key"`
	Line     string `json:"-"`
}

// log returns `log --json` as raw output and decoded events.
func (sb *sandbox) log(dir string, args ...string) (string, []logEvent) {
	sb.t.Helper()
	r := sb.ok(dir, append([]string{"log", "--json"}, args...)...)
	var evs []logEvent
	for _, l := range strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n") {
		if l == "" {
			continue
		}
		var e logEvent
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			sb.t.Fatalf("log --json line %q: %v", l, err)
		}
		e.Line = l
		evs = append(evs, e)
	}
	return r.stdout, evs
}

// verifyReport is one writer's report in `verify --json`.
type verifyReport struct {
	Writer  string `json:"writer"`
	OK      bool   `json:"ok"`
	Entries int64  `json:"entries"`
	Break   *struct {
		Kind   string `json:"kind"`
		Seq    int64  `json:"seq"`
		Commit string `json:"commit"`
		Blob   string `json:"blob"`
		Detail string `json:"detail"`
	} `json:"break"`
}

// verifyDoc is the one JSON document `verify --json` prints.
type verifyDoc struct {
	OK       bool           `json:"ok"`
	Summary  string         `json:"summary"`
	Writers  []verifyReport `json:"writers"`
	Findings []struct {
		Kind   string `json:"kind"`
		Writer string `json:"writer"`
		Detail string `json:"detail"`
	} `json:"findings"`
}

// verify runs `verify --json` and returns the reports by writer and the
// exit code.
func (sb *sandbox) verify(dir string, args ...string) (map[string]verifyReport, int) {
	sb.t.Helper()
	r := sb.run(dir, append([]string{"verify", "--json"}, args...)...)
	if r.code != 0 && r.code != 1 {
		sb.t.Fatalf("verify --json: exit %d\n%s", r.code, r.stderr)
	}
	var doc verifyDoc
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		sb.t.Fatalf("verify --json: not one JSON document: %v\n%s", err, r.stdout)
	}
	if doc.OK != (r.code == 0) {
		sb.t.Errorf("verify --json: ok=%v but exit %d", doc.OK, r.code)
	}
	out := map[string]verifyReport{}
	for _, rep := range doc.Writers {
		if rep.OK != (rep.Break == nil) {
			sb.t.Errorf("verify --json: ok=%v but break %+v", rep.OK, rep.Break)
		}
		out[rep.Writer] = rep
	}
	return out, r.code
}

// verifyAllOK fails unless every writer verifies (exit 0) and returns the
// entries per writer.
func (sb *sandbox) verifyAllOK(dir string) map[string]int64 {
	sb.t.Helper()
	reps, code := sb.verify(dir)
	n := map[string]int64{}
	for w, r := range reps {
		if !r.OK {
			sb.t.Errorf("verify in %s: writer %s: %+v", dir, w, *r.Break)
		}
		n[w] = r.Entries
	}
	if code != 0 {
		sb.t.Fatalf("verify in %s: exit %d", dir, code)
	}
	return n
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// catFile returns a blob's bytes as git reads them.
func (sb *sandbox) catFile(dir, id string) []byte {
	sb.t.Helper()
	if typ := strings.TrimSpace(sb.git(dir, "cat-file", "-t", id)); typ != "blob" {
		sb.t.Fatalf("%s is a %s", id, typ)
	}
	out, errOut, err := sb.gitRaw(dir, nil, "cat-file", "-p", id)
	if err != nil {
		sb.t.Fatalf("git cat-file -p %s: %v %s", id, err, errOut)
	}
	return out
}

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// TestE2ERoundTrip records awkward contents through the binary and checks
// them with git: byte-exact cat-file, fsck; then gc with the index
// deleted, push to a bare repository, clone --mirror and fetch: verify is
// OK everywhere and log returns the same events.
func TestE2ERoundTrip(t *testing.T) {
	sb := newSandbox(t)
	repo := sb.initRepo("repo")
	all256 := make([]byte, 256)
	for i := range all256 {
		all256[i] = byte(i)
	}
	big := make([]byte, 256<<10)
	rand.Read(big)
	files := map[string][]byte{
		"bin/all256.bin":    all256,
		"bin/big.bin":       big,
		"bin/nul.dat":       []byte("\x00a\x00\x00b\x00"),
		"text/empty.txt":    {},
		"text/invalid.txt":  []byte("caf\xe9 \xff\xfe\xc3\x28 surrogate \xed\xa0\x80 end\n"),
		"text/crlf.txt":     []byte("one\r\ntwo\r\n"),
		"text/hello.txt":    []byte("hello\n"),
		"text/no-final-eol": []byte("no eol"),
	}
	var names []string
	for n, c := range files {
		writeFile(t, filepath.Join(repo, n), c)
		names = append(names, n)
	}
	sort.Strings(names)
	// One batch with every file, then one batch per file on another
	// writer, from a subdirectory, with a session and a subagent.
	sb.ok(repo, append([]string{"record", "--op", "read", "--writer", "alpha"}, names...)...)
	for _, n := range names {
		sb.ok(filepath.Join(repo, "text"), "record", "--op", "edit", "--session", "sess-1", "--agent", "sub-1", filepath.Join("..", n))
	}
	logBefore, evs := sb.log(repo)
	if len(evs) != 2*len(names) {
		t.Fatalf("log has %d events, want %d:\n%s", len(evs), 2*len(names), logBefore)
	}
	writers := map[string]int{}
	for _, e := range evs {
		writers[e.Writer]++
		c, ok := files[e.Path]
		if !ok {
			t.Fatalf("event path %q is not a recorded file", e.Path)
		}
		if e.Bytes != int64(len(c)) || e.Blob != gitstore.BlobID(c) {
			t.Errorf("%s: blob %s bytes %d", e.Path, e.Blob, e.Bytes)
		}
		if got := sb.catFile(repo, e.Blob); !bytes.Equal(got, c) {
			t.Errorf("%s: git cat-file -p returns other bytes (%d vs %d)", e.Path, len(got), len(c))
		}
		if got := sb.ok(repo, "cat", e.Blob).stdout; got != string(c) {
			t.Errorf("%s: git lossless cat returns other bytes", e.Path)
		}
	}
	clone, err := os.ReadFile(filepath.Join(repo, ".git", "lossless", "clone"))
	if err != nil {
		t.Fatal(err)
	}
	sessWriter := "cli-" + strings.TrimSpace(string(clone)) + "-sess-1"
	if writers["alpha"] != len(names) || writers[sessWriter] != len(names) {
		t.Errorf("events per writer: %v (want alpha and %s)", writers, sessWriter)
	}
	sb.fsck(repo)
	if n := sb.verifyAllOK(repo); n["alpha"] != int64(len(names)) || n[sessWriter] != int64(len(names)) {
		t.Errorf("verify entries %v", n)
	}

	// gc packs everything and prunes what is unreachable; the index is a
	// cache: delete it.
	sb.git(repo, "gc", "-q", "--prune=now")
	if err := os.RemoveAll(filepath.Join(repo, ".git", "lossless", "index")); err != nil {
		t.Fatal(err)
	}
	if cnt := sb.git(repo, "count-objects", "-v"); !strings.HasPrefix(cnt, "count: 0\n") {
		t.Errorf("loose objects after gc:\n%s", cnt)
	}
	sb.fsck(repo)
	sb.verifyAllOK(repo)
	if got, _ := sb.log(repo); got != logBefore {
		t.Fatalf("log after gc differs:\n%s\nwant:\n%s", got, logBefore)
	}
	for _, e := range evs {
		if got := sb.catFile(repo, e.Blob); !bytes.Equal(got, files[e.Path]) {
			t.Errorf("%s: changed by gc", e.Path)
		}
	}
	sb.ok(repo, "reindex")
	if got, _ := sb.log(repo); got != logBefore {
		t.Fatalf("log after reindex differs")
	}

	// Transport with plain git.
	bare := sb.initRepo("remote.git", "--bare")
	sb.git(repo, "push", "-q", bare, "refs/lossless/*:refs/lossless/*")
	sb.git(sb.root, "clone", "-q", "--mirror", bare, filepath.Join(sb.root, "mirror.git"))
	fresh := sb.initRepo("fresh")
	sb.git(fresh, "fetch", "-q", bare, "refs/lossless/*:refs/lossless/*")
	for _, dir := range []string{bare, filepath.Join(sb.root, "mirror.git"), fresh} {
		sb.fsck(dir)
		if n := sb.verifyAllOK(dir); len(n) != 2 {
			t.Errorf("%s: writers %v", dir, n)
		}
		if got, _ := sb.log(dir); got != logBefore {
			t.Errorf("log in %s differs:\n%s\nwant:\n%s", dir, got, logBefore)
		}
		for _, e := range evs {
			if got := sb.ok(dir, "cat", e.Blob).stdout; got != string(files[e.Path]) {
				t.Errorf("%s: cat in %s differs", e.Path, dir)
			}
		}
	}
	// The fetched copy records, but on writers of its own: alpha is the
	// first clone's (gitstore FORMAT.md section 2).
	writeFile(t, filepath.Join(fresh, "new.txt"), []byte("after fetch\n"))
	if r := sb.run(fresh, "record", "--op", "read", "--writer", "alpha", "new.txt"); r.code == 0 || !strings.Contains(r.stderr, "owned by another clone") {
		t.Fatalf("record into the first clone's writer from a copy: exit %d\n%s", r.code, r.stderr)
	}
	sb.ok(fresh, "record", "--op", "read", "new.txt")
	if n := sb.verifyAllOK(fresh); n["alpha"] != int64(len(names)) || len(n) != 3 {
		t.Errorf("fresh after record: %v", n)
	}
	sb.fsck(fresh)
}

// refFiles lists the files under dir (relative), for "nothing was written
// here" checks.
func refFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	})
	sort.Strings(out)
	return out
}

// TestE2EDiscovery records from a linked worktree, a submodule, a bare
// repository, outside any repository and from a repository go-git cannot
// write (reftable), and checks with git where each event landed.
func TestE2EDiscovery(t *testing.T) {
	t.Run("worktree", func(t *testing.T) {
		sb := newSandbox(t)
		main := sb.initRepo("main")
		writeFile(t, filepath.Join(main, "README"), []byte("main\n"))
		sb.git(main, "add", "README")
		sb.git(main, "commit", "-q", "-m", "init")
		wt := filepath.Join(sb.root, "wt")
		sb.git(main, "worktree", "add", "-q", "-b", "feature", wt)
		writeFile(t, filepath.Join(wt, "src", "f.go"), []byte("package f\n"))
		sb.ok(filepath.Join(wt, "src"), "record", "--op", "read", "--writer", "wt-writer", "f.go")
		sb.ok(sb.root, "-C", wt, "record", "--op", "edit", "--writer", "wt-writer", "README")

		for _, dir := range []string{main, wt} {
			refs := sb.git(dir, "for-each-ref", "--format=%(refname)", "refs/lossless")
			if refs != "refs/lossless/wt-writer\n" {
				t.Errorf("git for-each-ref in %s: %q", dir, refs)
			}
		}
		if n := sb.git(main, "rev-list", "--count", "refs/lossless/wt-writer"); n != "2\n" {
			t.Errorf("%s batches", n)
		}
		wtGitDir := filepath.Join(main, ".git", "worktrees", "wt")
		if _, err := os.Stat(wtGitDir); err != nil {
			t.Fatalf("worktree git dir: %v", err)
		}
		for _, f := range refFiles(t, wtGitDir) {
			if strings.HasPrefix(f, "refs") || strings.HasPrefix(f, "lossless") || strings.Contains(f, "lossless") {
				t.Errorf("written under .git/worktrees/wt: %s", f)
			}
		}
		_, evs := sb.log(main)
		if len(evs) != 2 || evs[0].Path != "src/f.go" || evs[1].Path != "README" {
			t.Fatalf("log from the main repository: %+v", evs)
		}
		if got := sb.catFile(main, evs[0].Blob); string(got) != "package f\n" {
			t.Errorf("blob from main: %q", got)
		}
		sb.verifyAllOK(wt)
		sb.fsck(main)
	})

	t.Run("submodule", func(t *testing.T) {
		sb := newSandbox(t)
		origin := sb.initRepo("sub-origin")
		writeFile(t, filepath.Join(origin, "lib.c"), []byte("int x;\n"))
		sb.git(origin, "add", "lib.c")
		sb.git(origin, "commit", "-q", "-m", "lib")
		super := sb.initRepo("super")
		sb.git(super, "-c", "protocol.file.allow=always", "submodule", "--quiet", "add", origin, "sub")
		sub := filepath.Join(super, "sub")
		writeFile(t, filepath.Join(sub, "notes.txt"), []byte("in the submodule\n"))
		sb.ok(sub, "record", "--op", "read", "--writer", "sub-writer", "notes.txt", "lib.c")

		if refs := sb.git(sub, "for-each-ref", "--format=%(refname)", "refs/lossless"); refs != "refs/lossless/sub-writer\n" {
			t.Errorf("for-each-ref inside the submodule: %q", refs)
		}
		if refs := sb.git(super, "for-each-ref", "refs/lossless"); refs != "" {
			t.Errorf("the superproject got refs: %q", refs)
		}
		modDir := filepath.Join(super, ".git", "modules", "sub")
		if got := strings.TrimSpace(sb.git(sub, "rev-parse", "--absolute-git-dir")); got != modDir {
			t.Fatalf("setup: submodule git dir %s", got)
		}
		if _, err := os.Stat(filepath.Join(modDir, "refs", "lossless", "sub-writer")); err != nil {
			t.Errorf("ref not in the submodule's git dir: %v", err)
		}
		if _, err := os.Stat(filepath.Join(super, ".git", "refs", "lossless")); err == nil {
			t.Errorf("superproject has refs/lossless")
		}
		_, evs := sb.log(sub)
		if len(evs) != 2 || evs[0].Path != "notes.txt" || evs[1].Path != "lib.c" {
			t.Fatalf("log in the submodule: %+v", evs)
		}
		if got := sb.catFile(sub, evs[1].Blob); string(got) != "int x;\n" {
			t.Errorf("blob: %q", got)
		}
		sb.verifyAllOK(sub)
		sb.fsck(sub)
	})

	t.Run("bare", func(t *testing.T) {
		sb := newSandbox(t)
		bare := sb.initRepo("bare.git", "--bare")
		f := filepath.Join(sb.root, "outside.txt")
		writeFile(t, f, []byte("seen from a bare repository\n"))
		// -C is a global flag, before the command, as with git.
		sb.ok(sb.root, "-C", bare, "record", "--op", "read", "--writer", "b", f)
		r := sb.ok(sb.root, "-C"+bare, "record", "--op", "read", "--writer", "b", f)
		if !strings.Contains(r.stdout, "as b#2") {
			t.Errorf("record output: %q", r.stdout)
		}
		if refs := sb.git(bare, "for-each-ref", "--format=%(refname)", "refs/lossless"); refs != "refs/lossless/b\n" {
			t.Errorf("for-each-ref in the bare repository: %q", refs)
		}
		_, evs := sb.log(bare)
		if len(evs) != 2 || evs[0].Path != f {
			t.Fatalf("log: %+v", evs)
		}
		if got := sb.catFile(bare, evs[0].Blob); string(got) != "seen from a bare repository\n" {
			t.Errorf("blob: %q", got)
		}
		sb.verifyAllOK(bare)
		sb.fsck(bare)
	})

	t.Run("outside", func(t *testing.T) {
		sb := newSandbox(t)
		dir := filepath.Join(sb.root, "plain", "dir")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if _, _, err := sb.gitRaw(dir, nil, "rev-parse", "--git-dir"); err == nil {
			t.Fatalf("setup: %s is inside a git repository", dir)
		}
		writeFile(t, filepath.Join(dir, "f.txt"), []byte("no repository here\n"))
		sb.ok(dir, "record", "--op", "read", "--writer", "emb", "f.txt")
		archive := filepath.Join(sb.data, "git-lossless", "archive.git")
		for _, d := range []string{archive, filepath.Dir(archive)} {
			st, err := os.Stat(d)
			if err != nil {
				t.Fatalf("embedded archive: %v", err)
			}
			if st.Mode().Perm() != 0o700 {
				t.Errorf("%s has mode %v, want 0700", d, st.Mode().Perm())
			}
		}
		if refs := sb.git(archive, "for-each-ref", "--format=%(refname)", "refs/lossless"); refs != "refs/lossless/emb\n" {
			t.Errorf("for-each-ref in the embedded archive: %q", refs)
		}
		if bare := strings.TrimSpace(sb.git(archive, "rev-parse", "--is-bare-repository")); bare != "true" {
			t.Errorf("embedded archive is not bare: %s", bare)
		}
		_, evs := sb.log(dir)
		want := filepath.Join(dir, "f.txt") // no work tree: absolute
		if len(evs) != 1 || evs[0].Path != want {
			t.Fatalf("log outside: %+v", evs)
		}
		if got := sb.catFile(archive, evs[0].Blob); string(got) != "no repository here\n" {
			t.Errorf("blob: %q", got)
		}
		// A second record (the archive exists now) and verify from
		// elsewhere outside any repository.
		sb.ok(dir, "record", "--op", "edit", "--writer", "emb", "f.txt")
		if n := sb.verifyAllOK(sb.home); n["emb"] != 2 {
			t.Errorf("verify: %v", n)
		}
		sb.fsck(archive)
	})

	t.Run("reftable", func(t *testing.T) {
		sb := newSandbox(t)
		repo := sb.initRepo("rt")
		writeFile(t, filepath.Join(repo, "a.txt"), []byte("a\n"))
		cfgPath := filepath.Join(repo, ".git", "config")
		cfg, err := os.ReadFile(cfgPath)
		if err != nil {
			t.Fatal(err)
		}
		cfg = bytes.Replace(cfg, []byte("repositoryformatversion = 0"), []byte("repositoryformatversion = 1"), 1)
		cfg = append(cfg, "[extensions]\n\trefStorage = reftable\n"...)
		if err := os.WriteFile(cfgPath, cfg, 0o644); err != nil {
			t.Fatal(err)
		}
		sb.recordGoesToEmbedded(t, repo, "rt", "reftable")
	})

	// A SHA-256 repository made by real git: go-git v5 cannot write one
	// safely, so the archive goes to the embedded default, with a warning,
	// and the repository's objects and refs are left as they were.
	t.Run("sha256", func(t *testing.T) {
		sb := newSandbox(t)
		repo := sb.initRepo("s256", "--object-format=sha256")
		writeFile(t, filepath.Join(repo, "a.txt"), []byte("a\n"))
		if got := strings.TrimSpace(sb.git(repo, "rev-parse", "--show-object-format")); got != "sha256" {
			t.Fatalf("git made a %q repository", got)
		}
		objsBefore := sb.git(repo, "count-objects", "-v")
		sb.recordGoesToEmbedded(t, repo, "s256", "sha256")
		if objsAfter := sb.git(repo, "count-objects", "-v"); objsAfter != objsBefore {
			t.Errorf("the sha256 repository's objects changed:\nbefore %s\nafter  %s", objsBefore, objsAfter)
		}
		sb.fsck(repo)
	})
}

// recordGoesToEmbedded records a.txt of repo, a repository go-git cannot
// write safely (why names the reason the warning must give), and checks
// that the event went to the embedded archive with a one-line warning and
// that repo's refs were left as they were.
func (sb *sandbox) recordGoesToEmbedded(t *testing.T, repo, writer, why string) {
	t.Helper()
	before := refFiles(t, filepath.Join(repo, ".git"))
	r := sb.ok(repo, "record", "--op", "read", "--writer", writer, "a.txt")
	archive := filepath.Join(sb.data, "git-lossless", "archive.git")
	if !strings.Contains(r.stderr, "warning:") || !strings.Contains(r.stderr, why) || !strings.Contains(r.stderr, archive) {
		t.Errorf("no warning naming %s and the embedded archive:\n%s", why, r.stderr)
	}
	if n := strings.Count(strings.TrimSpace(r.stderr), "\n"); n != 0 {
		t.Errorf("warning is not one line:\n%s", r.stderr)
	}
	if after := refFiles(t, filepath.Join(repo, ".git")); strings.Join(after, "\n") != strings.Join(before, "\n") {
		t.Errorf("the %s repository's refs changed:\nbefore %v\nafter  %v", why, before, after)
	}
	if refs := sb.git(archive, "for-each-ref", "--format=%(refname)", "refs/lossless"); refs != "refs/lossless/"+writer+"\n" {
		t.Errorf("embedded archive refs: %q", refs)
	}
	_, evs := sb.log(repo)
	// In the embedded archive there is no work tree: paths are absolute.
	if len(evs) != 1 || evs[0].Path != filepath.Join(repo, "a.txt") {
		t.Fatalf("log: %+v", evs)
	}
	if got := sb.catFile(archive, evs[0].Blob); string(got) != "a\n" {
		t.Errorf("blob: %q", got)
	}
	sb.fsck(archive)
}

// tamperArchive builds a fresh archive: writer w with batches [a], [b c],
// [d] (seq 1..4) and writer other (a control that must stay OK), and
// returns the repository and w's commits, oldest first.
func tamperArchive(t *testing.T) (*sandbox, string, []string) {
	t.Helper()
	sb := newSandbox(t)
	repo := sb.initRepo("repo")
	for _, n := range []string{"a", "b", "c", "d", "e", "f"} {
		writeFile(t, filepath.Join(repo, n+".txt"), []byte("content of "+n+"\n"+strings.Repeat(n, 100)+"\n"))
	}
	sb.ok(repo, "record", "-q", "--op", "read", "--writer", "w", "a.txt")
	sb.ok(repo, "record", "-q", "--op", "read", "--writer", "w", "b.txt", "c.txt")
	sb.ok(repo, "record", "-q", "--op", "read", "--writer", "w", "d.txt")
	sb.ok(repo, "record", "-q", "--op", "read", "--writer", "other", "e.txt", "f.txt")
	commits := strings.Fields(sb.git(repo, "rev-list", "--reverse", "refs/lossless/w"))
	if len(commits) != 3 {
		t.Fatalf("w has %d commits", len(commits))
	}
	if n := sb.verifyAllOK(repo); n["w"] != 4 || n["other"] != 2 {
		t.Fatalf("fresh archive: %v", n)
	}
	return sb, repo, commits
}

// expectBreak runs verify --json and checks that writer broke with kind
// at seq (0: any), every other writer is OK, and the exit code is 1.
func expectBreak(t *testing.T, sb *sandbox, repo, writer, kind string, seq int64) verifyReport {
	t.Helper()
	reps, code := sb.verify(repo)
	if code != 1 {
		t.Errorf("verify exit %d, want 1", code)
	}
	rep, ok := reps[writer]
	if !ok {
		t.Fatalf("verify reported no writer %s: %v", writer, reps)
	}
	if rep.OK || rep.Break == nil {
		t.Fatalf("verify: writer %s OK, want %s", writer, kind)
	}
	if rep.Break.Kind != kind || (seq != 0 && rep.Break.Seq != seq) {
		t.Errorf("verify: writer %s broke with %s at %d (%s), want %s at %d", writer, rep.Break.Kind, rep.Break.Seq, rep.Break.Detail, kind, seq)
	}
	for w, r := range reps {
		if w != writer && !r.OK {
			t.Errorf("verify: writer %s also broke: %+v", w, *r.Break)
		}
	}
	// The text report names the same kind, and says BREAK.
	tr := sb.run(repo, "verify", writer)
	if tr.code != 1 || !strings.Contains(tr.stdout, "BREAK  "+writer+": "+kind) {
		t.Errorf("verify %s (text): exit %d\n%s", writer, tr.code, tr.stdout)
	}
	return rep
}

// loosePath is the file of a loose object.
func loosePath(repo, id string) string {
	return filepath.Join(repo, ".git", "objects", id[:2], id[2:])
}

// rewriteLoose replaces a loose object file's bytes (objects are 0444).
func rewriteLoose(t *testing.T, repo, id string, raw []byte) {
	t.Helper()
	p := loosePath(repo, id)
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, raw, 0o444); err != nil {
		t.Fatal(err)
	}
	os.Chmod(p, 0o444)
}

func deflate(b []byte) []byte {
	var buf bytes.Buffer
	zw := zlib.NewWriter(&buf)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

// blobOf returns the blob w's event for path names.
func blobOf(t *testing.T, sb *sandbox, repo, path string) string {
	t.Helper()
	_, evs := sb.log(repo, "--writer", "w", "--path", path)
	if len(evs) != 1 || evs[0].Blob == "" {
		t.Fatalf("events for %s: %+v", path, evs)
	}
	return evs[0].Blob
}

// rebuild re-creates commit c with events.jsonl replaced by lines and
// parent replaced by parent, with git plumbing only; the message (and so
// the seal trailers) is kept.
func rebuild(t *testing.T, sb *sandbox, repo, c, parent string, lines []string) string {
	t.Helper()
	body := strings.Join(lines, "\n") + "\n"
	ev := strings.TrimSpace(sb.gitIn(repo, []byte(body), "hash-object", "-w", "--stdin"))
	var tree strings.Builder
	for _, l := range strings.Split(strings.TrimSuffix(sb.git(repo, "ls-tree", c), "\n"), "\n") {
		if strings.HasSuffix(l, "\tevents.jsonl") {
			fmt.Fprintf(&tree, "100644 blob %s\tevents.jsonl\n", ev)
		} else {
			tree.WriteString(l + "\n")
		}
	}
	treeID := strings.TrimSpace(sb.gitIn(repo, []byte(tree.String()), "mktree"))
	return recommit(t, sb, repo, c, treeID, parent)
}

// recommit writes a commit with c's message on treeID and parent.
func recommit(t *testing.T, sb *sandbox, repo, c, treeID, parent string) string {
	t.Helper()
	msg := sb.git(repo, "log", "-1", "--format=%B", c)
	args := []string{"commit-tree", treeID}
	if parent != "" {
		args = append(args, "-p", parent)
	}
	return strings.TrimSpace(sb.gitIn(repo, []byte(msg), append(args, "-F", "-")...))
}

func eventsOf(t *testing.T, sb *sandbox, repo, c string) []string {
	t.Helper()
	return strings.Split(strings.TrimSuffix(sb.git(repo, "show", c+":events.jsonl"), "\n"), "\n")
}

// TestE2ETamper damages fresh archives the ways an attacker or bit rot
// would, with plain git and file writes, and expects verify --json to name
// the right kind of break and exit 1. A clean archive never breaks.
func TestE2ETamper(t *testing.T) {
	t.Run("content-changed/rewritten-object", func(t *testing.T) {
		sb, repo, _ := tamperArchive(t)
		id := blobOf(t, sb, repo, "b.txt")
		orig := sb.catFile(repo, id)
		changed := append([]byte(nil), orig...)
		changed[0] ^= 0x20 // one flipped bit
		rewriteLoose(t, repo, id, deflate([]byte(fmt.Sprintf("blob %d\x00%s", len(changed), changed))))
		if got := sb.catFile(repo, id); !bytes.Equal(got, changed) {
			t.Fatalf("setup: git reads %q", got)
		}
		sb.fsckFails(repo, "mismatch")
		rep := expectBreak(t, sb, repo, "w", "content-changed", 2)
		if rep.Break.Blob != id {
			t.Errorf("break names blob %s, want %s", rep.Break.Blob, id)
		}
	})
	t.Run("content-changed/corrupt-zlib", func(t *testing.T) {
		sb, repo, _ := tamperArchive(t)
		id := blobOf(t, sb, repo, "b.txt")
		raw, err := os.ReadFile(loosePath(repo, id))
		if err != nil {
			t.Fatal(err)
		}
		raw[len(raw)/2] ^= 0xff
		rewriteLoose(t, repo, id, raw)
		if _, _, err := sb.gitRaw(repo, nil, "cat-file", "-p", id); err == nil {
			t.Fatalf("setup: git still reads the corrupted object")
		}
		sb.fsckFails(repo, "")
		expectBreak(t, sb, repo, "w", "content-changed", 2)
	})
	t.Run("blob-missing", func(t *testing.T) {
		sb, repo, _ := tamperArchive(t)
		id := blobOf(t, sb, repo, "c.txt")
		if err := os.Remove(loosePath(repo, id)); err != nil {
			t.Fatal(err)
		}
		sb.fsckFails(repo, id)
		rep := expectBreak(t, sb, repo, "w", "blob-missing", 3)
		if rep.Break.Blob != id {
			t.Errorf("break names blob %s, want %s", rep.Break.Blob, id)
		}
	})
	t.Run("entry-edited", func(t *testing.T) {
		sb, repo, commits := tamperArchive(t)
		lines := eventsOf(t, sb, repo, commits[1])
		if len(lines) != 2 || strings.Count(lines[0], `"op":"read"`) != 1 {
			t.Fatalf("setup: batch 2 lines %q", lines)
		}
		lines[0] = strings.Replace(lines[0], `"op":"read"`, `"op":"edit"`, 1)
		c2 := rebuild(t, sb, repo, commits[1], commits[0], lines)
		c3 := recommit(t, sb, repo, commits[2], strings.TrimSpace(sb.git(repo, "rev-parse", commits[2]+"^{tree}")), c2)
		sb.git(repo, "update-ref", "refs/lossless/w", c3, commits[2])
		sb.fsck(repo) // a well-formed git history: only the seal tells
		expectBreak(t, sb, repo, "w", "entry-edited", 2)
		// Without this machine's witness, the chain alone catches it.
		if err := os.RemoveAll(filepath.Join(repo, ".git", "lossless", "witness")); err != nil {
			t.Fatal(err)
		}
		expectBreak(t, sb, repo, "w", "entry-edited", 2)
	})
	t.Run("entry-edited/last-in-batch", func(t *testing.T) {
		sb, repo, commits := tamperArchive(t)
		lines := eventsOf(t, sb, repo, commits[2])
		lines[0] = strings.Replace(lines[0], `"view":"full"`, `"view":"lines:1-2"`, 1)
		c3 := rebuild(t, sb, repo, commits[2], commits[1], lines)
		sb.git(repo, "update-ref", "refs/lossless/w", c3)
		expectBreak(t, sb, repo, "w", "entry-edited", 4)
	})
	t.Run("entry-reordered", func(t *testing.T) {
		sb, repo, commits := tamperArchive(t)
		lines := eventsOf(t, sb, repo, commits[1])
		lines[0], lines[1] = lines[1], lines[0]
		c2 := rebuild(t, sb, repo, commits[1], commits[0], lines)
		c3 := recommit(t, sb, repo, commits[2], strings.TrimSpace(sb.git(repo, "rev-parse", commits[2]+"^{tree}")), c2)
		sb.git(repo, "update-ref", "refs/lossless/w", c3)
		sb.fsck(repo)
		expectBreak(t, sb, repo, "w", "entry-reordered", 2)
	})
	t.Run("chain-forked/append-after-reset", func(t *testing.T) {
		sb, repo, commits := tamperArchive(t)
		sb.git(repo, "update-ref", "refs/lossless/w", commits[0])
		writeFile(t, filepath.Join(repo, "x.txt"), []byte("another history\n"))
		r := sb.ok(repo, "record", "--op", "read", "--writer", "w", "x.txt")
		if !strings.Contains(r.stdout, "as w#2") {
			t.Fatalf("record after reset: %q", r.stdout)
		}
		// The forked chain is internally consistent: only the witness
		// (the heads this machine saw) can tell.
		if reps, code := sb.verify(repo, "--no-content"); code != 1 || reps["w"].OK {
			t.Errorf("verify --no-content: exit %d %+v", code, reps["w"])
		}
		// The witness holds the heads seen after each append (seq 1, 3,
		// 4): the first one the new chain contradicts is seq 3.
		expectBreak(t, sb, repo, "w", "chain-forked", 3)
	})
	t.Run("chain-forked/rollback", func(t *testing.T) {
		sb, repo, commits := tamperArchive(t)
		sb.git(repo, "update-ref", "refs/lossless/w", commits[0])
		expectBreak(t, sb, repo, "w", "chain-forked", 2)
	})
	t.Run("unsealed/foreign-commit", func(t *testing.T) {
		sb, repo, _ := tamperArchive(t)
		blob := strings.TrimSpace(sb.gitIn(repo, []byte("not an archive\n"), "hash-object", "-w", "--stdin"))
		tree := strings.TrimSpace(sb.gitIn(repo, []byte("100644 blob "+blob+"\tREADME\n"), "mktree"))
		c := strings.TrimSpace(sb.gitIn(repo, []byte("hand-made commit\n"), "commit-tree", tree, "-F", "-"))
		sb.git(repo, "update-ref", "refs/lossless/hand", c)
		expectBreak(t, sb, repo, "hand", "unsealed", 0)
	})
	t.Run("unsealed/on-top-of-a-chain", func(t *testing.T) {
		sb, repo, commits := tamperArchive(t)
		tree := strings.TrimSpace(sb.git(repo, "rev-parse", commits[2]+"^{tree}"))
		c := strings.TrimSpace(sb.gitIn(repo, []byte("sneaky commit without trailers\n"), "commit-tree", tree, "-p", commits[2], "-F", "-"))
		sb.git(repo, "update-ref", "refs/lossless/w", c)
		expectBreak(t, sb, repo, "w", "unsealed", 5)
	})
	t.Run("clean", func(t *testing.T) {
		sb := newSandbox(t)
		repo := sb.initRepo("repo")
		writeFile(t, filepath.Join(repo, ".env"), []byte("TOKEN=x\n"))
		writeFile(t, filepath.Join(repo, "empty"), nil)
		total := 0
		for round := 0; round < 3; round++ {
			for w := 0; w < 6; w++ {
				var paths []string
				for f := 0; f <= w%3; f++ {
					p := fmt.Sprintf("r%d/w%d/f%d.txt", round, w, f)
					writeFile(t, filepath.Join(repo, p), []byte(fmt.Sprintf("round %d writer %d file %d\n", round, w, f)))
					paths = append(paths, p)
				}
				if w == 0 {
					paths = append(paths, ".env", "empty")
				}
				sb.ok(repo, append([]string{"record", "-q", "--op", "read", "--writer", fmt.Sprintf("writer-%d", w)}, paths...)...)
				total += len(paths)
			}
			if round == 1 {
				sb.git(repo, "gc", "-q", "--prune=now") // packed and loose mixed
			}
		}
		n := sb.verifyAllOK(repo)
		sum := int64(0)
		for _, v := range n {
			sum += v
		}
		if len(n) != 6 || sum != int64(total) {
			t.Errorf("verify: %v, want 6 writers, %d entries", n, total)
		}
		r := sb.ok(repo, "verify")
		if !strings.Contains(r.stdout, "6 writers, 6 ok, 0 broken") {
			t.Errorf("verify text:\n%s", r.stdout)
		}
		sb.ok(repo, "verify", "--no-content")
		sb.fsck(repo)
	})
}

// TestE2EDenyList plants a unique secret in every denied file, records
// them with the near-misses, and then searches every object (loose,
// packed, before and after gc) and every byte under .git for it.
func TestE2EDenyList(t *testing.T) {
	sb := newSandbox(t)
	repo := sb.initRepo("repo")
	secret := "LOSSLESS-SECRET-" + randomHex(t, 12)
	sb.setenv("LOSSLESS_ARCHIVE_EXCLUDE", "*.private, internal/**")
	sb.git(repo, "config", "--add", "lossless.exclude", "*.vault")
	sb.git(repo, "config", "--add", "lossless.exclude", "confidential/*.yml")

	denied := []string{
		// defaults
		".env", ".env.local", "config/.env.production", ".envrc",
		"tls/server.pem", "tls/server.key", "cert.p12", "cert.pfx", "release.keystore", "app.jks", "pub.asc",
		"keys/id_rsa", "keys/id_ed25519.pub", "id_ecdsa",
		"secrets.json", "conf/secrets.yaml", "secret_prod.txt",
		".ssh/config", ".aws/credentials", ".aws/config", ".gnupg/pubring.kbx", ".kube/config",
		".npmrc", ".netrc", ".pgpass", ".git-credentials", ".htpasswd", "credentials.json",
		// LOSSLESS_ARCHIVE_EXCLUDE
		"notes.private", "internal/deep/plan.md",
		// git config lossless.exclude, two values
		"db.vault", "confidential/prod.yml",
	}
	nearMisses := []string{"environment.ts", "keyboard.ts", "monkey.ts", "envelope.test.ts", "notes.md",
		"confidential/prod.yaml", "vault.txt", "internal.md", "secretary.md", "my.env.d/readme.md"}
	content := map[string][]byte{}
	for i, p := range denied {
		c := []byte(fmt.Sprintf("%s-%d: password for %s\n", secret, i, p))
		writeFile(t, filepath.Join(repo, p), c)
		content[p] = c
	}
	for _, p := range nearMisses {
		c := []byte("export const value = " + strconv.Quote(p) + "\n")
		writeFile(t, filepath.Join(repo, p), c)
		content[p] = c
	}
	// Symlinks with innocent names that lead to secrets: a file, a
	// directory, and a file outside the repository.
	homeKey := filepath.Join(sb.home, ".ssh", "id_ed25519")
	writeFile(t, homeKey, []byte(secret+"-home: PRIVATE KEY\n"))
	links := map[string]string{
		"innocent.txt":   ".env",
		"settings":       ".aws",
		"readme-key.md":  homeKey,
		"docs/howto.txt": "../.npmrc",
	}
	for l, target := range links {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(repo, l)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(repo, l)); err != nil {
			t.Fatal(err)
		}
	}
	// settings/config is denied only through its resolved path
	// (.aws/config): its own name matches nothing.
	deniedLinks := []string{"innocent.txt", "settings/config", "readme-key.md", "docs/howto.txt"}

	// Record them all in one batch, and again one by one on another writer.
	all := append(append(append([]string{}, denied...), nearMisses...), deniedLinks...)
	r := sb.ok(repo, append([]string{"record", "--op", "read", "--writer", "batch"}, all...)...)
	if got := strings.Count(r.stdout, "excluded: content withheld by the deny list"); got != len(denied)+len(deniedLinks) {
		t.Errorf("record reported %d excluded, want %d:\n%s", got, len(denied)+len(deniedLinks), r.stdout)
	}
	for _, p := range all {
		sb.ok(repo, "record", "-q", "--op", "edit", "--writer", "single", p)
	}

	_, evs := sb.log(repo)
	if len(evs) != 2*len(all) {
		t.Fatalf("log has %d events, want %d", len(evs), 2*len(all))
	}
	isDenied := map[string]bool{}
	for _, p := range append(append([]string{}, denied...), deniedLinks...) {
		isDenied[p] = true
	}
	for _, e := range evs {
		var raw map[string]json.RawMessage
		json.Unmarshal([]byte(e.Line), &raw)
		if isDenied[e.Path] {
			if !e.Excluded || e.Blob != "" || raw["blob"] != nil || raw["sha256"] != nil || raw["bytes"] != nil {
				t.Errorf("denied %s: %s", e.Path, e.Line)
			}
			continue
		}
		c, ok := content[e.Path]
		if !ok {
			t.Fatalf("unexpected event path %q", e.Path)
		}
		if e.Excluded || e.Blob == "" {
			t.Errorf("near-miss %s was denied: %s", e.Path, e.Line)
			continue
		}
		if got := sb.catFile(repo, e.Blob); !bytes.Equal(got, c) {
			t.Errorf("near-miss %s: archived %q", e.Path, got)
		}
	}
	sb.verifyAllOK(repo)
	sb.fsck(repo)

	// scan returns where the secret is found: any object git knows
	// (decompressed), any file under .git (raw, and inflated when it is a
	// loose object, so unreachable ones count too), and the output of the
	// read commands.
	scan := func(when string) (found []string) {
		t.Helper()
		// Every object git knows, decompressed (loose and packed).
		out, errOut, err := sb.gitRaw(repo, nil, "cat-file", "--batch-all-objects", "--batch")
		if err != nil {
			t.Fatalf("cat-file --batch-all-objects: %v %s", err, errOut)
		}
		if len(out) == 0 {
			t.Fatalf("%s: cat-file --batch-all-objects printed nothing", when)
		}
		if bytes.Contains(out, []byte(secret)) {
			found = append(found, "git cat-file --batch-all-objects")
		}
		// Every file under .git, raw, and inflated when it is a loose
		// object (so unreachable ones count too).
		files := 0
		err = filepath.WalkDir(filepath.Join(repo, ".git"), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			files++
			if bytes.Contains(b, []byte(secret)) {
				found = append(found, p)
			}
			rel, _ := filepath.Rel(filepath.Join(repo, ".git", "objects"), p)
			if parts := strings.Split(rel, string(filepath.Separator)); len(parts) == 2 && len(parts[0]) == 2 && len(parts[1]) == 38 {
				zr, err := zlib.NewReader(bytes.NewReader(b))
				if err != nil {
					t.Errorf("loose object %s: %v", p, err)
					return nil
				}
				body, err := io.ReadAll(zr)
				if err != nil {
					t.Errorf("loose object %s: %v", p, err)
				}
				if bytes.Contains(body, []byte(secret)) {
					found = append(found, "inflated "+p)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if files < 10 {
			t.Fatalf("%s: scanned only %d files", when, files)
		}
		for _, args := range [][]string{{"log", "--json"}, {"log"}, {"heads"}, {"verify"}} {
			if r := sb.run(repo, args...); strings.Contains(r.stdout+r.stderr, secret) {
				found = append(found, "git lossless "+strings.Join(args, " "))
			}
		}
		return found
	}
	if found := scan("before gc"); len(found) > 0 {
		t.Errorf("before gc the secret is in: %q", found)
	}
	sb.git(repo, "gc", "-q", "--prune=now")
	if _, err := os.Stat(filepath.Join(repo, ".git", "lossless", "index")); err != nil {
		t.Fatalf("no index to scan: %v", err)
	}
	if found := scan("after gc"); len(found) > 0 {
		t.Errorf("after gc the secret is in: %q", found)
	}
	sb.verifyAllOK(repo)

	// Control: the scan does find the secret where it is. An unreachable
	// loose object holding it shows in cat-file and as an inflated file;
	// packed by gc it shows in cat-file only.
	leak := strings.TrimSpace(sb.gitIn(repo, []byte("leaked "+secret+"\n"), "hash-object", "-w", "--stdin"))
	found := scan("control")
	if len(found) != 2 || found[0] != "git cat-file --batch-all-objects" || !strings.HasSuffix(found[1], filepath.Join(leak[:2], leak[2:])) {
		t.Errorf("control scan found %q", found)
	}
}

// TestE2EBadInput feeds record every kind of awkward path: each is either
// archived byte-exact or refused with one clear line and exit 1, never a
// panic; usage errors exit 2.
func TestE2EBadInput(t *testing.T) {
	sb := newSandbox(t)
	repo := sb.initRepo("repo")
	rec := func(args ...string) result {
		t.Helper()
		return sb.run(repo, append([]string{"record", "--op", "read", "--writer", "w"}, args...)...)
	}
	// archived checks that path was recorded byte-exact and returns its event.
	seen := 0
	archived := func(r result, path string, content []byte) logEvent {
		t.Helper()
		if r.code != 0 || r.stderr != "" {
			t.Fatalf("record %q: exit %d\n%s", path, r.code, r.stderr)
		}
		_, evs := sb.log(repo, "--writer", "w")
		if len(evs) != seen+1 {
			t.Fatalf("record %q: %d events, want %d", path, len(evs), seen+1)
		}
		seen++
		e := evs[len(evs)-1]
		if got := sb.catFile(repo, e.Blob); !bytes.Equal(got, content) {
			t.Errorf("%q: archived %q, want %q", path, got, content)
		}
		if e.Bytes != int64(len(content)) {
			t.Errorf("%q: bytes %d", path, e.Bytes)
		}
		return e
	}
	// refused checks exit 1, one error line per refused path naming it,
	// and nothing recorded.
	refused := func(r result, path, why string) {
		t.Helper()
		if r.code != 1 {
			t.Fatalf("record %q: exit %d, want 1\n%s", path, r.code, r.stderr)
		}
		lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
		if len(lines) != 2 || !strings.HasPrefix(lines[0], "git-lossless: error: "+path+": ") || !strings.Contains(lines[0], why) ||
			lines[1] != "git-lossless: error: 1 of 1 paths refused" {
			t.Errorf("record %q: stderr\n%s", path, r.stderr)
		}
		if _, evs := sb.log(repo, "--writer", "w"); len(evs) != seen {
			t.Errorf("record %q: something was recorded", path)
		}
	}

	refused(rec("missing.txt"), "missing.txt", "no such file")
	if err := os.Symlink("nowhere", filepath.Join(repo, "dangling")); err != nil {
		t.Fatal(err)
	}
	refused(rec("dangling"), "dangling", "no such file")
	if err := os.MkdirAll(filepath.Join(repo, "a dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	refused(rec("a dir"), "a dir", "is a directory")
	if err := os.Symlink("a dir", filepath.Join(repo, "dir-link")); err != nil {
		t.Fatal(err)
	}
	refused(rec("dir-link"), "dir-link", "is a directory")
	if err := syscall.Mkfifo(filepath.Join(repo, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	refused(rec("fifo"), "fifo", "not a regular file") // and no hang on open
	sockDir, err := os.MkdirTemp("", "gl-sock-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(sockDir)
	ln, err := net.Listen("unix", filepath.Join(sockDir, "s"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	sockPath := filepath.Join(sockDir, "s")
	refused(rec(sockPath), sockPath, "not a regular file")
	refused(rec("/dev/null"), "/dev/null", "not a regular file")

	locked := filepath.Join(repo, "locked.txt")
	writeFile(t, locked, []byte("mode 000\n"))
	if err := os.Chmod(locked, 0); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		// root reads a mode-000 file, so there is nothing to refuse: the
		// rule "archived byte-exact or refused" must hold as archived.
		t.Log("running as root: a chmod 000 file is readable, checking that it is archived byte-exact instead of refused")
		archived(rec("locked.txt"), "locked.txt", []byte("mode 000\n"))
	} else {
		refused(rec("locked.txt"), "locked.txt", "permission denied")
	}

	cases := []struct {
		name    string
		content []byte
	}{
		{"empty.txt", nil},
		{"binary.bin", []byte{0, 1, 2, 0xff, 0xfe, 0, 0x80, '\n', 0}},
		{"invalid-utf8.txt", []byte("caf\xe9 \xc3\x28 \xf0\x28\x8c\x28 \xed\xa0\x80\n")},
		{"with space.txt", []byte("spaces\n")},
		{"ünïcødé 日本語.md", []byte("non-ASCII name\n")},
		{"tab\tand\nnewline.txt", []byte("control characters in the name\n")},
		{"quote\"back\\slash.txt", []byte("json-special name\n")},
		{"-dash.txt", []byte("leading dash\n")},
	}
	for _, c := range cases {
		writeFile(t, filepath.Join(repo, c.name), c.content)
		arg := c.name
		if strings.HasPrefix(arg, "-") {
			arg = "./" + arg
		}
		e := archived(rec(arg), c.name, c.content)
		if e.Path != c.name || e.Path64 != "" {
			t.Errorf("%q recorded as path %q path64 %q", c.name, e.Path, e.Path64)
		}
	}
	// A file name that is not UTF-8: path64 carries the raw bytes.
	badName := "bad-\xff\xfe-\xc3\x28.bin"
	writeFile(t, filepath.Join(repo, badName), []byte("raw name\n"))
	e := archived(rec(badName), badName, []byte("raw name\n"))
	raw, err := base64.StdEncoding.DecodeString(e.Path64)
	if err != nil || string(raw) != badName {
		t.Errorf("path64 %q decodes to %q (%v), want %q", e.Path64, raw, err, badName)
	}
	if e.Path == badName || !strings.HasPrefix(e.Path, "bad-") {
		t.Errorf("path %q", e.Path)
	}
	ev, err := gitstore.ParseEvent([]byte(e.Line))
	if err != nil || ev.RawPath() != badName {
		t.Errorf("RawPath = %q, %v", ev.RawPath(), err)
	}
	// Outside the repository: recorded absolutely.
	outside := filepath.Join(sb.root, "outside file.txt")
	writeFile(t, outside, []byte("outside\n"))
	if e := archived(rec(outside), outside, []byte("outside\n")); e.Path != outside {
		t.Errorf("outside path recorded as %q", e.Path)
	}

	// Mixed: the good paths are archived, the bad ones refused, exit 1.
	writeFile(t, filepath.Join(repo, "good.txt"), []byte("good\n"))
	r := rec("good.txt", "missing-2.txt", "a dir")
	if r.code != 1 || !strings.Contains(r.stdout, "recorded read good.txt") ||
		!strings.Contains(r.stderr, "git-lossless: error: missing-2.txt: no such file\n") ||
		!strings.Contains(r.stderr, "git-lossless: error: a dir: is a directory; ") ||
		!strings.HasSuffix(r.stderr, "git-lossless: error: 2 of 3 paths refused\n") {
		t.Errorf("mixed record: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	seen++
	sb.verifyAllOK(repo)
	sb.fsck(repo)

	// Usage errors: exit 2, one error line, nothing recorded.
	usage := [][]string{
		{},
		{"--bogus"},
		{"frobnicate"},
		{"-C"},
		{"-C", filepath.Join(sb.root, "does-not-exist"), "log"},
		{"record", "good.txt"},
		{"record", "--op", "look", "good.txt"},
		{"record", "--op", "read"},
		{"record", "--op", "read", "--key", "k", "good.txt", "empty.txt"},
		{"record", "--op", "read", "--view", "some", "good.txt"},
		{"record", "--op", "read", "--writer", "../evil", "good.txt"},
		{"record", "--op", "read", "--writer", "x.lock", "good.txt"},
		{"record", "--op", "read", "--nope", "good.txt"},
		{"log", "extra"},
		{"log", "--since", "yesterday-ish"},
		{"log", "--limit", "-1"},
		{"cat"},
		{"cat", "a", "b"},
		{"verify", "--all", "w"},
		{"verify", "bad/name"},
		{"heads", "x"},
	}
	for _, args := range usage {
		r := sb.run(repo, args...)
		if r.code != 2 {
			t.Errorf("git-lossless %q: exit %d, want 2\n%s", args, r.code, r.stderr)
			continue
		}
		if len(args) > 0 {
			if lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n"); len(lines) != 1 || !strings.HasPrefix(lines[0], "git-lossless: error: ") {
				t.Errorf("git-lossless %q: stderr\n%s", args, r.stderr)
			}
		}
	}
	if _, evs := sb.log(repo, "--writer", "w"); len(evs) != seen {
		t.Errorf("usage errors recorded something: %d events, want %d", len(evs), seen)
	}
	// Commands that run but fail: one error line, no panic, not 0 or 2.
	for _, args := range [][]string{
		{"cat", "0000000000000000000000000000000000000000"},
		{"cat", "not-hex"},
		{"verify", "nobody"},
	} {
		r := sb.run(repo, args...)
		if r.code == 0 || r.code == 2 || !strings.HasPrefix(r.stderr, "git-lossless: error: ") {
			t.Errorf("git-lossless %q: exit %d\n%s", args, r.code, r.stderr)
		}
	}
}

// TestE2EUnknownFields: a batch written by a newer version, with fields
// this version does not know, built by hand with git plumbing and sealed
// with seal.Hash/seal.Genesis, is shown by log --json unchanged, verifies,
// and this version appends after it.
func TestE2EUnknownFields(t *testing.T) {
	sb := newSandbox(t)
	repo := sb.initRepo("repo")
	const writer = "future"
	content := []byte("from the future\n")
	blob := strings.TrimSpace(sb.gitIn(repo, content, "hash-object", "-w", "--stdin"))
	sum := sha256sum(content)
	line1 := fmt.Sprintf(`{"attestation":{"alg":"ed25519","sig":"AAEC"},"blob":"%s","bytes":%d,"op":"read","path":"f.txt","prev":"%s","seq":1,"sha256":"%s","source":"hook","ts":"2025-05-06T07:08:09.123456789Z","zeta":[1,"two",null]}`,
		blob, len(content), seal.Genesis(writer), sum)
	line2 := fmt.Sprintf(`{"op":"span","prev":"%s","seq":2,"source":"proxy","span":{"from":3,"to":9},"ts":"2025-05-06T07:08:10.000000000Z"}`, seal.Hash([]byte(line1)))
	ev := strings.TrimSpace(sb.gitIn(repo, []byte(line1+"\n"+line2+"\n"), "hash-object", "-w", "--stdin"))
	sub := strings.TrimSpace(sb.gitIn(repo, []byte("100644 blob "+blob+"\t"+blob+"\n"), "mktree"))
	tree := strings.TrimSpace(sb.gitIn(repo, []byte("100644 blob "+ev+"\tevents.jsonl\n040000 tree "+sub+"\tblobs\n"), "mktree"))
	msg := fmt.Sprintf("lossless: 2 events on %s (1-2)\n\nLossless-Format: 1\nLossless-Writer: %s\nLossless-Seq: 2\nLossless-Seal: %s\n", writer, writer, seal.Hash([]byte(line2)))
	c := strings.TrimSpace(sb.gitIn(repo, []byte(msg), "commit-tree", tree, "-F", "-"))
	sb.git(repo, "update-ref", "refs/lossless/"+writer, c)
	sb.fsck(repo)

	check := func() {
		t.Helper()
		out, evs := sb.log(repo, "--writer", writer)
		if len(evs) < 2 {
			t.Fatalf("log: %s", out)
		}
		for i, l := range []string{line1, line2} {
			if want := `{"writer":"future",` + l[1:]; evs[i].Line != want {
				t.Errorf("log --json line %d:\n got %s\nwant %s", i, evs[i].Line, want)
			}
		}
	}
	check()
	if n := sb.verifyAllOK(repo); n[writer] != 2 {
		t.Errorf("verify: %v", n)
	}
	// A newer version appending in this clone would have recorded the
	// writer as this clone's (.git/lossless/own/<writer>).
	writeFile(t, filepath.Join(repo, ".git", "lossless", "own", writer), nil)
	writeFile(t, filepath.Join(repo, "now.txt"), []byte("now\n"))
	sb.ok(repo, "record", "--op", "read", "--writer", writer, "now.txt")
	check()
	_, evs := sb.log(repo, "--writer", writer)
	if len(evs) != 3 || evs[2].Seq != 3 || !strings.Contains(evs[2].Line, `"prev":"`+seal.Hash([]byte(line2))+`"`) {
		t.Errorf("appended after the newer batch: %+v", evs)
	}
	if n := sb.verifyAllOK(repo); n[writer] != 3 {
		t.Errorf("verify after append: %v", n)
	}
	sb.fsck(repo)
}

func sha256sum(b []byte) string {
	return seal.Hash(b) // the seal hash is hex(sha256(bytes))
}

// TestE2ELocks: the locks command reports and cleans a lock left by a
// killed git-lossless process, verify warns about it, and record removes
// one by itself.
func TestE2ELocks(t *testing.T) {
	sb := newSandbox(t)
	repo := sb.initRepo("repo")
	writeFile(t, filepath.Join(repo, "a.txt"), []byte("a\n"))
	sb.ok(repo, "record", "-q", "--op", "read", "--writer", "w", "a.txt")
	if r := sb.ok(repo, "locks"); r.stdout != "no locks\n" {
		t.Errorf("locks: %q", r.stdout)
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	lock := filepath.Join(repo, ".git", "refs", "lossless", "w.lock")
	plant := func() {
		t.Helper()
		writeFile(t, lock, []byte(fmt.Sprintf("lossless-pid %d\n", dead.Process.Pid)))
	}
	plant()
	r := sb.ok(repo, "locks")
	if !strings.Contains(r.stdout, lock) || !strings.Contains(r.stdout, "stale: ") || !strings.Contains(r.stdout, strconv.Itoa(dead.Process.Pid)) {
		t.Errorf("locks:\n%s", r.stdout)
	}
	if _, err := os.Stat(lock); err != nil {
		t.Fatalf("locks without --clean removed the lock")
	}
	if r := sb.ok(repo, "verify"); !strings.Contains(r.stderr, "warning: stale lock "+lock) {
		t.Errorf("verify does not warn:\n%s", r.stderr)
	}
	if r := sb.ok(repo, "locks", "--clean"); !strings.Contains(r.stdout, "removed 1 stale locks") {
		t.Errorf("locks --clean:\n%s", r.stdout)
	}
	if _, err := os.Stat(lock); err == nil {
		t.Fatalf("lock still there after --clean")
	}
	if r := sb.ok(repo, "locks"); r.stdout != "no locks\n" {
		t.Errorf("locks after clean: %q", r.stdout)
	}
	plant()
	r = sb.ok(repo, "record", "--op", "edit", "--writer", "w", "a.txt")
	if !strings.Contains(r.stderr, "removed stale lock") || !strings.Contains(r.stdout, "as w#2") {
		t.Errorf("record over a stale lock:\nstdout: %s\nstderr: %s", r.stdout, r.stderr)
	}
	if n := sb.verifyAllOK(repo); n["w"] != 2 {
		t.Errorf("verify: %v", n)
	}

	// A writer whose name contains ".lock" is a writer, not a lock, even
	// when its ref is old.
	sb.ok(repo, "record", "-q", "--op", "read", "--writer", "my.lockfile", "a.txt")
	ref := filepath.Join(repo, ".git", "refs", "lossless", "my.lockfile")
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(ref, old, old); err != nil {
		t.Fatal(err)
	}
	if r := sb.ok(repo, "locks", "--clean"); r.stdout != "no locks\n" {
		t.Errorf("locks --clean with writer my.lockfile:\n%s", r.stdout)
	}
	if _, err := os.Stat(ref); err != nil {
		t.Fatalf("locks --clean removed writer my.lockfile's ref: %v", err)
	}
	if r := sb.ok(repo, "heads"); !strings.Contains(r.stdout, "my.lockfile") {
		t.Errorf("heads does not list my.lockfile:\n%s", r.stdout)
	}
	if n := sb.verifyAllOK(repo); n["my.lockfile"] != 1 || len(n) != 2 {
		t.Errorf("verify: %v", n)
	}
	if _, evs := sb.log(repo, "--writer", "my.lockfile"); len(evs) != 1 {
		t.Errorf("log --writer my.lockfile: %d events", len(evs))
	}
	sb.fsck(repo)
}
