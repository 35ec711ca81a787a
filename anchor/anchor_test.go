package anchor_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/anchor"
	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/seal"
)

// The scenarios of anchor/FORMAT.md section 5, against real C git on the
// other side: bare repositories pushed to by path, history rewritten
// with git plumbing, and the anchor's verdicts read back.

type world struct {
	t      *testing.T
	home   string
	remote string // a bare repository
}

func newWorld(t *testing.T) *world {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("git not on PATH")
		}
		t.Skip("git not on PATH")
	}
	w := &world{t: t, home: t.TempDir()}
	t.Setenv("HOME", w.home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(w.home, ".config"))
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(w.home, ".gitconfig"))
	t.Setenv("LOSSLESS_ANCHOR_KEY_FILE", filepath.Join(w.home, "anchor-key"))
	t.Setenv("LOSSLESS_IDENTITY_FILE", filepath.Join(w.home, "identity.age"))
	t.Setenv("LOSSLESS_ARCHIVE_EXCLUDE", "")
	w.remote = filepath.Join(t.TempDir(), "remote.git")
	w.git("", "init", "-q", "--bare", w.remote)
	return w
}

func (w *world) git(dir string, args ...string) string {
	w.t.Helper()
	if dir != "" {
		args = append([]string{"-C", dir}, args...)
	}
	cmd := exec.Command("git", args...)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@localhost", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@localhost")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		w.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	return strings.TrimSpace(out.String())
}

// repo makes a repository with origin = the world's remote.
func (w *world) repo() (string, *gitstore.Store) {
	w.t.Helper()
	dir := filepath.Join(w.t.TempDir(), "repo")
	w.git("", "init", "-q", dir)
	w.git(dir, "remote", "add", "origin", w.remote)
	dir, _ = filepath.EvalSymlinks(dir)
	st, err := gitstore.OpenDir(dir, gitstore.Options{})
	if err != nil {
		w.t.Fatal(err)
	}
	return dir, st
}

func (w *world) append(st *gitstore.Store, writer string, contents ...string) gitstore.AppendResult {
	w.t.Helper()
	var recs []gitstore.Record
	for i, c := range contents {
		r := gitstore.Record{Event: gitstore.Event{Op: "read", Source: "hook", Session: writer, View: "full"}, Content: []byte(c), HasContent: true}
		r.SetPath(fmt.Sprintf("f%d.txt", i))
		recs = append(recs, r)
	}
	res, err := st.Append(context.Background(), writer, recs)
	if err != nil {
		w.t.Fatal(err)
	}
	return res
}

func (w *world) key() *anchor.Key {
	w.t.Helper()
	p, err := anchor.KeyPath()
	if err != nil {
		w.t.Fatal(err)
	}
	k, err := anchor.LoadKey(p, "", true)
	if err != nil {
		w.t.Fatal(err)
	}
	return k
}

// push anchors st on targets and fails the test on any error.
func (w *world) push(st *gitstore.Store, targets ...anchor.Target) *anchor.Made {
	w.t.Helper()
	made, err := anchor.MakeCheckpoint(context.Background(), st, w.key(), time.Now())
	if err != nil {
		w.t.Fatal(err)
	}
	for _, s := range anchor.Send(context.Background(), st, made, targets) {
		if s.Err != nil {
			w.t.Fatalf("anchor on %s: %v", s.Target.Remote, s.Err)
		}
	}
	return made
}

// verify opens a fresh store (a new process's view) and verifies writer.
func (w *world) verify(dir, writer string) *seal.Report {
	w.t.Helper()
	st, err := gitstore.OpenDir(dir, gitstore.Options{})
	if err != nil {
		w.t.Fatal(err)
	}
	rep, err := st.Verify(context.Background(), writer, seal.Options{})
	if err != nil {
		w.t.Fatal(err)
	}
	return rep
}

func (w *world) check(dir string, t anchor.Target) *anchor.RemoteCheck {
	w.t.Helper()
	st, err := gitstore.OpenDir(dir, gitstore.Options{})
	if err != nil {
		w.t.Fatal(err)
	}
	rc, err := anchor.CheckRemote(context.Background(), st, t, time.Now())
	if err != nil {
		w.t.Fatal(err)
	}
	return rc
}

