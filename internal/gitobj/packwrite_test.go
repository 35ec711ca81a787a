package gitobj

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPackIndexMatchesGit: the index WritePack writes (go-git's idxfile)
// is byte for byte the one `git index-pack` computes from the pack, and
// the pack passes verify-pack and fsck.
func TestPackIndexMatchesGit(t *testing.T) {
	dir := gitInit(t)
	common := filepath.Join(dir, ".git")
	db := NewDB(common, false)
	pk := NewPackSink(nil)
	defer pk.Close()
	var tree []TreeEntry
	for i := range 300 {
		id, err := pk.Put("blob", sourceText(i))
		if err != nil {
			t.Fatal(err)
		}
		tree = append(tree, TreeEntry{Mode: "100644", Name: strings.Repeat("f", 1+i%5) + string(rune('a'+i%26)) + "-" + id[:8], ID: id})
	}
	treeID, err := pk.Put("tree", EncodeTree(tree))
	if err != nil {
		t.Fatal(err)
	}
	commit, err := pk.Put("commit", EncodeCommit(treeID, "", "t <t@t>", 1700000000, "pack\n"))
	if err != nil {
		t.Fatal(err)
	}
	name, err := db.WritePack(pk)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("git", "-C", dir, "update-ref", "refs/heads/main", commit).CombinedOutput(); err != nil {
		t.Fatalf("update-ref: %v %s", err, out)
	}
	if out, err := exec.Command("git", "-C", dir, "fsck", "--strict", "--no-dangling").CombinedOutput(); err != nil {
		t.Fatalf("fsck: %v %s", err, out)
	}
	pack := filepath.Join(common, "objects", "pack", name)
	ours, err := os.ReadFile(strings.TrimSuffix(pack, ".pack") + ".idx")
	if err != nil {
		t.Fatal(err)
	}
	theirs := filepath.Join(t.TempDir(), "git.idx")
	if out, err := exec.Command("git", "index-pack", "-o", theirs, pack).CombinedOutput(); err != nil {
		t.Fatalf("index-pack: %v %s", err, out)
	}
	want, err := os.ReadFile(theirs)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ours, want) {
		t.Fatalf("our index (%d bytes) differs from git index-pack's (%d bytes)", len(ours), len(want))
	}
	if out, err := exec.Command("git", "verify-pack", strings.TrimSuffix(pack, ".pack")+".idx").CombinedOutput(); err != nil {
		t.Fatalf("verify-pack: %v %s", err, out)
	}
	_, body, err := db.Read(treeID)
	if err != nil || !bytes.Equal(body, EncodeTree(tree)) {
		t.Fatalf("read back the tree: %v", err)
	}
}
