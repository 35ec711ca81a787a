// Package gitobjtest holds the inputs the object layer's tests and the
// event log's tests share: source-like text and the deflate round-trip
// cases. Only tests import it.
package gitobjtest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
)

// StoredMax is the largest stored deflate block; MaxOffset is the deflate
// window. The inputs probe both edges.
const (
	StoredMax = 65535
	MaxOffset = 32768
)

// SourceText is a small stand-in for internal/testkit/benchdata (which imports
// gitstore, and so cannot serve gitstore's tests): distinct, source-like text of 1 to 8 KiB.
func SourceText(i int) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "// file %d\npackage p%d\n\n", i, i%7)
	size := 1024 + (i*7919)%(7*1024)
	for j := 0; b.Len() < size; j++ {
		fmt.Fprintf(&b, "func f%d_%d(x int) int {\n\treturn x*%d + %d // line %d\n}\n", i, j, j, i, j)
	}
	return []byte(b.String()[:size])
}

// DeflateInputs are the round-trip cases: the edges, and data of every
// kind the matcher treats differently.
func DeflateInputs() map[string][]byte {
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
		text.Write(SourceText(i))
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
		"random 65535":  rnd(StoredMax, 256),
		"random 65536":  rnd(StoredMax+1, 256),
		"4 letters 50k": rnd(50_000, 4),
		"text 1 MiB":    text.Bytes()[:1<<20],
		"source 1k":     SourceText(1)[:1024],
		"period 3":      bytes.Repeat([]byte("abc"), 30_000),
		"period 258":    bytes.Repeat(rnd(258, 256), 400),
		"period 32768":  bytes.Repeat(rnd(MaxOffset, 256), 3),
		"period 32769":  bytes.Repeat(rnd(MaxOffset+1, 256), 3), // just out of the window
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
