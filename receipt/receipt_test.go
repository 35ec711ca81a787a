package receipt_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/receipt"
	"github.com/git-lossless/git-lossless/receipt/note"
)

// scenario builds a repository with a parent commit, a session's events
// (and a few that must not count), and a commit, and returns the commit.
//
//	keep.txt      read by the agent, unchanged: not a changed path
//	seen.txt      added by a human; the agent read exactly that version
//	written.txt   read, then edited by the agent, committed as written
//	after.txt     edited by the agent, then changed by a human: changed-after
//	unseen.txt    added by a human, no agent touched it
//	.env          read by the agent (deny-listed), committed: excluded
//	partial.txt   only partly read by a subagent, Claude Code style (the
//	              lines shown archived), then changed: changed-after
//	gone.txt      read by the agent, then deleted: changed-after
//
// and, by a second session (sess-2), paths touched only in part or
// without any version:
//
//	seenpart.txt  shown as lines:1-1 with the whole committed file
//	              archived: seen, resting on the partial view
//	denied.txt    an edit the guard denied (op deny, no content):
//	              changed-after, resting on the denial
//	nocontent.txt an edit recorded without content: changed-after
func scenario(t *testing.T) (*testRepo, string, time.Time) {
	t.Helper()
	r := newRepo(t)
	base := time.Now().UTC().Truncate(time.Second).Add(-2 * time.Hour)
	r.write("keep.txt", "keep\n")
	r.write("written.txt", "v1\n")
	r.write("after.txt", "a1\n")
	r.write("gone.txt", "gone\n")
	r.write("partial.txt", "p1\np2\np3\n")
	r.commitAt("parent", base)

	const w, s = "cc-sess-1", "sess-1"
	at := func(sec int) time.Time { return base.Add(time.Duration(sec) * time.Second) }
	// Before the window, from an unrelated session: not part of it.
	r.record("cc-old", rec{at: base.Add(-time.Hour), session: "old", op: "read", path: "written.txt", content: "v0\n"})
	r.write("seen.txt", "seen\n")
	r.record(w,
		rec{at: at(5), session: s, op: "span", content: `{"kind":"user","role":"user","text":"go"}`},
		rec{at: at(10), session: s, op: "read", path: "keep.txt", content: "keep\n"},
		rec{at: at(11), session: s, op: "read", path: "written.txt", content: "v1\n"},
		rec{at: at(12), session: s, op: "edit", path: "written.txt", content: "v2\n"},
		rec{at: at(13), session: s, op: "edit", path: "after.txt", content: "a2\n"},
		rec{at: at(14), session: s, op: "read", path: "seen.txt", content: "seen\n"},
		rec{at: at(15), session: s, op: "read", path: ".env", content: "SECRET=1\n"},
		rec{at: at(16), session: s, op: "read", path: "gone.txt", content: "gone\n"},
		rec{at: at(17), session: s, agent: "sub-1", op: "read", path: "partial.txt", content: "p2\n", view: "lines:2-2"},
		rec{at: at(18), session: s, op: "span", content: `{"kind":"assistant","role":"assistant","text":"done"}`},
		// After the commit: not part of it.
		rec{at: at(500), session: s, op: "edit", path: "written.txt", content: "v3\n"},
	)
	r.record("cc-sess-2",
		rec{at: at(20), session: "sess-2", op: "read", path: "seenpart.txt", content: "sp\n", view: "lines:1-1"},
		rec{at: at(21), session: "sess-2", op: "deny", path: "denied.txt", none: true},
		rec{at: at(22), session: "sess-2", op: "edit", path: "nocontent.txt", none: true},
	)
	r.write("seenpart.txt", "sp\n")
	r.write("denied.txt", "the guard said no\n")
	r.write("nocontent.txt", "edited, content not recorded\n")
	r.write("written.txt", "v2\n")
	r.write("after.txt", "a2 changed by a human\n")
	r.write("unseen.txt", "nobody looked\n")
	r.write(".env", "SECRET=1\n")
	os.Remove(filepath.Join(r.dir, "gone.txt"))
	r.write("partial.txt", "p1\np2 changed\np3\n")
	commit := r.commitAt("work", at(60))
	return r, commit, base
}

