package gitstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

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
// A DenyList is immutable after construction and safe for concurrent use.
type DenyList struct {
	globs []string // validated, slash-separated; defaults first
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
	return &DenyList{globs: globs}, nil
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
// denied by its name alone, and which glob matched. It does not touch the
// file system.
func (d *DenyList) Match(path string) (glob string, denied bool) {
	path = filepath.Clean(path)
	path = strings.TrimPrefix(path, filepath.VolumeName(path))
	parts := strings.Split(filepath.ToSlash(path), "/")
	// Drop the empty leading component of an absolute path and a bare ".".
	for len(parts) > 0 && (parts[0] == "" || parts[0] == ".") {
		parts = parts[1:]
	}
	for i := range parts {
		suffix := strings.Join(parts[i:], "/")
		for _, g := range d.globs {
			if doublestar.MatchUnvalidated(g, suffix) {
				return g, true
			}
		}
	}
	return "", false
}

// Check reports whether the file at path is denied: its own path and, when
// any component is a symlink, its fully resolved target too. The name alone
// is not enough because reading "notes.txt -> ~/.ssh/id_ed25519" or
// "cfg/ -> ~/.aws" reads the secret, and it is the content that must not be
// archived. A path that does not exist is judged on its name, after resolving
// whatever part of it does exist, so that a new file inside a symlinked secret
// directory, or a dangling link to ".env", is still denied. matchedPath is
// path itself or the resolved target, whichever matched.
func (d *DenyList) Check(path string) (glob string, matchedPath string, denied bool) {
	return d.check(path, newResolver())
}

// check is Check with a resolver whose resolved directories are reused:
// a batch names many files under the same directories, and resolving a
// path lstats every component of it.
func (d *DenyList) check(path string, r *resolver) (glob string, matchedPath string, denied bool) {
	if g, ok := d.Match(path); ok {
		return g, path, true
	}
	target, ok := r.resolve(path)
	if !ok || target == filepath.Clean(path) {
		return "", "", false
	}
	if g, ok := d.Match(target); ok {
		return g, target, true
	}
	return "", "", false
}

// resolver resolves paths with every symlink followed, remembering the
// directories it resolved. It is meant for one batch, not for a process:
// a symlink changed later would be judged by its old target.
type resolver struct {
	dirs map[string]resolvedDir
}

type resolvedDir struct {
	path string
	ok   bool
}

func newResolver() *resolver { return &resolver{dirs: map[string]resolvedDir{}} }

// resolve returns path with every symlink it can follow resolved. Unlike
// filepath.EvalSymlinks it tolerates a missing final component: the
// existing parent is resolved and a dangling link is followed through its
// target name. It fails only on a link cycle or an unresolvable parent.
// Each step resolves the parent directory (remembered), then follows the
// last component if it is a link.
func (r *resolver) resolve(path string) (string, bool) {
	path = filepath.Clean(path)
	seen := make(map[string]bool)
	for !seen[path] {
		seen[path] = true
		parent := filepath.Dir(path)
		if parent == path {
			return path, true // the root (or "."), which is no link
		}
		dir, ok := r.dir(parent)
		if !ok {
			return "", false
		}
		p := filepath.Join(dir, filepath.Base(path))
		link, err := os.Readlink(p)
		if err != nil {
			return p, true // not a link, missing, or unreadable: judge the name
		}
		if !filepath.IsAbs(link) {
			link = filepath.Join(dir, link)
		}
		path = filepath.Clean(link)
	}
	return "", false // cycle
}

// dir resolves a directory, once per resolver.
func (r *resolver) dir(d string) (string, bool) {
	if v, ok := r.dirs[d]; ok {
		return v.path, v.ok
	}
	r.dirs[d] = resolvedDir{} // a cycle through d fails instead of recursing
	p, ok := r.resolve(d)
	r.dirs[d] = resolvedDir{p, ok}
	return p, ok
}
