package gitstore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/git-lossless/git-lossless/internal/gitobj"
)

// Location says where an archive lives.
type Location struct {
	// GitDir is the repository's git dir for this work tree (for a linked
	// worktree: .git/worktrees/<name>).
	GitDir string
	// CommonDir holds objects, refs and config: where everything is
	// written, so that events recorded in a linked worktree land where C
	// git looks for refs.
	CommonDir string
	// WorkTree is the top of the work tree; empty for bare repositories
	// and the embedded archive. Paths inside it are recorded relative.
	WorkTree string
	// Embedded is true for the default archive under the user data dir.
	Embedded bool
	// Fallback explains why a repository was found but not used.
	Fallback string
}

// EmbeddedDir returns the default archive's path:
// $XDG_DATA_HOME/git-lossless/archive.git, $HOME/.local/share/... when
// XDG_DATA_HOME is unset.
func EmbeddedDir() (string, error) {
	base := os.Getenv("XDG_DATA_HOME")
	if base == "" || !filepath.IsAbs(base) {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("locate the embedded archive: %w (set XDG_DATA_HOME)", err)
		}
		base = filepath.Join(home, ".local", "share")
	}
	return filepath.Join(base, "git-lossless", "archive.git"), nil
}

// ErrNoRepository is returned by FindRepository outside any repository.
var ErrNoRepository = errors.New("not a git repository")

// Discover finds the archive for dir the way git finds a repository: from
// dir upwards, a .git directory, a .git file (submodules, linked
// worktrees) or a bare repository; GIT_DIR when set. Outside any
// repository, or in one go-git cannot write safely, the embedded archive
// is used (created on first use) and Fallback says why.
func Discover(dir string) (Location, error) {
	loc, err := FindRepository(dir)
	if err == nil {
		if why := unsupported(loc.CommonDir); why == "" {
			return loc, nil
		} else {
			emb, err := Embedded()
			if err != nil {
				return Location{}, err
			}
			emb.Fallback = fmt.Sprintf("%s %s; recording to the embedded archive %s instead", repoName(loc), why, emb.CommonDir)
			return emb, nil
		}
	}
	if !errors.Is(err, ErrNoRepository) {
		return Location{}, err
	}
	return Embedded()
}

func repoName(l Location) string {
	if l.WorkTree != "" {
		return l.WorkTree
	}
	return l.CommonDir
}

// Embedded opens (creating on first use) the embedded archive.
func Embedded() (Location, error) {
	dir, err := EmbeddedDir()
	if err != nil {
		return Location{}, err
	}
	if err := initBare(dir); err != nil {
		return Location{}, err
	}
	return Location{GitDir: dir, CommonDir: dir, Embedded: true}, nil
}

// initBare creates a minimal bare repository at dir (0700) unless one is
// there. It is built under a temporary name and renamed into place, so
// concurrent first uses never see half a repository.
func initBare(dir string) error {
	if st, err := os.Stat(filepath.Join(dir, "objects")); err == nil && st.IsDir() {
		return nil
	}
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", parent, err)
	}
	tmp, err := os.MkdirTemp(parent, ".archive-init-")
	if err != nil {
		return fmt.Errorf("create embedded archive: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o700); err != nil {
		return err
	}
	for _, d := range []string{"objects/info", "objects/pack", "refs/heads", "refs/tags", "refs/lossless"} {
		if err := os.MkdirAll(filepath.Join(tmp, d), 0o700); err != nil {
			return fmt.Errorf("create embedded archive: %w", err)
		}
	}
	files := map[string]string{
		"HEAD":        "ref: refs/heads/main\n",
		"config":      "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = true\n",
		"description": "git-lossless embedded archive: what AI coding agents saw outside any repository\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(tmp, name), []byte(body), 0o600); err != nil {
			return fmt.Errorf("create embedded archive: %w", err)
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		if st, err2 := os.Stat(filepath.Join(dir, "objects")); err2 == nil && st.IsDir() {
			return nil // another process created it first
		}
		return fmt.Errorf("create embedded archive %s: %w", dir, err)
	}
	return nil
}

