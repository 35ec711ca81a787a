package receipt_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/blame"
	"github.com/git-lossless/git-lossless/receipt"
	"github.com/git-lossless/git-lossless/receipt/note"
)

// carryRepo is a repository whose agent commits each write one file
// (f<i>.txt, written by the session s<i>), with receipts, and our git
// hooks installed from the real binary.
type carryRepo struct {
	*testRepo
	bin, keyFile string
	gpg          []string
	base         time.Time
	n            int
}

func newCarryRepo(t *testing.T, bin string) *carryRepo {
	t.Helper()
	gpg := gpgEnv(t)
	k := theKey(t)
	importKey(t, gpg, k)
	r := &carryRepo{testRepo: newRepo(t), bin: bin, gpg: gpg}
	r.keyFile = filepath.Join(t.TempDir(), "key.asc")
	if err := k.WriteFile(r.keyFile, false); err != nil {
		t.Fatal(err)
	}
	r.git("config", "lossless.signingKey", r.keyFile)
	r.base = time.Now().UTC().Truncate(time.Second).Add(-5 * time.Hour)
	r.write("README", "root\n")
	r.commitAt("root", r.base)
	if bin == "" {
		return r
	}
	out, err := exec.Command(bin, "-C", r.dir, "install", "git-hooks", "--apply", "--command", bin).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "post-rewrite") {
		t.Fatalf("install git-hooks: %v\n%s", err, out)
	}
	return r
}

// agentCommit: session s<i> reads and writes f<i>.txt, then it is
// committed and its receipt built and stored.
func (r *carryRepo) agentCommit(t *testing.T, name string) string {
	t.Helper()
	r.n++
	at := r.base.Add(time.Duration(r.n) * 10 * time.Minute)
	f, body := name+".txt", "content of "+name+"\n"
	r.record("cc-s-"+name, rec{at: at, session: "s-" + name, op: "write", path: f, content: body})
	r.write(f, body)
	c := r.commitAt(name, at.Add(time.Minute))
	if _, _, err := receipt.Save(context.Background(), r.st, mustBuild(t, r.st, c), theKey(t)); err != nil {
		t.Fatal(err)
	}
	return c
}

func (r *carryRepo) cli(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(r.bin, append([]string{"-C", r.dir}, args...)...)
	cmd.Env = gitEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git-lossless %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// receiptOf returns rev's receipt, verified, and checks that it was
// carried from exactly wantFrom and that each file in written is
// "written" (the agent's write belongs to the new commit).
func (r *carryRepo) check(t *testing.T, rev string, wantFrom []string, written ...string) *note.Receipt {
	t.Helper()
	ctx := context.Background()
	c := r.git("rev-parse", rev)
	found, err := receipt.Find(ctx, r.st, c)
	if err != nil || len(found) != 1 {
		t.Fatalf("%s: %d receipts, %v", rev, len(found), err)
	}
	res := receipt.Verify(ctx, r.st, found[0], keyring(t, theKey(t)))
	if !res.OK() {
		t.Fatalf("%s: verify: %+v", rev, res.Problems)
	}
	rc := res.Receipt
	var got []string
	for _, cs := range rc.Carried {
		got = append(got, cs.Commit)
	}
	want := append([]string(nil), wantFrom...)
	sort.Strings(want)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("%s carried from %v, want %v", rev, got, want)
	}
	if len(res.Carried) != len(want) {
		t.Fatalf("verify reports %d carried sources, want %d", len(res.Carried), len(want))
	}
	for _, f := range written {
		if p := pathEntry(t, rc, f); p.Status != note.Written {
			t.Fatalf("%s: %s is %s, want written", rev, f, p.Status)
		}
	}
	if len(rc.Paths) != len(written) {
		t.Fatalf("%s: %d paths, want %d", rev, len(rc.Paths), len(written))
	}
	// Plain git reads the note.
	ref := "lossless/receipts-" + theKey(t).ID()
	if out := r.git("notes", "--ref="+ref, "show", c); !strings.Contains(out, "commit "+c) {
		t.Fatalf("git notes show: %s", out)
	}
	return rc
}

