package gitstore

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-lossless/git-lossless/seal"
)

func gitInit(t *testing.T, args ...string) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("git", append([]string{"init", "-q"}, append(args, dir)...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	return dir
}

func gitRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func TestAppendReadVerifySmoke(t *testing.T) {
	dir := gitInit(t)
	s, err := OpenDir(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	contents := []string{"hello\n", "", "\xff\xfe binary \x00 data"}
	for i, c := range contents {
		res, err := s.Append(ctx, "w1", []Record{{Event: Event{Op: "read", Source: "cli", Session: "s1", Path: "f" + string(rune('a'+i))}, Content: []byte(c), HasContent: true}})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSpace(gitRun(t, dir, "cat-file", "-p", res.Events[0].Blob)); got != strings.TrimSpace(c) {
			t.Fatalf("cat-file = %q want %q", got, c)
		}
	}
	if s := BlobID([]byte("hello\n")); s != "ce013625030ba8dba906f756967f9e9ca394464a" {
		t.Fatalf("blob id %s", s)
	}
	gitRun(t, dir, "fsck", "--strict")
	evs, err := s.Events(ctx, Query{Session: "s1"})
	if err != nil || len(evs) != 3 {
		t.Fatalf("events %d %v", len(evs), err)
	}
	rep, err := s.Verify(ctx, "w1", seal.Options{})
	if err != nil || !rep.OK() || rep.Entries != 3 {
		t.Fatalf("verify %+v %v", rep, err)
	}
	// dedupe
	r1, err := s.Append(ctx, "w1", []Record{{Event: Event{Op: "read", Source: "hook", Key: "toolu_1"}}})
	if err != nil || len(r1.Events) != 1 {
		t.Fatal(r1, err)
	}
	r2, err := s.Append(ctx, "w1", []Record{{Event: Event{Op: "read", Source: "sweep", Key: "toolu_1"}}})
	if err != nil || len(r2.Events) != 0 || r2.Deduped != 1 {
		t.Fatal(r2, err)
	}
	gitRun(t, dir, "gc", "-q", "--prune=now")
	os.RemoveAll(filepath.Join(dir, ".git", "lossless", "index"))
	rep, err = s.Verify(ctx, "w1", seal.Options{})
	if err != nil || !rep.OK() || rep.Entries != 4 {
		t.Fatalf("verify after gc %+v %v", rep, err)
	}
	evs, err = s.Events(ctx, Query{})
	if err != nil || len(evs) != 4 {
		t.Fatalf("events after gc %d %v", len(evs), err)
	}
}