func kinds(rc *anchor.RemoteCheck) []string {
	var out []string
	for _, f := range rc.Findings {
		out = append(out, f.Kind+":"+f.Writer)
	}
	return out
}

func origin(dir string) anchor.Target {
	return anchor.Target{Remote: "origin", Mode: anchor.ModeRef, Dir: dir}
}

// TestAnchorPushSendsNoContent: the default anchor push puts only the
// checkpoint ref on the remote — no writer, no file version, no span —
// even when the archive holds a secret in a span and an ignored file's
// content; the remote's objects are the checkpoint commit, its tree and
// its two blobs.
func TestAnchorPushSendsNoContent(t *testing.T) {
	w := newWorld(t)
	dir, st := w.repo()
	secret := "gh" + "p_" + strings.Repeat("Zq3vX9kL2m", 3) + "N8pR4t"
	if err := os.WriteFile(filepath.Join(dir, ".gitignore"), []byte("local.yml\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w.append(st, "w1", "planted file content UNIQUE-7f3a\n", "export GITHUB_TOKEN="+secret+"\n")
	span := gitstore.Record{Event: gitstore.Event{Op: "span", Source: "sweep", Session: "s", Key: "span:1"},
		Content: []byte(`{"content":"token ` + secret + `"}`), HasContent: true}
	if _, err := st.Append(context.Background(), "w2", []gitstore.Record{span}); err != nil {
		t.Fatal(err)
	}
	made := w.push(st, origin(dir))
	refs := w.git(w.remote, "for-each-ref", "--format=%(refname)")
	if refs != anchor.AnchorRef(made.Checkpoint.Machine, made.Checkpoint.Clone) {
		t.Fatalf("remote refs after an anchor push:\n%s", refs)
	}
	objs := w.git(w.remote, "cat-file", "--batch-all-objects", "--batch-check=%(objecttype) %(objectname)")
	if n := len(strings.Split(objs, "\n")); n != 4 {
		t.Fatalf("the remote holds %d objects, want the commit, its tree and 2 blobs:\n%s", n, objs)
	}
	all := w.git(w.remote, "cat-file", "--batch-all-objects", "--batch")
	for _, planted := range []string{secret, "UNIQUE-7f3a"} {
		if strings.Contains(all, planted) {
			t.Fatalf("%q reached the remote", planted)
		}
	}
	if !strings.Contains(all, "writer w1 2 ") || !strings.Contains(all, "writer w2 2 ") /* the span and its vault event */ {
		t.Fatalf("the checkpoint does not name both writers:\n%s", all)
	}
}

// TestAnchorHonestExtensionAndLocalRewrites: after anchoring, extending a
// chain verifies; dropping its last batch (and the witness) or resealing
// a rewritten history is an anchor-mismatch at the entry.
func TestAnchorHonestExtensionAndLocalRewrites(t *testing.T) {
	w := newWorld(t)
	dir, st := w.repo()
	w.append(st, "w", "a1\n", "a2\n")
	r2 := w.append(st, "w", "b1\n")
	w.push(st, origin(dir))
	if rc := w.check(dir, origin(dir)); !rc.OK() || rc.Accepted != 1 {
		t.Fatalf("fresh anchor: %v", kinds(rc))
	}
	w.append(st, "w", "c1\n")
	if rep := w.verify(dir, "w"); !rep.OK() || rep.Entries != 4 {
		t.Fatalf("honest extension: %+v", rep.Break)
	}
	parent := w.git(dir, "rev-parse", r2.Commit+"^")

	t.Run("drop the last anchored batch", func(t *testing.T) {
		w.git(dir, "update-ref", "refs/lossless/w", parent)
		if err := os.RemoveAll(filepath.Join(dir, ".git", "lossless", "witness")); err != nil {
			t.Fatal(err)
		}
		rep := w.verify(dir, "w")
		if rep.OK() || rep.Break.Kind != seal.AnchorMismatch || rep.Break.Seq != 3 || !strings.Contains(rep.Break.Detail, "anchored on origin") {
			t.Fatalf("dropped batch: %+v", rep.Break)
		}
	})
	t.Run("reseal a rewritten history", func(t *testing.T) {
		// From entry 3 on, another history, sealed by the store itself as
		// an attacker with write access would do it.
		w.git(dir, "update-ref", "refs/lossless/w", parent)
		w.append(st, "w", "forged\n")
		os.RemoveAll(filepath.Join(dir, ".git", "lossless", "witness"))
		rep := w.verify(dir, "w")
		if rep.OK() || rep.Break.Kind != seal.AnchorMismatch || rep.Break.Seq != 3 {
			t.Fatalf("resealed history: %+v", rep.Break)
		}
	})
}

// TestAnchorRemoteRollbackForkAndProtect: a second clone accepts the
// remote's checkpoints; then the remote's checkpoint ref is rolled back,
// and pointed at a sibling history — each caught, with both signed
// checkpoints kept as evidence; after anchor protect the same updates are
// refused by the real remote.
func TestAnchorRemoteRollbackForkAndProtect(t *testing.T) {
	w := newWorld(t)
	dir, st := w.repo()
	w.append(st, "w", "1\n")
	m1 := w.push(st, origin(dir))
	w.append(st, "w", "2\n")
	m2 := w.push(st, origin(dir))
	if m2.Checkpoint.N != 2 || m2.Checkpoint.Prev != anchor.Digest(m1.Signed) {
		t.Fatalf("second checkpoint: %+v", m2.Checkpoint)
	}
	ref := anchor.AnchorRef(m2.Checkpoint.Machine, m2.Checkpoint.Clone)
	other, _ := w.repo() // another clone that watches the remote
	if rc := w.check(other, origin(other)); !rc.OK() || rc.Accepted != 1 || rc.Clones != 1 {
		t.Fatalf("watcher's first look: %v %+v", kinds(rc), rc)
	}

	// Rolled back to checkpoint 1 (a force push by someone with access).
	w.git(w.remote, "update-ref", ref, m1.Commit)
	rc := w.check(other, origin(other))
	if len(rc.Findings) == 0 || rc.Findings[0].Kind != anchor.KindRollback || rc.Findings[0].Writer != "w" {
		t.Fatalf("rollback seen from the watcher: %v", kinds(rc))
	}
	ev, err := os.ReadFile(rc.Findings[0].Evidence)
	if err != nil || !bytes.Contains(ev, m2.Signed) || !bytes.Contains(ev, m1.Signed) {
		t.Fatalf("evidence %s lacks both checkpoints: %v\n%s", rc.Findings[0].Evidence, err, ev)
	}
	// And from the anchoring clone itself: its checkpoint 2 is gone there.
	if rc := w.check(dir, origin(dir)); rc.OK() || !strings.Contains(strings.Join(kinds(rc), " "), anchor.KindRollback) {
		t.Fatalf("rollback seen from the anchoring clone: %v", kinds(rc))
	}
	// The watcher keeps its memory: the same rollback is reported again.
	if rc := w.check(other, origin(other)); rc.OK() {
		t.Fatal("a rollback is forgotten after it was reported once")
	}

	// A sibling history: checkpoint 2' made on checkpoint 1.
	w.git(w.remote, "update-ref", ref, m2.Commit)
	w.git(dir, "update-ref", ref, m1.Commit)
	w.append(st, "w", "3\n")
	m2b, err := anchor.MakeCheckpoint(context.Background(), st, w.key(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	w.git(dir, "push", "-q", "--force", w.remote, m2b.Commit+":"+ref)
	rc = w.check(other, origin(other))
	if rc.OK() || rc.Findings[0].Kind != anchor.KindFork {
		t.Fatalf("fork seen from the watcher: %v", kinds(rc))
	}

	// Protected: the same rewrites are refused by the remote itself.
	w.git(w.remote, "update-ref", ref, m2.Commit)
	if _, err := anchor.Protect(context.Background(), w.remote); err != nil {
		t.Fatal(err)
	}
	for _, attempt := range [][]string{
		{"push", "--force", w.remote, m1.Commit + ":" + ref},
		{"push", "--force", w.remote, m2b.Commit + ":" + ref},
		{"push", w.remote, ":" + ref},
	} {
		cmd := exec.Command("git", append([]string{"-C", dir}, attempt...)...)
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "anchor protect") {
			t.Fatalf("protected remote took git %s: %v\n%s", strings.Join(attempt, " "), err, out)
		}
	}
	if got := w.git(w.remote, "rev-parse", ref); got != m2.Commit {
		t.Fatalf("protected ref moved to %s", got)
	}
	// An honest fast-forward still goes through.
	w.git(dir, "update-ref", ref, m2.Commit, m2b.Commit)
	w.append(st, "w", "4\n")
	w.push(st, origin(dir))
}

// TestAnchorTagsMode: each checkpoint is an annotated tag named as
// documented, whose message is the signed checkpoint; deleting one on the
// remote is a rollback, moving one a fork; a protected remote refuses
// both.
func TestAnchorTagsMode(t *testing.T) {
	w := newWorld(t)
	dir, st := w.repo()
	tags := anchor.Target{Remote: "origin", Mode: anchor.ModeTags, Dir: dir}
	w.append(st, "w", "1\n")
	m1 := w.push(st, tags)
	w.append(st, "w", "2\n")
	m2 := w.push(st, tags)
	name1 := anchor.TagName(m1.Checkpoint.Machine, m1.Checkpoint.Clone, 1)
	name2 := anchor.TagName(m2.Checkpoint.Machine, m2.Checkpoint.Clone, 2)
	if !strings.HasPrefix(name1, "lossless-anchor/") || w.git(w.remote, "cat-file", "-t", name2) != "tag" {
		t.Fatalf("tag %s on the remote is not an annotated tag", name2)
	}
	msg := w.git(w.remote, "cat-file", "-p", name2)
	if !strings.Contains(msg+"\n", string(m2.Signed)) || w.git(w.remote, "rev-parse", name2+"^{commit}") != m2.Commit {
		t.Fatalf("tag %s:\n%s", name2, msg)
	}
	other, _ := w.repo()
	if rc := w.check(other, origin(other)); !rc.OK() || rc.Accepted != 2 {
		t.Fatalf("watcher's first look: %v", kinds(rc))
	}
	w.git(w.remote, "tag", "-d", name2)
	if rc := w.check(other, origin(other)); rc.OK() || rc.Findings[0].Kind != anchor.KindRollback {
		t.Fatalf("deleted tag: %v", kinds(rc))
	}
	w.git(w.remote, "tag", "-a", "-f", "-m", "forged", name2, m1.Commit)
	if rc := w.check(other, origin(other)); rc.OK() || rc.Findings[0].Kind != anchor.KindFork {
		t.Fatalf("moved tag: %v", kinds(rc))
	}
	if _, err := anchor.Protect(context.Background(), w.remote); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("git", "-C", dir, "push", w.remote, ":refs/tags/"+name1).CombinedOutput()
	if err == nil {
		t.Fatalf("protected remote deleted an anchor tag:\n%s", out)
	}
}

// TestAnchorPathMode: checkpoints as files in a directory; a file removed
// or changed there is caught.
func TestAnchorPathMode(t *testing.T) {
	w := newWorld(t)
	dir, st := w.repo()
	anchorDir := t.TempDir()
	pt := anchor.Target{Remote: anchorDir, Mode: anchor.ModePath, Dir: dir}
	w.append(st, "w", "1\n")
	m1 := w.push(st, pt)
	w.append(st, "w", "2\n")
	w.push(st, pt)
	f1 := filepath.Join(anchorDir, "lossless-anchor", m1.Checkpoint.Machine, m1.Checkpoint.Clone, "1.checkpoint")
	if b, err := os.ReadFile(f1); err != nil || !bytes.Equal(b, m1.Signed) {
		t.Fatalf("checkpoint file %s: %v", f1, err)
	}
	if fi, err := os.Stat(f1); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("checkpoint file mode: %v %v", fi.Mode(), err)
	}
	other, _ := w.repo()
	if rc := w.check(other, pt); !rc.OK() || rc.Accepted != 2 {
		t.Fatalf("first look at the directory: %v", kinds(rc))
	}
	if err := os.WriteFile(f1, append([]byte("x"), m1.Signed...), 0o600); err != nil {
		t.Fatal(err)
	}
	if rc := w.check(other, pt); rc.OK() || rc.Findings[0].Kind != anchor.KindFork {
		t.Fatalf("changed file: %v", kinds(rc))
	}
	os.Remove(f1)
	if rc := w.check(other, pt); rc.OK() || rc.Findings[0].Kind != anchor.KindRollback {
		t.Fatalf("removed file: %v", kinds(rc))
	}
}

// TestAnchorNotesRollbackCaught: a notes ref (receipts) rolled back behind
// the anchored head is caught by the offline check.
func TestAnchorNotesRollbackCaught(t *testing.T) {
	w := newWorld(t)
	dir, st := w.repo()
	w.git(dir, "commit", "-q", "--allow-empty", "-m", "c1")
	c1 := w.git(dir, "rev-parse", "HEAD")
	w.git(dir, "commit", "-q", "--allow-empty", "-m", "c2")
	c2 := w.git(dir, "rev-parse", "HEAD")
	w.append(st, "w", "1\n")
	n1, err := st.WriteNote(context.Background(), "receipts-test", c1, []byte("receipt 1\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.WriteNote(context.Background(), "receipts-test", c2, []byte("receipt 2\n"), nil); err != nil {
		t.Fatal(err)
	}
	w.push(st, origin(dir))
	if f, err := anchor.CheckNotes(context.Background(), st); err != nil || len(f) != 0 {
		t.Fatalf("notes before: %v %v", f, err)
	}
	w.git(dir, "update-ref", gitstore.NotesPrefix+"receipts-test", n1)
	f, err := anchor.CheckNotes(context.Background(), st)
	if err != nil || len(f) != 1 || f[0].Kind != anchor.KindMismatch || f[0].Writer != "notes:receipts-test" {
		t.Fatalf("notes rolled back: %+v %v", f, err)
	}
}

// TestAnchorPushKilledMidway: a push cancelled while the remote's
// pre-receive hook holds it (the server "dies" mid-push) records nothing
// as anchored and leaves the remote as it was; the next push completes.
func TestAnchorPushKilledMidway(t *testing.T) {
	w := newWorld(t)
	dir, st := w.repo()
	w.append(st, "w", "1\n")
	started := filepath.Join(t.TempDir(), "started")
	release := filepath.Join(t.TempDir(), "release")
	hook := fmt.Sprintf("#!/bin/sh\ncat >/dev/null\ntouch %q\nwhile [ ! -e %q ]; do sleep 0.05; done\nexit 1\n", started, release)
	if err := os.WriteFile(filepath.Join(w.remote, "hooks", "pre-receive"), []byte(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	made, err := anchor.MakeCheckpoint(context.Background(), st, w.key(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan []anchor.Sent, 1)
	go func() { done <- anchor.Send(ctx, st, made, []anchor.Target{origin(dir)}) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(started); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the push never reached the remote's hook")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	sent := <-done
	os.WriteFile(release, nil, 0o600) // let the orphaned hook end
	if len(sent) != 1 || sent[0].Err == nil {
		t.Fatalf("a killed push reported success: %+v", sent)
	}
	if recs, _ := anchor.ReadRecords(st); len(recs) != 0 {
		t.Fatalf("a killed push was recorded as anchored: %+v", recs)
	}
	if refs := w.git(w.remote, "for-each-ref"); refs != "" {
		t.Fatalf("a killed push moved the remote's refs: %s", refs)
	}
	os.Remove(filepath.Join(w.remote, "hooks", "pre-receive"))
	w.push(st, origin(dir))
	if recs, _ := anchor.ReadRecords(st); len(recs) != 1 {
		t.Fatalf("after the retry: %d records", len(recs))
	}
}