func TestBuildStatuses(t *testing.T) {
	r, commit, _ := scenario(t)
	rc := mustBuild(t, r.st, commit)
	want := map[string]string{
		".env":          note.Excluded,
		"after.txt":     note.ChangedAfter,
		"gone.txt":      note.ChangedAfter,
		"partial.txt":   note.ChangedAfter,
		"seen.txt":      note.Seen,
		"unseen.txt":    note.Unseen,
		"written.txt":   note.Written,
		"seenpart.txt":  note.Seen,
		"denied.txt":    note.ChangedAfter,
		"nocontent.txt": note.ChangedAfter,
	}
	if len(rc.Paths) != len(want) {
		t.Fatalf("paths %+v", rc.Paths)
	}
	for p, st := range want {
		if got := pathEntry(t, rc, p); got.Status != st {
			t.Errorf("%s: status %s, want %s (%+v)", p, got.Status, st, got)
		}
	}
	if e := pathEntry(t, rc, ".env"); e.Blob != "" || e.Evidence.IsZero() {
		t.Errorf(".env entry %+v: want no blob and the access as evidence", e)
	}
	if e := pathEntry(t, rc, "unseen.txt"); !e.Evidence.IsZero() {
		t.Errorf("unseen.txt has evidence %+v", e)
	}
	// Each touched path rests on the event that decides it.
	for p, ev := range map[string]note.Ref{
		"partial.txt":   {W: 1, Seq: 9}, // the subagent's partial read
		"seenpart.txt":  {W: 2, Seq: 1}, // the partial view of the committed blob
		"denied.txt":    {W: 2, Seq: 2}, // the denial
		"nocontent.txt": {W: 2, Seq: 3}, // the content-less edit
		"after.txt":     {W: 1, Seq: 5}, // the agent's edit, before the human's
		"written.txt":   {W: 1, Seq: 4}, // the edit that produced the blob
		"gone.txt":      {W: 1, Seq: 8}, // the last read before the deletion
		"seen.txt":      {W: 1, Seq: 6}, // the read of exactly the committed blob
	} {
		if got := pathEntry(t, rc, p).Evidence; got != ev {
			t.Errorf("%s: evidence %+v, want %+v", p, got, ev)
		}
	}
	if rc.Coverage.Unseen != 1 || rc.Coverage.ChangedAfter != 5 || rc.Coverage.Seen != 2 {
		t.Errorf("coverage %+v", rc.Coverage)
	}
	notes := strings.Join(rc.Notes, "\n")
	for _, want := range []string{"a path the agents saw only in part is seen only if", "No version: 2 paths touched by agents without any recorded version"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	if e := pathEntry(t, rc, "gone.txt"); e.Change != note.Deleted || e.Mode != "" || e.Blob != "" {
		t.Errorf("gone.txt entry %+v", e)
	}
	// Contexts: the main agent and the subagent of sess-1, then sess-2;
	// not "old".
	if len(rc.Contexts) != 3 || rc.Contexts[0].Session != "sess-1" || rc.Contexts[0].Agent != "" || rc.Contexts[1].Agent != "sub-1" || rc.Contexts[2].Session != "sess-2" {
		t.Fatalf("contexts %+v", rc.Contexts)
	}
	if rc.Contexts[0].Events != 9 || len(rc.Contexts[0].Spans) != 2 || rc.Contexts[1].Events != 1 || rc.Contexts[2].Events != 3 {
		t.Errorf("context counts %+v", rc.Contexts)
	}
	if rc.Coverage.Events != 13 {
		t.Errorf("belonging events %d, want 13 (not the later edit, not the old session)", rc.Coverage.Events)
	}
	// Read set states.
	states := map[string]string{}
	for _, rd := range rc.Reads {
		states[note.ContextID(rd.Context-1)+" "+rd.Path+" "+strings.Join(rd.Ops, ",")+" "+rd.Blob] = rd.State
	}
	v1, v2 := gitstore.BlobID([]byte("v1\n")), gitstore.BlobID([]byte("v2\n"))
	for k, st := range map[string]string{
		"c1 keep.txt read " + gitstore.BlobID([]byte("keep\n")): note.Current,
		"c1 written.txt read " + v1:                             note.Superseded,
		"c1 written.txt edit " + v2:                             note.Current,
		"c1 after.txt edit " + gitstore.BlobID([]byte("a2\n")):  note.Stale,
		"c1 seen.txt read " + gitstore.BlobID([]byte("seen\n")): note.Current,
		"c1 .env read ": note.Withheld,
		"c1 gone.txt read " + gitstore.BlobID([]byte("gone\n")):  note.Absent,
		"c2 partial.txt read " + gitstore.BlobID([]byte("p2\n")): note.Partial,
	} {
		if states[k] != st {
			t.Errorf("read %q: state %q, want %q (all: %v)", k, states[k], st, states)
		}
	}
	if rc.FileTokens() == 0 || rc.SpanTokens() == 0 {
		t.Errorf("tokens files %d spans %d", rc.FileTokens(), rc.SpanTokens())
	}
	if len(rc.Writers) != 2 || rc.Writers[0].Name != "cc-sess-1" || rc.Writers[0].From != 1 || rc.Writers[0].To != 10 || rc.Writers[0].HeadSeq != 11 || rc.Writers[1].Name != "cc-sess-2" {
		t.Errorf("writers %+v", rc.Writers)
	}
	// The secret's blob id is named nowhere.
	body, _ := rc.Marshal()
	if bytes.Contains(body, []byte(gitstore.BlobID([]byte("SECRET=1\n")))) {
		t.Error("the receipt names the excluded file's blob")
	}
}

// A root commit's window has no start; every path is a change.
func TestBuildRootCommit(t *testing.T) {
	r := newRepo(t)
	at := time.Now().UTC().Truncate(time.Second).Add(-time.Hour)
	r.record("cli-x", rec{at: at.Add(-24 * time.Hour), session: "x", op: "write", path: "a.txt", content: "a\n"})
	r.write("a.txt", "a\n")
	r.write("b/c.txt", "c\n")
	commit := r.commitAt("root", at)
	rc := mustBuild(t, r.st, commit)
	if rc.HasFrom || len(rc.Parents) != 0 || len(rc.Paths) != 2 {
		t.Fatalf("root receipt %+v", rc)
	}
	if pathEntry(t, rc, "a.txt").Status != note.Written || pathEntry(t, rc, "b/c.txt").Status != note.Unseen {
		t.Fatalf("paths %+v", rc.Paths)
	}
}

func TestSaveVerifyAndPlainTools(t *testing.T) {
	env := gpgEnv(t)
	r, commit, _ := scenario(t)
	k := theKey(t)
	importKey(t, env, k)
	ctx := context.Background()
	// Leave something uncommitted in the work tree and in the index: a
	// receipt must touch neither.
	r.write("staged.txt", "staged, not committed\n")
	r.git("add", "staged.txt")
	r.write("written.txt", "v2, edited again after the commit\n")
	indexBefore, statusBefore := indexAndStatus(t, r)
	rc := mustBuild(t, r.st, commit)
	notesCommit, note, err := receipt.Save(ctx, r.st, rc, k)
	if err != nil {
		t.Fatal(err)
	}
	if indexAfter, statusAfter := indexAndStatus(t, r); indexAfter != indexBefore || statusAfter != statusBefore {
		t.Fatalf("building and storing the receipt changed the index or work tree:\nstatus before:\n%s\nafter:\n%s", statusBefore, statusAfter)
	}
	if !strings.Contains(statusBefore, "A  staged.txt") || !strings.Contains(statusBefore, " M written.txt") {
		t.Fatalf("the work tree and index were not dirty, the check proved nothing:\n%s", statusBefore)
	}
	ref := gitstore.NotesPrefix + k.Writer()
	if got := r.git("rev-parse", ref); got != notesCommit {
		t.Fatalf("%s = %s, want %s", ref, got, notesCommit)
	}
	// Plain git reads the note; plain gpg verifies it.
	shown, err := gpgRun(t, env, r.dir, nil, "git", "notes", "--ref=lossless/"+k.Writer(), "show", "HEAD")
	if err != nil || shown != string(note) {
		t.Fatalf("git notes show: %v\n%q\nwant\n%q", err, shown, note)
	}
	if out, err := gpgRun(t, env, r.dir, []byte(shown), "gpg", "--verify"); err != nil || !strings.Contains(out, "Good signature") {
		t.Fatalf("gpg --verify of the note: %v\n%s", err, out)
	}
	out, err := gpgRun(t, env, r.dir, nil, "git", "verify-commit", "-v", ref)
	if err != nil || !strings.Contains(out, "Good signature") {
		t.Fatalf("git verify-commit %s: %v\n%s", ref, err, out)
	}
	if log := r.git("log", "--notes=lossless/*", "-1", "HEAD"); !strings.Contains(log, "Notes (lossless/"+k.Writer()+")") || !strings.Contains(log, "git-lossless receipt v1") {
		t.Fatalf("git log --notes does not show the receipt:\n%s", log)
	}
	// refs/notes/lossless is a directory of per-key writers, never a ref.
	if out, err := r.gitErr(nil, "rev-parse", "--verify", "--quiet", "refs/notes/lossless"); err == nil {
		t.Fatalf("refs/notes/lossless exists as a ref: %s", out)
	}
	if refs := r.git("for-each-ref", "--format=%(refname)", "refs/notes/"); refs != ref {
		t.Fatalf("notes refs = %q, want only %s", refs, ref)
	}
	r.git("fsck", "--strict")

	// Our verify agrees.
	found, err := receipt.Find(ctx, r.st, commit)
	if err != nil || len(found) != 1 {
		t.Fatalf("find: %v %d", err, len(found))
	}
	res := receipt.Verify(ctx, r.st, found[0], keyring(t, k))
	if !res.OK() {
		t.Fatalf("verify: %+v", res.Problems)
	}
	if res.KeyID != k.ID() || res.Checked.Paths != 10 || res.Checked.Blobs == 0 || res.Checked.Events == 0 {
		t.Fatalf("verify result %+v", res)
	}

	// One flipped byte anywhere in the note: our verify rejects it.
	for i := range note {
		bad := append([]byte(nil), note...)
		bad[i] ^= 0x01
		if _, _, err := receipt.VerifyNote(bad, keyring(t, k)); err == nil {
			t.Fatalf("a note with byte %d flipped (%q) verified:\n%s", i, note[i], bad)
		}
	}
	// A flipped byte in the body, stored with plain git: gpg and our
	// verify both fail.
	i := bytes.Index(note, []byte("path A unseen"))
	bad := append([]byte(nil), note...)
	bad[i+len("path A unseen ")+5] ^= 0x01
	tmp := filepath.Join(t.TempDir(), "bad.txt")
	os.WriteFile(tmp, bad, 0o644)
	r.git("notes", "--ref=lossless/"+k.Writer(), "add", "-f", "-F", tmp, "HEAD")
	shown, _ = gpgRun(t, env, r.dir, nil, "git", "notes", "--ref=lossless/"+k.Writer(), "show", "HEAD")
	if out, err := gpgRun(t, env, r.dir, []byte(shown), "gpg", "--verify"); err == nil || !strings.Contains(out, "BAD signature") {
		t.Fatalf("gpg --verify accepted the tampered note: %v\n%s", err, out)
	}
	found, _ = receipt.Find(ctx, r.st, commit)
	res = receipt.Verify(ctx, r.st, found[0], keyring(t, k))
	if res.OK() || res.Problems[0].Kind != receipt.ProblemSignature {
		t.Fatalf("verify of the tampered note: %+v", res.Problems)
	}
}

// indexAndStatus returns the index file's sha256 and `git status
// --porcelain` (without optional locks, so that status itself never
// rewrites the index).
func indexAndStatus(t *testing.T, r *testRepo) (string, string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(r.dir, ".git", "index"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), r.git("--no-optional-locks", "status", "--porcelain", "--untracked-files=all")
}

func TestVerifyFailures(t *testing.T) {
	r, commit, base := scenario(t)
	k := theKey(t)
	ctx := context.Background()
	rc := mustBuild(t, r.st, commit)
	if _, _, err := receipt.Save(ctx, r.st, rc, k); err != nil {
		t.Fatal(err)
	}
	load := func() receipt.Stored {
		t.Helper()
		found, err := receipt.Find(ctx, r.st, commit)
		if err != nil || len(found) != 1 {
			t.Fatalf("find: %v %d", err, len(found))
		}
		return found[0]
	}
	kinds := func(res *receipt.Result) string {
		var ks []string
		for _, p := range res.Problems {
			ks = append(ks, p.Kind)
		}
		return strings.Join(ks, ",")
	}

	t.Run("unknown key", func(t *testing.T) {
		res := receipt.Verify(ctx, r.st, load(), &receipt.Keyring{})
		if res.OK() || res.Problems[0].Kind != receipt.ProblemUnknownKey || !strings.Contains(res.Problems[0].Detail, strings.ToUpper(k.ID())) {
			t.Fatalf("%+v", res.Problems)
		}
	})
	t.Run("signed by another key than the ref names", func(t *testing.T) {
		other, err := receipt.GenerateKey("Other", "")
		if err != nil {
			t.Fatal(err)
		}
		note, err := receipt.Sign(rc, other)
		if err != nil {
			t.Fatal(err)
		}
		s := load()
		s.Text = note
		res := receipt.Verify(ctx, r.st, s, keyring(t, k, other))
		if kinds(res) != receipt.ProblemKey {
			t.Fatalf("%+v", res.Problems)
		}
	})
	forge := func(t *testing.T, edit func(*note.Receipt)) *receipt.Result {
		t.Helper()
		f, err := note.Parse(mustMarshal(t, rc))
		if err != nil {
			t.Fatal(err)
		}
		edit(f)
		note, err := receipt.Sign(f, k)
		if err != nil {
			t.Fatal(err)
		}
		s := load()
		s.Text = note
		return receipt.Verify(ctx, r.st, s, keyring(t, k))
	}
	t.Run("missing event", func(t *testing.T) {
		res := forge(t, func(f *note.Receipt) {
			f.Writers[0].To, f.Writers[0].HeadSeq = 40, 40
			f.Contexts[0].Spans = append(f.Contexts[0].Spans, note.Ref{W: 1, Seq: 40})
		})
		if res.OK() || !strings.Contains(kinds(res), receipt.ProblemChain) {
			t.Fatalf("%+v", res.Problems)
		}
		if !strings.Contains(kinds(res), receipt.ProblemEvent) {
			t.Fatalf("the missing event itself is not named: %+v", res.Problems)
		}
		// Entry 11 exists (the edit after the commit) but is no span.
		res = forge(t, func(f *note.Receipt) {
			f.Writers[0].To = 11
			f.Contexts[0].Spans = append(f.Contexts[0].Spans, note.Ref{W: 1, Seq: 11})
		})
		if kinds(res) != receipt.ProblemMismatch {
			t.Fatalf("%+v", res.Problems)
		}
	})
	t.Run("event says otherwise", func(t *testing.T) {
		res := forge(t, func(f *note.Receipt) {
			for i := range f.Paths {
				if f.Paths[i].Path == "after.txt" {
					f.Paths[i].Status = note.Written
					f.Coverage.ChangedAfter--
					f.Coverage.Written++
				}
			}
		})
		if kinds(res) != receipt.ProblemMismatch {
			t.Fatalf("%+v", res.Problems)
		}
		// Each status against evidence that contradicts it.
		for _, c := range []struct{ path, status, from string }{
			{"denied.txt", note.Seen, note.ChangedAfter},       // a denial saw no version
			{"seen.txt", note.ChangedAfter, note.Seen},         // the read shows the committed blob
			{"seenpart.txt", note.Unseen, note.Seen},           // an unseen path cites a touch
			{"partial.txt", note.Seen, note.ChangedAfter},      // lines of another version
			{"nocontent.txt", note.Written, note.ChangedAfter}, // no content written
		} {
			res := forge(t, func(f *note.Receipt) {
				for i := range f.Paths {
					if f.Paths[i].Path == c.path {
						f.Paths[i].Status = c.status
					}
				}
				bump := func(st string, d int) {
					switch st {
					case note.Seen:
						f.Coverage.Seen += d
					case note.ChangedAfter:
						f.Coverage.ChangedAfter += d
					case note.Unseen:
						f.Coverage.Unseen += d
					case note.Written:
						f.Coverage.Written += d
					}
				}
				bump(c.from, -1)
				bump(c.status, 1)
			})
			if kinds(res) != receipt.ProblemMismatch || !strings.Contains(res.Problems[0].Detail, c.path) {
				t.Errorf("%s forged as %s: %+v", c.path, c.status, res.Problems)
			}
		}
	})
	t.Run("wrong commit facts", func(t *testing.T) {
		res := forge(t, func(f *note.Receipt) { f.Committed++ })
		if !strings.Contains(kinds(res), receipt.ProblemCommit) {
			t.Fatalf("%+v", res.Problems)
		}
		res = forge(t, func(f *note.Receipt) { f.Paths = f.Paths[1:]; f.Coverage.Excluded-- })
		if !strings.Contains(kinds(res), receipt.ProblemCommit) {
			t.Fatalf("%+v", res.Problems)
		}
	})
	t.Run("note copied to another commit", func(t *testing.T) {
		other := r.commitAt("another", base.Add(2*time.Minute))
		s := load()
		s.Note.Target = other
		res := receipt.Verify(ctx, r.st, s, keyring(t, k))
		if kinds(res) != receipt.ProblemCommit {
			t.Fatalf("%+v", res.Problems)
		}
	})
	t.Run("blob gone", func(t *testing.T) {
		blob := gitstore.BlobID([]byte("keep\n")) // named by the read set only, never by the commit
		_ = blob
		v1 := gitstore.BlobID([]byte("v1\n"))
		p := filepath.Join(r.dir, ".git", "objects", v1[:2], v1[2:])
		saved, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, 0o644)
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
		defer os.WriteFile(p, saved, 0o444)
		res := receipt.Verify(ctx, r.st, load(), keyring(t, k))
		if kinds(res) != receipt.ProblemBlob {
			t.Fatalf("%+v", res.Problems)
		}
	})
	t.Run("chain rolled back", func(t *testing.T) {
		ref := "refs/lossless/cc-sess-1"
		head := r.git("rev-parse", ref)
		r.git("update-ref", ref, head+"~5")
		defer r.git("update-ref", ref, head)
		res := receipt.Verify(ctx, r.st, load(), keyring(t, k))
		if res.OK() || res.Problems[0].Kind != receipt.ProblemChain {
			t.Fatalf("%+v", res.Problems)
		}
	})
	t.Run("ok again", func(t *testing.T) {
		if res := receipt.Verify(ctx, r.st, load(), keyring(t, k)); !res.OK() {
			t.Fatalf("%+v", res.Problems)
		}
	})
}

