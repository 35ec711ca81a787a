package gitstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
)

// Helpers of this file are prefixed nt so they never collide with other
// tests of the package.

func ntGit(t testing.TB, dir string, stdin []byte, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull,
		"GIT_AUTHOR_NAME=T", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=T", "GIT_COMMITTER_EMAIL=t@example.com")
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.Bytes())
	}
	return strings.TrimSpace(string(out))
}

// ntRepo makes a repository with n commits and returns it, the store and
// the commit ids (oldest first).
func ntRepo(t testing.TB, n int) (string, *Store, []string) {
	t.Helper()
	dir := t.TempDir()
	ntGit(t, dir, nil, "init", "-q")
	var ids []string
	for i := range n {
		os.WriteFile(filepath.Join(dir, "f.txt"), []byte(fmt.Sprintf("v%d\n", i)), 0o644)
		ntGit(t, dir, nil, "add", "f.txt")
		ntGit(t, dir, nil, "commit", "-q", "-m", fmt.Sprintf("c%d", i))
		ids = append(ids, ntGit(t, dir, nil, "rev-parse", "HEAD"))
	}
	off := false
	st, err := OpenDir(dir, Options{Fsync: &off})
	if err != nil {
		t.Fatal(err)
	}
	return dir, st, ids
}

// ntSigner returns a fixed armored block (a real signature is package
// receipt's business) and records what it was asked to sign.
type ntSigner struct {
	mu       sync.Mutex
	payloads [][]byte
}

const ntSig = "-----BEGIN PGP SIGNATURE-----\n\nwnUEABYIAB0WIQQ=\n=abcd\n-----END PGP SIGNATURE-----\n"

func (s *ntSigner) sign(p []byte) (string, error) {
	s.mu.Lock()
	s.payloads = append(s.payloads, p)
	s.mu.Unlock()
	return ntSig, nil
}

