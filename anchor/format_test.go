package anchor

import (
	"bytes"
	"crypto/sha256"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"
)

var updateVectors = flag.Bool("update-vectors", false, "rewrite anchor/testdata vectors from the code")

// seededReader is a deterministic byte stream (sha256 in counter mode) so
// the golden key is derived, not pasted.
type seededReader struct {
	seed []byte
	n    uint64
	buf  []byte
}

func (r *seededReader) Read(p []byte) (int, error) {
	for len(r.buf) < len(p) {
		h := sha256.Sum256(append(append([]byte(nil), r.seed...), byte(r.n), byte(r.n>>8)))
		r.n++
		r.buf = append(r.buf, h[:]...)
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

// goldenKey is the made-up key of the vectors: derived from a fixed seed.
func goldenKey(t *testing.T) (note.Signer, string) {
	t.Helper()
	skey, vkey, err := note.GenerateKey(&seededReader{seed: []byte("git-lossless golden anchor key")}, "golden-laptop")
	if err != nil {
		t.Fatal(err)
	}
	s, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	return s, vkey
}

// goldenCheckpoints are two consecutive checkpoints of one clone.
func goldenCheckpoints(t *testing.T) (first, second []byte, vkey string) {
	t.Helper()
	signer, vkey := goldenKey(t)
	c1 := &Checkpoint{Machine: "golden-laptop", Clone: "0a1b2c3d", N: 1, Time: time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC),
		Writers: []WriterHead{
			{Name: "cc-9e33e208-2b1c-4064-b54f-efdf0f79781b", Entries: 42, Seal: strings.Repeat("ab", 32), Commit: strings.Repeat("1f", 20)},
			{Name: "cli", Entries: 3, Seal: strings.Repeat("cd", 32), Commit: strings.Repeat("2e", 20)},
		}}
	first, err := Sign(c1, signer)
	if err != nil {
		t.Fatal(err)
	}
	c2 := &Checkpoint{Machine: "golden-laptop", Clone: "0a1b2c3d", N: 2, Time: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), Prev: Digest(first),
		Writers: []WriterHead{
			{Name: "cc-9e33e208-2b1c-4064-b54f-efdf0f79781b", Entries: 57, Seal: strings.Repeat("ef", 32), Commit: strings.Repeat("3d", 20)},
			{Name: "cli", Entries: 3, Seal: strings.Repeat("cd", 32), Commit: strings.Repeat("2e", 20)},
		},
		Notes: []NotesHead{{Name: "receipts-0C2039AD402A5806", Commit: strings.Repeat("4c", 20)}}}
	second, err = Sign(c2, signer)
	if err != nil {
		t.Fatal(err)
	}
	return first, second, vkey
}

func vector(t *testing.T, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *updateVectors {
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run with -update-vectors to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs from the code:\n--- file\n%s--- code\n%s", name, want, got)
	}
}

// TestFormatVectors: the code signs exactly the documented bytes; the
// second checkpoint names the first's digest; both open with the public
// key, and parse back to what was signed.
func TestFormatVectors(t *testing.T) {
	first, second, vkey := goldenCheckpoints(t)
	vector(t, "checkpoint-1.txt", first)
	vector(t, "checkpoint-2.txt", second)
	vector(t, "key.pub", []byte(vkey+"\n"))
	v, err := ParseVerifierKey(vkey)
	if err != nil {
		t.Fatal(err)
	}
	c1, err := OpenSigned(first, v)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := OpenSigned(second, v)
	if err != nil {
		t.Fatal(err)
	}
	if c2.Prev != Digest(first) || c2.N != c1.N+1 || monotone(c1, c2) != "" {
		t.Fatalf("the second checkpoint does not follow the first: %+v", c2)
	}
	for i, b := range [][]byte{first, second} {
		c, _ := ParseText(noteText(b))
		text, err := c.Text()
		if err != nil || text != noteText(b) {
			t.Fatalf("checkpoint %d does not round-trip: %v\n%s", i+1, err, text)
		}
	}
}

// TestFormatDocQuotesVectors: FORMAT.md quotes every vector as it is.
func TestFormatDocQuotesVectors(t *testing.T) {
	doc, err := os.ReadFile("FORMAT.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"checkpoint-1.txt", "checkpoint-2.txt", "key.pub", "verify-checkpoint.sh", "verify-checkpoint.out"} {
		body, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		marker := "<!-- vector: " + name + " -->\n```"
		i := bytes.Index(doc, []byte(marker))
		if i < 0 {
			t.Fatalf("FORMAT.md does not quote %s", name)
		}
		rest := doc[i+len(marker):]
		rest = rest[bytes.IndexByte(rest, '\n')+1:]
		end := bytes.Index(rest, []byte("```"))
		if end < 0 || !bytes.Equal(rest[:end], body) {
			t.Fatalf("FORMAT.md's %s block differs from testdata/%s", name, name)
		}
	}
}

// TestFormatShellRecipe: the recipe (openssl, base64, sed) verifies the
// vector's signature, and refuses it after one byte of the text changes.
func TestFormatShellRecipe(t *testing.T) {
	for _, tool := range []string{"bash", "openssl", "base64", "sed", "head", "tail", "xxd"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s not found", tool)
			}
			t.Skipf("%s not found", tool)
		}
	}
	run := func(dir string) (string, error) {
		cmd := exec.Command("bash", filepath.Join(mustAbs(t, "testdata"), "verify-checkpoint.sh"), "checkpoint-2.txt", "key.pub")
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	dir := t.TempDir()
	for _, f := range []string{"checkpoint-2.txt", "key.pub"} {
		b, err := os.ReadFile(filepath.Join("testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	out, err := run(dir)
	if err != nil {
		t.Fatalf("recipe on the vector: %v\n%s", err, out)
	}
	if *updateVectors {
		if err := os.WriteFile(filepath.Join("testdata", "verify-checkpoint.out"), []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(filepath.Join("testdata", "verify-checkpoint.out"))
	if err != nil {
		t.Fatal(err)
	}
	if out != string(want) {
		t.Fatalf("recipe printed\n%s\nwant\n%s", out, want)
	}
	// One byte of the text changed: the recipe fails.
	b, _ := os.ReadFile(filepath.Join(dir, "checkpoint-2.txt"))
	b = bytes.Replace(b, []byte("writer cli 3 "), []byte("writer cli 4 "), 1)
	if err := os.WriteFile(filepath.Join(dir, "checkpoint-2.txt"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := run(dir); err == nil {
		t.Fatalf("recipe accepted a changed checkpoint:\n%s", out)
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
