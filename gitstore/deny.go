package gitstore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"

	"github.com/bmatcuk/doublestar/v4"
)

// defaultDenyGlobs are the secrets an agent commonly reads in passing. The
// archive is a git history that outlives the session and may be pushed, so a
// secret that lands in it is effectively leaked; excluding too much only costs
// a missing snapshot, because the access itself is still recorded.
var defaultDenyGlobs = []string{
	// dotenv files. ".envrc" (direnv) is denied too: it is routinely used to
	// export API tokens, and a false positive only loses a snapshot.
	".env",
	".env.*",
	".envrc",
	// Keys, certificates and keystores.
	"*.pem",
	"*.key",
	"*.p12",
	"*.pfx",
	"*.keystore",
	"*.jks",
	"*.asc",
	"id_rsa*",
	"id_dsa*",
	"id_ecdsa*",
	"id_ed25519*",
	// Secret files; also covers secrets.json, secrets.yaml and secrets.yml.
	"secret*.{json,yaml,yml,toml,txt}",
	// Credential directories: everything beneath them, at any depth.
	".ssh/**",
	".aws/**",
	".gnupg/**",
	".kube/**",
	// Credential dotfiles.
	".npmrc",
	".netrc",
	".pgpass",
	".git-credentials",
	".htpasswd",
	"credentials*",
}

// DenyList decides which paths must never have their content archived.
//
// Globs use doublestar syntax and are matched against every suffix of a
// path's components rather than the whole path. Agents report paths in every
// form (absolute, relative to some working directory, with "..") so anchoring
// a glob at the root would make ".env" miss "/home/u/app/.env"; suffix
// matching makes a glob mean "this name, or this tail of a path, anywhere",
// which is what a user means by ".env" or ".ssh/**". A leading "/" in a glob
// is ignored for the same reason: over-matching is the safe failure.
//
// Matching ignores case, on every system: ".ENV", "ID_RSA" and
// "Secrets.JSON" are denied like ".env", "id_rsa" and "secrets.json". On a
// case-insensitive file system (macOS, Windows) they are the same file; on
// a case-sensitive one denying them only costs a snapshot. The globs and
// the path are lowercased (globs once, at construction) and matched with
// doublestar, so a near miss stays a near miss in any case
// ("ENVIRONMENT.TS", "Keyboard.ts" are allowed).
//
// A DenyList is immutable after construction and safe for concurrent use.
type DenyList struct {
	globs []string // validated, slash-separated, as given; defaults first
	lower []string // globs lowercased: what is matched
	// dirs are the directories the globs name literally as "D/**" (.ssh,
	// .aws, .gnupg, .kube, and the user's), as written: where a hard
	// link's partner is looked for under home and the repository top.
	dirs []string
}

// DefaultDenyGlobs returns the built-in globs (a fresh slice each call).
func DefaultDenyGlobs() []string {
	return append([]string(nil), defaultDenyGlobs...)
}

