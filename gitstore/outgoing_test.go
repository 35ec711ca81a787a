package gitstore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"filippo.io/age"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/internal/testkit/benchdata"
	"github.com/git-lossless/git-lossless/secrets"
)

// ogToken builds a format-valid, obviously fake GitHub token; never a
// literal in the source.
func ogToken(seed byte) string {
	b := make([]byte, 36)
	for i := range b {
		b[i] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"[(int(seed)*11+i*7)%62]
	}
	return "gh" + "p_" + string(b)
}

// ogEnv isolates the test from the machine's git config and identity.
func ogEnv(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not on PATH")
	}
	t.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("LOSSLESS_AGE_IDENTITY", "")
	t.Setenv("LOSSLESS_IDENTITY_FILE", filepath.Join(t.TempDir(), "identity.age"))
	t.Setenv("LOSSLESS_ARCHIVE_EXCLUDE", "")
}

func ogGit(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// ogRepo makes a repository (work tree resolved) with config pairs set.
func ogRepo(t *testing.T, config ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo")
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	for i := 0; i+1 < len(config); i += 2 {
		ogGit(t, dir, "config", "--add", config[i], config[i+1])
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	return real
}

func ogWrite(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func ogOpen(t *testing.T, dir string) *gitstore.Store {
	t.Helper()
	st, err := gitstore.OpenDir(dir, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func ogRead(path, content string) gitstore.Record {
	r := gitstore.Record{Event: gitstore.Event{Op: "read", Source: "hook", Session: "s1", View: "full"}, Content: []byte(content), HasContent: true}
	r.SetPath(path)
	return r
}

func ogAppend(t *testing.T, st *gitstore.Store, writer string, recs ...gitstore.Record) gitstore.AppendResult {
	t.Helper()
	res, err := st.Append(context.Background(), writer, recs)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// countingIgnore wraps the real git check-ignore and counts its calls per
// work tree.
type countingIgnore struct {
	mu    sync.Mutex
	calls map[string]int
}

func (c *countingIgnore) CheckIgnore(ctx context.Context, wt string, rels []string) (map[string]gitstore.IgnoreRule, error) {
	c.mu.Lock()
	if c.calls == nil {
		c.calls = map[string]int{}
	}
	c.calls[wt]++
	c.mu.Unlock()
	return gitstore.GitCheckIgnore{}.CheckIgnore(ctx, wt, rels)
}

// contentItems are the plan's items that events name (not the events
// blobs, notes or unnamed blobs).
func contentItems(plan *gitstore.Outgoing) []gitstore.OutgoingItem {
	var out []gitstore.OutgoingItem
	for _, it := range plan.Items {
		switch it.Kind {
		case gitstore.ContentFile, gitstore.ContentSpan, gitstore.ContentVault:
			out = append(out, it)
		}
	}
	return out
}

// probKeys lists problems as kind:writer#seq:path, for comparing sets.
func probKeys(ps []gitstore.PushProblem) []string {
	var out []string
	for _, p := range ps {
		out = append(out, string(p.Kind)+":"+p.Writer+"#"+strconv.FormatInt(p.Seq, 10)+":"+p.Path)
	}
	sort.Strings(out)
	return out
}

func sameStrings(t *testing.T, what string, got, want []string) {
	t.Helper()
	sort.Strings(want)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("%s:\ngot  %q\nwant %q", what, got, want)
	}
}

// The gate's main job: ignored files (root, nested .gitignore,
// info/exclude, core.excludesFile) and a file version holding a key are
// refused, each named; a tracked file matching an ignore pattern, a clean
// file and a span redacted at write are not; the policy allows each kind;
// ignore rules are read with one git process per work tree.
func TestOutgoingGate(t *testing.T) {
	ogEnv(t)
	dir := ogRepo(t)
	excl := filepath.Join(t.TempDir(), "global-excludes")
	ogWrite(t, excl, "*.bak\n")
	ogGit(t, dir, "config", "core.excludesFile", excl)
	ogWrite(t, filepath.Join(dir, ".gitignore"), "config/local.yml\nterraform.tfstate\nvendor/\n")
	ogWrite(t, filepath.Join(dir, "sub", ".gitignore"), "*.secret\n")
	ogWrite(t, filepath.Join(dir, ".git", "info", "exclude"), "scratch.txt\n")
	ogWrite(t, filepath.Join(dir, "vendor", "kept.go"), "package kept\n")
	ogGit(t, dir, "add", "-f", "vendor/kept.go") // tracked: not ignored
	st := ogOpen(t, dir)
	tok := ogToken(1)
	res := ogAppend(t, st, "w1",
		ogRead("config/local.yml", "db: prod\n"),
		ogRead("main.go", "package main\n"),
		ogRead("sub/x.secret", "x\n"),
		ogRead("scratch.txt", "notes\n"),
		ogRead("old.bak", "backup\n"),
		ogRead("vendor/kept.go", "package kept\n"),
		ogRead("app/settings.py", "TOKEN = '"+tok+"'\n"),
		gitstore.Record{Event: gitstore.Event{Op: "span", Source: "sweep", Session: "s1"}, Content: []byte(`{"text":"my token is ` + tok + `"}`), HasContent: true},
	)
	// The span was redacted at write and its value vaulted: 9 events.
	if len(res.Events) != 9 || res.Events[8].Op != gitstore.OpVault {
		t.Fatalf("append: %d events", len(res.Events))
	}
	ctx := context.Background()
	plan, err := st.Outgoing(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Writers) != 1 || plan.Writers[0].Remote != "" || plan.Writers[0].NonFastForward {
		t.Fatalf("plan writers: %+v", plan.Writers)
	}
	tot := plan.Total
	if tot.Batches != 1 || tot.Events != 9 || tot.FileVersions != 7 || tot.Spans != 1 || tot.Vault != 1 || tot.Encrypted != 1 {
		t.Fatalf("totals: %+v", tot)
	}
	if n := len(contentItems(plan)); n != 9 || len(plan.Items) != 10 {
		t.Fatalf("items: %d content of %d", n, len(plan.Items))
	}

	ci := &countingIgnore{}
	probs, err := plan.Check(ctx, gitstore.PushPolicy{Ignore: ci})
	if err != nil {
		t.Fatal(err)
	}
	sameStrings(t, "problems", probKeys(probs), []string{
		"ignored:w1#1:config/local.yml",
		"ignored:w1#3:sub/x.secret",
		"ignored:w1#4:scratch.txt",
		"ignored:w1#5:old.bak",
		"secret:w1#7:app/settings.py",
	})
	if len(gitstore.Refused(probs)) != 5 {
		t.Fatalf("refused: %d", len(gitstore.Refused(probs)))
	}
	if len(ci.calls) != 1 || ci.calls[dir] != 1 {
		t.Fatalf("check-ignore calls: %v (want one in %s)", ci.calls, dir)
	}
	for _, p := range probs {
		line := p.String()
		js, _ := json.Marshal(p)
		if strings.Contains(line, tok) || bytes.Contains(js, []byte(tok)) || strings.Contains(line, tok[4:30]) {
			t.Fatalf("a problem shows the secret: %s", line)
		}
		switch p.Kind {
		case gitstore.ProblemSecret:
			if len(p.Findings) != 1 || p.Findings[0].Kind != "github-token" || p.Findings[0].Masked != secrets.Mask([]byte(tok)) || p.Findings[0].Line != 1 {
				t.Errorf("secret finding: %+v", p.Findings)
			}
			if !strings.Contains(line, "w1#7 read app/settings.py") || !strings.Contains(line, "github-token") {
				t.Errorf("secret line: %s", line)
			}
		case gitstore.ProblemIgnored:
			if p.Rule == "" || !strings.Contains(line, "git ignores it") {
				t.Errorf("ignored line: %s (rule %q)", line, p.Rule)
			}
		}
		if p.Path == "sub/x.secret" && !strings.HasPrefix(p.Rule, "sub/.gitignore:1:") {
			t.Errorf("nested rule: %q", p.Rule)
		}
		if p.Path == "scratch.txt" && !strings.HasPrefix(p.Rule, ".git/info/exclude:") {
			t.Errorf("info/exclude rule: %q", p.Rule)
		}
		if p.Path == "old.bak" && !strings.HasPrefix(p.Rule, excl+":1:") {
			t.Errorf("core.excludesFile rule: %q", p.Rule)
		}
	}

	// Each kind is allowed by its own switch only.
	probs, _ = plan.Check(ctx, gitstore.PushPolicy{AllowSecrets: true})
	sameStrings(t, "refused with AllowSecrets", probKeys(gitstore.Refused(probs)), []string{
		"ignored:w1#1:config/local.yml", "ignored:w1#3:sub/x.secret", "ignored:w1#4:scratch.txt", "ignored:w1#5:old.bak",
	})
	probs, _ = plan.Check(ctx, gitstore.PushPolicy{AllowIgnored: true})
	sameStrings(t, "refused with AllowIgnored", probKeys(gitstore.Refused(probs)), []string{"secret:w1#7:app/settings.py"})
	probs, _ = plan.Check(ctx, gitstore.PushPolicy{AllowIgnored: true, AllowSecrets: true})
	if len(probs) != 5 || len(gitstore.Refused(probs)) != 0 {
		t.Fatalf("all allowed: %d problems, %d refused: %v", len(probs), len(gitstore.Refused(probs)), probKeys(probs))
	}

	// The remote already has it all: nothing to push.
	remote := map[string]string{"refs/lossless/w1": res.Commit}
	plan, err = st.Outgoing(ctx, remote)
	if err != nil || !plan.Empty() || plan.UpToDate != 1 {
		t.Fatalf("up to date: %+v %v", plan, err)
	}
}

// A secret mark written with a file version holds it back even when
// today's scanner finds nothing; a span stored with redaction off is
// caught by the scan; content that claims to be encrypted but is not age
// ciphertext is scanned.
func TestOutgoingMarksAndUnredacted(t *testing.T) {
	ogEnv(t)
	dir := ogRepo(t, "lossless.redact", "off")
	st := ogOpen(t, dir)
	tok := ogToken(2)
	marked := ogRead("notes.md", "nothing to see\n")
	marked.Extra = map[string]json.RawMessage{"secrets": json.RawMessage("2")}
	fake := ogRead("fake.txt", "key "+tok+"\n")
	fake.Extra = map[string]json.RawMessage{"enc": json.RawMessage(`"age"`)}
	ogAppend(t, st, "w", marked,
		gitstore.Record{Event: gitstore.Event{Op: "span", Source: "proxy"}, Content: []byte("raw " + tok), HasContent: true},
		fake)
	plan, err := st.Outgoing(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	probs, err := plan.Check(context.Background(), gitstore.PushPolicy{})
	if err != nil {
		t.Fatal(err)
	}
	sameStrings(t, "problems", probKeys(probs), []string{"secret:w#1:notes.md", "secret:w#2:", "secret:w#3:fake.txt"})
	for _, p := range probs {
		if p.Seq == 1 && (len(p.Findings) != 0 || !strings.Contains(p.Reason, "marked at write as holding 2")) {
			t.Errorf("mark: %+v", p)
		}
		if p.Seq == 3 && len(p.Findings) != 1 {
			t.Errorf("fake encryption not scanned: %+v", p)
		}
	}
}

// Incremental plans list only what the remote lacks; a writer rewritten by
// prune is a non-fast-forward update whose pruned content is not sent; a
// remote commit this machine lacks is non-fast-forward too.
func TestOutgoingIncrementalAndNonFastForward(t *testing.T) {
	ogEnv(t)
	dir := ogRepo(t)
	st := ogOpen(t, dir)
	ctx := context.Background()
	r1 := ogAppend(t, st, "w", ogRead("a.txt", "a1\n"), ogRead("b.txt", "b1\n"))
	ogAppend(t, st, "other", ogRead("o.txt", "o\n"))
	r2 := ogAppend(t, st, "w", ogRead("a.txt", "a2\n"))
	r3 := ogAppend(t, st, "w", ogRead("c.txt", "c1\n"))
	other := ogGit(t, dir, "rev-parse", "refs/lossless/other")

	plan, err := st.Outgoing(ctx, map[string]string{"refs/lossless/w": r1.Commit, "refs/lossless/other": strings.TrimSpace(other)})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Writers) != 1 || plan.UpToDate != 1 {
		t.Fatalf("writers %+v up to date %d", plan.Writers, plan.UpToDate)
	}
	u := plan.Writers[0]
	if u.NonFastForward || u.FromSeq != 3 || u.ToSeq != 4 || u.Counts.Batches != 2 || u.Counts.Events != 2 {
		t.Fatalf("incremental: %+v", u)
	}
	var paths []string
	for _, it := range contentItems(plan) {
		paths = append(paths, it.Path)
	}
	sameStrings(t, "incremental items", paths, []string{"a.txt", "c.txt"})
	probs, _ := plan.Check(ctx, gitstore.PushPolicy{})
	if len(probs) != 0 {
		t.Fatalf("clean incremental: %v", probKeys(probs))
	}

	// Prune a.txt: the writer is rewritten; the remote at r3 is not an
	// ancestor any more.
	if _, err := st.Prune(ctx, "w", func(e *gitstore.Event) bool { return e.Path == "a.txt" }, "test", false); err != nil {
		t.Fatal(err)
	}
	plan, err = st.Outgoing(ctx, map[string]string{"refs/lossless/w": r3.Commit})
	if err != nil {
		t.Fatal(err)
	}
	var w gitstore.RefUpdate
	for _, x := range plan.Writers {
		if x.Name == "w" {
			w = x
		}
	}
	if !w.NonFastForward || w.RemoteMissing || w.FromSeq != 1 || w.ToSeq != 5 || w.Counts.Pruned != 2 || w.Counts.FileVersions != 2 {
		t.Fatalf("after prune: %+v", w)
	}
	for _, it := range plan.Items {
		if it.Path == "a.txt" || it.Blob == r2.Events[0].Blob {
			t.Fatalf("pruned content planned: %+v", it)
		}
	}
	probs, _ = plan.Check(ctx, gitstore.PushPolicy{})
	if got := probKeys(gitstore.Refused(probs)); len(got) != 1 || got[0] != "non-fast-forward:w#0:" {
		t.Fatalf("non-ff refused: %v", got)
	}
	probs, _ = plan.Check(ctx, gitstore.PushPolicy{Force: true})
	if len(gitstore.Refused(probs)) != 0 || len(probs) != 1 || !probs[0].Allowed {
		t.Fatalf("non-ff with force: %+v", probs)
	}
	if _, err := plan.PushArgs("origin", false); err == nil {
		t.Fatal("PushArgs without force accepted a non-fast-forward update")
	}

	// A remote commit this machine does not have.
	plan, err = st.Outgoing(ctx, map[string]string{"refs/lossless/w": strings.Repeat("ab", 20)})
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range plan.Writers {
		if x.Name == "w" && (!x.NonFastForward || !x.RemoteMissing) {
			t.Fatalf("missing remote commit: %+v", x)
		}
	}
}

// Encrypted spans are counted and listed as encrypted, never read by the
// scanner, never refused.
func TestOutgoingEncryptedSpans(t *testing.T) {
	ogEnv(t)
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	dir := ogRepo(t, "lossless.encrypt", "true", "lossless.recipient", id.Recipient().String())
	st := ogOpen(t, dir)
	ctx := context.Background()
	span := gitstore.Record{Event: gitstore.Event{Op: "span", Source: "proxy", Session: "s"}, Content: []byte("private conversation"), HasContent: true, Encrypt: true}
	res := ogAppend(t, st, "proxy-1", span, span)
	plan, err := st.Outgoing(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if plan.Total.Spans != 2 || plan.Total.Encrypted != 2 {
		t.Fatalf("totals: %+v", plan.Total)
	}
	for _, it := range contentItems(plan) {
		if !it.Encrypted || it.Kind != gitstore.ContentSpan {
			t.Fatalf("item: %+v", it)
		}
	}
	// The scanner sees the batch's events, commit, tree names and ref
	// name, never the ciphertext.
	var mu sync.Mutex
	var scanned [][]byte
	probs, err := plan.Check(ctx, gitstore.PushPolicy{Scan: func(b []byte) []secrets.Finding {
		mu.Lock()
		defer mu.Unlock()
		scanned = append(scanned, b)
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(probs) != 0 || len(scanned) == 0 {
		t.Fatalf("refused (%v), or nothing scanned (%d)", probKeys(probs), len(scanned))
	}
	for _, b := range scanned {
		if bytes.HasPrefix(b, []byte("age-encryption.org/v1")) {
			t.Fatal("the scanner read age ciphertext")
		}
	}
	if res.Events[0].Blob == "" {
		t.Fatal("no blob")
	}
}

// Paths are checked where they live: a symlinked directory resolves to
// its target's rules, a nested repository's own rules apply, a path
// outside the repository or in .git is "outside", a repository that is
// gone is "ignore-unknown"; a path with control characters prints quoted.
func TestOutgoingPathResolution(t *testing.T) {
	ogEnv(t)
	dir := ogRepo(t)
	ogWrite(t, filepath.Join(dir, ".gitignore"), "real/hidden.txt\n")
	if err := os.MkdirAll(filepath.Join(dir, "real"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	nested := filepath.Join(dir, "nested")
	if out, err := exec.Command("git", "init", "-q", nested).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	ogWrite(t, filepath.Join(nested, ".gitignore"), "inner.log\n")
	outside := filepath.Join(t.TempDir(), "elsewhere.txt")
	st := ogOpen(t, dir)
	gone := gitstore.Record{Event: gitstore.Event{Op: "read", Source: "hook", Repo: filepath.Join(t.TempDir(), "deleted-repo"), Path: "x.txt"}, Content: []byte("x"), HasContent: true}
	ogAppend(t, st, "w",
		ogRead("link/hidden.txt", "h\n"),
		ogRead("nested/inner.log", "log\n"),
		ogRead("nested/kept.txt", "k\n"),
		ogRead(outside, "o\n"),
		ogRead(".git/config", "[core]\n"),
		gone,
		ogRead("odd\nname\x1b[31m.txt", "n\n"),
		ogRead(":(glob)top.txt", "t\n"),
	)
	plan, err := st.Outgoing(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ci := &countingIgnore{}
	probs, err := plan.Check(context.Background(), gitstore.PushPolicy{Ignore: ci})
	if err != nil {
		t.Fatal(err)
	}
	sameStrings(t, "problems", probKeys(probs), []string{
		"ignored:w#1:link/hidden.txt",
		"ignored:w#2:nested/inner.log",
		"outside:w#4:" + outside,
		"ignore-unknown:w#6:x.txt",
	})
	if ci.calls[dir] != 1 || ci.calls[nested] != 1 || len(ci.calls) != 2 {
		t.Fatalf("check-ignore calls: %v", ci.calls)
	}
	for _, p := range probs {
		if p.Seq == 6 && !strings.Contains(p.Reason, "ignore rules unknown") {
			t.Errorf("gone repo reason: %s", p.Reason)
		}
	}
	// Allowed, they stay listed.
	probs, _ = plan.Check(context.Background(), gitstore.PushPolicy{AllowIgnored: true})
	if len(probs) != 4 || len(gitstore.Refused(probs)) != 0 {
		t.Fatalf("allowed: %v", probKeys(gitstore.Refused(probs)))
	}
	p := gitstore.PushProblem{Writer: "w", Seq: 7, Op: "read", Path: "odd\nname\x1b[31m.txt", Reason: "r"}
	if s := p.String(); strings.ContainsAny(s, "\n\x1b") || !strings.Contains(s, `"odd\nname\x1b[31m.txt"`) {
		t.Fatalf("escaped: %q", s)
	}
	if q := gitstore.QuotePath("plain/path.go"); q != "plain/path.go" {
		t.Fatalf("plain quoted: %q", q)
	}
}

func TestOutgoingRemoteAndArgs(t *testing.T) {
	ogEnv(t)
	for _, bad := range []string{"", "--upload-pack=evil", "-oProxyCommand=x", "ori\ngin", "a\x00b"} {
		if gitstore.ValidRemote(bad) == nil {
			t.Errorf("ValidRemote(%q) accepted", bad)
		}
	}
	for _, good := range []string{"origin", "git@host:x/y.git", "/srv/repo.git", "../rel", "https://h/x"} {
		if err := gitstore.ValidRemote(good); err != nil {
			t.Errorf("ValidRemote(%q): %v", good, err)
		}
	}
	a, b := strings.Repeat("a", 40), strings.Repeat("b", 40)
	refs, err := gitstore.ParseLsRemote([]byte(a + "\trefs/lossless/w\n" + b + "\trefs/notes/lossless/receipts-X\n" + a + "\trefs/heads/refs/lossless/x\n" + b + "\trefs/heads/main\n"))
	if err != nil || len(refs) != 2 || refs["refs/lossless/w"] != a || refs["refs/notes/lossless/receipts-X"] != b {
		t.Fatalf("ParseLsRemote: %v %v", refs, err)
	}
	if _, err := gitstore.ParseLsRemote([]byte("garbage\n")); err == nil {
		t.Fatal("ParseLsRemote accepted garbage")
	}

	dir := ogRepo(t)
	st := ogOpen(t, dir)
	r := ogAppend(t, st, "w1", ogRead("a", "a"))
	ogAppend(t, st, "w2", ogRead("b", "b"))
	plan, err := st.Outgoing(context.Background(), map[string]string{"refs/lossless/w2": r.Commit})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plan.PushArgs("--upload-pack=evil", true); err == nil {
		t.Fatal("PushArgs took a remote starting with '-'")
	}
	args, err := plan.PushArgs("origin", true)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(args, " ")
	w1 := strings.TrimSpace(ogGit(t, dir, "rev-parse", "refs/lossless/w1"))
	w2 := strings.TrimSpace(ogGit(t, dir, "rev-parse", "refs/lossless/w2"))
	want := "push --porcelain --no-recurse-submodules --no-verify --force-with-lease=refs/lossless/w1: --force-with-lease=refs/lossless/w2:" + r.Commit +
		" -- origin " + w1 + ":refs/lossless/w1 " + w2 + ":refs/lossless/w2"
	if got != want {
		t.Fatalf("PushArgs:\ngot  %s\nwant %s", got, want)
	}

	// LsRemote of a missing remote fails; of a hostile one, before git runs.
	if _, err := st.Transport().LsRemote(context.Background(), gitstore.Remote{URL: filepath.Join(t.TempDir(), "none")}); err == nil {
		t.Fatal("ls-remote of a missing path succeeded")
	}
	if _, err := st.Transport().LsRemote(context.Background(), gitstore.Remote{URL: "--upload-pack=touch " + filepath.Join(dir, "pwned")}); err == nil {
		t.Fatal("ls-remote accepted an option")
	}
	if _, err := os.Stat(filepath.Join(dir, "pwned")); err == nil {
		t.Fatal("the upload-pack option ran")
	}
}

func TestOutgoingPolicyFromConfig(t *testing.T) {
	ogEnv(t)
	dir := ogRepo(t, "lossless.push.allowSecrets", "yes")
	st := ogOpen(t, dir)
	p, err := gitstore.PushPolicyFromConfig(st.Config())
	if err != nil || !p.AllowSecrets || p.AllowIgnored {
		t.Fatalf("policy: %+v %v", p, err)
	}
	dir = ogRepo(t, "lossless.push.allowIgnored", "maybe")
	if _, err := gitstore.PushPolicyFromConfig(ogOpen(t, dir).Config()); err == nil {
		t.Fatal("a non-boolean was accepted")
	}
}

// BenchmarkOutgoing plans a push of the cached 100k fixture (100 writers,
// 2,000 batches) to an empty remote, in a fresh Store per iteration.
func BenchmarkOutgoing(b *testing.B) {
	dir := cachedFixture(b)
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		st, err := gitstore.OpenDir(dir, gitstore.Options{})
		if err != nil {
			b.Fatal(err)
		}
		plan, err := st.Outgoing(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		if plan.Total.Events != fixture100k.Events {
			b.Fatalf("planned %d events", plan.Total.Events)
		}
	}
}

// BenchmarkOutgoingCheck plans and checks it: every one of the 100,000
// blobs read and scanned (the fixture's recorded repository is not on
// this machine, so no git process runs).
func BenchmarkOutgoingCheck(b *testing.B) {
	dir := cachedFixture(b)
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		st, err := gitstore.OpenDir(dir, gitstore.Options{})
		if err != nil {
			b.Fatal(err)
		}
		plan, err := st.Outgoing(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		probs, err := plan.Check(ctx, gitstore.PushPolicy{AllowIgnored: true})
		if err != nil || len(gitstore.Refused(probs)) != 0 {
			b.Fatalf("check: %d refused, %v", len(gitstore.Refused(probs)), err)
		}
	}
}

// fixtureHooks is the 100k fixture as hooks write it: one event per batch
// (100,000 batch commits).
var fixtureHooks = benchdata.Fixture{Events: 100_000, Writers: 100, Batch: 1, Seed: 1}

var (
	hooksOnce sync.Once
	hooksDir  string
	hooksErr  error
)

// BenchmarkOutgoingOneEventBatches plans a push of 100,000 events stored
// one per batch commit, the way hooks append them.
func BenchmarkOutgoingOneEventBatches(b *testing.B) {
	hooksOnce.Do(func() {
		root := os.Getenv("LOSSLESS_BENCH_CACHE")
		if root == "" {
			root = os.TempDir()
		}
		hooksDir, hooksErr = fixtureHooks.Cached(context.Background(), root)
	})
	if hooksErr != nil {
		b.Fatal(hooksErr)
	}
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		st, err := gitstore.OpenDir(hooksDir, gitstore.Options{})
		if err != nil {
			b.Fatal(err)
		}
		plan, err := st.Outgoing(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		if plan.Total.Events != fixtureHooks.Events || plan.Total.Batches != fixtureHooks.Events {
			b.Fatalf("planned %d events in %d batches", plan.Total.Events, plan.Total.Batches)
		}
	}
}

// TestOutgoingPushSendsWhatWasChecked: a writer that appends between the
// check and the push (a Claude Code session still running) does not get
// its new, unchecked batch sent: the push sends the planned commit, and
// the remote (a real bare repository) ends at it.
func TestOutgoingPushSendsWhatWasChecked(t *testing.T) {
	ogEnv(t)
	dir := ogRepo(t)
	bare := filepath.Join(t.TempDir(), "remote.git")
	ogGit(t, dir, "init", "-q", "--bare", bare)
	st := ogOpen(t, dir)
	ctx := context.Background()
	r1 := ogAppend(t, st, "w", ogRead("a.txt", "clean\n"))
	plan, err := st.Outgoing(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if probs, err := plan.Check(ctx, gitstore.PushPolicy{}); err != nil || len(gitstore.Refused(probs)) != 0 {
		t.Fatalf("clean plan refused: %v %v", probKeys(probs), err)
	}
	// The writer goes on: a batch holding a secret, after the check.
	r2 := ogAppend(t, st, "w", ogRead("deploy.sh", "export GITHUB_TOKEN="+ogToken(3)+"\n"))
	if r2.Commit == r1.Commit {
		t.Fatal("second append made no commit")
	}
	res, err := st.Transport().Push(ctx, gitstore.Remote{URL: bare}, plan, false)
	if err != nil || len(res) != 1 || !res[0].OK {
		t.Fatalf("push: %+v %v", res, err)
	}
	if got := strings.TrimSpace(ogGit(t, bare, "rev-parse", "refs/lossless/w")); got != r1.Commit {
		t.Fatalf("the remote is at %s, want the checked commit %s (not the later %s)", got, r1.Commit, r2.Commit)
	}
	if exec.Command("git", "-C", bare, "cat-file", "-e", r2.Commit+"^{commit}").Run() == nil {
		t.Fatal("the batch appended after the check reached the remote")
	}
}

// BenchmarkOutgoingCheckOneEventBatches plans and checks 100,000 events
// stored one per batch commit, as hooks append them: every events.jsonl,
// commit and tree is read and scanned besides the content.
func BenchmarkOutgoingCheckOneEventBatches(b *testing.B) {
	hooksOnce.Do(func() {
		root := os.Getenv("LOSSLESS_BENCH_CACHE")
		if root == "" {
			root = os.TempDir()
		}
		hooksDir, hooksErr = fixtureHooks.Cached(context.Background(), root)
	})
	if hooksErr != nil {
		b.Fatal(hooksErr)
	}
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		st, err := gitstore.OpenDir(hooksDir, gitstore.Options{})
		if err != nil {
			b.Fatal(err)
		}
		plan, err := st.Outgoing(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		probs, err := plan.Check(ctx, gitstore.PushPolicy{AllowIgnored: true})
		if err != nil || len(gitstore.Refused(probs)) != 0 {
			b.Fatalf("check: %d refused, %v", len(gitstore.Refused(probs)), err)
		}
	}
}
