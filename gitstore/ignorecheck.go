package gitstore

// Where the push gate asks git whether it would commit a path: the work
// tree that holds the file (pathResolver) and git's own ignore rules there
// (IgnoreChecker). See Check in pushcheck.go.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
)

// IgnoreRule is the rule that makes git ignore a path.
type IgnoreRule struct {
	Source  string // the file the rule is in (.gitignore, .git/info/exclude, core.excludesFile)
	Line    int
	Pattern string
}

func (r IgnoreRule) String() string {
	return fmt.Sprintf("%s:%d:%s", r.Source, r.Line, r.Pattern)
}

// IgnoreChecker says which paths git ignores in a work tree.
type IgnoreChecker interface {
	// CheckIgnore returns the paths of rels (slash-separated, relative to
	// the top of workTree) that git ignores there, each with its rule.
	CheckIgnore(ctx context.Context, workTree string, rels []string) (map[string]IgnoreRule, error)
}

// GitCheckIgnore is the IgnoreChecker of the real git: one `git
// check-ignore -v --stdin -z` process per call, run in the work tree, so
// nested .gitignore files, .git/info/exclude and core.excludesFile apply
// as git applies them, and a tracked file is not ignored.
type GitCheckIgnore struct{}

// CheckIgnore implements IgnoreChecker.
func (GitCheckIgnore) CheckIgnore(ctx context.Context, workTree string, rels []string) (map[string]IgnoreRule, error) {
	var in bytes.Buffer
	for _, r := range rels {
		// "./" keeps a path that starts with ':' from being read as
		// pathspec magic; check-ignore echoes the path as given.
		in.WriteString("./" + r)
		in.WriteByte(0)
	}
	cmd := exec.CommandContext(ctx, "git", "check-ignore", "-v", "--stdin", "-z")
	cmd.Dir = workTree
	cmd.Env = gitEnv()
	cmd.Stdin = &in
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 1) { // 1: nothing ignored
		return nil, fmt.Errorf("git check-ignore: %s", gitMessage(errb.Bytes(), err))
	}
	f := bytes.Split(out.Bytes(), []byte{0})
	res := map[string]IgnoreRule{}
	for i := 0; i+3 < len(f); i += 4 {
		pat := string(f[i+2])
		if strings.HasPrefix(pat, "!") {
			continue // a negated pattern matched: not ignored
		}
		line, _ := strconv.Atoi(string(f[i+1]))
		p := strings.TrimPrefix(string(f[i+3]), "./")
		res[p] = IgnoreRule{Source: string(f[i]), Line: line, Pattern: pat}
	}
	return res, nil
}

// pathResolver finds, for a recorded path, the work tree whose ignore
// rules apply: the innermost work tree on disk that holds the file (with
// symlinks resolved), so a file in a submodule or nested repository is
// checked there, and one outside every work tree, or in another
// repository than the one it was recorded in, is outside.
type pathResolver struct {
	real  map[string]string // directory → its real path ("" when it does not resolve)
	home  map[string]string // real directory → innermost work tree holding it ("" for none)
	exist map[string]bool   // repository directories that exist
}

func newPathResolver() *pathResolver {
	return &pathResolver{real: map[string]string{}, home: map[string]string{}, exist: map[string]bool{}}
}

// resolve returns the work tree and the path relative to it to check, or a
// problem kind and its reason.
func (r *pathResolver) resolve(repo, p, storeWT string) (wt, rel string, kind ProblemKind, why string) {
	if repo == "" {
		repo = storeWT
	}
	abs := filepath.FromSlash(p)
	if !filepath.IsAbs(abs) {
		if repo == "" {
			return "", "", ProblemIgnoreUnknown, "ignore rules unknown: the event names no repository for this relative path"
		}
		abs = filepath.Join(repo, abs)
	}
	abs = filepath.Clean(abs)
	if repo != "" && !r.dirExists(repo) {
		return "", "", ProblemIgnoreUnknown, "ignore rules unknown: its repository " + QuotePath(repo) + " is not on this machine"
	}
	realRepo := ""
	if repo != "" {
		realRepo = r.realDir(repo)
		if r.homeOf(realRepo) != realRepo {
			return "", "", ProblemIgnoreUnknown, "ignore rules unknown: its repository " + QuotePath(repo) + " is not a work tree on this machine"
		}
	}
	realFile := filepath.Join(r.realDir(filepath.Dir(abs)), filepath.Base(abs))
	home := r.homeOf(filepath.Dir(realFile))
	switch {
	case home == "" && realRepo == "":
		return "", "", ProblemOutside, "outside any repository: git would never commit it"
	case home == "":
		return "", "", ProblemOutside, "outside the repository " + QuotePath(repo) + ": git would never commit it"
	case realRepo == "" || !within(realRepo, home):
		// In another repository than the one it was recorded in (or
		// recorded with none): not this repository's file.
		return "", "", ProblemOutside, "outside the repository it was recorded in (it is in " + QuotePath(home) + ")"
	}
	rp, err := filepath.Rel(home, realFile)
	if err != nil {
		return "", "", ProblemOutside, "outside the repository: " + err.Error()
	}
	rp = filepath.ToSlash(rp)
	if rp == "." || rp == ".." || strings.HasPrefix(rp, "../") || path.Clean(rp) != rp {
		return "", "", ProblemOutside, "outside the repository " + QuotePath(home) + ": git would never commit it"
	}
	for _, c := range strings.Split(rp, "/") {
		if strings.EqualFold(c, ".git") {
			return "", "", ProblemOutside, "inside the .git directory: git never commits it"
		}
	}
	return home, rp, "", ""
}

func (r *pathResolver) dirExists(d string) bool {
	v, ok := r.exist[d]
	if !ok {
		st, err := os.Stat(d)
		v = err == nil && st.IsDir()
		r.exist[d] = v
	}
	return v
}

// within reports whether dir is root or inside it.
func within(root, dir string) bool {
	if root == dir {
		return true
	}
	rel, err := filepath.Rel(root, dir)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// realDir returns d with symlinks resolved; a directory that does not
// exist (a file deleted since) resolves through its deepest existing
// ancestor, as no symlink can hide in what does not exist.
func (r *pathResolver) realDir(d string) string {
	if v, ok := r.real[d]; ok {
		return v
	}
	v, err := filepath.EvalSymlinks(d)
	if err != nil {
		parent := filepath.Dir(d)
		if parent == d {
			v = d
		} else {
			v = filepath.Join(r.realDir(parent), filepath.Base(d))
		}
	}
	r.real[d] = v
	return v
}

// homeOf returns the innermost directory at or above real dir d that is
// the top of a work tree (holds a .git entry), "" for none.
func (r *pathResolver) homeOf(d string) string {
	if v, ok := r.home[d]; ok {
		return v
	}
	v := ""
	if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
		v = d
	} else if parent := filepath.Dir(d); parent != d {
		v = r.homeOf(parent)
	}
	r.home[d] = v
	return v
}
