package seal

import (
	"context"
	"testing"
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
	if id := gitBlobID([]byte("hello\n")); id != "ce013625030ba8dba906f756967f9e9ca394464a" {
		t.Fatalf("blob id %s", id)
	}
}
