package gitobj

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// gitBatch returns every object git can read in dir (its own and its
// alternates'), with type, size and content, as `git cat-file --batch`
// prints them.
func gitBatch(t *testing.T, dir string) map[string]struct {
	typ  string
	body []byte
} {
	t.Helper()
	ids := strings.Fields(gitIn(t, dir, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)"))
	cmd := exec.Command("git", "-C", dir, "cat-file", "--batch")
	cmd.Stdin = strings.NewReader(strings.Join(ids, "\n") + "\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git cat-file --batch: %v", err)
	}
	res := map[string]struct {
		typ  string
		body []byte
	}{}
	r := bufio.NewReader(bytes.NewReader(out))
	for range ids {
		hdr, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		f := strings.Fields(hdr)
		n, _ := strconv.Atoi(f[2])
		body := make([]byte, n+1)
		if _, err := io.ReadFull(r, body); err != nil {
			t.Fatal(err)
		}
		res[f[0]] = struct {
			typ  string
			body []byte
		}{f[1], body[:n]}
	}
	return res
}

// commitFiles makes n commits in dir, each adding a file.
func commitFiles(t *testing.T, dir, prefix string, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		body := strings.Repeat(fmt.Sprintf("%s line %d\n", prefix, i), 20+i)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-%d.txt", prefix, i)), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		gitIn(t, dir, "add", ".")
		gitIn(t, dir, "commit", "-q", "-m", fmt.Sprint(prefix, i))
	}
}