// blameHolds: at rev, every agent file's line has its writer as origin
// and README (the person's root commit) has none, found by content with
// package blame — the same repository whose receipts were carried.
func (r *carryRepo) blameHolds(t *testing.T, rev string) {
	t.Helper()
	files := strings.Fields(r.git("ls-tree", "--name-only", rev))
	agentFiles := 0
	for _, f := range files {
		lines, err := blame.File(context.Background(), r.st, rev, f, blame.Options{})
		if err != nil {
			t.Fatalf("blame %s %s: %v", rev, f, err)
		}
		want := ""
		if name, ok := strings.CutSuffix(f, ".txt"); ok {
			want, agentFiles = "cc-s-"+name, agentFiles+1
		}
		for _, l := range lines {
			got := ""
			if l.Origin != nil {
				got = l.Origin.Writer
			}
			if got != want {
				t.Errorf("%s: blame %s:%d %q: origin %q, want %q", rev, f, l.N, l.Text, got, want)
			}
		}
	}
	if agentFiles == 0 {
		t.Fatalf("%s holds no agent file", rev)
	}
}

// plainTools: git verify-commit on the notes ref (real gpg), fsck --strict,
// and our verify --all through the binary.
func (r *carryRepo) plainTools(t *testing.T) {
	t.Helper()
	ref := "refs/notes/lossless/receipts-" + theKey(t).ID()
	if out, err := gpgRun(t, r.gpg, r.dir, nil, "git", "verify-commit", ref); err != nil {
		t.Fatalf("git verify-commit %s: %v\n%s", ref, err, out)
	}
	r.git("fsck", "--strict")
	if out := r.cli(t, "receipt", "verify", "--all"); !strings.Contains(out, "0 failed") {
		t.Fatalf("verify --all: %s", out)
	}
}

