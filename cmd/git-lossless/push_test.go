package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"filippo.io/age"

	"github.com/git-lossless/git-lossless/gitstore"
)

// pushToken builds a format-valid, obviously fake GitHub token; never a
// literal in the source.
func pushToken() string {
	b := make([]byte, 36)
	for i := range b {
		b[i] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"[(i*17+5)%62]
	}
	return "gh" + "p_" + string(b)
}

// pushWorld isolates a test: its own HOME, XDG dirs and identity, no
// system or global git config. It returns a repository and an empty bare
// remote.
func pushWorld(t *testing.T) (repo, bare string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not on PATH")
	}
	base := t.TempDir()
	t.Setenv("HOME", filepath.Join(base, "home"))
	t.Setenv("XDG_DATA_HOME", filepath.Join(base, "data"))
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(base, "config"))
	t.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("GIT_TERMINAL_PROMPT", "0")
	t.Setenv("LOSSLESS_AGE_IDENTITY", "")
	t.Setenv("LOSSLESS_ARCHIVE_EXCLUDE", "")
	t.Setenv("LOSSLESS_IDENTITY_FILE", filepath.Join(base, "identity.age"))
	for _, kv := range [][2]string{{"GIT_AUTHOR_NAME", "Dev"}, {"GIT_AUTHOR_EMAIL", "dev@example.com"}, {"GIT_COMMITTER_NAME", "Dev"}, {"GIT_COMMITTER_EMAIL", "dev@example.com"}} {
		t.Setenv(kv[0], kv[1])
	}
	repo = filepath.Join(base, "repo")
	bare = filepath.Join(base, "remote.git")
	pushGit(t, base, "init", "-q", repo)
	pushGit(t, base, "init", "-q", "--bare", bare)
	real, err := filepath.EvalSymlinks(repo)
	if err != nil {
		t.Fatal(err)
	}
	return real, bare
}

func pushGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v in %s: %v\n%s", args, dir, err, out)
	}
	return string(out)
}

// pushStdin fails the test if the command reads standard input.
type pushStdin struct{ t *testing.T }

func (p pushStdin) Read([]byte) (int, error) {
	p.t.Errorf("the command read standard input")
	return 0, os.ErrClosed
}

func pushCLI(t *testing.T, dir string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), append([]string{"-C", dir}, args...), &env{Stdin: pushStdin{t}, Stdout: &out, Stderr: &errb, Getenv: os.Getenv})
	if strings.Contains(errb.String(), "panic") {
		t.Fatalf("panic:\n%s", errb.String())
	}
	return code, out.String(), errb.String()
}

// archiveRefs is `git for-each-ref` of the archive's refs.
func archiveRefs(t *testing.T, dir string) string {
	t.Helper()
	return pushGit(t, dir, "for-each-ref", "--format=%(objectname) %(refname)", "refs/lossless", "refs/notes/lossless")
}