func mustMarshal(t testing.TB, r *note.Receipt) []byte {
	t.Helper()
	b, err := r.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestKeyFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "sub", "key.asc")
	k, err := receipt.GenerateKey("Name", "n@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if err := k.WriteFile(p, false); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(p)
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v", st.Mode())
	}
	if err := k.WriteFile(p, false); err == nil {
		t.Fatal("overwrote an existing key without force")
	}
	back, err := receipt.LoadKey(p)
	if err != nil {
		t.Fatal(err)
	}
	if back.ID() != k.ID() || back.Entity.PrimaryKey.Version != 4 {
		t.Fatalf("loaded %s v%d, want %s v4", back.ID(), back.Entity.PrimaryKey.Version, k.ID())
	}
	pub, _ := k.ArmoredPublic()
	pp := filepath.Join(dir, "pub.asc")
	os.WriteFile(pp, []byte(pub), 0o644)
	if _, err := receipt.LoadKey(pp); err == nil || !strings.Contains(err.Error(), "public key only") {
		t.Fatalf("loading a public key as a signing key: %v", err)
	}
	var kr receipt.Keyring
	if err := kr.AddFile(pp); err != nil || len(kr.List) != 1 {
		t.Fatalf("keyring from the exported key: %v", err)
	}
	if _, err := receipt.LoadKey(filepath.Join(dir, "none")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing key: %v", err)
	}
}