func seqEditor(t *testing.T, todo string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "todo.sh")
	script := "#!/bin/sh\ncat > \"$1\" <<'TODO'\n" + todo + "TODO\n"
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCarryThroughRewrites: receipts on agent commits survive commit
// --amend, an interactive rebase (reorder, squash, fixup, edit, drop) and
// a cherry-pick through the installed hooks, and git merge --squash and
// filter-branch through `receipt carry OLD..NEW`; every new commit's
// receipt names its sources, verifies, keeps the agents' writes as
// written, and plain git and gpg still read and verify the notes.
// After every step blame (found by content) still gives each agent file's
// line its writer and the person's README none.
func TestCarryThroughRewrites(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and drives git rebase")
	}
	bin := buildBinary(t)
	r := newCarryRepo(t, bin)

	// amend
	a := r.agentCommit(t, "a")
	// The amend keeps a's committer date, so the commits made after it
	// (in test time, hours ago) are later than their parent.
	am := exec.Command("git", "commit", "-q", "--amend", "-m", "a amended")
	am.Dir = r.dir
	am.Env = gitEnv("GIT_COMMITTER_DATE=" + r.git("log", "-1", "--format=%cI"))
	if out, err := am.CombinedOutput(); err != nil {
		t.Fatalf("amend: %v\n%s", err, out)
	}
	a2 := r.git("rev-parse", "HEAD")
	if a2 == a {
		t.Fatal("amend made no new commit")
	}
	r.check(t, "HEAD", []string{a}, "a.txt")
	r.plainTools(t)
	r.blameHolds(t, "HEAD")

	// With git's notes.rewriteRef covering our refs, git copies the old
	// note (which names the old commit) before the hook runs: the hook
	// replaces the copy with a carried receipt.
	am = exec.Command("git", "-c", "notes.rewriteRef=refs/notes/lossless/*", "commit", "-q", "--amend", "-m", "a amended twice")
	am.Dir = r.dir
	am.Env = gitEnv("GIT_COMMITTER_DATE=" + r.git("log", "-1", "--format=%cI"))
	if out, err := am.CombinedOutput(); err != nil {
		t.Fatalf("amend: %v\n%s", err, out)
	}
	if log := r.git("log", "-2", "--format=%s", "refs/notes/lossless/receipts-"+theKey(t).ID()); !strings.Contains(log, "Notes added by 'git commit --amend'") {
		t.Fatalf("git did not copy the note (the case is not exercised): %s", log)
	}
	r.check(t, "HEAD", []string{a2}, "a.txt")
	r.plainTools(t)
	r.blameHolds(t, "HEAD")
	a2 = r.git("rev-parse", "HEAD")

	// interactive rebase: reorder, squash, fixup, edit, drop
	c := map[string]string{}
	for _, n := range []string{"b", "c", "d", "e", "f", "g"} {
		c[n] = r.agentCommit(t, n)
	}
	todo := fmt.Sprintf("pick %s c\npick %s b\nsquash %s d\npick %s e\nfixup %s f\n", c["c"], c["b"], c["d"], c["e"], c["f"])
	// g is dropped (left out of the todo list); a second rebase edits.
	cmd := exec.Command("git", "rebase", "-i", a2)
	cmd.Dir = r.dir
	cmd.Env = gitEnv("GIT_SEQUENCE_EDITOR="+seqEditor(t, todo), "GIT_EDITOR=true")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("rebase: %v\n%s", err, out)
	}
	if log := r.git("log", "--format=%s", a2+"..HEAD"); strings.Count(log, "\n") != 2 {
		t.Fatalf("after the rebase: %q", log)
	}
	r.check(t, "HEAD~2", []string{c["c"]}, "c.txt")
	r.check(t, "HEAD~1", []string{c["b"], c["d"]}, "b.txt", "d.txt")
	r.check(t, "HEAD", []string{c["e"], c["f"]}, "e.txt", "f.txt")
	if _, err := r.gitErr(nil, "cat-file", "-e", "HEAD:g.txt"); err == nil {
		t.Fatal("g was not dropped")
	}
	r.plainTools(t)
	r.blameHolds(t, "HEAD")

	// edit: stop at the middle commit, amend it, continue.
	mid := r.git("rev-parse", "HEAD~1")
	top := r.git("rev-parse", "HEAD")
	todo = fmt.Sprintf("edit %s m\npick %s t\n", mid, top)
	cmd = exec.Command("git", "rebase", "-i", "HEAD~2")
	cmd.Dir = r.dir
	cmd.Env = gitEnv("GIT_SEQUENCE_EDITOR="+seqEditor(t, todo), "GIT_EDITOR=true")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("rebase edit: %v\n%s", err, out)
	}
	r.git("commit", "-q", "--amend", "-m", "b and d, edited")
	cmd = exec.Command("git", "rebase", "--continue")
	cmd.Dir = r.dir
	cmd.Env = gitEnv("GIT_EDITOR=true")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("rebase --continue: %v\n%s", err, out)
	}
	r.check(t, "HEAD~1", []string{mid}, "b.txt", "d.txt")
	r.check(t, "HEAD", []string{top}, "e.txt", "f.txt")
	r.plainTools(t)
	r.blameHolds(t, "HEAD")

	// cherry-pick onto another branch
	pick := r.git("rev-parse", "HEAD~1")
	r.git("checkout", "-q", "-b", "other", a2)
	r.git("cherry-pick", pick)
	r.check(t, "HEAD", []string{pick}, "b.txt", "d.txt")
	r.plainTools(t)
	r.blameHolds(t, "HEAD")

	// git merge --squash + receipt carry
	r.git("checkout", "-q", "-b", "feature", a2)
	f1, f2 := r.agentCommit(t, "h"), r.agentCommit(t, "i")
	r.git("checkout", "-q", "other")
	r.git("merge", "--squash", "feature")
	r.git("commit", "-q", "-m", "squashed feature")
	out := r.cli(t, "receipt", "carry", "feature..other")
	if !strings.Contains(out, "(squash)") || !strings.Contains(out, "1 receipt carried, 0 old receipts unmatched") {
		t.Fatalf("carry: %s", out)
	}
	r.check(t, "HEAD", []string{f1, f2}, "h.txt", "i.txt")
	if out := r.cli(t, "receipt", "carry", "feature..other"); !strings.Contains(out, "0 receipts carried") {
		t.Fatalf("second carry added something: %s", out)
	}
	r.plainTools(t)
	r.blameHolds(t, "HEAD")

	// filter-branch (no hook): carry by patch id
	r.git("checkout", "-q", "main")
	before := r.git("rev-list", a2+"..main")
	fb := exec.Command("git", "filter-branch", "-f", "--msg-filter", "sed s/^/rewritten:\\ /", a2+"..main")
	fb.Dir = r.dir
	fb.Env = gitEnv("FILTER_BRANCH_SQUELCH_WARNING=1")
	if o, err := fb.CombinedOutput(); err != nil {
		t.Fatalf("filter-branch: %v\n%s", err, o)
	}
	out = r.cli(t, "receipt", "carry", "refs/original/refs/heads/main..main")
	if !strings.Contains(out, "3 receipts carried, 0 old receipts unmatched") || strings.Count(out, "(patch-id)") != 3 {
		t.Fatalf("carry after filter-branch: %s", out)
	}
	olds := strings.Fields(before)
	r.check(t, "main", []string{olds[0]}, "e.txt", "f.txt")
	r.check(t, "main~1", []string{olds[1]}, "b.txt", "d.txt")
	r.plainTools(t)
	r.blameHolds(t, "HEAD")

	// verify says which receipts were carried, from which commits.
	if out := r.cli(t, "receipt", "verify", "main"); !strings.Contains(out, "carried from "+olds[0][:12]+": its receipt is on the same ref") {
		t.Fatalf("verify does not say it was carried: %s", out)
	}
	if out := r.cli(t, "receipt", "show", "main"); !strings.Contains(out, "carried from "+olds[0]+"\n") {
		t.Fatalf("show does not say it was carried: %s", out)
	}
	if out := r.cli(t, "receipt", "show", "main", "--json"); !strings.Contains(out, `"carried_from":[{"commit":"`+olds[0]) {
		t.Fatalf("show --json: %s", out)
	}
}

