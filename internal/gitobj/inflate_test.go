package gitobj

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

func zlibBytes(t testing.TB, data []byte, level int) []byte {
	var b bytes.Buffer
	zw, err := zlib.NewWriterLevel(&b, level)
	if err != nil {
		t.Fatal(err)
	}
	zw.Write(data)
	zw.Close()
	return b.Bytes()
}

// referenceInflate is compress/zlib's answer.
func referenceInflate(src []byte) ([]byte, error) {
	zr, err := zlib.NewReader(bytes.NewReader(src))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(zr)
}

func TestInflateFastMatchesZlib(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var inputs [][]byte
	inputs = append(inputs, nil, []byte("a"), bytes.Repeat([]byte("ab"), 40000), []byte("hello\n"))
	for i := range 60 {
		inputs = append(inputs, sourceText(i))
	}
	for range 20 {
		b := make([]byte, r.IntN(70000))
		for i := range b {
			b[i] = byte(r.IntN(4 + r.IntN(250)))
		}
		inputs = append(inputs, b)
	}
	levels := []int{zlib.NoCompression, zlib.BestSpeed, 2, zlib.DefaultCompression, zlib.BestCompression, zlib.HuffmanOnly}
	fast := 0
	for _, in := range inputs {
		for _, lvl := range levels {
			src := zlibBytes(t, in, lvl)
			got, ok := inflateFast(src, len(in))
			if !ok {
				continue
			}
			fast++
			if !bytes.Equal(got, in) {
				t.Fatalf("level %d, %d bytes: wrong output", lvl, len(in))
			}
			if _, ok := inflateFast(src, len(in)+1); ok {
				t.Fatalf("level %d: accepted a wrong size", lvl)
			}
			if len(in) > 0 {
				if _, ok := inflateFast(src, len(in)-1); ok {
					t.Fatalf("level %d: accepted a short size", lvl)
				}
			}
		}
	}
	if fast < len(inputs)*len(levels)*9/10 {
		t.Fatalf("fast path decoded only %d of %d streams", fast, len(inputs)*len(levels))
	}
	// Streams written by C zlib (git).
	dir := gitInit(t)
	for i := range 5 {
		content := sourceText(100 + i)
		id := ObjectID("blob", content)
		gitHashObject(t, dir, content)
		raw := readLooseRaw(t, dir, id)
		body, ok := inflateFast(raw, len(content)+len(fmt.Sprintf("blob %d\x00", len(content))))
		if !ok || !bytes.HasSuffix(body, content) {
			t.Fatalf("git-written object %s: ok=%v", id, ok)
		}
	}
}

func TestInflateFastCorruptFallsBack(t *testing.T) {
	in := sourceText(7)
	src := zlibBytes(t, in, zlib.BestSpeed)
	for i := 2; i < len(src); i += 7 {
		bad := append([]byte(nil), src...)
		bad[i] ^= 0x10
		if got, ok := inflateFast(bad, len(in)); ok && !bytes.Equal(got, in) {
			t.Fatalf("flip at %d: wrong output accepted", i)
		}
	}
	for n := 0; n < len(src); n += 13 {
		if _, ok := inflateFast(src[:n], len(in)); ok {
			t.Fatalf("truncated to %d accepted", n)
		}
	}
}

// FuzzInflateFast: whatever inflateFast accepts, compress/zlib decodes to
// the same bytes.
func FuzzInflateFast(f *testing.F) {
	for i, lvl := range []int{0, 1, 6, 9, -2} {
		f.Add(zlibBytes(f, sourceText(i)[:300+i*50], lvl))
	}
	f.Add(zlibBytes(f, nil, 6))
	f.Fuzz(func(t *testing.T, src []byte) {
		want, err := referenceInflate(src)
		size := len(want)
		if err != nil {
			size = 1000
		}
		got, ok := inflateFast(src, size)
		if !ok {
			return
		}
		if err != nil {
			t.Fatalf("accepted a stream zlib rejects (%v)", err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("output differs from zlib")
		}
	})
}

func gitHashObject(t *testing.T, dir string, content []byte) {
	t.Helper()
	cmd := exec.Command("git", "-C", dir, "hash-object", "-w", "--stdin")
	cmd.Stdin = bytes.NewReader(content)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git hash-object: %v %s", err, out)
	}
}

func readLooseRaw(t *testing.T, dir, id string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, ".git", "objects", id[:2], id[2:]))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
