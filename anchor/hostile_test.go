package anchor_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/anchor"
	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/internal/testkit"
)

// Reproductions of a hostile run against sync and anchors (issue 19):
// each failed before the fix it names.

// forgeOwnership makes clone c believe it wrote writer, as a modified
// binary on another machine would: the one thing a well-behaved clone
// never does.
func forgeOwnership(t *testing.T, c *syncClone, writer string) {
	t.Helper()
	d := filepath.Join(c.dir, ".git", "lossless", "own")
	if err := os.MkdirAll(d, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, writer), nil, 0o600); err != nil {
		t.Fatal(err)
	}
}

func findingKinds(fs []anchor.Finding) string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Kind+":"+f.Writer)
	}
	return strings.Join(out, " ")
}

// TestSyncForeignAppendNeverAdopted: a second clone with push access
// fetches this clone's writer, appends a batch (a write of evil.txt) and
// pushes it. This clone's sync used to answer "1 adopted (behind 1)", its
// verify said OK, and its next anchor push signed the foreign event as its
// own. Now: foreign-append, not adopted, both heads kept, an alarm that
// stays open, and the checkpoint holds this clone's own head.
func TestSyncForeignAppendNeverAdopted(t *testing.T) {
	w := newSyncWorld(t)
	a, b := w.clone("a"), w.clone("b")
	const writer = "cc-session-a"
	if err := a.appendEvents(writer, 2); err != nil {
		t.Fatal(err)
	}
	a.mustSync(t)
	mine := a.archiveRefs(t)[gitstore.RefPrefix+writer]

	// The well-behaved second clone cannot append to it.
	testkit.Git(t, b.dir, nil, "fetch", "-q", "origin", "refs/lossless/*:refs/lossless/*")
	if err := b.appendEvents(writer, 1); !errors.Is(err, gitstore.ErrNotOwner) {
		t.Fatalf("clone b appended to a's writer: %v", err)
	}
	// A hostile one forges its bookkeeping and pushes with plain git.
	forgeOwnership(t, b, writer)
	r := gitstore.Record{Event: gitstore.Event{Op: "write", Source: "cli"}, Content: []byte("evil\n"), HasContent: true}
	r.SetPath("evil.txt")
	res, err := b.st.Append(context.Background(), writer, []gitstore.Record{r})
	if err != nil {
		t.Fatal(err)
	}
	testkit.Git(t, b.dir, nil, "push", "-q", "origin", "refs/lossless/"+writer)

	for round := 1; round <= 2; round++ {
		sr, err := anchor.Sync(context.Background(), a.st, anchor.SyncOptions{Target: anchor.Target{Remote: "origin", Mode: anchor.ModeRef, Dir: a.dir}, Now: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		wantStates(t, "a", sr, gitstore.RefPrefix+writer+"="+anchor.StateForeignAppend)
		if sr.Adopted != 0 || sr.Alarms() != 1 {
			t.Fatalf("round %d: adopted %d, alarms %d", round, sr.Adopted, sr.Alarms())
		}
		if got := a.archiveRefs(t)[gitstore.RefPrefix+writer]; got != mine {
			t.Fatalf("round %d: a's writer moved to %s (foreign head %s)", round, got, res.Commit)
		}
		v, err := anchor.Check(context.Background(), a.st, anchor.CheckOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if v.OK() || findingKinds(v.Findings) != anchor.StateForeignAppend+":"+writer {
			t.Fatalf("round %d: verdict %s, findings %s", round, v.Summary(), findingKinds(v.Findings))
		}
	}
	// Both heads kept: a's own on its ref, the foreign one as evidence.
	rid := anchor.RemoteID(w.bare)
	ev := gitRefs(t, a.dir, gitstore.TrackingPrefix+rid+"/alarm/")
	if ev[gitstore.TrackingPrefix+rid+"/alarm/lossless/"+writer] != res.Commit {
		t.Fatalf("evidence refs %v, want the foreign head %s", ev, res.Commit)
	}
	// The next checkpoint vouches for a's own head only.
	made, err := anchor.MakeCheckpoint(context.Background(), a.st, mustKey(t), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	wh, ok := made.Checkpoint.Writer(writer)
	if !ok || wh.Commit != mine {
		t.Fatalf("checkpoint names %+v for %s, want a's head %s", wh, writer, mine)
	}
	// Once the remote holds a's head again, the alarm closes.
	testkit.Git(t, w.bare, nil, "update-ref", "refs/lossless/"+writer, mine)
	a.mustSync(t)
	if v, err := anchor.Check(context.Background(), a.st, anchor.CheckOptions{}); err != nil || !v.OK() {
		t.Fatalf("after the remote was repaired: %s %v (%s)", v.Summary(), err, findingKinds(v.Findings))
	}
}

// TestSyncWriterNamedAsAnothersClone: a writer pushed under a name that
// carries this clone's id, which this clone never wrote, is never adopted.
func TestSyncWriterNamedAsAnothersClone(t *testing.T) {
	w := newSyncWorld(t)
	a, b := w.clone("a"), w.clone("b")
	aid, err := a.st.CloneID(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	name, err := a.st.OwnWriterName(t.Context(), gitstore.FamilyCLI, "sess")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.appendEvents(name, 1); !errors.Is(err, gitstore.ErrNotOwner) {
		t.Fatalf("b wrote %s (a is %s): %v", name, aid, err)
	}
	forgeOwnership(t, b, name)
	if err := os.WriteFile(filepath.Join(b.dir, ".git", "lossless", "clone"), []byte(aid+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	b2, err := gitstore.OpenDir(b.dir, syncStoreOptions())
	if err != nil {
		t.Fatal(err)
	}
	b.st = b2
	if err := b.appendEvents(name, 1); err != nil {
		t.Fatal(err)
	}
	testkit.Git(t, b.dir, nil, "push", "-q", "origin", "refs/lossless/"+name)
	sr, err := anchor.Sync(context.Background(), a.st, anchor.SyncOptions{Target: anchor.Target{Remote: "origin", Mode: anchor.ModeRef, Dir: a.dir}, Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	wantStates(t, "a", sr, gitstore.RefPrefix+name+"="+anchor.StateForeignAppend)
	if _, ok := a.archiveRefs(t)[gitstore.RefPrefix+name]; ok || sr.Adopted != 0 {
		t.Fatalf("a adopted a writer named as its own")
	}
}

// TestSyncGoneThereIsAnAlarm: a writer sync pushed and the remote then
// deleted used to be "new here" at the next sync and pushed again in
// silence. Now it is gone-there, at every sync until the remote has it
// again, and nothing is pushed back.
func TestSyncGoneThereIsAnAlarm(t *testing.T) {
	w := newSyncWorld(t)
	a := w.clone("a")
	const writer = "cc-gone"
	if err := a.appendEvents(writer, 1); err != nil {
		t.Fatal(err)
	}
	a.mustSync(t)
	head := gitRefs(t, w.bare, "refs/lossless/")["refs/lossless/"+writer]
	if head == "" {
		t.Fatal("the first sync did not push the writer")
	}
	testkit.Git(t, w.bare, nil, "update-ref", "-d", "refs/lossless/"+writer)
	for round := 1; round <= 2; round++ {
		sr, err := anchor.Sync(context.Background(), a.st, anchor.SyncOptions{Target: anchor.Target{Remote: "origin", Mode: anchor.ModeRef, Dir: a.dir}, Now: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		wantStates(t, "a", sr, gitstore.RefPrefix+writer+"="+anchor.StateGoneThere)
		if got := gitRefs(t, w.bare, "refs/lossless/"); len(got) != 0 {
			t.Fatalf("round %d: the deleted writer was pushed back: %v", round, got)
		}
		v, err := anchor.Check(context.Background(), a.st, anchor.CheckOptions{})
		if err != nil || v.OK() || findingKinds(v.Findings) != anchor.StateGoneThere+":"+writer {
			t.Fatalf("round %d: verdict %s %v (%s)", round, v.Summary(), err, findingKinds(v.Findings))
		}
	}
	testkit.Git(t, w.bare, nil, "update-ref", "refs/lossless/"+writer, head)
	a.mustSync(t)
}

// TestCheckpointChainIsOneObject: a clone that accepted checkpoint 2 of a
// machine's chain from origin used to accept checkpoint 1 of the same
// chain from a mirror ("1 newly accepted"). What a clone has seen of a
// chain is per chain: an older state served by any remote is
// anchor-rollback.
func TestCheckpointChainIsOneObject(t *testing.T) {
	w := newWorld(t)
	mirror := filepath.Join(t.TempDir(), "mirror.git")
	w.git("", "init", "-q", "--bare", mirror)
	// Machine M anchors checkpoint 1 on both, checkpoint 2 on origin only.
	dir, st := w.repo()
	w.git(dir, "remote", "add", "mirror", mirror)
	mirrorT := anchor.Target{Remote: "mirror", Mode: anchor.ModeRef, Dir: dir}
	w.append(st, "cc-m", "1\n")
	w.push(st, origin(dir), mirrorT)
	w.append(st, "cc-m", "2\n")
	w.git(dir, "push", "-q", "origin", "refs/lossless/*:refs/lossless/*")
	w.git(dir, "push", "-q", "mirror", "refs/lossless/*:refs/lossless/*")
	w.push(st, origin(dir))

	// Machine C: another HOME, another key.
	t.Setenv("LOSSLESS_ANCHOR_KEY_FILE", filepath.Join(t.TempDir(), "anchor-key-c"))
	cdir := filepath.Join(t.TempDir(), "c")
	w.git("", "clone", "-q", w.remote, cdir)
	w.git(cdir, "remote", "add", "mirror", mirror)
	if rc := w.check(cdir, origin(cdir)); !rc.OK() || rc.Accepted != 1 {
		t.Fatalf("origin: %v, accepted %d", kinds(rc), rc.Accepted)
	}
	rc := w.check(cdir, anchor.Target{Remote: "mirror", Mode: anchor.ModeRef, Dir: cdir})
	if rc.Accepted != 0 || len(rc.Findings) != 1 || rc.Findings[0].Kind != anchor.KindRollback || !strings.Contains(rc.Findings[0].Detail, "checkpoint 2") {
		t.Fatalf("mirror serving checkpoint 1 after 2 was accepted: accepted %d, %v", rc.Accepted, kinds(rc))
	}
	// The alarm is open for every check, offline too.
	cst, err := gitstore.OpenDir(cdir, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	v, err := anchor.Check(context.Background(), cst, anchor.CheckOptions{})
	if err != nil || v.OK() || !strings.Contains(findingKinds(v.Findings), anchor.KindRollback) {
		t.Fatalf("verdict %s %v (%s)", v.Summary(), err, findingKinds(v.Findings))
	}
	// Once the mirror has checkpoint 2, the alarm closes.
	w.git(dir, "push", "-q", mirror, "refs/lossless-anchor/*:refs/lossless-anchor/*")
	if rc := w.check(cdir, anchor.Target{Remote: "mirror", Mode: anchor.ModeRef, Dir: cdir}); !rc.OK() {
		t.Fatalf("mirror caught up: %v", kinds(rc))
	}
	if v, err := anchor.Check(context.Background(), cst, anchor.CheckOptions{}); err != nil || !v.OK() {
		t.Fatalf("verdict after the mirror caught up: %s %v (%s)", v.Summary(), err, findingKinds(v.Findings))
	}
}

func mustKey(t *testing.T) *anchor.Key {
	t.Helper()
	p, err := anchor.KeyPath()
	if err != nil {
		t.Fatal(err)
	}
	k, err := anchor.LoadKey(p, "", true)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// objectState is what a repository holds as git counts it, and its
// tracking refs: what a refused fetch must leave unchanged.
func objectState(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	for _, l := range strings.Split(testkit.Git(t, dir, nil, "count-objects", "-v"), "\n") {
		if strings.HasPrefix(l, "count:") || strings.HasPrefix(l, "in-pack:") || strings.HasPrefix(l, "packs:") {
			b.WriteString(l + "\n")
		}
	}
	b.WriteString(testkit.Git(t, dir, nil, "for-each-ref", "--format=%(objectname) %(refname)", gitstore.TrackingPrefix))
	return b.String()
}

// junkRefs points n refs named prefix<i> at id in the bare repository.
func junkRefs(t *testing.T, bare, prefix, id string, n int) {
	t.Helper()
	var in strings.Builder
	for i := range n {
		in.WriteString("create " + prefix + strconv.Itoa(i) + " " + id + "\n")
	}
	cmd := exec.Command("git", "-C", bare, "update-ref", "--stdin")
	cmd.Stdin = strings.NewReader(in.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("update-ref --stdin: %v\n%s", err, out)
	}
}

// TestHostileRemoteBounded: a remote serving 5,000 junk checkpoint refs,
// 3,000 junk writer refs and a 60 MB checkpoint blob cost a sync 14 s and
// 400-500 MB and left 112 MB of junk in the repository; the same forged
// set raised 4 alarms on one run and 5 on the next. Now a sync and a
// remote check refuse it past the fetch caps (remote-over-limit), leave
// the repository's objects and tracking refs as they were and no
// quarantine behind, and say the same thing every time.
func TestHostileRemoteBounded(t *testing.T) {
	w := newSyncWorld(t)
	a := w.clone("a")
	if err := a.appendEvents("cc-a", 2); err != nil {
		t.Fatal(err)
	}
	a.mustSync(t)

	// A junk commit, and one whose tree holds a 60 MB "checkpoint".
	scratch := filepath.Join(t.TempDir(), "scratch")
	testkit.Git(t, "", nil, "init", "-q", "--bare", scratch)
	empty := strings.TrimSpace(testkit.Git(t, scratch, nil, "mktree"))
	junk := strings.TrimSpace(testkit.Git(t, scratch, nil, "commit-tree", empty, "-m", "junk"))
	bigFile := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(bigFile, make([]byte, 60<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	big := strings.TrimSpace(testkit.Git(t, scratch, nil, "hash-object", "-w", bigFile))
	mk := exec.Command("git", "-C", scratch, "mktree")
	mk.Stdin = strings.NewReader("100644 blob " + big + "\tcheckpoint\n")
	out, err := mk.Output()
	if err != nil {
		t.Fatal(err)
	}
	bigTree := strings.TrimSpace(string(out))
	bigCommit := strings.TrimSpace(testkit.Git(t, scratch, nil, "commit-tree", bigTree, "-m", "big"))
	testkit.Git(t, scratch, nil, "push", "-q", w.bare, junk+":refs/heads/junk", bigCommit+":refs/heads/big")
	junkRefs(t, w.bare, gitstore.AnchorPrefix+"m-00000000/", junk, 5000)
	junkRefs(t, w.bare, gitstore.RefPrefix+"junk-", junk, 3000)
	testkit.Git(t, w.bare, nil, "update-ref", gitstore.AnchorPrefix+"big-00000000/0badc0de", bigCommit)

	before := objectState(t, a.dir)
	quarantine := filepath.Join(a.dir, ".git", "lossless", "quarantine")
	var first string
	for run := 1; run <= 2; run++ {
		res, err := anchor.Sync(context.Background(), a.st, anchor.SyncOptions{Target: anchor.Target{Remote: "origin", Mode: anchor.ModeRef, Dir: a.dir}, Now: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		got := findingKinds(res.Anchors.Findings)
		if res.Alarms() != 1 || got != anchor.KindOverLimit+":" || res.Adopted != 0 || res.Verdict != "refused" {
			t.Fatalf("run %d: alarms %d (%s), adopted %d, verdict %s", run, res.Alarms(), got, res.Adopted, res.Verdict)
		}
		if run == 1 {
			first = res.Anchors.Findings[0].Detail
		} else if d := res.Anchors.Findings[0].Detail; d != first {
			t.Fatalf("the same remote, another verdict:\n%s\n%s", first, d)
		}
		if after := objectState(t, a.dir); after != before {
			t.Fatalf("run %d: the repository changed:\n%s\nwas\n%s", run, after, before)
		}
		if ents, _ := os.ReadDir(quarantine); len(ents) != 0 {
			t.Fatalf("run %d: quarantine left: %v", run, ents)
		}
	}
	v, err := anchor.Check(context.Background(), a.st, anchor.CheckOptions{})
	if err != nil || v.OK() || !strings.Contains(findingKinds(v.Findings), anchor.KindOverLimit) {
		t.Fatalf("verdict %s %v (%s)", v.Summary(), err, findingKinds(v.Findings))
	}

	// Within the ref caps, only the big checkpoint: refused by its size,
	// by the remote check as by sync.
	var del strings.Builder
	for i := range 5000 {
		del.WriteString("delete " + gitstore.AnchorPrefix + "m-00000000/" + strconv.Itoa(i) + "\n")
	}
	for i := range 3000 {
		del.WriteString("delete " + gitstore.RefPrefix + "junk-" + strconv.Itoa(i) + "\n")
	}
	cmd := exec.Command("git", "-C", w.bare, "update-ref", "--stdin")
	cmd.Stdin = strings.NewReader(del.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	rc, err := anchor.CheckRemote(context.Background(), a.st, anchor.Target{Remote: "origin", Mode: anchor.ModeRef, Dir: a.dir}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if findingKinds(rc.Findings) != anchor.KindOverLimit+":" || !strings.Contains(rc.Findings[0].Detail, "object") {
		t.Fatalf("the 60 MB checkpoint: %s %v", findingKinds(rc.Findings), rc.Findings)
	}
	if after := objectState(t, a.dir); after != before {
		t.Fatalf("the big checkpoint changed the repository:\n%s\nwas\n%s", after, before)
	}
	// Once the remote is clean again, the alarms close.
	testkit.Git(t, w.bare, nil, "update-ref", "-d", gitstore.AnchorPrefix+"big-00000000/0badc0de")
	a.mustSync(t)
	if rc := w.checkOrigin(t, a); !rc.OK() {
		t.Fatalf("clean remote: %s", findingKinds(rc.Findings))
	}
	if v, err := anchor.Check(context.Background(), a.st, anchor.CheckOptions{}); err != nil || !v.OK() {
		t.Fatalf("verdict after the remote was cleaned: %s %v (%s)", v.Summary(), err, findingKinds(v.Findings))
	}
}

func (w *syncWorld) checkOrigin(t *testing.T, c *syncClone) *anchor.RemoteCheck {
	t.Helper()
	rc, err := anchor.CheckRemote(context.Background(), c.st, anchor.Target{Remote: "origin", Mode: anchor.ModeRef, Dir: c.dir}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return rc
}
