package cli

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestTakeDirFlag: -C DIR and -CDIR, each relative to the one before (an
// absolute one resets), as git takes them; a bare -C is a usage error;
// anything else is left alone.
func TestTakeDirFlag(t *testing.T) {
	e := &Env{}
	args := []string{"-C", "a", "-Cb", "-C", "/abs", "-C", "c", "mcp", "-C", "x"}
	for {
		rest, took, err := TakeDirFlag(e, args)
		if err != nil {
			t.Fatal(err)
		}
		if !took {
			break
		}
		args = rest
	}
	if want := filepath.Join("/abs", "c"); e.Dir != want || !slices.Equal(args, []string{"mcp", "-C", "x"}) {
		t.Errorf("dir %q args %q, want %q and [mcp -C x]", e.Dir, args, want)
	}
	e = &Env{Dir: "base"}
	if _, _, err := TakeDirFlag(e, []string{"-C"}); !errors.As(err, new(UsageError)) || !strings.Contains(err.Error(), "-C needs a directory") {
		t.Errorf("bare -C: %v", err)
	}
	if e.Dir != "base" {
		t.Errorf("a bare -C moved the directory to %q", e.Dir)
	}
}

// TestEnterDir: no -C is the working directory; a missing directory or a
// file is a usage error naming it.
func TestEnterDir(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	e := &Env{}
	if err := EnterDir(e); err != nil || e.Dir != wd {
		t.Errorf("EnterDir without -C: %q, %v; want %q", e.Dir, err, wd)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ dir, says string }{
		{filepath.Join(dir, "missing"), "no such file or directory"},
		{file, "not a directory"},
	} {
		err := EnterDir(&Env{Dir: c.dir})
		if !errors.As(err, new(UsageError)) || !strings.Contains(err.Error(), "cannot change to "+c.dir) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("EnterDir(%s): %v", c.dir, err)
		}
	}
	if err := EnterDir(&Env{Dir: dir}); err != nil {
		t.Errorf("EnterDir(a directory): %v", err)
	}
}
