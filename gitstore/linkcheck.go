package gitstore

// The push gate judges a file version by the file it was read from, not
// only by the name it was read through (see Check): an in-repository
// symlink to a git-ignored file, or to a file outside the repository,
// must not carry that file's bytes out under an innocent name, and
// neither must a hard link to an ignored file.
//
// The names a file version is judged by, in this order:
//
//  1. its path, as recorded (the name the agent used), its directories
//     resolved — what the gate always checked;
//  2. its recorded real_path (hooks record the resolved file beside a
//     path that resolves through a symlink): the file as it was when it
//     was read;
//  3. what the path resolves to now, when it still exists and resolves
//     elsewhere (a CLI record, or a hook that did not record real_path);
//  4. for a regular file with more than one link, its other names in the
//     same work tree that git ignores (`git ls-files --others --ignored
//     --exclude-standard`, compared by device and inode), as the deny list
//     compares hard links with denied files.
//
// The first name that git would not commit decides: the file version is
// held back as ignored (or outside) with a reason naming that name.
//
// Not recognised (documented in README's Limits): a hard link whose other
// names are all outside the work tree (no walk of every file system can
// find them), or whose ignored partner was removed since; a symlink
// changed since the version was read, when no real_path was recorded (it
// is judged by where it leads now). The scanner still reads the bytes.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// nameVia says how a name judged for a file version was reached.
type nameVia int

const (
	viaPath     nameVia = iota // the recorded path
	viaRealPath                // the recorded real_path
	viaLink                    // what the path resolves to now
	viaHardLink                // another name of the same file (hard link)
)

// fileName is one name a file version is judged by.
type fileName struct {
	path string // as resolve takes it: relative to the repository, or absolute
	via  nameVia
}

// namesOf returns the names (1–3 above) a file version is judged by, and
// the file as it is now (nil when it is gone or not a regular file) for
// the hard-link check. Symlinks are followed as the deny list follows
// them (deny.go's resolver, one per check): a dangling link is followed
// through its target's name, so a link whose ignored target was deleted
// since is still judged by that target.
func namesOf(it OutgoingItem, storeWT string, r *resolver) ([]fileName, os.FileInfo) {
	names := []fileName{{it.Path, viaPath}}
	if it.RealPath != "" && it.RealPath != it.Path {
		names = append(names, fileName{it.RealPath, viaRealPath})
	}
	repo := it.Repo
	if repo == "" {
		repo = storeWT
	}
	abs := filepath.FromSlash(it.Path)
	if !filepath.IsAbs(abs) {
		if repo == "" {
			return names, nil
		}
		abs = filepath.Join(repo, abs)
	}
	abs = filepath.Clean(abs)
	target, fi, ok := r.resolve(abs, true)
	if !ok {
		return names, nil // a symlink loop: judged by its names
	}
	if target != abs && target != filepath.Join(r.realOf(filepath.Dir(abs)), filepath.Base(abs)) {
		names = append(names, fileName{target, viaLink})
	}
	if fi == nil || !fi.Mode().IsRegular() || linkCount(fi) < 2 {
		return names, nil
	}
	return names, fi
}

// realOf is dir with its symlinks resolved (dir itself when it does not
// resolve).
func (r *resolver) realOf(dir string) string {
	if p, ok := r.dir(dir); ok {
		return p
	}
	return dir
}

// maxIgnoredListed bounds how many ignored files one work tree's
// hard-link check compares (a node_modules can hold a million): past it,
// the check says the rules are unknown rather than guess.
const maxIgnoredListed = 500_000

// errTooManyIgnored: the work tree holds more ignored files than the
// hard-link check compares.
var errTooManyIgnored = errors.New("more ignored files than the hard-link check compares")

// hardLinkPartners finds, among the files git ignores in work tree wt,
// the other names of each file in fis (device and inode): partners[i]
// lists fis[i]'s, relative to wt, slash-separated. It runs one `git
// ls-files` there and stats only the ignored regular files.
func hardLinkPartners(ctx context.Context, wt string, fis []os.FileInfo) ([][]string, error) {
	cmd := exec.CommandContext(ctx, "git", "ls-files", "-z", "--others", "--ignored", "--exclude-standard")
	cmd.Dir = wt
	cmd.Env = gitEnv()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("git ls-files --ignored: %s", gitMessage(errb.Bytes(), err))
	}
	partners := make([][]string, len(fis))
	n := 0
	for _, rel := range bytes.Split(out.Bytes(), []byte{0}) {
		if len(rel) == 0 || bytes.HasSuffix(rel, []byte("/")) {
			continue // an untracked nested repository, listed as a directory
		}
		if n++; n > maxIgnoredListed {
			return nil, errTooManyIgnored
		}
		if n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		fi, err := os.Lstat(filepath.Join(wt, filepath.FromSlash(string(rel))))
		if err != nil || !fi.Mode().IsRegular() || linkCount(fi) < 2 {
			continue
		}
		for i, f := range fis {
			if os.SameFile(f, fi) {
				partners[i] = append(partners[i], string(rel))
			}
		}
	}
	return partners, nil
}

// viaReason is the reason of a problem found through a name other than
// the path: what that name is, then why git would not commit it (why
// reads "git ignores it (...)" or "outside ...: git would never commit
// it").
func viaReason(n fileName, shown, why string) string {
	what := ""
	switch n.via {
	case viaRealPath:
		what = "read through a symlink to "
	case viaLink:
		what = "a symlink to "
	case viaHardLink:
		what = "a hard link of "
	default:
		return why
	}
	if rest, ok := strings.CutPrefix(why, "git ignores it "); ok {
		return what + QuotePath(shown) + ", which git ignores " + rest
	}
	return what + QuotePath(shown) + ": " + why
}