// FindRepository walks up from dir to the repository that contains it.
func FindRepository(dir string) (Location, error) {
	if gd := os.Getenv("GIT_DIR"); gd != "" {
		if !filepath.IsAbs(gd) {
			gd = filepath.Join(dir, gd)
		}
		loc, err := fromGitDir(gd, os.Getenv("GIT_WORK_TREE"))
		if err != nil {
			return Location{}, fmt.Errorf("GIT_DIR=%s: %w", gd, err)
		}
		return loc, nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Location{}, err
	}
	if _, err := os.Stat(abs); err != nil {
		return Location{}, fmt.Errorf("cannot use %s: %w", dir, err)
	}
	for d := abs; ; {
		dotgit := filepath.Join(d, ".git")
		st, err := os.Stat(dotgit)
		switch {
		case err == nil && st.IsDir():
			if isGitDir(dotgit) {
				return fromGitDir(dotgit, d)
			}
		case err == nil:
			gd, err := readGitFile(dotgit)
			if err != nil {
				return Location{}, err
			}
			return fromGitDir(gd, d)
		}
		if isGitDir(d) && isBare(d) {
			return fromGitDir(d, "")
		}
		up := filepath.Dir(d)
		if up == d {
			return Location{}, fmt.Errorf("%s: %w", abs, ErrNoRepository)
		}
		d = up
	}
}

// isGitDir applies git's test: HEAD, objects/ and refs/ present.
func isGitDir(d string) bool {
	if _, err := os.Stat(filepath.Join(d, "HEAD")); err != nil {
		return false
	}
	common := d
	if b, err := os.ReadFile(filepath.Join(d, "commondir")); err == nil {
		common = resolveRel(d, strings.TrimSpace(string(b)))
	}
	if st, err := os.Stat(filepath.Join(common, "objects")); err != nil || !st.IsDir() {
		return false
	}
	if st, err := os.Stat(filepath.Join(common, "refs")); err != nil || !st.IsDir() {
		return false
	}
	return true
}

func isBare(d string) bool { return gitobj.IsBare(d) }

// readGitFile follows a "gitdir: <path>" file (submodules, worktrees).
func readGitFile(p string) (string, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", p, err)
	}
	line := strings.TrimSpace(string(b))
	gd, ok := strings.CutPrefix(line, "gitdir: ")
	if !ok {
		return "", fmt.Errorf("%s is not a gitdir file", p)
	}
	return resolveRel(filepath.Dir(p), strings.TrimSpace(gd)), nil
}

func resolveRel(base, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Clean(filepath.Join(base, p))
}

func fromGitDir(gitDir, workTree string) (Location, error) {
	if !isGitDir(gitDir) {
		return Location{}, fmt.Errorf("%s is not a git directory", gitDir)
	}
	loc := Location{GitDir: gitDir, CommonDir: gitDir, WorkTree: workTree}
	if b, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
		loc.CommonDir = resolveRel(gitDir, strings.TrimSpace(string(b)))
	} else if !errors.Is(err, fs.ErrNotExist) {
		return Location{}, err
	}
	if workTree != "" {
		if wt, err := filepath.EvalSymlinks(workTree); err == nil {
			loc.WorkTree = wt
		}
	}
	return loc, nil
}

// unsupported says why go-git cannot write this repository safely, or "".
func unsupported(commonDir string) string { return gitobj.Unsupported(commonDir) }

// Config holds the git configuration the store reads (gitobj.Config).
type Config = gitobj.Config

// LoadConfig reads the configuration that applies to a repository whose
// common dir is commonDir ("" for none).
func LoadConfig(commonDir string) *Config { return gitobj.LoadConfig(commonDir) }
