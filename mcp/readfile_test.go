//go:build unix

package mcp

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/hooks"
	"github.com/git-lossless/git-lossless/hooks/claudecode"
)

// plantedPassword is the password of a remote URL in .git/config: not
// key-shaped, so no masking hides it, and unique, so finding it in any
// object of the store means read_file archived the config.
const plantedPassword = "hunter2-pw-7Kq9Zx3Lm-d41d8"

func gitRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// objectsHold reports whether any object of the repository at dir holds
// s (every object, reachable or not, as git itself reads them).
func objectsHold(t *testing.T, dir, s string) bool {
	t.Helper()
	out, err := exec.Command("git", "-C", dir, "cat-file", "--batch-all-objects", "--batch").Output()
	if err != nil {
		t.Fatalf("git cat-file --batch-all-objects: %v", err)
	}
	return strings.Contains(string(out), s)
}

// TestReadFileRefusesGitDir: read_file and restore_context refuse the
// repository's git directory in every spelling the hostile run and git's
// own path rules suggest — the path, ./ and .. forms, an absolute path,
// case and NTFS/HFS variants, a nested repository's .git, a symlink to
// the config or to the directory, a hard link to the config — and
// nothing of .git/config (whose remote URL holds a password) reaches any
// object of the store or any event. Before the fix read_file returned
// the config and archived it, password and all.
func TestReadFileRefusesGitDir(t *testing.T) {
	f := newFixture(t)
	gitRun(t, f.dir, "remote", "add", "origin", "https://agent:"+plantedPassword+"@git.example.invalid/repo.git")
	if objectsHold(t, f.dir, plantedPassword) {
		t.Fatal("the password is in an object before any call")
	}
	if err := os.Symlink(filepath.Join(f.dir, ".git", "config"), filepath.Join(f.dir, "cfg.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(".git", filepath.Join(f.dir, "meta")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(f.dir, ".git", "config"), filepath.Join(f.dir, "hard.txt")); err != nil {
		t.Fatal(err)
	}
	nested := filepath.Join(f.dir, "vendor", "lib")
	gitRun(t, f.dir, "init", "-q", nested)
	gitRun(t, nested, "remote", "add", "origin", "https://agent:"+plantedPassword+"@git.example.invalid/lib.git")

	paths := []string{
		".git/config", "./.git/config", "sub/../.git/config", filepath.Join(f.dir, ".git", "config"),
		".git/HEAD", ".git", ".git/", ".GIT/config", ".Git/config", ".git./config", ".git /config", ".git::$INDEX_ALLOCATION/config",
		".g\u200cit/config", "git~1/config", "GIT~1/config",
		"cfg.txt", "meta/config", "hard.txt", "vendor/lib/.git/config",
	}
	for _, p := range paths {
		out, bad := f.call("read_file", map[string]any{"path": p, "session": f.session})
		if !bad || !strings.Contains(out, "git directory") || strings.Contains(out, plantedPassword) || strings.Contains(out, "[remote") {
			t.Errorf("read_file %q: error %v:\n%s", p, bad, out)
		}
		out, bad = f.call("restore_context", map[string]any{"session": f.session, "files": []string{p}})
		if !bad || strings.Contains(out, plantedPassword) || strings.Contains(out, "[remote") {
			t.Errorf("restore_context files %q: error %v:\n%s", p, bad, out)
		}
	}
	// A working set that names .git/config (the agent's own Read of it was
	// archived, content or not): restore_context refuses to show it.
	read := gitstore.Record{Event: gitstore.Event{TS: time.Date(2026, 12, 1, 9, 0, 2, 0, time.UTC), Op: "read", Source: "hook", Session: f.session, View: "full", Tool: "Read", Key: "toolu_git"}}
	read.SetPath(".git/config")
	if _, err := f.st.Append(context.Background(), hooks.Writer(claudecode.New(), f.session), []gitstore.Record{read}); err != nil {
		t.Fatal(err)
	}
	out, bad := f.call("restore_context", map[string]any{"session": f.session})
	if bad || !strings.Contains(out, ".git/config: refused") || strings.Contains(out, plantedPassword) || strings.Contains(out, "[remote") {
		t.Errorf("restore_context of a working set naming .git/config: error %v:\n%s", bad, out)
	}
	// The ordinary file next to them still reads.
	if out, bad := f.call("read_file", map[string]any{"path": "main.go", "session": f.session}); bad || !strings.Contains(out, "func main()") {
		t.Fatalf("read_file main.go: %v\n%s", bad, out)
	}
	if objectsHold(t, f.dir, plantedPassword) {
		t.Error("the password of .git/config is in an object of the store")
	}
	evs, err := f.st.Events(context.Background(), gitstore.Query{Source: "mcp"})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if strings.Contains(e.Path, ".git") || e.Path == "cfg.txt" || e.Path == "hard.txt" || strings.HasPrefix(e.Path, "meta") {
			t.Errorf("recorded %s %s (blob %s)", e.Op, e.Path, e.Blob)
		}
	}
	if out, err := exec.Command("git", "-C", f.dir, "fsck", "--strict", "--no-dangling").CombinedOutput(); err != nil {
		t.Errorf("git fsck --strict: %v\n%s", err, out)
	}
}