func TestNotesWriteReadPlainGit(t *testing.T) {
	dir, st, ids := ntRepo(t, 3)
	ctx := context.Background()
	var sg ntSigner
	c1, err := st.WriteNote(ctx, "receipts-test", ids[0], []byte("note one\n"), sg.sign)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := st.WriteNote(ctx, "receipts-test", ids[1], []byte("note two\n"), sg.sign)
	if err != nil {
		t.Fatal(err)
	}
	// Plain git reads both notes, through the ref and through log.
	if got := ntGit(t, dir, nil, "notes", "--ref=lossless/receipts-test", "show", ids[0]); got != "note one" {
		t.Fatalf("git notes show = %q", got)
	}
	if got := ntGit(t, dir, nil, "notes", "--ref=lossless/receipts-test", "show", ids[1]); got != "note two" {
		t.Fatalf("git notes show = %q", got)
	}
	if log := ntGit(t, dir, nil, "log", "--notes=lossless/*", "--format=%H%n%N", "-3"); !strings.Contains(log, "note one") || !strings.Contains(log, "note two") {
		t.Fatalf("git log --notes:\n%s", log)
	}
	// Each change is a commit on the previous one; the ref is where git sees it.
	if got := ntGit(t, dir, nil, "rev-parse", c2+"^"); got != c1 {
		t.Fatalf("parent of %s is %s, want %s", c2, got, c1)
	}
	if got := ntGit(t, dir, nil, "rev-parse", "refs/notes/lossless/receipts-test"); got != c2 {
		t.Fatalf("ref = %s, want %s", got, c2)
	}
	// The gpgsig header is as git writes it, and the signed payload is the
	// commit without it.
	raw := ntGit(t, dir, nil, "cat-file", "commit", c2)
	if !strings.Contains(raw, "\ngpgsig -----BEGIN PGP SIGNATURE-----\n \n wnUEABYIAB0WIQQ=\n =abcd\n -----END PGP SIGNATURE-----\n\nNotes added by") {
		t.Fatalf("commit:\n%s", raw)
	}
	typ, body, err := st.Objects().ReadObject(ctx, c2)
	if err != nil || typ != "commit" {
		t.Fatal(typ, err)
	}
	payload, sig := SplitCommitSignature(body)
	if sig != ntSig || !bytes.Equal(payload, sg.payloads[len(sg.payloads)-1]) {
		t.Fatalf("split: sig %q\npayload %q\nsigned  %q", sig, payload, sg.payloads[len(sg.payloads)-1])
	}
	head, err := st.NotesHead(ctx, "receipts-test")
	if err != nil || head.ID != c2 || head.Signature != ntSig || !bytes.Equal(head.Payload, payload) || len(head.Parents) != 1 {
		t.Fatalf("notes head %+v %v", head, err)
	}
	// Replacing a note keeps one entry.
	if _, err := st.WriteNote(ctx, "receipts-test", ids[0], []byte("note one, again\n"), nil); err != nil {
		t.Fatal(err)
	}
	if got := ntGit(t, dir, nil, "notes", "--ref=lossless/receipts-test", "show", ids[0]); got != "note one, again" {
		t.Fatalf("git notes show = %q", got)
	}
	if got := ntGit(t, dir, nil, "notes", "--ref=lossless/receipts-test", "list"); strings.Count(got, "\n")+1 != 2 {
		t.Fatalf("git notes list:\n%s", got)
	}
	n, text, err := st.ReadNote(ctx, "receipts-test", ids[0])
	if err != nil || string(text) != "note one, again\n" || n.Path != ids[0] {
		t.Fatalf("ReadNote: %+v %q %v", n, text, err)
	}
	if _, _, err := st.ReadNote(ctx, "receipts-test", ids[2]); !errors.Is(err, ErrNoNote) {
		t.Fatalf("ReadNote of an unannotated commit: %v", err)
	}
	if _, _, err := st.ReadNote(ctx, "nobody", ids[0]); !errors.Is(err, ErrNoNote) {
		t.Fatalf("ReadNote on a missing ref: %v", err)
	}
	notes, err := st.Notes(ctx, "receipts-test")
	if err != nil || len(notes) != 2 {
		t.Fatalf("Notes: %+v %v", notes, err)
	}
	refs, err := st.NoteRefs(ctx)
	if err != nil || len(refs) != 1 || refs[0].Writer != "receipts-test" {
		t.Fatalf("NoteRefs: %+v %v", refs, err)
	}
	// Never the ref refs/notes/lossless itself.
	if out, err := exec.Command("git", "-C", dir, "rev-parse", "--verify", "-q", "refs/notes/lossless").Output(); err == nil {
		t.Fatalf("refs/notes/lossless exists: %s", out)
	}
	ntGit(t, dir, nil, "fsck", "--strict")

	// After gc (refs packed, objects packed) everything still reads.
	ntGit(t, dir, nil, "gc", "-q", "--prune=now")
	st2, _ := OpenDir(dir, Options{})
	if _, text, err := st2.ReadNote(ctx, "receipts-test", ids[1]); err != nil || string(text) != "note two\n" {
		t.Fatalf("after gc: %q %v", text, err)
	}
	if _, err := st2.WriteNote(ctx, "receipts-test", ids[2], []byte("three\n"), nil); err != nil {
		t.Fatalf("write after gc (packed ref): %v", err)
	}
	if got := ntGit(t, dir, nil, "notes", "--ref=lossless/receipts-test", "show", ids[2]); got != "three" {
		t.Fatalf("after gc: %q", got)
	}
	ntGit(t, dir, nil, "fsck", "--strict")
}

