package gitobj

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/git-lossless/git-lossless/internal/gitobj/gitobjtest"
)

// deflateInputs are gitobjtest.DeflateInputs, whose window and block
// sizes must be this encoder's.
func deflateInputs() map[string][]byte {
	if storedMax != gitobjtest.StoredMax || fdMaxOffset != gitobjtest.MaxOffset {
		panic("gitobjtest's sizes are not the encoder's")
	}
	return gitobjtest.DeflateInputs()
}

func sourceText(i int) []byte { return gitobjtest.SourceText(i) }

// checkZlib decodes z with compress/zlib and with the store's inflateFast
// and fails unless both give want.
func checkZlib(t testing.TB, z, want []byte) {
	t.Helper()
	got, err := referenceInflate(z)
	if err != nil {
		t.Fatalf("%d bytes: compress/zlib: %v", len(want), err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%d bytes: compress/zlib decodes %d different bytes", len(want), len(got))
	}
	fast, ok := inflateFast(z, len(want))
	if !ok || !bytes.Equal(fast, want) {
		t.Fatalf("%d bytes: inflateFast refuses or differs (ok=%v)", len(want), ok)
	}
}

func TestFastDeflateRoundTrip(t *testing.T) {
	var e fastDeflater
	for name, in := range deflateInputs() {
		t.Run(name, func(t *testing.T) {
			z := e.appendZlib(nil, in)
			checkZlib(t, z, in)
			if len(z) > zlibBound(len(in))-16 {
				t.Fatalf("%d bytes out of %d, bound %d", len(z), len(in), zlibBound(len(in))-16)
			}
			// Appending keeps what dst held, and a reused encoder (its
			// table full of the stream before) encodes the same.
			prefix := []byte("pack entry header")
			z2 := e.appendZlib(append([]byte(nil), prefix...), in)
			if !bytes.HasPrefix(z2, prefix) || !bytes.Equal(z2[len(prefix):], z) {
				t.Fatal("appending to a prefix changed the stream")
			}
		})
	}
}

// TestFastDeflateKnownBytes pins a few streams to what RFC 1950/1951
// prescribe, independently of the decoders.
func TestFastDeflateKnownBytes(t *testing.T) {
	var e fastDeflater
	for _, c := range []struct {
		in   string
		want []byte
	}{
		// Empty: a final fixed block holding only end-of-block (as zlib
		// writes it), then adler32(“”) = 1.
		{"", []byte{0x78, 0x01, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01}},
		// "a": literal 0x61 is 8 bits 0x30+0x61.
		{"a", []byte{0x78, 0x01, 0x4b, 0x04, 0x00, 0x00, 0x62, 0x00, 0x62}},
	} {
		if got := e.appendZlib(nil, []byte(c.in)); !bytes.Equal(got, c.want) {
			t.Errorf("%q: % x, want % x", c.in, got, c.want)
		}
	}
}

func TestDistCode(t *testing.T) {
	for d := 1; d <= fdMaxOffset; d++ {
		c := distCode(d)
		lo := int(dstBase[c])
		hi := lo + 1<<dstExtra[c]
		if d < lo || d >= hi {
			t.Fatalf("distance %d: code %d covers [%d, %d)", d, c, lo, hi)
		}
	}
}

// FuzzDeflate round-trips arbitrary input through the encoder, alone and
// after another stream on the same encoder (whose hash table then holds
// stale positions), against compress/zlib and inflateFast. Its seeds are
// in testdata/fuzz/FuzzDeflate; run it with
//
//	go test -run '^$' -fuzz FuzzDeflate ./internal/gitobj/
func FuzzDeflate(f *testing.F) {
	seeds, err := os.ReadDir(filepath.Join("testdata", "fuzz", "FuzzDeflate"))
	if err != nil || len(seeds) == 0 {
		f.Fatalf("no seed corpus in testdata/fuzz/FuzzDeflate (%v)", err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var e fastDeflater
		checkZlib(t, e.appendZlib(nil, data), data)
		// Again, after half of it: positions of the earlier stream must
		// not be taken for this one's.
		half := data[:len(data)/2]
		checkZlib(t, e.appendZlib(nil, half), half)
		z := e.appendZlib([]byte{1, 2, 3}, data)
		checkZlib(t, z[3:], data)
		if len(z)-3 > zlibBound(len(data))-16 {
			t.Fatalf("%d bytes in, %d out: past the bound %d", len(data), len(z)-3, zlibBound(len(data))-16)
		}
	})
}

// TestFastDeflateMultiBlock covers inputs of several blocks of every kind:
// blocks end at fdBlockTokens tokens, so text over about 100 KiB, random
// data over 32 KiB and mixtures of both switch encodings mid-stream.
func TestFastDeflateMultiBlock(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var mixed []byte
	for i := 0; len(mixed) < 600_000; i++ {
		switch i % 3 {
		case 0:
			mixed = append(mixed, sourceText(i)...)
		case 1:
			b := make([]byte, r.IntN(40_000))
			for j := range b {
				b[j] = byte(r.Uint32())
			}
			mixed = append(mixed, b...)
		default:
			mixed = append(mixed, bytes.Repeat([]byte{byte(i)}, r.IntN(20_000))...)
		}
	}
	var e fastDeflater
	for _, n := range []int{fdBlockTokens - 1, fdBlockTokens, fdBlockTokens + 1, 3*fdBlockTokens + 17, len(mixed)} {
		in := mixed[:n]
		checkZlib(t, e.appendZlib(nil, in), in)
	}
}
