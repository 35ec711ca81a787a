package gitstore

import (
	"os"
	"path/filepath"
	"strings"

	"context"
)

// GitInternal reports whether path names something inside a git
// directory: a file git never commits and that is no version of the
// project's files. Its config holds remote URLs with their credentials,
// its objects and refs are the archive itself; a tool that reads files
// for the model and records them as seen (the MCP server's read_file and
// restore_context, restore) must neither show nor archive it. why says
// which rule matched. Inside a git directory is:
//
//   - a path with a component git treats as ".git": ".git" in any case
//     (the file systems of macOS and Windows ignore case), with trailing
//     dots or spaces or an NTFS stream suffix (".git.", ".git::$DATA"),
//     with code points HFS+ ignores (".g\u200cit"), or the NTFS short
//     name "git~1" — the names git itself refuses in a tree;
//   - a path under the repository's git directory or common directory,
//     wherever they are (a linked worktree's live under the main
//     repository's .git/worktrees/, a --separate-git-dir anywhere);
//   - either of these after resolving symbolic links (a link in the work
//     tree to .git/config, or to a directory above it);
//   - a hard link to a file at the top of the git directory or the common
//     directory (config, config.worktree, packed-refs, ...), found by
//     device and inode when the file has more than one link.
//
// path is absolute, or relative to the work tree. A path that does not
// exist is judged by its name and by its resolved parent directory.
func (s *Store) GitInternal(ctx context.Context, path string) (why string, internal bool) {
	if !filepath.IsAbs(path) {
		base := s.loc.WorkTree
		if base == "" {
			base, _ = os.Getwd()
		}
		path = filepath.Join(base, path)
	}
	path = filepath.Clean(path)
	dirs := s.gitDirs()
	if why, ok := gitInternalName(path, dirs); ok {
		return why, true
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		// Missing: judge the name in its resolved directory.
		if d, derr := filepath.EvalSymlinks(filepath.Dir(path)); derr == nil {
			real = filepath.Join(d, filepath.Base(path))
		} else {
			real = path
		}
	}
	if real != path {
		if why, ok := gitInternalName(real, dirs); ok {
			return why + " (through a symbolic link)", true
		}
	}
	fi, err := os.Stat(real)
	if err != nil || !fi.Mode().IsRegular() || linkCount(fi) < 2 {
		return "", false
	}
	for _, d := range dirs {
		ents, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if !e.Type().IsRegular() {
				continue
			}
			if gi, err := os.Stat(filepath.Join(d, e.Name())); err == nil && os.SameFile(fi, gi) {
				return "a hard link to " + filepath.Join(d, e.Name()) + ", in the repository's git directory", true
			}
		}
	}
	return "", false
}

// gitDirs are the store's git directory and common directory, as
// recorded and with symbolic links resolved, without repeats.
func (s *Store) gitDirs() []string {
	var out []string
	add := func(d string) {
		if d == "" {
			return
		}
		d = filepath.Clean(d)
		for _, o := range out {
			if o == d {
				return
			}
		}
		out = append(out, d)
	}
	for _, d := range []string{s.loc.GitDir, s.loc.CommonDir} {
		if d == "" {
			continue
		}
		if a, err := filepath.Abs(d); err == nil {
			d = a
		}
		add(d)
		if r, err := filepath.EvalSymlinks(d); err == nil {
			add(r)
		}
	}
	return out
}

// gitInternalName judges a clean absolute path by its name alone.
func gitInternalName(path string, dirs []string) (string, bool) {
	for _, d := range dirs {
		if path == d || strings.HasPrefix(path, d+string(filepath.Separator)) {
			return "inside the repository's git directory " + d, true
		}
	}
	for _, c := range strings.FieldsFunc(path, func(r rune) bool { return r == '/' || r == filepath.Separator }) {
		if isDotGit(c) {
			return "a path through " + c + ", a git directory", true
		}
	}
	return "", false
}

// isDotGit reports whether a path component is one git treats as its
// ".git" directory on some file system (git's verify_path refuses each in
// a tree, with core.protectNTFS and core.protectHFS): ".git" in any case,
// with trailing dots and spaces or an NTFS alternate stream suffix, with
// code points HFS+ ignores, and the NTFS 8.3 short name "git~1".
// Over-matching only refuses a strangely named file.
func isDotGit(name string) bool {
	n := strings.Map(func(r rune) rune {
		if hfsIgnorable(r) {
			return -1
		}
		return r
	}, name)
	if i := strings.IndexByte(n, ':'); i >= 0 {
		n = n[:i]
	}
	n = strings.TrimRight(n, ". ")
	return strings.EqualFold(n, ".git") || strings.EqualFold(n, "git~1")
}

// hfsIgnorable: the code points HFS+ drops when it compares names (git's
// list in utf8.c, is_hfs_dot_generic).
func hfsIgnorable(r rune) bool {
	switch {
	case r >= 0x200c && r <= 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x206a && r <= 0x206f, r == 0xfeff:
		return true
	}
	return false
}