// Notes written by C git with fanout directories are read, and a write
// for the same object replaces the fanned-out entry with a flat one.
func TestNotesFanout(t *testing.T) {
	dir, st, ids := ntRepo(t, 3)
	ctx := context.Background()
	// Build a fanned-out notes tree by hand: ab/cdef... and 12/34/5678...
	blobA := ntGit(t, dir, []byte("fan A\n"), "hash-object", "-w", "--stdin")
	blobB := ntGit(t, dir, []byte("fan B\n"), "hash-object", "-w", "--stdin")
	a, b := ids[0], ids[1]
	inner := ntGit(t, dir, []byte(fmt.Sprintf("100644 blob %s\t%s\n", blobA, a[2:])), "mktree")
	deep := ntGit(t, dir, []byte(fmt.Sprintf("100644 blob %s\t%s\n", blobB, b[4:])), "mktree")
	mid := ntGit(t, dir, []byte(fmt.Sprintf("040000 tree %s\t%s\n", deep, b[2:4])), "mktree")
	var root string
	if a[:2] == b[:2] {
		t.Skip("the two commits share a fanout prefix")
	}
	root = ntGit(t, dir, []byte(fmt.Sprintf("040000 tree %s\t%s\n040000 tree %s\t%s\n100644 blob %s\tREADME\n", inner, a[:2], mid, b[:2], blobA)), "mktree")
	c := ntGit(t, dir, []byte("fanned\n"), "commit-tree", root)
	ntGit(t, dir, nil, "update-ref", "refs/notes/lossless/fan", c)
	for id, want := range map[string]string{a: "fan A\n", b: "fan B\n"} {
		if got := ntGit(t, dir, nil, "notes", "--ref=lossless/fan", "show", id); got+"\n" != want {
			t.Fatalf("git itself reads %q", got)
		}
		_, text, err := st.ReadNote(ctx, "fan", id)
		if err != nil || string(text) != want {
			t.Fatalf("ReadNote %s: %q %v", id, text, err)
		}
	}
	notes, err := st.Notes(ctx, "fan")
	if err != nil || len(notes) != 2 || notes[0].Path == notes[0].Target {
		t.Fatalf("Notes: %+v %v", notes, err)
	}
	if _, err := st.WriteNote(ctx, "fan", b, []byte("flat B\n"), nil); err != nil {
		t.Fatal(err)
	}
	tree := ntGit(t, dir, nil, "ls-tree", "-r", "--name-only", "refs/notes/lossless/fan")
	wantList := []string{"README", a[:2] + "/" + a[2:], b}
	sort.Strings(wantList)
	want := strings.Join(wantList, "\n")
	if tree != want {
		t.Fatalf("notes tree after the write:\n%s\nwant\n%s", tree, want)
	}
	if got := ntGit(t, dir, nil, "notes", "--ref=lossless/fan", "show", b); got != "flat B" {
		t.Fatalf("git notes show after flattening: %q", got)
	}
	if got := ntGit(t, dir, nil, "notes", "--ref=lossless/fan", "show", a); got != "fan A" {
		t.Fatalf("the other fanned note: %q", got)
	}
	ntGit(t, dir, nil, "fsck", "--strict")
}

// Concurrent writers in several goroutines lose no note: each write is a
// compare-and-swap under <ref>.lock, retried on the new head. (C git's own
// `git notes add` takes the same lock but moves the ref without comparing
// it to the commit it built on, so a C git writer racing on the same ref
// can drop someone else's note; that is git's behaviour, not ours. It
// interoperates sequentially, which the end of this test checks.)
func TestNotesConcurrent(t *testing.T) {
	const goroutines, each = 4, 8
	dir, st, ids := ntRepo(t, goroutines*each+1)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				id := ids[g*each+i]
				if _, err := st.WriteNote(ctx, "race", id, []byte("go "+id+"\n"), nil); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	last := ids[len(ids)-1]
	ntGit(t, dir, nil, "notes", "--ref=lossless/race", "add", "-m", "c git", last)
	if _, err := st.WriteNote(ctx, "race", ids[0], []byte("again\n"), nil); err != nil {
		t.Fatal(err)
	}
	notes, err := st.Notes(ctx, "race")
	if err != nil {
		t.Fatal(err)
	}
	if len(notes) != len(ids) {
		t.Fatalf("%d notes, want %d", len(notes), len(ids))
	}
	if got := ntGit(t, dir, nil, "notes", "--ref=lossless/race", "show", last); got != "c git" {
		t.Fatalf("C git's note: %q", got)
	}
	if n := ntGit(t, dir, nil, "rev-list", "--count", "refs/notes/lossless/race"); n != fmt.Sprint(len(ids)+1) {
		t.Fatalf("%s notes commits, want one per write (%d)", n, len(ids)+1)
	}
	ntGit(t, dir, nil, "fsck", "--strict")
}

