package gitstore

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// deflateInputs are the round-trip cases: the edges, and data of every
// kind the matcher treats differently.
func deflateInputs() map[string][]byte {
	r := rand.New(rand.NewPCG(7, 11))
	rnd := func(n, alphabet int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.IntN(alphabet))
		}
		return b
	}
	var text bytes.Buffer
	for i := 0; text.Len() < 1<<20; i++ {
		text.Write(sourceText(i))
	}
	in := map[string][]byte{
		"empty":         {},
		"nil":           nil,
		"1 byte":        {'x'},
		"2 bytes":       {0, 0},
		"7 bytes":       []byte("abcabca"),
		"8 bytes":       []byte("abcdabcd"),
		"9 bytes":       []byte("aaaaaaaaa"),
		"16 same":       bytes.Repeat([]byte{'z'}, 16),
		"all same 100k": bytes.Repeat([]byte{0}, 100_000),
		"all 0xff 70k":  bytes.Repeat([]byte{0xff}, 70_000),
		"random 1k":     rnd(1<<10, 256),
		"random 100k":   rnd(100_000, 256), // stored, over two blocks
		"random 65535":  rnd(storedMax, 256),
		"random 65536":  rnd(storedMax+1, 256),
		"4 letters 50k": rnd(50_000, 4),
		"text 1 MiB":    text.Bytes()[:1<<20],
		"source 1k":     sourceText(1)[:1024],
		"period 3":      bytes.Repeat([]byte("abc"), 30_000),
		"period 258":    bytes.Repeat(rnd(258, 256), 400),
		"period 32768":  bytes.Repeat(rnd(fdMaxOffset, 256), 3),
		"period 32769":  bytes.Repeat(rnd(fdMaxOffset+1, 256), 3), // just out of the window
		"long match 1M": append(append(rnd(1000, 256), bytes.Repeat([]byte("0123456789"), 100_000)...), rnd(1000, 256)...),
		"match at end":  append(rnd(5000, 256), []byte("hello world, hello world")...),
		"high literals": rnd(3000, 128),
		"json-ish":      bytes.Repeat([]byte(`{"type":"text","text":"hello \"world\"\n"},`), 500),
		"bytes 0..255 x": bytes.Repeat(func() []byte {
			b := make([]byte, 256)
			for i := range b {
				b[i] = byte(i)
			}
			return b
		}(), 300),
	}
	for _, n := range []int{1, 3, 4, 5, 8, 15, 16, 17, 31, 33, 255, 257, 511, 513, 4095, 8193} {
		in[fmt.Sprintf("text %d", n)] = text.Bytes()[n*7 : n*8]
		in[fmt.Sprintf("random %d", n)] = rnd(n, 256)
	}
	return in
}

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
//	go test -run '^$' -fuzz FuzzDeflate ./gitstore/
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