// NewDenyList builds a list from the defaults plus user globs (doublestar
// syntax). Empty or whitespace-only globs are ignored; an invalid glob
// returns an error naming it. The defaults cannot be removed: the user can
// only deny more.
func NewDenyList(user []string) (*DenyList, error) {
	globs := DefaultDenyGlobs()
	var errs []error
	for _, g := range user {
		g = strings.TrimSpace(g)
		if g == "" {
			continue
		}
		if !doublestar.ValidatePattern(g) {
			errs = append(errs, fmt.Errorf("invalid deny glob %q", g))
			continue
		}
		if g = strings.TrimLeft(g, "/"); g != "" {
			globs = append(globs, g)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	d := &DenyList{globs: globs, lower: make([]string, len(globs))}
	seen := map[string]bool{}
	for i, g := range globs {
		d.lower[i] = strings.ToLower(g)
		if dir, ok := strings.CutSuffix(g, "/**"); ok && dir != "" && !strings.ContainsAny(dir, `*?[]{}\`) && !seen[dir] {
			seen[dir] = true
			d.dirs = append(d.dirs, dir)
		}
	}
	return d, nil
}

// ParseDenyEnv splits LOSSLESS_ARCHIVE_EXCLUDE's comma-separated value into
// globs (trimmed, empties dropped).
func ParseDenyEnv(v string) []string {
	var globs []string
	for _, g := range strings.Split(v, ",") {
		if g = strings.TrimSpace(g); g != "" {
			globs = append(globs, g)
		}
	}
	return globs
}

// Match reports whether the path (absolute or relative, OS separators) is
// denied by its name alone, in any case, and which glob matched (as it was
// given). It does not touch the file system.
func (d *DenyList) Match(path string) (glob string, denied bool) {
	path = filepath.Clean(path)
	path = strings.TrimPrefix(path, filepath.VolumeName(path))
	p := strings.ToLower(filepath.ToSlash(path))
	// Drop the leading "/" of an absolute path and a bare ".".
	p = strings.TrimLeft(p, "/")
	if p == "." {
		p = ""
	}
	// Every suffix of whole components, longest first.
	for s := p; s != ""; {
		for i, g := range d.lower {
			if doublestar.MatchUnvalidated(g, s) {
				return d.globs[i], true
			}
		}
		j := strings.IndexByte(s, '/')
		if j < 0 {
			break
		}
		s = s[j+1:]
	}
	return "", false
}

// Check reports whether the file at path is denied: by its own path; when
// any component is a symlink, by its fully resolved target too; and when
// it is a hard link, by the name of a denied file it is the same file as.
// matchedPath is path itself, the resolved target, or that denied file,
// whichever matched.
//
// The name alone is not enough because reading "notes.txt ->
// ~/.ssh/id_ed25519" or "cfg/ -> ~/.aws" reads the secret, and it is the
// content that must not be archived. A path that does not exist is judged
// on its name, after resolving whatever part of it does exist, so that a
// new file inside a symlinked secret directory, or a dangling link to
// ".env", is still denied.
//
// Hard links. "ln .env notes.txt" makes notes.txt the same file (device and
// inode) as .env under an innocent name, and no name says so. When the
// resolved file is a regular file with a link count above 1 (only then:
// a file with one link, the overwhelmingly common case, costs nothing but
// the lstat that resolving its last component does anyway), it is
// compared, by device and inode, with the denied files in:
//
//   - its own directory and every directory above it, up to and including
//     the first that holds ".git" (the top of its repository), or home, or
//     at most 16 levels;
//   - the home directory ($HOME), and the directories the globs name as
//     "D/**" (.ssh, .aws, .gnupg, .kube and the user's own) directly under
//     home and under that repository top (their files, not their
//     subdirectories).
//
// A denied file is one whose path the globs match; each directory is
// listed once per batch (a listing, then a stat of the denied names only).
// So "ln .env notes.txt", "ln ../../.env src/x/notes.txt" and "ln
// ~/.ssh/id_ed25519 key.txt" are denied. Not recognised: a hard link to a
// denied file elsewhere — in a sibling directory ("ln config/.env
// src/notes.txt"), deeper in a credential directory (~/.ssh/keys/x), or
// anywhere else on the file system — nor a link whose partner is a denied
// file that was since renamed or removed (a hard link has no original).
// Such content is archived like any file: the secret scanner still
// marks a version that holds secret-shaped content ("secrets": N), and the
// push gate holds it back. Systems that report
// no link count (Windows) get no hard-link check. Files that share an
// inode with no denied file are never affected: pnpm's node_modules, whose
// files are hard links into its store, are archived as usual.
func (d *DenyList) Check(path string) (glob string, matchedPath string, denied bool) {
	return d.check(path, newResolver())
}

// check is Check with a resolver whose resolved directories (and listed
// directories) are reused: a batch names many files under the same
// directories, and resolving a path lstats every component of it.
func (d *DenyList) check(path string, r *resolver) (glob string, matchedPath string, denied bool) {
	if g, ok := d.Match(path); ok {
		return g, path, true
	}
	target, fi, ok := r.resolve(path, true)
	if !ok {
		return "", "", false
	}
	if target != filepath.Clean(path) {
		if g, ok := d.Match(target); ok {
			return g, target, true
		}
	}
	if fi != nil && fi.Mode().IsRegular() && linkCount(fi) > 1 {
		return d.hardLinked(target, fi, r)
	}
	return "", "", false
}

// maxLinkAncestors bounds how many directories above a hard-linked file
// are searched for its denied partner when no repository top or home
// stops the walk first.
const maxLinkAncestors = 16

// hardLinked looks for a denied file that is the same file as fi (see
// Check for where it looks).
func (d *DenyList) hardLinked(target string, fi fs.FileInfo, r *resolver) (glob string, matchedPath string, denied bool) {
	abs, err := filepath.Abs(target)
	if err != nil {
		return "", "", false
	}
	home, _ := os.UserHomeDir()
	if home != "" {
		home = filepath.Clean(home)
	}
	find := func(dir string) (string, string, bool, bool) {
		ds := r.secretsIn(d, dir)
		for _, f := range ds.files {
			if os.SameFile(fi, f.fi) {
				return f.glob, f.path, true, ds.top
			}
		}
		return "", "", false, ds.top
	}
	top := ""
	dir := filepath.Dir(abs)
	for range maxLinkAncestors {
		g, p, ok, isTop := find(dir)
		if ok {
			return g, p, true
		}
		if isTop {
			top = dir
			break
		}
		parent := filepath.Dir(dir)
		if dir == home || parent == dir {
			break
		}
		dir = parent
	}
	var more []string
	if home != "" {
		more = append(more, home)
	}
	for _, root := range []string{top, home} {
		if root == "" {
			continue
		}
		for _, sub := range d.dirs {
			more = append(more, filepath.Join(root, filepath.FromSlash(sub)))
		}
	}
	for _, dir := range more {
		if g, p, ok, _ := find(dir); ok {
			return g, p, true
		}
	}
	return "", "", false
}

// dirSecrets is what a listed directory holds: its denied regular files,
// and whether it is a repository top (holds ".git").
type dirSecrets struct {
	files []deniedFile
	top   bool
}

type deniedFile struct {
	path, glob string
	fi         fs.FileInfo // os.Stat: a symlink named .env counts as its target
}

// secretsIn lists dir once per resolver.
func (r *resolver) secretsIn(d *DenyList, dir string) dirSecrets {
	if ds, ok := r.secrets[dir]; ok {
		return ds
	}
	r.scans++
	var ds dirSecrets
	ents, _ := os.ReadDir(dir) // unreadable or missing: nothing found there
	for _, e := range ents {
		name := e.Name()
		if name == ".git" {
			ds.top = true
			continue
		}
		if e.IsDir() {
			continue // no hard links to directories
		}
		p := filepath.Join(dir, name)
		g, ok := d.Match(p)
		if !ok {
			continue
		}
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			ds.files = append(ds.files, deniedFile{path: p, glob: g, fi: fi})
		}
	}
	if r.secrets == nil {
		r.secrets = map[string]dirSecrets{}
	}
	r.secrets[dir] = ds
	return ds
}

// linkCount is fi's number of hard links, 0 where the system reports none.
// The count lives in the platform's stat structure (syscall.Stat_t's
// Nlink on every Unix, of a different integer type on each), read here
// by reflection so that this file builds everywhere.
func linkCount(fi fs.FileInfo) uint64 {
	v := reflect.ValueOf(fi.Sys())
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return 0
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return 0
	}
	idx, ok := nlinkIndex(v.Type())
	if !ok {
		return 0
	}
	f := v.FieldByIndex(idx)
	switch f.Kind() {
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return f.Uint()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if n := f.Int(); n > 0 {
			return uint64(n)
		}
	}
	return 0
}

var nlinkFields sync.Map // reflect.Type -> []int (nil: no Nlink field)

func nlinkIndex(t reflect.Type) ([]int, bool) {
	if v, ok := nlinkFields.Load(t); ok {
		idx := v.([]int)
		return idx, idx != nil
	}
	var idx []int
	if f, ok := t.FieldByName("Nlink"); ok {
		idx = f.Index
	}
	nlinkFields.Store(t, idx)
	return idx, idx != nil
}

// resolver resolves paths with every symlink followed, remembering the
// directories it resolved, and the directories it listed for hard links.
// It is meant for one batch, not for a process: a symlink changed later
// would be judged by its old target.
type resolver struct {
	dirs    map[string]resolvedDir
	secrets map[string]dirSecrets
	scans   int // directories listed (tests)
}

type resolvedDir struct {
	path string
	ok   bool
}

func newResolver() *resolver { return &resolver{dirs: map[string]resolvedDir{}} }

// resolve returns path with every symlink it can follow resolved and,
// when stat is set, the lstat of what it resolved to (nil when that does
// not exist or cannot be read). Unlike filepath.EvalSymlinks it tolerates a missing final
// component: the existing parent is resolved and a dangling link is
// followed through its target name. It fails only on a link cycle or an
// unresolvable parent. Each step resolves the parent directory
// (remembered), then follows the last component if it is a link.
func (r *resolver) resolve(path string, stat bool) (string, fs.FileInfo, bool) {
	path = filepath.Clean(path)
	seen := make(map[string]bool)
	for !seen[path] {
		seen[path] = true
		parent := filepath.Dir(path)
		if parent == path {
			return path, nil, true // the root (or "."), which is no link
		}
		dir, ok := r.dir(parent)
		if !ok {
			return "", nil, false
		}
		p := filepath.Join(dir, filepath.Base(path))
		var fi fs.FileInfo
		if stat {
			// The file itself: an lstat instead of the readlink, one
			// system call either way, tells a link from a file and
			// gives the file's link count.
			var err error
			if fi, err = os.Lstat(p); err != nil {
				return p, nil, true // missing or unreadable: judge the name
			}
			if fi.Mode()&fs.ModeSymlink == 0 {
				return p, fi, true
			}
		}
		link, err := os.Readlink(p)
		if err != nil {
			return p, nil, true // not a link, missing, or unreadable: judge the name
		}
		if !filepath.IsAbs(link) {
			link = filepath.Join(dir, link)
		}
		path = filepath.Clean(link)
	}
	return "", nil, false // cycle
}

// dir resolves a directory, once per resolver.
func (r *resolver) dir(d string) (string, bool) {
	if v, ok := r.dirs[d]; ok {
		return v.path, v.ok
	}
	r.dirs[d] = resolvedDir{} // a cycle through d fails instead of recursing
	p, _, ok := r.resolve(d, false)
	r.dirs[d] = resolvedDir{p, ok}
	return p, ok
}