// TestAlternatesCloneShared: a `git clone --shared` repository holds only
// what it made itself and reads the rest through objects/info/alternates.
// Every object git reads there (packed and loose in the origin, loose in
// the clone) is read alike by the DB, with its type and its size from the
// header (Info); a DB that did not follow alternates missed the origin's.
func TestAlternatesCloneShared(t *testing.T) {
	origin := gitInit(t)
	commitFiles(t, origin, "packed", 12)
	gitIn(t, origin, "repack", "-adq")
	commitFiles(t, origin, "loose", 3)
	clone := filepath.Join(t.TempDir(), "clone")
	gitIn(t, filepath.Dir(clone), "clone", "-q", "--shared", origin, clone)
	commitFiles(t, clone, "own", 2)
	if _, err := os.Stat(filepath.Join(clone, ".git", "objects", "info", "alternates")); err != nil {
		t.Fatal("git clone --shared left no alternates file")
	}
	want := gitBatch(t, clone)
	db := NewDB(filepath.Join(clone, ".git"), false)
	fromOrigin := 0
	for id, w := range want {
		typ, body, err := db.Read(id)
		if err != nil {
			t.Fatalf("read %s: %v", id, err)
		}
		if typ != w.typ || !bytes.Equal(body, w.body) {
			t.Fatalf("%s: read %s of %d bytes, git reads %s of %d", id, typ, len(body), w.typ, len(w.body))
		}
		ityp, n, err := db.Info(id)
		if err != nil || ityp != w.typ || n != int64(len(w.body)) {
			t.Fatalf("info %s: %s %d %v, git: %s %d", id, ityp, n, err, w.typ, len(w.body))
		}
		if !db.Has(id) {
			t.Fatalf("Has(%s) = false", id)
		}
		if !db.HasOwn(id) {
			fromOrigin++
		}
	}
	if fromOrigin < 40 {
		t.Fatalf("only %d of %d objects came from the origin: the test reads too little through the alternates", fromOrigin, len(want))
	}
	if got := db.Alternates(); len(got) != 1 || got[0] != filepath.Join(origin, ".git", "objects") {
		t.Fatalf("alternates %v", got)
	}
	missing := strings.Repeat("ab", 20)
	if _, _, err := db.Read(missing); !errors.Is(err, ErrObjectMissing) {
		t.Fatalf("read of a missing object: %v", err)
	}
	if _, _, err := db.Info(missing); !errors.Is(err, ErrObjectMissing) {
		t.Fatalf("info of a missing object: %v", err)
	}
	// Writes stay in the DB's own directory.
	id, err := db.Write("blob", []byte("written here\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !db.HasOwn(id) {
		t.Fatal("a write went elsewhere")
	}
}

// TestAlternatesMatchGit holds the alternates file's parsing to git's: a
// chain of eight repositories each naming the next (git reads six levels
// and ignores the seventh's file), a comment, an empty line, a C-quoted
// path with a tab, a path with a space and a trailing slash, a relative
// path, a path with a leading space (taken as it is, so it does not
// exist), a missing directory and the repository's own directory. For
// each object, the DB finds it exactly when `git cat-file -e` does.
func TestAlternatesMatchGit(t *testing.T) {
	root := t.TempDir()
	mk := func(name, content string) (string, string) {
		dir := filepath.Join(root, name)
		gitIn(t, root, "init", "-q", "--bare", dir)
		cmd := exec.Command("git", "-C", dir, "hash-object", "-w", "--stdin")
		cmd.Stdin = strings.NewReader(content)
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		return dir, strings.TrimSpace(string(out))
	}
	var ids []string
	var dirs []string
	for i := 0; i < 9; i++ {
		d, id := mk(fmt.Sprintf("chain%d", i), fmt.Sprintf("object of level %d\n", i))
		dirs, ids = append(dirs, d), append(ids, id)
	}
	for i := 0; i < 8; i++ {
		rel := filepath.Join("..", "..", filepath.Base(dirs[i+1]), "objects")
		if err := os.WriteFile(filepath.Join(dirs[i], "objects", "info", "alternates"), []byte(rel+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tab, tabID := mk("t\tab", "behind a quoted path\n")
	space, spaceID := mk("sp ace", "behind a path with a space\n")
	lead, leadID := mk("lead", "behind a leading space\n")
	_ = tab
	main := dirs[0]
	extra := "# a comment\n\n" +
		`"` + strings.ReplaceAll(filepath.Join(root, "t\tab", "objects"), "\t", `\t`) + `"` + "\n" +
		filepath.Join(space, "objects") + "/\n" +
		" " + filepath.Join(lead, "objects") + "\n" +
		filepath.Join(root, "missing", "objects") + "\n" +
		filepath.Join(main, "objects") + "\n"
	f := filepath.Join(main, "objects", "info", "alternates")
	old, _ := os.ReadFile(f)
	if err := os.WriteFile(f, append(old, extra...), 0o600); err != nil {
		t.Fatal(err)
	}
	db := NewDB(main, false)
	for _, id := range append(ids, tabID, spaceID, leadID) {
		cmd := exec.Command("git", "-C", main, "cat-file", "-e", id)
		gitHas := cmd.Run() == nil
		if got := db.Has(id); got != gitHas {
			t.Errorf("%s: Has = %v, git cat-file -e: %v", id, got, gitHas)
		}
		_, _, err := db.Read(id)
		if (err == nil) != gitHas {
			t.Errorf("%s: read error %v, git has it: %v", id, err, gitHas)
		}
	}
	// The expectations themselves, so that a change in git shows.
	for i, id := range ids {
		if want := i <= 6; db.Has(id) != want {
			t.Errorf("chain level %d: readable %v, want %v", i, !want, want)
		}
	}
	if !db.Has(tabID) || !db.Has(spaceID) || db.Has(leadID) {
		t.Errorf("quoted %v, space %v, leading space %v: want true, true, false", db.Has(tabID), db.Has(spaceID), db.Has(leadID))
	}
}

// TestParseAlternates: comments, empty lines, quoting.
func TestParseAlternates(t *testing.T) {
	in := "# c\n\n/a/b\n\"/q/\\tx\\\"y\\\\z\\101\"\nrel/dir\n\"unterminated\n \n"
	got := ParseAlternates([]byte(in))
	want := []string{"/a/b", "/q/\tx\"y\\zA", "rel/dir", "\"unterminated", " "}
	if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// TestInfoMatchesGit: the header-only type and size of every object of a
// pack with deltas (ofs and ref deltas, through both index versions) and
// of loose objects are git's.
func TestInfoMatchesGit(t *testing.T) {
	for _, v := range []int{1, 2} {
		dir, ids := packedRepo(t, v)
		commitFiles(t, dir, "loose", 2)
		db := NewDB(filepath.Join(dir, ".git"), false)
		out := gitIn(t, dir, "cat-file", "--batch-all-objects", "--batch-check=%(objectname) %(objecttype) %(objectsize)")
		n := 0
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			f := strings.Fields(l)
			size, _ := strconv.ParseInt(f[2], 10, 64)
			typ, got, err := db.Info(f[0])
			if err != nil || typ != f[1] || got != size {
				t.Fatalf("index v%d: %s: info %s %d %v, git %s %d", v, f[0], typ, got, err, f[1], size)
			}
			n++
		}
		if n < len(ids) {
			t.Fatalf("%d objects checked, %d packed", n, len(ids))
		}
	}
}

// TestForEachOwnAndMove: ForEachOwn names every object of the directory
// (git's list, alternates left out), and MoveOwnTo moves them all into
// another repository, after which git reads each there and fsck is clean.
func TestForEachOwnAndMove(t *testing.T) {
	src := gitInit(t)
	commitFiles(t, src, "p", 5)
	gitIn(t, src, "repack", "-adq")
	commitFiles(t, src, "l", 3)
	want := strings.Fields(gitIn(t, src, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)"))
	db := NewDB(filepath.Join(src, ".git"), false)
	got := map[string]bool{}
	if err := db.ForEachOwn(func(id string) error { got[id] = true; return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("ForEachOwn named %d objects, git lists %d", len(got), len(want))
	}
	for _, id := range want {
		if !got[id] {
			t.Fatalf("ForEachOwn missed %s", id)
		}
	}
	dst := gitInit(t, "--bare")
	ddb := NewDB(dst, true)
	if err := db.MoveOwnTo(ddb); err != nil {
		t.Fatal(err)
	}
	head := strings.TrimSpace(gitIn(t, src, "rev-parse", "HEAD"))
	gitIn(t, dst, "update-ref", "refs/heads/main", head)
	gitIn(t, dst, "fsck", "--strict", "--no-dangling")
	for _, id := range want {
		gitIn(t, dst, "cat-file", "-e", id)
		if !ddb.HasOwn(id) {
			t.Fatalf("%s not in the destination's own directory", id)
		}
	}
	if err := NewReadOnlyDB(src).MoveOwnTo(NewReadOnlyDB(dst)); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("move into a read-only DB: %v", err)
	}
}

// TestUpdatePacked: a batch of creations, moves and deletions becomes one
// packed-refs rewrite that git reads back exactly (show-ref, with the
// peeled line of an annotated tag), loose files of updated refs gone; a
// ref not at its expected value is refused alone; git pack-refs and fsck
// are happy with the result.
func TestUpdatePacked(t *testing.T) {
	dir := gitInit(t)
	commitFiles(t, dir, "c", 3)
	c0 := strings.TrimSpace(gitIn(t, dir, "rev-parse", "HEAD~2"))
	c1 := strings.TrimSpace(gitIn(t, dir, "rev-parse", "HEAD~1"))
	c2 := strings.TrimSpace(gitIn(t, dir, "rev-parse", "HEAD"))
	gitIn(t, dir, "tag", "-a", "-m", "a tag", "t1", c1)
	tag := strings.TrimSpace(gitIn(t, dir, "rev-parse", "refs/tags/t1"))
	gitIn(t, dir, "update-ref", "refs/x/loose", c0)
	gitIn(t, dir, "update-ref", "refs/x/packed", c0)
	gitIn(t, dir, "update-ref", "refs/x/gone-packed", c0)
	gitIn(t, dir, "update-ref", "refs/x/other", c0)
	gitIn(t, dir, "pack-refs", "--all")
	gitIn(t, dir, "update-ref", "refs/x/loose", c1) // loose over packed
	gitIn(t, dir, "update-ref", "refs/x/gone-loose", c0)
	gitDir := filepath.Join(dir, ".git")
	r := NewRefs(gitDir, true, 0, nil)
	peel := func(id string) string {
		if id == tag {
			return c1
		}
		return ""
	}
	ups := []RefUpdate{
		{Name: "refs/x/new", New: c2},
		{Name: "refs/x/new-tag", New: tag},
		{Name: "refs/x/loose", Old: c1, New: c2},
		{Name: "refs/x/packed", Old: c0, New: c1},
		{Name: "refs/x/gone-packed", Old: c0},
		{Name: "refs/x/gone-loose", Old: c0},
		{Name: "refs/x/other", Old: c1, New: c2}, // it is at c0: refused
	}
	res, err := r.UpdatePacked(context.Background(), ups, peel)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range res {
		if (e != nil) != (ups[i].Name == "refs/x/other") {
			t.Fatalf("%s: %v", ups[i].Name, e)
		}
	}
	if !errors.Is(res[6], ErrRefChanged) {
		t.Fatalf("refused update: %v", res[6])
	}
	got := gitIn(t, dir, "show-ref", "-d")
	want := map[string]string{
		"refs/x/new": c2, "refs/x/new-tag": tag, "refs/x/new-tag^{}": c1,
		"refs/x/loose": c2, "refs/x/packed": c1, "refs/x/other": c0,
	}
	for name, id := range want {
		if !strings.Contains(got, id+" "+name+"\n") {
			t.Errorf("git show-ref -d lacks %s %s:\n%s", id, name, got)
		}
	}
	if strings.Contains(got, "gone-") {
		t.Errorf("deleted refs still shown:\n%s", got)
	}
	if _, err := os.Stat(filepath.Join(gitDir, "refs", "x", "loose")); err == nil {
		t.Error("the loose file of an updated ref is left")
	}
	packed, _ := os.ReadFile(filepath.Join(gitDir, "packed-refs"))
	if !bytes.HasPrefix(packed, []byte("# pack-refs with: peeled fully-peeled sorted \n")) || !bytes.Contains(packed, []byte(tag+" refs/x/new-tag\n^"+c1+"\n")) {
		t.Errorf("packed-refs:\n%s", packed)
	}
	gitIn(t, dir, "pack-refs", "--all")
	gitIn(t, dir, "fsck", "--strict", "--no-dangling")
	if _, err := r.View(nil, nil).UpdatePacked(context.Background(), ups[:1], peel); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("update through a view: %v", err)
	}
}

// TestRefsView: a view reads the refs it covers from its overlay (absent
// ones absent), the rest from the files, and refuses every update.
func TestRefsView(t *testing.T) {
	dir := gitInit(t)
	commitFiles(t, dir, "c", 2)
	c0 := strings.TrimSpace(gitIn(t, dir, "rev-parse", "HEAD~1"))
	c1 := strings.TrimSpace(gitIn(t, dir, "rev-parse", "HEAD"))
	gitIn(t, dir, "update-ref", "refs/t/a", c0)
	gitIn(t, dir, "update-ref", "refs/t/gone", c0)
	gitIn(t, dir, "update-ref", "refs/u/kept", c0)
	r := NewRefs(filepath.Join(dir, ".git"), false, 0, nil)
	v := r.View(func(n string) bool { return strings.HasPrefix(n, "refs/t/") }, map[string]string{"refs/t/a": c1, "refs/t/new": c1})
	list, err := v.List("refs/")
	if err != nil {
		t.Fatal(err)
	}
	head := strings.TrimSpace(gitIn(t, dir, "symbolic-ref", "HEAD"))
	want := map[string]string{"refs/t/a": c1, "refs/t/new": c1, "refs/u/kept": c0, head: c1}
	if fmt.Sprint(list) != fmt.Sprint(want) {
		t.Fatalf("view lists %v, want %v", list, want)
	}
	if g, _ := v.Read("refs/t/gone"); g != "" {
		t.Fatalf("a covered ref missing from the overlay reads %q", g)
	}
	if _, err := v.Acquire(context.Background(), "refs/u/kept"); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("acquire through a view: %v", err)
	}
	if g, _ := r.Read("refs/t/a"); g != c0 {
		t.Fatal("the view changed the refs")
	}
}

// TestPackedRefsCache: packed-refs parsed once is read again as soon as
// git replaces it (pack-refs, a deletion), even at the same size.
func TestPackedRefsCache(t *testing.T) {
	dir := gitInit(t)
	commitFiles(t, dir, "c", 2)
	c0 := strings.TrimSpace(gitIn(t, dir, "rev-parse", "HEAD~1"))
	c1 := strings.TrimSpace(gitIn(t, dir, "rev-parse", "HEAD"))
	gitIn(t, dir, "update-ref", "refs/p/a", c0)
	gitIn(t, dir, "update-ref", "refs/p/b", c0)
	gitIn(t, dir, "pack-refs", "--all")
	r := NewRefs(filepath.Join(dir, ".git"), false, 0, nil)
	if v, _ := r.Read("refs/p/a"); v != c0 {
		t.Fatalf("read %q", v)
	}
	// Same names, another id: packed-refs keeps its size.
	gitIn(t, dir, "update-ref", "refs/p/a", c1)
	gitIn(t, dir, "pack-refs", "--all")
	if v, _ := r.Read("refs/p/a"); v != c1 {
		t.Fatalf("after git pack-refs: %q, want %q", v, c1)
	}
	gitIn(t, dir, "update-ref", "-d", "refs/p/b")
	if l, _ := r.List("refs/p/"); len(l) != 1 || l["refs/p/a"] != c1 {
		t.Fatalf("after git update-ref -d: %v", l)
	}
	// Callers may change what Packed returns without harm.
	m, _ := r.Packed()
	m["refs/p/a"] = "x"
	if v, _ := r.Read("refs/p/a"); v != c1 {
		t.Fatalf("the cache was changed through Packed: %q", v)
	}
}
