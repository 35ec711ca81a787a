package anchor_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-lossless/git-lossless/anchor"
	"github.com/git-lossless/git-lossless/gitstore"
)

// TestWitnessFormat: after each append the witness has one "<seq> <seal>"
// line, and those lines are exactly the Lossless-Seq and Lossless-Seal
// trailers of the writer's batch commits as C git prints them.
func TestWitnessFormat(t *testing.T) {
	w := newWorld(t)
	dir, st := w.repo()
	w.append(st, "w", "1\n", "2\n")
	w.append(st, "w", "3\n")
	w.append(st, "w", "4\n", "5\n", "6\n")
	got, err := os.ReadFile(filepath.Join(dir, ".git", "lossless", "witness", "w"))
	if err != nil {
		t.Fatal(err)
	}
	log := w.git(dir, "log", "--reverse", "--format=%(trailers:key=Lossless-Seq,valueonly,separator=)%x20%(trailers:key=Lossless-Seal,valueonly,separator=)", "refs/lossless/w")
	want := strings.ReplaceAll(log, "\n\n", "\n")
	if strings.TrimSpace(string(got)) != strings.TrimSpace(want) {
		t.Fatalf("witness:\n%s\ntrailers:\n%s", got, want)
	}
	if fi, err := os.Stat(filepath.Join(dir, ".git", "lossless", "witness", "w")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("witness mode %v %v", fi.Mode(), err)
	}
	// The zero-value Options is the safe store: any store witnesses.
	plain, err := gitstore.OpenDir(dir, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plain.Append(context.Background(), "plain", []gitstore.Record{{Event: gitstore.Event{Op: "read", Source: "cli"}, Content: []byte("x"), HasContent: true}}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, ".git", "lossless", "witness", "plain")); err != nil || !strings.HasPrefix(string(b), "1 ") {
		t.Fatalf("a zero-Options store wrote no witness: %q %v", b, err)
	}
}

// TestWitnessGoldenVector: gitstore/FORMAT.md's witness vector is the last
// seq and the seal (sha256 of the last line) of each golden batch.
func TestWitnessGoldenVector(t *testing.T) {
	var want bytes.Buffer
	for i, name := range []string{"golden-1.jsonl", "golden-2.jsonl"} {
		b, err := os.ReadFile(filepath.Join("..", "testdata", "format", name))
		if err != nil {
			t.Fatal(err)
		}
		var last []byte
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(nil, 1<<20)
		n := 0
		for sc.Scan() {
			last = append(last[:0], sc.Bytes()...)
			n++
		}
		sum := sha256.Sum256(last)
		seq := map[int]string{0: "4", 1: "5"}[i]
		want.WriteString(seq + " " + hex.EncodeToString(sum[:]) + "\n")
	}
	got, err := os.ReadFile(filepath.Join("..", "testdata", "format", "golden-witness.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("golden-witness.txt:\n%s\nfrom the golden batches:\n%s", got, want.Bytes())
	}
	_ = anchor.Header
}

// TestAnchoredHeadsIncremental: a checkpoint records only the writer heads
// that changed since the previous recorded one, each checkpoint once; when
// anchored/ was deleted, the next push records every head again (the
// previous checkpoint's heads are not there to lean on), and verify
// rebuilds what is missing; a rollback of an unchanged writer is still an
// anchor-mismatch once the witness is gone.
func TestAnchoredHeadsIncremental(t *testing.T) {
	w := newWorld(t)
	dir, st := w.repo()
	first := w.append(st, "a", "1\n")
	w.append(st, "b", "1\n")
	w.push(st, origin(dir))
	w.append(st, "a", "2\n")
	w.push(st, origin(dir))
	anch := filepath.Join(dir, ".git", "lossless", "anchored")
	lines := func(name string) int {
		b, err := os.ReadFile(filepath.Join(anch, name))
		if err != nil {
			return -1
		}
		return strings.Count(string(b), "\n")
	}
	if lines("a") != 2 || lines("b") != 1 || lines(".checkpoints") != 2 {
		t.Fatalf("after two pushes: a %d, b %d, checkpoints %d lines", lines("a"), lines("b"), lines(".checkpoints"))
	}
	// A verify pass records nothing new.
	if _, err := anchor.Check(context.Background(), st, anchor.CheckOptions{}); err != nil {
		t.Fatal(err)
	}
	if lines("a") != 2 || lines("b") != 1 || lines(".checkpoints") != 2 {
		t.Fatalf("after verify: a %d, b %d, checkpoints %d lines", lines("a"), lines("b"), lines(".checkpoints"))
	}
	// anchored/ deleted, then one writer changes and is anchored: b's head
	// is recorded although the checkpoint before named it unchanged (the
	// check before signing rebuilds the previous checkpoint's heads, then
	// the new one adds a's).
	if err := os.RemoveAll(anch); err != nil {
		t.Fatal(err)
	}
	w.append(st, "a", "3\n")
	w.push(st, origin(dir))
	if lines("a") != 2 || lines("b") != 1 {
		t.Fatalf("after anchored/ was deleted: a %d, b %d lines", lines("a"), lines("b"))
	}
	if err := os.RemoveAll(filepath.Join(dir, ".git", "lossless", "witness")); err != nil {
		t.Fatal(err)
	}
	w.git(dir, "update-ref", "refs/lossless/a", first.Commit)
	rep := w.verify(dir, "a")
	if rep.OK() || rep.Break.Kind != "anchor-mismatch" {
		t.Fatalf("rolled-back writer with anchored heads only: %+v", rep.Break)
	}
	v, err := anchor.Check(context.Background(), st, anchor.CheckOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v.Broken() != 1 {
		t.Fatalf("verdict: %d broken", v.Broken())
	}
}
