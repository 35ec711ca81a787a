package seal

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/git-lossless/git-lossless/internal/gitobj"
)

type memSource struct {
	batches []Batch
	blobs   map[string][]byte
	cps     []Checkpoint
}

func (m memSource) Batches(context.Context, string) ([]Batch, error) { return m.batches, nil }
func (m memSource) Content(_ context.Context, b string) ([]byte, error) {
	if d, ok := m.blobs[b]; ok {
		return d, nil
	}
	return nil, ErrMissing
}
func (m memSource) Checkpoints(context.Context, string) ([]Checkpoint, error) { return m.cps, nil }

// A writer whose ref is gone but whose head was witnessed is a break.
func TestVerifyDeletedWriterIsForked(t *testing.T) {
	rep, err := Verify(context.Background(), memSource{cps: []Checkpoint{{Seq: 3, Seal: Genesis("x")}}}, "w", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK() || rep.Break.Kind != ChainForked {
		t.Fatalf("report %+v", rep)
	}
	rep, err = Verify(context.Background(), memSource{}, "w", Options{})
	if err != nil || !rep.OK() || rep.Entries != 0 {
		t.Fatalf("empty, unwitnessed writer: %+v %v", rep, err)
	}
}

func TestGenesisAndHashVectors(t *testing.T) {
	// sha256("git-lossless seal v1 golden") and sha256("hello\n"),
	// computed with sha256sum.
	if g := Genesis("golden"); g != "5fd9056c360a5f9708dfae05c0e894f1440230bbad52180577934a48446cc64e" {
		t.Fatalf("genesis %q", g)
	}
	if h := Hash([]byte("hello\n")); h != "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03" {
		t.Fatalf("hash %s", h)
	}
	if id := gitobj.BlobID([]byte("hello\n")); id != "ce013625030ba8dba906f756967f9e9ca394464a" {
		t.Fatalf("blob id %s", id)
	}
}

// memChain builds a sealed chain of writer w: batches of n entries each,
// numbered from 1, with no content.
func memChain(batches, n int) []Batch {
	prev := Genesis("w")
	var seq int64
	var out []Batch
	for b := range batches {
		bt := Batch{Commit: fmt.Sprintf("c%d", b+1)}
		for range n {
			seq++
			line := fmt.Appendf(nil, `{"op":"span","prev":%q,"seq":%d}`, prev, seq)
			prev = Hash(line)
			bt.Lines = append(bt.Lines, line)
		}
		bt.Seq, bt.Seal = seq, prev
		out = append(out, bt)
	}
	return out
}

// An unreadable batch in the middle breaks the chain at its own first
// entry; the batches before it are counted as read. (Source.Batches must
// return them: see its doc comment.)
func TestVerifyUnreadableMiddleBatch(t *testing.T) {
	bs := memChain(3, 3)
	bs[1] = Batch{Commit: bs[1].Commit, Seq: bs[1].Seq, Seal: bs[1].Seal, Err: errors.New("events.jsonl unreadable")}
	rep, err := Verify(context.Background(), memSource{batches: bs}, "w", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK() || rep.Break.Kind != Unsealed || rep.Break.Seq != 4 || rep.Entries != 3 ||
		!strings.Contains(rep.Break.Detail, "entries 4-6") {
		t.Fatalf("report %+v, break %+v", rep, rep.Break)
	}
}

// A line repeated where the next entry belongs is an inserted line
// (entry-edited), although the entry it displaced follows; a line moved
// ahead of its place is a reorder.
func TestVerifyRepeatedLineIsAnEdit(t *testing.T) {
	for _, c := range []struct {
		name  string
		lines func(l [][]byte) [][]byte
		kind  Kind
		at    int64
	}{
		{"repeated", func(l [][]byte) [][]byte { return [][]byte{l[0], l[1], l[1], l[2]} }, EntryEdited, 3},
		{"swapped", func(l [][]byte) [][]byte { return [][]byte{l[0], l[2], l[1]} }, EntryReordered, 2},
	} {
		bs := memChain(1, 3)
		bs[0].Lines = c.lines(bs[0].Lines)
		rep, err := Verify(context.Background(), memSource{batches: bs}, "w", Options{})
		if err != nil {
			t.Fatal(err)
		}
		if rep.OK() || rep.Break.Kind != c.kind || rep.Break.Seq != c.at {
			t.Errorf("%s: break %+v; want %s at entry %d", c.name, rep.Break, c.kind, c.at)
		}
	}
}
