package gitobj

import (
	"bytes"
	"math/rand"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
)

// TestApplyDeltaMatchesGoGit applies deltas go-git computes between
// related versions (large ones too: past go-git's 64 KiB reserve) and
// checks the result byte for byte against the target and go-git's own
// patch; and refuses deltas that are cut, point outside the base, or
// claim a huge result they do not hold.
func TestApplyDeltaMatchesGoGit(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	obj := func(b []byte) plumbing.EncodedObject {
		o := &plumbing.MemoryObject{}
		o.SetType(plumbing.BlobObject)
		o.Write(b)
		return o
	}
	for n := 0; n < 100; n++ {
		base := make([]byte, 1+rng.Intn(300_000))
		for i := range base {
			base[i] = byte('a' + rng.Intn(8))
		}
		target := append([]byte(nil), base...)
		for k := rng.Intn(20); k > 0 && len(target) > 0; k-- {
			at := rng.Intn(len(target))
			ins := bytes.Repeat([]byte{byte('A' + rng.Intn(26))}, rng.Intn(300))
			cut := min(len(target)-at, rng.Intn(500))
			target = append(target[:at], append(ins, target[at+cut:]...)...)
		}
		d, err := packfile.GetDelta(obj(base), obj(target))
		if err != nil {
			t.Fatal(err)
		}
		r, _ := d.Reader()
		var delta bytes.Buffer
		delta.ReadFrom(r)
		got, err := applyDelta(base, delta.Bytes())
		if err != nil || !bytes.Equal(got, target) {
			t.Fatalf("case %d: %v, or the result differs from the target", n, err)
		}
		if want, err := packfile.PatchDelta(base, delta.Bytes()); err != nil || !bytes.Equal(want, got) {
			t.Fatalf("case %d: go-git's patch differs (%v)", n, err)
		}
		if _, err := applyDelta(base, delta.Bytes()[:delta.Len()-1]); err == nil {
			t.Fatalf("case %d: a cut delta applied", n)
		}
		if _, err := applyDelta(base[:len(base)-1], delta.Bytes()); err == nil {
			t.Fatalf("case %d: a delta applied to a base of the wrong size", n)
		}
	}
	// A copy beyond the base.
	if _, err := applyDelta([]byte("abcd"), []byte{4, 8, 0x80 | 0x01 | 0x10, 2, 6}); err == nil {
		t.Fatal("a copy outside the base applied")
	}
	// A delta claiming a 1 TB result, holding one byte: refused without
	// reserving the claim.
	if _, err := applyDelta([]byte("abcd"), []byte{4, 0x80, 0x80, 0x80, 0x80, 0x80, 0x20, 1, 'x'}); err == nil {
		t.Fatal("a delta that does not make the size it claims applied")
	}
}
