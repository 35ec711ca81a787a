package gitstore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-lossless/git-lossless/seal"
)

func witnessStore(t *testing.T) (string, *Store) {
	t.Helper()
	repo := itInit(t)
	off := false
	st, err := OpenDir(repo, Options{Fsync: &off})
	if err != nil {
		t.Fatal(err)
	}
	return repo, st
}

func appendOne(t *testing.T, st *Store, writer, content string) AppendResult {
	t.Helper()
	res, err := st.Append(context.Background(), writer, []Record{{Event: Event{Op: "read", Source: "cli", Path: "f.txt"}, Content: []byte(content), HasContent: true}})
	if err != nil {
		t.Fatalf("append to %s: %v", writer, err)
	}
	return res
}

// TestZeroOptionsIsTheSafeStore: a store opened with the zero Options
// witnesses its appends and compares the chain with them: rolling the ref
// back (with plain git) is caught by Verify on a fresh zero-Options store.
func TestZeroOptionsIsTheSafeStore(t *testing.T) {
	repo, st := witnessStore(t)
	first := appendOne(t, st, "w", "1\n")
	appendOne(t, st, "w", "2\n")
	itGit(t, repo, "update-ref", "refs/lossless/w", first.Commit)
	fresh, err := OpenDir(repo, Options{})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := fresh.Verify(context.Background(), "w", seal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK() || rep.Break.Kind != seal.ChainForked {
		t.Fatalf("a rolled-back writer verified on a zero-Options store: %+v", rep.Break)
	}
	// A deleted writer: a break too, and a known writer.
	itGit(t, repo, "update-ref", "-d", "refs/lossless/w")
	rep, err = fresh.Verify(context.Background(), "w", seal.Options{})
	if err != nil || rep.OK() {
		t.Fatalf("a deleted witnessed writer verified: %+v %v", rep, err)
	}
	if ws, err := fresh.KnownWriters(t.Context()); err != nil || strings.Join(ws, ",") != "w" {
		t.Fatalf("KnownWriters = %v, %v", ws, err)
	}
}

// TestWitnessDamaged: a witness overwritten with garbage is a
// witness-damaged break (it was ignored in silence, so a rolled-back ref
// then verified OK); a torn last line of a crash is not.
func TestWitnessDamaged(t *testing.T) {
	repo, st := witnessStore(t)
	first := appendOne(t, st, "w", "1\n")
	second := appendOne(t, st, "w", "2\n")
	wf := filepath.Join(repo, ".git", "lossless", "witness", "w")
	good, err := os.ReadFile(wf)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	// A torn append (no newline, NULs of a crash) at the end: fine.
	if err := os.WriteFile(wf, append(append([]byte{}, good...), "3 ab\x00\x00"...), 0o600); err != nil {
		t.Fatal(err)
	}
	if rep, err := st.Verify(ctx, "w", seal.Options{}); err != nil || !rep.OK() {
		t.Fatalf("a torn last line: %+v %v", rep, err)
	}

	for name, garbage := range map[string]string{
		"overwritten": "\x89PNG garbage garbage\nmore\n",
		"bad seal":    "2 nothex\n",
		"bad seq":     strings.Replace(string(good), "1 ", "01 ", 1),
		"inserted":    string(good) + "hello world\n",
	} {
		t.Run(name, func(t *testing.T) {
			if err := os.WriteFile(wf, []byte(garbage), 0o600); err != nil {
				t.Fatal(err)
			}
			rep, err := st.Verify(ctx, "w", seal.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if rep.OK() || rep.Break.Kind != seal.WitnessDamaged || !strings.Contains(rep.Break.Detail, wf) {
				t.Fatalf("damaged witness: %+v", rep.Break)
			}
			if _, err := st.Witness(ctx, "w"); !errors.Is(err, ErrWitnessDamaged) {
				t.Fatalf("Witness: %v", err)
			}
		})
	}
	// Damaged and rolled back: the chain itself is fine, so the damage is
	// the break (the rollback cannot be seen without the witness).
	if err := os.WriteFile(wf, []byte("garbage\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	itGit(t, repo, "update-ref", "refs/lossless/w", first.Commit)
	rep, err := st.Verify(ctx, "w", seal.Options{})
	if err != nil || rep.OK() || rep.Break.Kind != seal.WitnessDamaged {
		t.Fatalf("damaged witness and a rollback verified: %+v %v", rep, err)
	}
	// Damaged anchored heads likewise.
	if err := os.WriteFile(wf, good, 0o600); err != nil {
		t.Fatal(err)
	}
	itGit(t, repo, "update-ref", "refs/lossless/w", second.Commit)
	if rep, err := st.Verify(ctx, "w", seal.Options{}); err != nil || !rep.OK() {
		t.Fatalf("restored: %+v %v", rep, err)
	}
	af := filepath.Join(repo, ".git", "lossless", "anchored", "w")
	os.MkdirAll(filepath.Dir(af), 0o700)
	if err := os.WriteFile(af, []byte("1 zz own\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if rep, err := st.Verify(ctx, "w", seal.Options{}); err != nil || rep.OK() {
		t.Fatalf("damaged anchored heads verified: %+v %v", rep, err)
	}
}

// TestRecordAnchored: recorded heads are compared by Verify (as
// anchor-mismatch), recorded once, and checked for shape.
func TestRecordAnchored(t *testing.T) {
	repo, st := witnessStore(t)
	r1 := appendOne(t, st, "w", "1\n")
	appendOne(t, st, "w", "2\n")
	seq, sl, err := st.HeadOf(t.Context(), strings.TrimSpace(itGit(t, repo, "rev-parse", "refs/lossless/w")))
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := st.RecordAnchored(t.Context(), "w", seq, sl, AnchoredSeen, "seen on origin, checkpoint m/c #1"); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := os.ReadFile(filepath.Join(repo, ".git", "lossless", "anchored", "w"))
	if strings.Count(string(b), "\n") != 1 {
		t.Fatalf("anchored file:\n%s", b)
	}
	for _, bad := range []struct {
		seq        int64
		seal, kind string
	}{{0, sl, AnchoredOwn}, {1, "xyz", AnchoredOwn}, {1, sl, "mine"}} {
		if err := st.RecordAnchored(t.Context(), "w", bad.seq, bad.seal, bad.kind, "x"); err == nil {
			t.Errorf("RecordAnchored(%v) accepted", bad)
		}
	}
	// The witness is gone (deleted by someone), the ref rolled back: the
	// anchored head still catches it.
	os.RemoveAll(filepath.Join(repo, ".git", "lossless", "witness"))
	itGit(t, repo, "update-ref", "refs/lossless/w", r1.Commit)
	rep, err := st.Verify(context.Background(), "w", seal.Options{})
	if err != nil || rep.OK() || rep.Break.Kind != seal.AnchorMismatch || !strings.Contains(rep.Break.Detail, "seen on origin") {
		t.Fatalf("anchored rollback: %+v %v", rep, err)
	}
}

// TestOwnership: a clone appends only to writers it wrote; a writer
// fetched from elsewhere, or named with another clone's id, is refused
// with ErrNotOwner and nothing is written.
func TestOwnership(t *testing.T) {
	repo, st := witnessStore(t)
	ctx := context.Background()
	appendOne(t, st, "mine", "1\n")
	if own, err := st.Owns(ctx, "mine"); err != nil || !own {
		t.Fatalf("Owns(mine) = %v, %v", own, err)
	}
	// Another clone's writer, fetched with plain git.
	other := itInit(t)
	ost, err := OpenDir(other, Options{})
	if err != nil {
		t.Fatal(err)
	}
	appendOne(t, ost, "theirs", "x\n")
	itGit(t, repo, "fetch", "-q", other, "refs/lossless/theirs:refs/lossless/theirs")
	before := itGit(t, repo, "rev-parse", "refs/lossless/theirs")
	_, err = st.Append(ctx, "theirs", []Record{{Event: Event{Op: "write", Source: "cli", Path: "evil.txt"}, Content: []byte("evil"), HasContent: true}})
	if !errors.Is(err, ErrNotOwner) {
		t.Fatalf("append to a fetched writer: %v", err)
	}
	if _, err := st.Import(ctx, "theirs", []Record{{Event: Event{Op: "write", Source: "cli", Path: "evil.txt"}, Content: []byte("evil"), HasContent: true}}, 10); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("import into a fetched writer: %v", err)
	}
	if after := itGit(t, repo, "rev-parse", "refs/lossless/theirs"); after != before {
		t.Fatalf("the fetched writer moved: %s -> %s", before, after)
	}
	// Derived names carry the clone id.
	id, err := st.CloneID(ctx)
	if err != nil || len(id) != 8 {
		t.Fatalf("CloneID = %q, %v", id, err)
	}
	oid, _ := ost.CloneID(ctx)
	if oid == id {
		t.Fatalf("two clones share id %s", id)
	}
	for family, label := range map[string]string{FamilyCLI: "sess/1", FamilyProxy: "127.0.0.1:11435"} {
		w, err := st.OwnWriterName(ctx, family, label)
		if err != nil || !strings.HasPrefix(w, family+"-"+id+"-") || FamilyClone(w) != id {
			t.Fatalf("OwnWriterName(%s, %s) = %q, %v", family, label, w, err)
		}
		ow, _ := ost.OwnWriterName(ctx, family, label)
		if ow == w {
			t.Fatalf("two clones derive the same writer %s", w)
		}
		if err := st.CheckWritable(ctx, ow); !errors.Is(err, ErrNotOwner) {
			t.Fatalf("CheckWritable(%s) of another clone's name: %v", ow, err)
		}
		if err := st.CheckWritable(ctx, w); err != nil {
			t.Fatalf("CheckWritable(%s): %v", w, err)
		}
	}
	if w, _ := st.OwnWriterName(ctx, FamilyCLI, ""); w != "cli-"+id {
		t.Fatalf("bare cli writer %q", w)
	}
	// Names that only look like a family are free.
	for _, w := range []string{"proxy-demo", "cli", "cli-session-1", "proxy-deadbee", "clix-" + oid} {
		if FamilyClone(w) != "" {
			t.Errorf("FamilyClone(%s) = %q", w, FamilyClone(w))
		}
	}
	// The clone id survives in its file, and a damaged one is an error.
	cf := filepath.Join(repo, ".git", "lossless", "clone")
	if b, _ := os.ReadFile(cf); strings.TrimSpace(string(b)) != id {
		t.Fatalf("clone file %q", b)
	}
	os.WriteFile(cf, []byte("not an id\n"), 0o600)
	if _, err := st.CloneID(ctx); err == nil {
		t.Fatal("a damaged clone id was accepted")
	}
}

// TestOwnershipMigration: an archive made before ownership was recorded:
// writers whose first witnessed head is their chain's first batch are
// this clone's; a writer adopted by a fast-forward (its first witnessed
// head is later) is not.
func TestOwnershipMigration(t *testing.T) {
	repo, st := witnessStore(t)
	ctx := context.Background()
	appendOne(t, st, "made", "1\n")
	appendOne(t, st, "made", "2\n")
	other := itInit(t)
	ost, err := OpenDir(other, Options{})
	if err != nil {
		t.Fatal(err)
	}
	appendOne(t, ost, "adopted", "a\n")
	appendOne(t, ost, "adopted", "b\n")
	itGit(t, repo, "fetch", "-q", other, "refs/lossless/adopted:refs/lossless-tracking/x/lossless/adopted")
	head := strings.TrimSpace(itGit(t, repo, "rev-parse", "refs/lossless-tracking/x/lossless/adopted"))
	if err := st.Objects().FastForward(ctx, "refs/lossless/adopted", "", head); err != nil {
		t.Fatal(err)
	}
	// Back to an old archive: no own/ directory.
	if err := os.RemoveAll(filepath.Join(repo, ".git", "lossless", "own")); err != nil {
		t.Fatal(err)
	}
	st2, err := OpenDir(repo, Options{})
	if err != nil {
		t.Fatal(err)
	}
	owned, err := st2.OwnedWriters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !owned["made"] || owned["adopted"] || len(owned) != 1 {
		t.Fatalf("migrated ownership: %v", owned)
	}
	if fi, err := os.Stat(filepath.Join(repo, ".git", "lossless", "own")); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("own dir: %v %v", fi, err)
	}
}

// TestGitDirDeniedOnEveryRoute: a read of .git/config recorded by any
// writer (a hook's Read, record, a sweep) keeps its access and never its
// content: the remote URL's password reaches no object. The MCP server's
// read_file refused it already; the hooks recorded it.
func TestGitDirDeniedOnEveryRoute(t *testing.T) {
	repo, st := witnessStore(t)
	const secret = "hunter2-correct-horse-battery"
	itGit(t, repo, "remote", "add", "origin", "https://me:"+secret+"@example.invalid/r.git")
	cfg := filepath.Join(repo, ".git", "config")
	content, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	os.Symlink(cfg, filepath.Join(repo, "cfg-link"))
	for _, rec := range []Record{
		{Event: Event{Op: "read", Source: "hook", Path: ".git/config"}, Content: content, HasContent: true, File: cfg},
		{Event: Event{Op: "read", Source: "hook", Path: "cfg-link"}, Content: content, HasContent: true, File: filepath.Join(repo, "cfg-link")},
		{Event: Event{Op: "read", Source: "cli", Path: cfg}, Content: content, HasContent: true},
	} {
		res, err := st.Append(context.Background(), "cc-s", []Record{rec})
		if err != nil {
			t.Fatal(err)
		}
		if e := res.Events[0]; !e.Excluded || e.Blob != "" {
			t.Fatalf("%s archived: %+v", rec.Path, e)
		}
	}
	all := itGit(t, repo, "cat-file", "--batch-all-objects", "--batch")
	if strings.Contains(all, secret) {
		t.Fatal("the password of .git/config is in an object")
	}
}