// The default key's directory is git-lossless's own: writing the key
// makes it 0700 even when it existed looser, and leaves its parent (the
// user's config dir) and any other key's directory alone.
func TestKeyFileDirectoryPermissions(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "config")
	t.Setenv("XDG_CONFIG_HOME", cfg)
	t.Setenv("HOME", t.TempDir())
	own := filepath.Join(cfg, "git-lossless")
	other := filepath.Join(t.TempDir(), "keys")
	for _, d := range []string{own, other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, 0o755); err != nil { // whatever the umask
			t.Fatal(err)
		}
	}
	os.Chmod(cfg, 0o755)
	def, err := receipt.DefaultKeyPath()
	if err != nil || filepath.Dir(def) != own {
		t.Fatalf("default key path %s (%v), want it in %s", def, err, own)
	}
	k := theKey(t)
	if err := k.WriteFile(def, false); err != nil {
		t.Fatal(err)
	}
	if err := k.WriteFile(filepath.Join(other, "key.asc"), false); err != nil {
		t.Fatal(err)
	}
	for d, want := range map[string]os.FileMode{own: 0o700, cfg: 0o755, other: 0o755} {
		st, err := os.Stat(d)
		if err != nil || st.Mode().Perm() != want {
			t.Errorf("%s: mode %v (%v), want %v", d, st.Mode().Perm(), err, want)
		}
	}
}