func pushAppend(t *testing.T, repo, writer string, recs ...gitstore.Record) gitstore.AppendResult {
	t.Helper()
	st, err := gitstore.OpenDir(repo, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := st.Append(context.Background(), writer, recs)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func pushRead(path, content string) gitstore.Record {
	r := gitstore.Record{Event: gitstore.Event{Op: "read", Source: "hook", Session: "s1", View: "full", Tool: "Read"}, Content: []byte(content), HasContent: true}
	r.SetPath(path)
	return r
}

func pushJSON(t *testing.T, out string) pushReport {
	t.Helper()
	var rep pushReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("--json output is not JSON: %v\n%s", err, out)
	}
	return rep
}

// The archive holds the content of git-ignored files (root .gitignore, a
// nested .gitignore, .git/info/exclude) and a file version holding a key:
// push refuses, naming each, and sends nothing; the allow flags send it
// all, the remote then equals the local archive, passes fsck --strict and
// verifies in a fresh clone; a second push has nothing to push; a later
// append pushes alone.
func TestPushRefusesIgnoredAndSecrets(t *testing.T) {
	repo, bare := pushWorld(t)
	writeFile(t, filepath.Join(repo, ".gitignore"), []byte("config/local.yml\nterraform.tfstate\n"))
	writeFile(t, filepath.Join(repo, "sub", ".gitignore"), []byte("*.secret\n"))
	writeFile(t, filepath.Join(repo, ".git", "info", "exclude"), []byte("scratch.txt\n"))
	tok := pushToken()
	pushAppend(t, repo, "w1",
		pushRead("config/local.yml", "password: hunter2\n"),
		pushRead("main.go", "package main\n"),
		pushRead("sub/api.secret", "internal\n"),
		pushRead("scratch.txt", "todo\n"),
		pushRead("deploy/env.sh", "export GITHUB_TOKEN="+tok+"\n"),
	)
	pushAppend(t, repo, "w2", pushRead("terraform.tfstate", "{}\n"))

	code, out, errOut := pushCLI(t, repo, "push", bare)
	if code != exitFailed {
		t.Fatalf("push: exit %d, want 1\n%s%s", code, out, errOut)
	}
	for _, want := range []string{
		"w1#1 read config/local.yml: git ignores it (.gitignore:1: config/local.yml)",
		"w1#3 read sub/api.secret: git ignores it (sub/.gitignore:1: *.secret)",
		"w1#4 read scratch.txt: git ignores it (.git/info/exclude:1: scratch.txt)",
		"w1#5 read deploy/env.sh: file version holds 1 secret(s): github-token ghp****",
		// Ignored and holding a password: both problems are named.
		"w1#1 read config/local.yml: file version holds 1 secret(s): password ****",
		"w2#1 read terraform.tfstate: git ignores it",
		"refused (6):",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "w1#2") {
		t.Errorf("the clean file is listed as a problem:\n%s", out)
	}
	for _, want := range []string{"push refused: 6 item(s) held back; nothing was pushed", "--allow-secrets", "--allow-ignored", "git lossless prune"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if strings.Contains(out+errOut, tok) || strings.Contains(out+errOut, tok[6:30]) {
		t.Fatalf("the secret's value is in the output:\n%s%s", out, errOut)
	}
	if refs := archiveRefs(t, bare); refs != "" {
		t.Fatalf("refused push left refs on the remote:\n%s", refs)
	}

	// --dry-run --json: the plan and the problems, nothing pushed.
	code, out, _ = pushCLI(t, repo, "push", "--dry-run", "--json", bare)
	rep := pushJSON(t, out)
	if code != exitFailed || rep.Verdict != "refused" || rep.Refused != 6 || len(rep.Problems) != 6 || !rep.DryRun {
		t.Fatalf("dry-run json: exit %d %+v", code, rep)
	}
	if rep.Plan == nil || len(rep.Plan.Writers) != 2 || rep.Plan.Total.Events != 6 || rep.Plan.Total.FileVersions != 6 {
		t.Fatalf("dry-run plan: %+v", rep.Plan)
	}
	if strings.Contains(out, tok) {
		t.Fatal("the secret's value is in the JSON")
	}
	if refs := archiveRefs(t, bare); refs != "" {
		t.Fatalf("dry run pushed:\n%s", refs)
	}

	// Allowed: sent; the remote equals the archive.
	code, out, errOut = pushCLI(t, repo, "push", "--allow-secrets", "--allow-ignored", bare)
	if code != exitOK {
		t.Fatalf("allowed push: exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"allowed (6):", "[--allow-secrets]", "[--allow-ignored]", "pushed to ", "ok       refs/lossless/w1 [new reference]"} {
		if !strings.Contains(out, want) {
			t.Errorf("allowed push output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out+errOut, tok) {
		t.Fatal("the secret's value is in the output")
	}
	local := archiveRefs(t, repo)
	if got := archiveRefs(t, bare); got != local || !strings.Contains(local, "refs/lossless/w2") {
		t.Fatalf("remote refs:\n%s\nlocal:\n%s", got, local)
	}
	pushGit(t, bare, "fsck", "--strict", "--no-dangling")
	clone := filepath.Join(t.TempDir(), "clone")
	pushGit(t, filepath.Dir(clone), "init", "-q", clone)
	pushGit(t, clone, "fetch", "-q", bare, "refs/lossless/*:refs/lossless/*", "refs/notes/lossless/*:refs/notes/lossless/*")
	if code, out, errOut := pushCLI(t, clone, "verify"); code != exitOK || !strings.Contains(out, "2 writers, 2 ok, 0 broken") {
		t.Fatalf("verify in the clone: exit %d\n%s%s", code, out, errOut)
	}

	// Again: nothing to push.
	code, out, _ = pushCLI(t, repo, "push", bare)
	if code != exitOK || !strings.Contains(out, "nothing to push") || strings.Contains(out, "WRITER") {
		t.Fatalf("second push: exit %d\n%s", code, out)
	}

	// Incremental: only the new events are planned, and they are clean.
	pushAppend(t, repo, "w1", pushRead("main.go", "package main\n\nfunc main() {}\n"))
	code, out, _ = pushCLI(t, repo, "push", "--dry-run", "--json", bare)
	rep = pushJSON(t, out)
	if code != exitOK || rep.Verdict != "would push" || len(rep.Plan.Writers) != 1 || rep.Plan.UpToDate != 1 {
		t.Fatalf("incremental dry run: exit %d %+v", code, rep)
	}
	if w := rep.Plan.Writers[0]; w.Name != "w1" || w.FromSeq != 6 || w.ToSeq != 6 || w.Counts.Events != 1 || len(rep.Plan.Items) != 2 || rep.Plan.Items[0].Path != "main.go" ||
		rep.Plan.Items[1].Kind != gitstore.ContentEvents || w.Counts.Objects != 5 {
		t.Fatalf("incremental plan: %+v items %+v", w, rep.Plan.Items)
	}
	code, out, errOut = pushCLI(t, repo, "push", bare)
	if code != exitOK || !strings.Contains(out, "w1      6-6") {
		t.Fatalf("incremental push: exit %d\n%s%s", code, out, errOut)
	}
	if got := archiveRefs(t, bare); got != archiveRefs(t, repo) {
		t.Fatalf("after the incremental push the remote differs:\n%s", got)
	}
}

// A clean archive goes to the default remote (origin, then git config
// lossless.remote) without any flag and without reading stdin.
func TestPushCleanDefaultRemote(t *testing.T) {
	repo, bare := pushWorld(t)
	pushAppend(t, repo, "cli", pushRead("README.md", "# hello\n"), pushRead("go.mod", "module x\n"))
	pushGit(t, repo, "remote", "add", "origin", bare)
	code, out, errOut := pushCLI(t, repo, "push")
	if code != exitOK {
		t.Fatalf("push: exit %d\n%s%s", code, out, errOut)
	}
	if !strings.Contains(out, "to origin:") || !strings.Contains(out, "total: 1 writer, 1 batch, 2 events (0 spans, 2 file versions, 0 vault entries)") {
		t.Fatalf("plan output:\n%s", out)
	}
	if got := archiveRefs(t, bare); got != archiveRefs(t, repo) || got == "" {
		t.Fatalf("origin refs: %q", got)
	}

	other := filepath.Join(t.TempDir(), "other.git")
	pushGit(t, filepath.Dir(other), "init", "-q", "--bare", other)
	pushGit(t, repo, "config", "lossless.remote", other)
	if code, out, errOut := pushCLI(t, repo, "push"); code != exitOK || !strings.Contains(out, "to "+other+":") {
		t.Fatalf("push to lossless.remote: exit %d\n%s%s", code, out, errOut)
	}
	if got := archiveRefs(t, other); got != archiveRefs(t, repo) {
		t.Fatalf("lossless.remote refs: %q", got)
	}
}

// After a push, prune rewrites the writer: the next push is refused as
// non-fast-forward (remote unchanged) and goes through with --force.
func TestPushNonFastForward(t *testing.T) {
	repo, bare := pushWorld(t)
	pushAppend(t, repo, "w", pushRead("a.txt", "a\n"), pushRead("b.txt", "b\n"))
	if code, out, errOut := pushCLI(t, repo, "push", bare); code != exitOK {
		t.Fatalf("push: exit %d\n%s%s", code, out, errOut)
	}
	before := archiveRefs(t, bare)
	if code, out, errOut := pushCLI(t, repo, "prune", "--path", "a.txt", "--reason", "test"); code != exitOK {
		t.Fatalf("prune: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut := pushCLI(t, repo, "push", bare)
	if code != exitFailed || !strings.Contains(out, "non-fast-forward") || !strings.Contains(errOut, "--force") {
		t.Fatalf("non-ff push: exit %d\n%s%s", code, out, errOut)
	}
	if got := archiveRefs(t, bare); got != before {
		t.Fatalf("refused non-ff push changed the remote:\n%s", got)
	}
	code, out, errOut = pushCLI(t, repo, "push", "--force", bare)
	if code != exitOK || !strings.Contains(out, "[--force]") || !strings.Contains(out, "forced update") {
		t.Fatalf("forced push: exit %d\n%s%s", code, out, errOut)
	}
	if got := archiveRefs(t, bare); got != archiveRefs(t, repo) {
		t.Fatalf("forced push: remote\n%s", got)
	}
	// The pruned content is not on the remote's side of the new history.
	pushGit(t, bare, "gc", "-q", "--prune=now")
	cmd := exec.Command("git", "cat-file", "-e", gitstore.BlobID([]byte("a\n")))
	cmd.Dir = bare
	if cmd.Run() == nil {
		t.Fatal("the pruned blob survived gc on the remote")
	}
}

// Encrypted spans are counted and listed as encrypted, and not refused.
func TestPushEncryptedSpans(t *testing.T) {
	repo, bare := pushWorld(t)
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	pushGit(t, repo, "config", "lossless.encrypt", "true")
	pushGit(t, repo, "config", "lossless.recipient", id.Recipient().String())
	span := gitstore.Record{Event: gitstore.Event{Op: "span", Source: "proxy", Session: "s"}, Content: []byte("the user said something private"), HasContent: true, Encrypt: true}
	pushAppend(t, repo, "proxy-1", span, span, pushRead("x.go", "package x\n"))
	code, out, errOut := pushCLI(t, repo, "push", bare)
	if code != exitOK {
		t.Fatalf("push: exit %d\n%s%s", code, out, errOut)
	}
	if !strings.Contains(out, "encrypted, not scanned (sent as age ciphertext): proxy-1 #1-2") || !strings.Contains(out, "2 spans, 1 file version, 0 vault entries), 2 encrypted") {
		t.Fatalf("encrypted listing:\n%s", out)
	}
	if strings.Contains(out, "refused") || strings.Contains(out, "allowed (") {
		t.Fatalf("encrypted spans were treated as problems:\n%s", out)
	}
}

// Hostile input: a remote that reads as an option never reaches git as
// one; a path with control characters prints escaped.
func TestPushHostileInput(t *testing.T) {
	repo, bare := pushWorld(t)
	pwned := filepath.Join(t.TempDir(), "pwned")
	pushAppend(t, repo, "w", pushRead("ok.txt", "ok\n"))
	code, _, errOut := pushCLI(t, repo, "push", "--", "--upload-pack=touch "+pwned)
	if code != exitUsage || !strings.Contains(errOut, "starts with '-'") {
		t.Fatalf("option remote: exit %d\n%s", code, errOut)
	}
	pushGit(t, repo, "config", "lossless.remote", "--receive-pack=touch "+pwned)
	if code, _, errOut := pushCLI(t, repo, "push"); code == exitOK || !strings.Contains(errOut, "git config lossless.remote") {
		t.Fatalf("option remote from config: exit %d\n%s", code, errOut)
	}
	if _, err := os.Stat(pwned); err == nil {
		t.Fatal("the option ran")
	}
	pushGit(t, repo, "config", "--unset", "lossless.remote")

	writeFile(t, filepath.Join(repo, ".gitignore"), []byte("evil*\n"))
	pushAppend(t, repo, "w", pushRead("evil\nname\x1b[2J\u202e.txt", "x\n"))
	code, out, errOut := pushCLI(t, repo, "push", bare)
	if code != exitFailed {
		t.Fatalf("push: exit %d\n%s%s", code, out, errOut)
	}
	if strings.ContainsAny(out+errOut, "\x1b\u202e") || !strings.Contains(out, `w#2 read "evil\nname\x1b[2J\u202e.txt": git ignores it`) {
		t.Fatalf("unescaped path:\n%q", out)
	}
	if code, _, errOut := pushCLI(t, repo, "push", "a", "b"); code != exitUsage {
		t.Fatalf("two remotes: exit %d %s", code, errOut)
	}
	code, _, errOut = pushCLI(t, repo, "push", filepath.Join(t.TempDir(), "no-such-remote"))
	if code != exitError || !strings.Contains(errOut, "git-lossless: error: git ls-remote") || !strings.Contains(errOut, "git-lossless: hint: ") {
		t.Fatalf("missing remote: exit %d\n%s", code, errOut)
	}
}

func TestPushHelp(t *testing.T) {
	repo, _ := pushWorld(t)
	code, out, _ := pushCLI(t, repo, "push", "--help")
	if code != exitOK {
		t.Fatalf("help: exit %d", code)
	}
	for _, want := range []string{"refs/lossless/*", "refs/notes/lossless/*", "--allow-secrets", "--allow-ignored", "--force", "--dry-run",
		"lossless.push.allowSecrets", "lossless.push.allowIgnored", "lossless.remote", "git lossless redact", "git lossless prune", "encrypted"} {
		if !strings.Contains(out, want) {
			t.Errorf("push --help lacks %q", want)
		}
	}
	if code, out, _ := pushCLI(t, repo, "help"); code != exitOK || !strings.Contains(out, "push ") {
		t.Fatalf("help lists no push:\n%s", out)
	}
}