func TestNotesRejects(t *testing.T) {
	_, st, ids := ntRepo(t, 1)
	ctx := context.Background()
	if _, err := st.WriteNote(ctx, "bad/name", ids[0], []byte("x"), nil); err == nil {
		t.Fatal("accepted an invalid writer")
	}
	if _, err := st.WriteNote(ctx, "ok", "HEAD", []byte("x"), nil); err == nil {
		t.Fatal("accepted a target that is not an object id")
	}
	failing := func([]byte) (string, error) { return "", errors.New("no key") }
	if _, err := st.WriteNote(ctx, "ok", ids[0], []byte("x"), failing); err == nil || !strings.Contains(err.Error(), "no key") {
		t.Fatalf("a failing signer: %v", err)
	}
	notArmor := func([]byte) (string, error) { return "not a signature", nil }
	if _, err := st.WriteNote(ctx, "ok", ids[0], []byte("x"), notArmor); err == nil {
		t.Fatal("accepted a signer that returned no armor")
	}
	if refs, _ := st.NoteRefs(ctx); len(refs) != 0 {
		t.Fatalf("failed writes moved a ref: %+v", refs)
	}
}

func TestSelectEventsAndWriterHead(t *testing.T) {
	_, st, _ := ntRepo(t, 1)
	ctx := context.Background()
	for _, w := range []string{"b-writer", "a-writer"} {
		var recs []Record
		for i := range 5 {
			recs = append(recs, Record{Event: Event{Op: "read", Source: "cli", Session: w, Path: fmt.Sprintf("f%d.txt", i)}, Content: []byte(w + fmt.Sprint(i)), HasContent: true})
		}
		if _, err := st.Append(ctx, w, recs[:2]); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Append(ctx, w, recs[2:]); err != nil {
			t.Fatal(err)
		}
	}
	var seen []string
	evs, err := st.SelectEvents(ctx, nil, func(w string, line []byte) bool {
		seen = append(seen, w)
		return bytes.Contains(line, []byte(`"path":"f3.txt"`))
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 || evs[0].Writer != "a-writer" || evs[1].Writer != "b-writer" || evs[0].Seq != 4 || evs[0].Raw == nil {
		t.Fatalf("events %+v", evs)
	}
	if strings.Join(seen, ",") != "a-writer,a-writer,a-writer,a-writer,a-writer,b-writer,b-writer,b-writer,b-writer,b-writer" {
		t.Fatalf("keep saw %v", seen)
	}
	// Without the index, from the commits: the same.
	os.RemoveAll(st.stateDir("index"))
	evs2, err := st.SelectEvents(ctx, []string{"b-writer"}, func(string, []byte) bool { return true })
	if err != nil || len(evs2) != 5 || evs2[4].Seq != 5 {
		t.Fatalf("from commits: %d %v", len(evs2), err)
	}
	if _, err := st.SelectEvents(ctx, []string{"nobody"}, func(string, []byte) bool { return true }); err == nil {
		t.Fatal("a missing named writer is an error")
	}
	h, err := st.WriterHead(ctx, "a-writer")
	if err != nil || h.Seq != 5 || len(h.Seal) != 64 || h.Err != "" {
		t.Fatalf("head %+v %v", h, err)
	}
	if h, err := st.WriterHead(ctx, "nobody"); err != nil || h.Err == "" {
		t.Fatalf("missing writer head %+v %v", h, err)
	}
}