// The note's framing is strict: exactly what ClearSign writes.
func TestSplitNote(t *testing.T) {
	body := exampleBody(t)
	note, err := theKey(t).ClearSign(body)
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := receipt.SplitNote(note)
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("split: %v\n%s", err, got)
	}
	for name, bad := range map[string][]byte{
		"prefix":       append([]byte("x\n"), note...),
		"suffix":       append(append([]byte(nil), note...), "x\n"...),
		"no hash":      bytes.Replace(note, []byte("Hash: SHA256\n"), nil, 1),
		"dash escaped": bytes.Replace(note, []byte("\ncommit "), []byte("\n- commit "), 1),
		"trailing sp":  bytes.Replace(note, []byte("tokenizer o200k_base\n"), []byte("tokenizer o200k_base \n"), 1),
		"crlf":         bytes.ReplaceAll(note, []byte("\n"), []byte("\r\n")),
	} {
		if _, _, err := receipt.SplitNote(bad); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func FuzzSplitNote(f *testing.F) {
	note, err := theKey(f).ClearSign(exampleBody(f))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(note)
	f.Fuzz(func(t *testing.T, data []byte) {
		body, _, err := receipt.SplitNote(data)
		if err == nil && (len(body) == 0 || body[len(body)-1] != '\n') {
			t.Fatalf("accepted a body without a final newline: %q", body)
		}
	})
}
