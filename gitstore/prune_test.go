package gitstore

import (
	"context"
	"os/exec"
	"testing"

	"github.com/git-lossless/git-lossless/seal"
)

func TestPruneKeepsSealAndReportsPruned(t *testing.T) {
	dir := gitInit(t)
	s, err := OpenDir(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rec := func(path, content, op string) Event {
		res, err := s.Append(ctx, "w", []Record{{Event: Event{Op: Op(op), Source: "cli", Path: path}, Content: []byte(content), HasContent: true}})
		if err != nil {
			t.Fatal(err)
		}
		return res.Events[0]
	}
	secret := rec("private/notes.txt", "PRUNE-ME-4711\n", "read")
	keep := rec("src/main.go", "package main\n", "read")
	rec("private/notes.txt", "PRUNE-ME-4711\n", "edit")
	before, err := s.Verify(ctx, "w", seal.Options{})
	if err != nil || !before.OK() {
		t.Fatalf("verify before: %+v %v", before, err)
	}
	res, err := s.Prune(ctx, "w", func(e *Event) bool { return e.Path == "private/notes.txt" }, "user asked", false)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Blobs) != 1 || res.Blobs[0].Blob != secret.Blob || res.Events != 2 {
		t.Fatalf("prune result %+v", res)
	}
	gitRun(t, dir, "gc", "-q", "--prune=now")
	gitRun(t, dir, "fsck", "--strict")
	if err := exec.Command("git", "-C", dir, "cat-file", "-e", secret.Blob).Run(); err == nil {
		t.Fatalf("pruned blob %s still in the repository after gc", secret.Blob)
	}
	if got := gitRun(t, dir, "cat-file", "-p", keep.Blob); got != "package main\n" {
		t.Fatalf("kept blob = %q", got)
	}
	rep, err := s.Verify(ctx, "w", seal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("verify after prune: %+v", rep.Break)
	}
	if len(rep.Pruned) != 2 || rep.Pruned[0].Kind != seal.Pruned {
		t.Fatalf("pruned entries = %+v", rep.Pruned)
	}
	if rep.Entries != 4 {
		t.Fatalf("entries = %d, want 4 (3 + prune record)", rep.Entries)
	}
	// rep.OK above also means every witness checkpoint written by the
	// three appends still matches: pruning changed no entry's seal.
	evs, _ := s.Events(ctx, Query{Op: "prune"})
	if len(evs) != 1 || string(evs[0].Extra["reason"]) != `"user asked"` {
		t.Fatalf("prune record = %+v", evs)
	}
	// Appending after a prune continues the chain.
	rec("src/main.go", "package main\n\nfunc main() {}\n", "edit")
	if rep, err := s.Verify(ctx, "w", seal.Options{}); err != nil || !rep.OK() {
		t.Fatalf("verify after append: %+v %v", rep, err)
	}
}