// TestCarryWindowAndUnmatched: a carried receipt whose carried window is
// not its source receipt's fails verification (commit-mismatch); a squash
// whose result is not exactly its sources' net change is not matched and
// is reported; a commit that has a receipt is kept unless force.
func TestCarryWindowAndUnmatched(t *testing.T) {
	r := newCarryRepo(t, "")
	ctx := context.Background()
	k := theKey(t)
	a := r.agentCommit(t, "a")
	b := r.agentCommit(t, "b")

	// A rewrite of b (reworded).
	tree := r.git("rev-parse", b+"^{tree}")
	cmd := exec.Command("git", "commit-tree", tree, "-p", a, "-m", "b reworded")
	cmd.Dir = r.dir
	cmd.Env = gitEnv()
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	b2 := strings.TrimSpace(string(out))
	src, err := receipt.Load(ctx, r.st, k.Writer(), b)
	if err != nil {
		t.Fatal(err)
	}
	wrong := note.Carried{Commit: b, From: src.Parsed.From - 3600, HasFrom: true, To: src.Parsed.WindowEnd()}
	rc, err := receipt.Build(ctx, r.st, b2, receipt.Options{NoTokens: true, Carried: []note.Carried{wrong}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := receipt.Save(ctx, r.st, rc, k); err != nil {
		t.Fatal(err)
	}
	found, _ := receipt.Find(ctx, r.st, b2)
	res := receipt.Verify(ctx, r.st, found[0], keyring(t, k))
	if res.OK() || res.Problems[0].Kind != receipt.ProblemCommit || !strings.Contains(res.Problems[0].Detail, "carried from") {
		t.Fatalf("a wrong carried window verified: %+v", res.Problems)
	}
	if len(res.Carried) != 1 || !res.Carried[0].HasReceipt || !res.Carried[0].CommitExists {
		t.Fatalf("carried sources: %+v", res.Carried)
	}
	// Kept without force; rebuilt right with it.
	if got, err := receipt.Carry(ctx, r.st, b2, []string{b}, k, receipt.Options{NoTokens: true}, false); err != nil || got.Status != receipt.CarryKept {
		t.Fatalf("carry over a receipt: %+v %v", got, err)
	}
	if got, err := receipt.Carry(ctx, r.st, b2, []string{b}, k, receipt.Options{NoTokens: true}, true); err != nil || got.Status != receipt.CarryDone {
		t.Fatalf("carry --force: %+v %v", got, err)
	}
	found, _ = receipt.Find(ctx, r.st, b2)
	if res := receipt.Verify(ctx, r.st, found[0], keyring(t, k)); !res.OK() {
		t.Fatalf("forced carry: %+v", res.Problems)
	}

	// A squash with an extra edit: not the net change of a and b.
	r.git("checkout", "-q", "-b", "squashed", r.git("rev-list", "--max-parents=0", "HEAD"))
	r.git("merge", "--squash", "main")
	r.write("a.txt", "edited while squashing\n")
	r.commitAt("squash", r.base.Add(time.Hour))
	rws, unmatched, err := receipt.MatchRange(ctx, r.st, r.dir, "main", "squashed")
	if err != nil {
		t.Fatal(err)
	}
	if len(rws) != 0 || strings.Join(unmatched, " ") != a+" "+b {
		t.Fatalf("matched %+v, unmatched %v", rws, unmatched)
	}
	// Without the edit it is a squash of both.
	r.write("a.txt", "content of a\n")
	r.commitAt("undo the edit", r.base.Add(2*time.Hour))
	r.git("reset", "-q", "--soft", "HEAD~2")
	r.commitAt("squash", r.base.Add(3*time.Hour))
	rws, unmatched, err = receipt.MatchRange(ctx, r.st, r.dir, "main", "squashed")
	if err != nil {
		t.Fatal(err)
	}
	if len(rws) != 1 || rws[0].How != "squash" || strings.Join(rws[0].Olds, " ") != a+" "+b || len(unmatched) != 0 {
		t.Fatalf("matched %+v, unmatched %v", rws, unmatched)
	}
}