// TestReadFileLinkedWorktreeAndSeparateGitDir: from a linked worktree,
// its own git dir (.git/worktrees/NAME) and the common dir are refused
// however they are named (absolute, .., a symlink in the worktree); with
// --separate-git-dir inside the work tree under another name, that
// directory is refused too.
func TestReadFileLinkedWorktreeAndSeparateGitDir(t *testing.T) {
	f := newFixture(t)
	gitRun(t, f.dir, "remote", "add", "origin", "https://agent:"+plantedPassword+"@git.example.invalid/repo.git")
	gitRun(t, f.dir, "add", "main.go")
	gitRun(t, f.dir, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "-m", "one")
	linked := filepath.Join(filepath.Dir(f.dir), "linked")
	gitRun(t, f.dir, "worktree", "add", "-q", linked)
	linked, _ = filepath.EvalSymlinks(linked)
	if err := os.Symlink(filepath.Join(f.dir, ".git"), filepath.Join(linked, "common")); err != nil {
		t.Fatal(err)
	}
	gitdir := gitRun(t, linked, "rev-parse", "--absolute-git-dir")
	if err := os.Symlink(gitdir, filepath.Join(linked, "own")); err != nil {
		t.Fatal(err)
	}

	sep := filepath.Join(t.TempDir(), "sep")
	if err := os.MkdirAll(sep, 0o700); err != nil {
		t.Fatal(err)
	}
	sep, _ = filepath.EvalSymlinks(sep)
	gitRun(t, sep, "init", "-q", "--separate-git-dir", filepath.Join(sep, "meta"))
	gitRun(t, sep, "remote", "add", "origin", "https://agent:"+plantedPassword+"@git.example.invalid/sep.git")

	for dir, paths := range map[string][]string{
		linked: {filepath.Join(f.dir, ".git", "config"), "../repo/.git/config", "common/config", "own/HEAD", filepath.Join(gitdir, "HEAD"), ".git"},
		sep:    {"meta/config", filepath.Join(sep, "meta", "HEAD"), ".git"},
	} {
		st, err := gitstore.OpenDir(dir, gitstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		srv := New(Config{Store: st, Version: "test", Harness: claudecode.New(), Getenv: claudeEnv(t.TempDir())})
		ct, stt := sdk.NewInMemoryTransports()
		if _, err := srv.SDK().Connect(context.Background(), stt, nil); err != nil {
			t.Fatal(err)
		}
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil).Connect(context.Background(), ct, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		for _, p := range paths {
			res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": p}})
			if err != nil {
				t.Fatal(err)
			}
			text := res.Content[0].(*sdk.TextContent).Text
			if !res.IsError || strings.Contains(text, plantedPassword) || strings.Contains(text, "[remote") || strings.Contains(text, "ref: ") {
				t.Errorf("%s: read_file %q: %v\n%s", dir, p, res.IsError, text)
			}
		}
	}
	for _, d := range []string{f.dir, filepath.Join(sep, "meta")} {
		if objectsHold(t, d, plantedPassword) {
			t.Errorf("the password is in an object of %s", d)
		}
	}
}

// TestReadFileHostileFiles: a file read_file must not try to read whole —
// a FIFO (whose open would wait for a writer forever), a directory, a 100
// GB sparse file — is a tool error at once, and the server answers the
// next call. A git-ignored file is read and recorded like any other (the
// hook records the agent's own Read of it the same way; the push gate
// keeps ignored files from leaving).
func TestReadFileHostileFiles(t *testing.T) {
	f := newFixture(t)
	if err := syscall.Mkfifo(filepath.Join(f.dir, "pipe"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, bad := f.call("read_file", map[string]any{"path": "pipe", "session": f.session}); !bad || !strings.Contains(out, "not a regular file") {
		t.Errorf("read_file of a FIFO: %v\n%s", bad, out)
	}
	if out, bad := f.call("restore_context", map[string]any{"session": f.session, "files": []string{"pipe"}}); !bad || !strings.Contains(out, "not a regular file") {
		t.Errorf("restore_context of a FIFO: %v\n%s", bad, out)
	}
	if err := os.Mkdir(filepath.Join(f.dir, "dir"), 0o700); err != nil {
		t.Fatal(err)
	}
	if out, bad := f.call("read_file", map[string]any{"path": "dir", "session": f.session}); !bad || !strings.Contains(out, "not a regular file") {
		t.Errorf("read_file of a directory: %v\n%s", bad, out)
	}
	big, err := os.Create(filepath.Join(f.dir, "big.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if err := big.Truncate(100 << 30); err != nil {
		t.Fatal(err)
	}
	big.Close()
	for _, tool := range []string{"read_file", "restore_context"} {
		args := map[string]any{"path": "big.bin", "session": f.session}
		if tool == "restore_context" {
			args = map[string]any{"files": []string{"big.bin"}, "session": f.session}
		}
		if out, bad := f.call(tool, args); !bad || !strings.Contains(out, "over") {
			t.Errorf("%s of a 100 GB file: %v\n%s", tool, bad, out)
		}
	}
	// At the cap it reads; one byte over it does not.
	if err := os.WriteFile(filepath.Join(f.dir, "at-cap.txt"), []byte(strings.Repeat("x\n", MaxReadFileBytes/2)), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, bad := f.call("read_file", map[string]any{"path": "at-cap.txt", "lines": "1-2", "session": f.session}); bad {
		t.Errorf("read_file of a file of MaxReadFileBytes: %s", out)
	}
	if err := os.WriteFile(filepath.Join(f.dir, "over-cap.txt"), []byte(strings.Repeat("x\n", MaxReadFileBytes/2)+"y"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, bad := f.call("read_file", map[string]any{"path": "over-cap.txt", "lines": "1-2", "session": f.session}); !bad {
		t.Errorf("read_file of a file of MaxReadFileBytes+1 read it:\n%.200s", out)
	}

	// Ignored: readable, recorded.
	if err := os.WriteFile(filepath.Join(f.dir, ".gitignore"), []byte("*.log\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.dir, "build.log"), []byte("built ok\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, bad := f.call("read_file", map[string]any{"path": "build.log", "session": f.session}); bad || !strings.Contains(out, "built ok") {
		t.Errorf("read_file of an ignored file: %v\n%s", bad, out)
	}
	evs, err := f.st.Events(context.Background(), gitstore.Query{Session: f.session, Source: "mcp"})
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, e := range evs {
		paths = append(paths, e.Path)
	}
	if got := strings.Join(paths, " "); got != "at-cap.txt build.log" {
		t.Errorf("recorded reads of %q, want at-cap.txt and build.log only", got)
	}
}

// TestReadFileNoSession: without a session argument and without any
// Claude Code transcript, the read is recorded under no session (writer
// "mcp"), never under a session named ".".
func TestReadFileNoSession(t *testing.T) {
	f := newFixture(t)
	srv := New(Config{Store: f.st, Version: "test", Harness: claudecode.New(), Getenv: claudeEnv(t.TempDir())})
	ct, stt := sdk.NewInMemoryTransports()
	if _, err := srv.SDK().Connect(context.Background(), stt, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "main.go"}})
	if err != nil || res.IsError {
		b, _ := json.Marshal(res)
		t.Fatalf("read_file: %v %s", err, b)
	}
	if text := res.Content[0].(*sdk.TextContent).Text; !strings.Contains(text, "session (none)") {
		t.Errorf("read_file without a session: %s", text)
	}
	ws, err := f.st.Writers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range ws {
		if w.Name == "cc-." {
			t.Errorf("a writer cc-. was created")
		}
	}
}
