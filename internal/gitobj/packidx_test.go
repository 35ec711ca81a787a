package gitobj

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// packedRepo makes a repository whose objects are all in one pack with
// an index of the given version, deltas included (one file grown over
// twenty commits), and returns it with every object's id.
func packedRepo(t *testing.T, indexVersion int) (string, []string) {
	t.Helper()
	dir := gitInit(t)
	var body strings.Builder
	for i := range 20 {
		fmt.Fprintf(&body, "line %d of a file that grows, so that git stores it as deltas\n", i)
		if err := os.WriteFile(filepath.Join(dir, "f.txt"), []byte(body.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		gitIn(t, dir, "add", "f.txt")
		gitIn(t, dir, "commit", "-q", "-m", fmt.Sprint("c", i))
	}
	gitIn(t, dir, "-c", fmt.Sprint("pack.indexVersion=", indexVersion), "repack", "-adq")
	gitIn(t, dir, "prune-packed")
	idx, _ := filepath.Glob(filepath.Join(dir, ".git", "objects", "pack", "*.idx"))
	if len(idx) != 1 {
		t.Fatalf("%d pack indexes, want 1", len(idx))
	}
	raw, err := os.ReadFile(idx[0])
	if err != nil {
		t.Fatal(err)
	}
	if v2 := bytes.HasPrefix(raw, []byte("\xfftOc")); v2 != (indexVersion == 2) {
		t.Fatalf("git wrote an index of the wrong version (v2 magic present: %v)", v2)
	}
	ids := strings.Fields(gitIn(t, dir, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)"))
	if len(ids) < 60 {
		t.Fatalf("%d objects, want at least 60", len(ids))
	}
	if !strings.Contains(gitIn(t, dir, "verify-pack", "-v", idx[0]), "chain length") {
		t.Fatal("the pack holds no deltas: the test would not read any")
	}
	return dir, ids
}

// TestPackIndexVersions reads every object of packs indexed by git in
// version 1 (pack.indexVersion=1) and version 2 through the native reader,
// and compares each with `git cat-file`.
func TestPackIndexVersions(t *testing.T) {
	for _, v := range []int{1, 2} {
		t.Run(fmt.Sprint("v", v), func(t *testing.T) {
			dir, ids := packedRepo(t, v)
			db := NewDB(filepath.Join(dir, ".git"), false)
			for _, id := range ids {
				typ, body, err := db.Read(id)
				if err != nil {
					t.Fatalf("read %s: %v", id, err)
				}
				if want := strings.TrimSpace(gitIn(t, dir, "cat-file", "-t", id)); typ != want {
					t.Fatalf("%s: type %s, git says %s", id, typ, want)
				}
				if ObjectID(typ, body) != id {
					t.Fatalf("%s: body hashes to %s", id, ObjectID(typ, body))
				}
				if !db.HasPacked(id) {
					t.Fatalf("HasPacked(%s) = false", id)
				}
			}
		})
	}
}

// TestPackIndexMalformed: a pack whose index is damaged is skipped, as git
// skips it, and a read of one of its objects is ErrObjectMissing naming
// the index; nothing panics, whatever the damage.
func TestPackIndexMalformed(t *testing.T) {
	dir, ids := packedRepo(t, 2)
	idx, _ := filepath.Glob(filepath.Join(dir, ".git", "objects", "pack", "*.idx"))
	good, err := os.ReadFile(idx[0])
	if err != nil {
		t.Fatal(err)
	}
	damages := map[string][]byte{
		"truncated":       good[:len(good)/2],
		"empty":           {},
		"unknown version": append([]byte("\xfftOc\x00\x00\x00\x07"), good[8:]...),
		"v1 of bad size":  good[8 : 8+1024+24],
		"extra bytes":     append(append([]byte{}, good...), 1, 2, 3),
	}
	for name, bad := range damages {
		t.Run(name, func(t *testing.T) {
			if err := os.WriteFile(idx[0], bad, 0o600); err != nil {
				t.Fatal(err)
			}
			db := NewDB(filepath.Join(dir, ".git"), false)
			_, _, err := db.Read(ids[0])
			if !errors.Is(err, ErrObjectMissing) || !strings.Contains(err.Error(), filepath.Base(idx[0])) {
				t.Fatalf("read with a %s index: %v, want ErrObjectMissing naming %s", name, err, filepath.Base(idx[0]))
			}
			if db.HasPacked(ids[0]) {
				t.Fatal("HasPacked answered yes from a damaged index")
			}
		})
	}
}
