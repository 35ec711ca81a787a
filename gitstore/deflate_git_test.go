package gitstore

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/internal/gitobj/gitobjtest"
)

// packContents are blob contents for the git checks: every encoding the
// pack encoder chooses (stored, fixed, dynamic, several blocks) and the
// edges.
func packContents() [][]byte {
	var out [][]byte
	for _, in := range gitobjtest.DeflateInputs() {
		out = append(out, in)
	}
	for i := range 40 {
		out = append(out, sourceText(1000+i))
	}
	return out
}

// TestFastDeflatePackWithGit writes a pack through Import, whose entries
// this encoder compressed, and has the real git check it: `git fsck
// --strict`, `git verify-pack`, and `git cat-file` giving back every blob
// byte for byte. The store's own reader (packread.go, inflate.go) must
// read them too.
func TestFastDeflatePackWithGit(t *testing.T) {
	dir := gitInit(t)
	s, err := OpenDir(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	contents := packContents()
	recs := make([]Record, len(contents))
	base := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	for i, c := range contents {
		recs[i] = Record{
			Event: Event{
				TS: base.Add(time.Duration(i) * time.Second), Op: "read", Source: "sweep", Session: "deflate",
				Path: fmt.Sprintf("data/f%d.bin", i), Tool: "Read", Key: fmt.Sprintf("k%d", i),
			},
			Content: c, HasContent: true,
		}
	}
	res, err := s.Import(context.Background(), "deflate", recs, 16)
	if err != nil {
		t.Fatal(err)
	}
	gitRun(t, dir, "fsck", "--strict", "--no-dangling")
	packs, _ := filepath.Glob(filepath.Join(dir, ".git", "objects", "pack", "*.idx"))
	if len(packs) != 1 {
		t.Fatalf("%d packs", len(packs))
	}
	gitRun(t, dir, "verify-pack", packs[0])

	// Every entry is ours: after its type and size header, a zlib stream
	// with the header 78 01.
	pack, err := os.ReadFile(strings.TrimSuffix(packs[0], ".idx") + ".pack")
	if err != nil {
		t.Fatal(err)
	}
	if n := int(binary.BigEndian.Uint32(pack[8:])); n != res.Objects {
		t.Fatalf("pack holds %d objects, Import says %d", n, res.Objects)
	}
	entries := 0
	for _, l := range strings.Split(gitRun(t, dir, "verify-pack", "-v", packs[0]), "\n") {
		f := strings.Fields(l)
		if len(f) < 5 || len(f[0]) != 40 {
			continue
		}
		off, err := strconv.Atoi(f[4])
		if err != nil {
			t.Fatalf("verify-pack line %q", l)
		}
		for pack[off]&0x80 != 0 {
			off++
		}
		if z := pack[off+1 : off+3]; z[0] != 0x78 || z[1] != 0x01 {
			t.Fatalf("%s %s: zlib header % x", f[0], f[1], z)
		}
		entries++
	}
	if entries != res.Objects {
		t.Fatalf("verify-pack lists %d objects, want %d", entries, res.Objects)
	}

	// cat-file gives back each blob exactly, and so does the store.
	cmd := exec.Command("git", "-C", dir, "cat-file", "--batch")
	var in bytes.Buffer
	for _, ev := range res.Events {
		in.WriteString(ev.Blob + "\n")
	}
	cmd.Stdin = &in
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("cat-file --batch: %v", err)
	}
	br := bufio.NewReader(bytes.NewReader(out))
	for i, ev := range res.Events {
		hdr, err := br.ReadString('\n')
		f := strings.Fields(hdr)
		if err != nil || len(f) != 3 || f[0] != ev.Blob || f[1] != "blob" {
			t.Fatalf("record %d: cat-file header %q %v", i, hdr, err)
		}
		n, _ := strconv.Atoi(f[2])
		body := make([]byte, n+1)
		if _, err := io.ReadFull(br, body); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(body[:n], contents[i]) {
			t.Fatalf("record %d: git gives %d bytes, want %d", i, n, len(contents[i]))
		}
		got, err := s.Objects().Blob(context.Background(), ev.Blob)
		if err != nil || !bytes.Equal(got, contents[i]) {
			t.Fatalf("record %d: the store reads %d bytes (%v), want %d", i, len(got), err, len(contents[i]))
		}
	}
	// `git cat-file -p`, as a user would, on a few.
	for _, i := range []int{0, len(res.Events) / 2, len(res.Events) - 1} {
		if got := gitRun(t, dir, "cat-file", "-p", res.Events[i].Blob); got != string(contents[i]) {
			t.Fatalf("cat-file -p %d: %d bytes, want %d", i, len(got), len(contents[i]))
		}
	}
}

// TestImportPrepack: a Prepack changes nothing in what Import stores (the
// same pack bytes as without it, with the same clock), a denied content
// it compressed never reaches the pack, and a closed Prepack is harmless.
func TestImportPrepack(t *testing.T) {
	clock := func() time.Time { return time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC) }
	packOf := func(t *testing.T, dir string) []byte {
		t.Helper()
		packs, _ := filepath.Glob(filepath.Join(dir, ".git", "objects", "pack", "*.pack"))
		if len(packs) != 1 {
			t.Fatalf("%d packs", len(packs))
		}
		b, err := os.ReadFile(packs[0])
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	recs := importRecords(300, "s-pre")
	for i := range recs {
		recs[i].Repo = "/src/same" // else each repository's own path
	}
	recs[7].Path = "config/.env" // denied
	secret := BlobID(recs[7].Content)

	var want []byte
	for _, mode := range []string{"none", "prepack", "closed", "partial"} {
		t.Run(mode, func(t *testing.T) {
			dir := gitInit(t)
			s, err := OpenDir(dir, Options{Now: clock})
			if err != nil {
				t.Fatal(err)
			}
			var pre *Prepack
			switch mode {
			case "prepack", "closed":
				pre = NewPrepack()
				for _, r := range recs {
					pre.Add(r.Content)
				}
				if mode == "closed" {
					pre.Close()
				}
			case "partial":
				pre = NewPrepack()
				for _, r := range recs[:100] {
					pre.Add(r.Content)
				}
			}
			res, err := s.ImportWith(context.Background(), "pre", recs, ImportOptions{BatchSize: 32, Prepack: pre})
			if pre != nil {
				pre.Close()
			}
			if err != nil {
				t.Fatal(err)
			}
			if !res.Events[7].Excluded {
				t.Fatal("denied record not excluded")
			}
			gitRun(t, dir, "fsck", "--strict", "--no-dangling")
			if out, err := exec.Command("git", "-C", dir, "cat-file", "-e", secret).CombinedOutput(); err == nil {
				t.Fatalf("denied content is in the pack: %s", out)
			}
			got := packOf(t, dir)
			if want == nil {
				want = got
			} else if !bytes.Equal(got, want) {
				t.Fatalf("pack differs from the one written without a Prepack (%d and %d bytes)", len(got), len(want))
			}
		})
	}
}
