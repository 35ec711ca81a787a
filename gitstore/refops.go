package gitstore

// Refs beyond the writers' chains, for anchors and sync (package anchor):
// checkpoint commits under AnchorPrefix, annotated tags under
// AnchorTagPrefix, what was fetched from remotes under TrackingPrefix, and
// fast-forwards of writer and notes refs to what a remote holds. They go
// through the same ref lock protocol as every other ref (refs.go): package
// anchor never touches a ref or an object itself.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/git-lossless/git-lossless/internal/gitobj"
)

// Ref namespaces of anchors and sync.
const (
	// AnchorPrefix holds each machine's checkpoint commits:
	// refs/lossless-anchor/<machine>/<clone>. Kept apart from RefPrefix so
	// that a push of refs/lossless/* never carries them and so that a
	// server hook can protect them on their own.
	AnchorPrefix = "refs/lossless-anchor/"
	// AnchorTagPrefix holds the annotated tags of tags mode:
	// refs/tags/lossless-anchor/<machine>/<clone>/<n>.
	AnchorTagPrefix = "refs/tags/lossless-anchor/"
	// TrackingPrefix holds what was fetched from remotes:
	// refs/lossless-tracking/<remote id>/... Fetches write nowhere else.
	TrackingPrefix = "refs/lossless-tracking/"
)

// Ref returns a ref's value, "" when it does not exist.
func (o Objects) Ref(ctx context.Context, name string) (string, error) { return o.s.refs.Read(name) }

// RefsUnder returns every ref under prefix (e.g. AnchorPrefix) with its
// value, as git resolves them (loose over packed).
func (o Objects) RefsUnder(ctx context.Context, prefix string) (map[string]string, error) {
	s := o.s
	if !strings.HasPrefix(prefix, "refs/") || !strings.HasSuffix(prefix, "/") {
		return nil, fmt.Errorf("ref prefix %q must start with refs/ and end with /", prefix)
	}
	return s.refs.List(prefix)
}

// ownRef reports whether name is a ref SetRef and CommitFiles may write:
// anchors, anchor tags and tracking refs, never a writer's chain.
func ownRef(name string) error {
	for _, p := range []string{AnchorPrefix, AnchorTagPrefix, TrackingPrefix} {
		if strings.HasPrefix(name, p) && len(name) > len(p) {
			return validRefName(name)
		}
	}
	return fmt.Errorf("ref %s is not under %s, %s or %s", name, AnchorPrefix, AnchorTagPrefix, TrackingPrefix)
}

// validRefName applies git's rules for the names we write (check-ref-format,
// the subset that matters): no empty component, none starting with '.' or
// ending in ".lock", no "..", no control character, space, ~ ^ : ? * [ \.
func validRefName(name string) error {
	for _, comp := range strings.Split(name, "/") {
		if comp == "" || strings.HasPrefix(comp, ".") || strings.HasSuffix(comp, ".lock") || strings.Contains(comp, "..") || strings.Contains(comp, "@{") {
			return fmt.Errorf("ref name %s: bad component %q", QuotePath(name), comp)
		}
		for _, c := range comp {
			if c < 0x20 || c == 0x7f || strings.ContainsRune(" ~^:?*[\\", c) {
				return fmt.Errorf("ref name %s: %q is not allowed", QuotePath(name), c)
			}
		}
	}
	return nil
}

// SetRef moves name from old to new ("" old: name must not exist; ""
// new is refused: refs are never deleted here) under the ref lock, as a
// compare-and-swap: ErrRefChanged when name is not at old. Only anchor,
// anchor tag and tracking refs.
func (o Objects) SetRef(ctx context.Context, name, old, new string) error {
	s := o.s
	if err := ownRef(name); err != nil {
		return err
	}
	if !gitobj.IsID(new) || old != "" && !gitobj.IsID(old) {
		return fmt.Errorf("set %s: %q -> %q: not object ids", name, old, new)
	}
	ctx, cancel := context.WithTimeout(ctx, s.lockT)
	defer cancel()
	lk, err := s.refs.Acquire(ctx, name)
	if err != nil {
		return err
	}
	return lk.Commit(old, new)
}

// DeleteTrackingRef deletes a tracking ref (under TrackingPrefix only) if
// it is at old (compare-and-swap: ErrRefChanged otherwise), under the ref
// lock, from packed-refs and as a loose file: what `git fetch --prune`
// did to refs a remote lost, now that fetches go through a quarantine
// (Quarantine.Gone lists them). SetRef never deletes.
func (o Objects) DeleteTrackingRef(ctx context.Context, name, old string) error {
	s := o.s
	if !strings.HasPrefix(name, TrackingPrefix) || len(name) == len(TrackingPrefix) {
		return fmt.Errorf("delete %s: not under %s", name, TrackingPrefix)
	}
	if err := validRefName(name); err != nil {
		return err
	}
	if !gitobj.IsID(old) {
		return fmt.Errorf("delete %s: expected value %q is not an object id", name, old)
	}
	ctx, cancel := context.WithTimeout(ctx, s.lockT)
	defer cancel()
	lk, err := s.refs.Acquire(ctx, name)
	if err != nil {
		return err
	}
	return lk.Delete(ctx, old)
}

// TreeFile is one file of a flat tree written by CommitFiles.
type TreeFile struct {
	Name string // a plain file name: no '/', not "." or ".."
	Data []byte
}

// CommitFiles writes files as one flat tree and a commit whose parent is
// parent ("" for a first commit), with message msg and author and
// committer ident ("Name <email>"; "" for the store's own), and moves ref
// from parent to it (compare-and-swap: ErrRefChanged when ref moved, so
// the caller rebuilds on the new value). Objects are durable before the
// ref moves. Only refs under AnchorPrefix.
func (o Objects) CommitFiles(ctx context.Context, ref, parent string, files []TreeFile, msg, ident string, when time.Time) (string, error) {
	s := o.s
	if !strings.HasPrefix(ref, AnchorPrefix) {
		return "", fmt.Errorf("commit files: ref %s is not under %s", ref, AnchorPrefix)
	}
	if err := ownRef(ref); err != nil {
		return "", err
	}
	if ident == "" {
		ident = commitIdent
	}
	if strings.ContainsAny(ident, "\n\x00") || !strings.Contains(ident, "<") || !strings.HasSuffix(ident, ">") {
		return "", fmt.Errorf("commit files: bad identity %q", ident)
	}
	var pending []string
	ents := make([]gitobj.TreeEntry, 0, len(files))
	seen := map[string]bool{}
	for _, f := range files {
		if f.Name == "" || f.Name == "." || f.Name == ".." || strings.ContainsAny(f.Name, "/\x00") || seen[f.Name] {
			return "", fmt.Errorf("commit files: bad or repeated file name %q", f.Name)
		}
		seen[f.Name] = true
		id, err := s.odb.Write("blob", f.Data, &pending)
		if err != nil {
			return "", err
		}
		ents = append(ents, gitobj.TreeEntry{Mode: "100644", Name: f.Name, ID: id})
	}
	tree, err := s.odb.Write("tree", gitobj.EncodeTree(ents), &pending)
	if err != nil {
		return "", err
	}
	commit, err := s.odb.Write("commit", gitobj.EncodeCommit(tree, parent, ident, when.Unix(), msg), &pending)
	if err != nil {
		return "", err
	}
	if err := s.odb.Flush(pending); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, s.lockT)
	defer cancel()
	lk, err := s.refs.Acquire(ctx, ref)
	if err != nil {
		return "", err
	}
	if err := lk.Commit(parent, commit); err != nil {
		return "", err
	}
	return commit, nil
}

// CommitFilesRead is a commit read back by ReadCommitFiles.
type CommitFilesRead struct {
	ID      string
	Parents []string
	Time    time.Time
	Message string
	Files   map[string][]byte // the flat tree's blobs by name (subtrees are left out)
}

// ReadCommitFiles reads commit id and the blobs of its tree's top level.
func (o Objects) ReadCommitFiles(ctx context.Context, id string) (CommitFilesRead, error) {
	s := o.s
	out := CommitFilesRead{ID: id, Files: map[string][]byte{}}
	typ, body, err := s.odb.Read(id)
	if err != nil {
		return out, err
	}
	if typ != "commit" {
		return out, fmt.Errorf("%s is a %s, not a commit", gitobj.Short(id), typ)
	}
	c, err := gitobj.ParseCommit(body)
	if err != nil {
		return out, fmt.Errorf("commit %s: %w", gitobj.Short(id), err)
	}
	out.Parents, out.Message = c.Parents, string(c.Message)
	if c.HasTime {
		out.Time = time.Unix(c.Time, 0)
	}
	typ, tb, err := s.odb.Read(c.Tree)
	if err != nil {
		return out, fmt.Errorf("tree of %s: %w", gitobj.Short(id), err)
	}
	if typ != "tree" {
		return out, fmt.Errorf("tree of %s is a %s", gitobj.Short(id), typ)
	}
	ents, err := gitobj.ParseTree(tb)
	if err != nil {
		return out, fmt.Errorf("tree of %s: %w", gitobj.Short(id), err)
	}
	for _, e := range ents {
		if e.Mode == "40000" {
			continue
		}
		typ, data, err := s.odb.Read(e.ID)
		if err != nil {
			return out, fmt.Errorf("%s in %s: %w", e.Name, gitobj.Short(id), err)
		}
		if typ != "blob" {
			return out, fmt.Errorf("%s in %s is a %s", e.Name, gitobj.Short(id), typ)
		}
		out.Files[e.Name] = data
	}
	return out, nil
}

// Tag is an annotated tag object.
type Tag struct {
	ID      string
	Object  string // what it points at
	Type    string // the object's type
	Name    string // the tag's own name (without refs/tags/)
	Tagger  string
	Time    time.Time
	Message string
}

// WriteTag writes an annotated tag named name (the ref is refs/tags/<name>,
// which must be under AnchorTagPrefix and must not exist yet: tags are
// never moved) pointing at commit target, with message msg, and creates
// its ref.
func (o Objects) WriteTag(ctx context.Context, name, target, msg, tagger string, when time.Time) (string, error) {
	s := o.s
	ref := "refs/tags/" + name
	if !strings.HasPrefix(ref, AnchorTagPrefix) {
		return "", fmt.Errorf("tag %s is not under %s", name, strings.TrimPrefix(AnchorTagPrefix, "refs/tags/"))
	}
	if err := ownRef(ref); err != nil {
		return "", err
	}
	if tagger == "" {
		tagger = commitIdent
	}
	if typ, _, err := s.odb.Read(target); err != nil {
		return "", fmt.Errorf("tag %s: target: %w", name, err)
	} else if typ != "commit" {
		return "", fmt.Errorf("tag %s: target %s is a %s, not a commit", name, gitobj.Short(target), typ)
	}
	var pending []string
	id, err := s.odb.Write("tag", gitobj.EncodeTag(target, name, tagger, when.Unix(), msg), &pending)
	if err != nil {
		return "", err
	}
	if err := s.odb.Flush(pending); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, s.lockT)
	defer cancel()
	lk, err := s.refs.Acquire(ctx, ref)
	if err != nil {
		return "", err
	}
	if err := lk.Commit("", id); err != nil {
		return "", err
	}
	return id, nil
}

// ReadTag reads the annotated tag object id.
func (o Objects) ReadTag(ctx context.Context, id string) (Tag, error) {
	s := o.s
	t := Tag{ID: id}
	typ, body, err := s.odb.Read(id)
	if err != nil {
		return t, err
	}
	if typ != "tag" {
		return t, fmt.Errorf("%s is a %s, not a tag", gitobj.Short(id), typ)
	}
	gt, err := gitobj.ParseTag(body)
	t.Object, t.Type, t.Name, t.Tagger, t.Message = gt.Object, gt.Type, gt.Name, gt.Tagger, gt.Message
	if gt.Time != 0 {
		t.Time = time.Unix(gt.Time, 0).UTC()
	}
	if err != nil {
		return t, fmt.Errorf("tag %s names no object", gitobj.Short(id))
	}
	return t, nil
}

// IsAncestor reports whether commit anc is desc or an ancestor of it,
// walking desc's parents (all of them) up to limit commits (0: no limit).
// A commit that cannot be read ends that path: the answer is then what the
// readable history shows.
func (o Objects) IsAncestor(ctx context.Context, anc, desc string, limit int) (bool, error) {
	s := o.s
	if anc == desc {
		return true, nil
	}
	seen := map[string]bool{desc: true}
	queue := []string{desc}
	for n := 0; len(queue) > 0; n++ {
		if limit > 0 && n >= limit {
			return false, fmt.Errorf("is %s an ancestor of %s: gave up after %d commits", gitobj.Short(anc), gitobj.Short(desc), limit)
		}
		if n%256 == 0 {
			if err := ctx.Err(); err != nil {
				return false, err
			}
		}
		id := queue[0]
		queue = queue[1:]
		c, err := s.readCommit(id)
		if err != nil {
			if errors.Is(err, ErrObjectMissing) {
				continue
			}
			return false, err
		}
		for _, p := range c.Parents {
			if p == anc {
				return true, nil
			}
			if !seen[p] {
				seen[p] = true
				queue = append(queue, p)
			}
		}
	}
	return false, nil
}

// FastForward moves a writer's ref (under RefPrefix) or a notes ref (under
// NotesPrefix) from old ("" = it does not exist yet) to new, which must
// have old in its history: sync adopting what a remote holds. A writer's
// new head must be a sealed batch commit; the head observer sees it. It
// never rewrites: anything but a fast-forward is refused.
func (o Objects) FastForward(ctx context.Context, ref, old, new string) error {
	s := o.s
	writer, isWriter := strings.CutPrefix(ref, RefPrefix)
	notes, isNotes := strings.CutPrefix(ref, NotesPrefix)
	switch {
	case isWriter:
		if err := ValidWriter(writer); err != nil {
			return err
		}
	case isNotes:
		if err := ValidWriter(notes); err != nil {
			return err
		}
	default:
		return fmt.Errorf("fast-forward: %s is neither a writer nor a notes ref", ref)
	}
	if !gitobj.IsID(new) || old != "" && !gitobj.IsID(old) {
		return fmt.Errorf("fast-forward %s: %q -> %q: not object ids", ref, old, new)
	}
	if old != "" {
		ok, err := s.Objects().IsAncestor(ctx, old, new, 0)
		if err != nil {
			return fmt.Errorf("fast-forward %s: %w", ref, err)
		}
		if !ok {
			return fmt.Errorf("fast-forward %s: %s is not in the history of %s", ref, gitobj.Short(old), gitobj.Short(new))
		}
	}
	var h head
	if isWriter {
		var err error
		if h, err = s.headAt(new); err != nil {
			return fmt.Errorf("fast-forward %s: %w", ref, err)
		}
	} else if typ, _, err := s.odb.Read(new); err != nil {
		return fmt.Errorf("fast-forward %s: %w", ref, err)
	} else if typ != "commit" {
		return fmt.Errorf("fast-forward %s: %s is a %s", ref, gitobj.Short(new), typ)
	}
	ctx, cancel := context.WithTimeout(ctx, s.lockT)
	defer cancel()
	lk, err := s.refs.Acquire(ctx, ref)
	if err != nil {
		return err
	}
	if err := lk.Commit(old, new); err != nil {
		return err
	}
	if isWriter {
		s.sawHead(writer, h)
	}
	return nil
}

// HeadOf returns the chain state (entries and head seal) at a writer's
// batch commit id, from its trailers.
func (s *Store) HeadOf(ctx context.Context, id string) (seq int64, seal string, err error) {
	h, err := s.headAt(id)
	return h.Seq, h.Seal, err
}

// Fetch runs the user's `git fetch` (their SSH config, credential helpers,
// insteadOf and proxies apply) of refspecs from r, each "+SRC:DST" with DST
// under TrackingPrefix: fetched refs land only there, never over a live
// ref, and sync and verify compare them with what was seen before. With
// prune, DST refs the remote no longer has are removed by git, so the
// tracking namespace mirrors the remote. No tags are fetched beyond the
// refspecs, no FETCH_HEAD is written.
//
// Nothing here bounds what the remote sends, and it lands in the archive
// before anyone looked at it: FetchQuarantine (quarantine.go) is the
// bounded way, and Quarantine.AcceptAll leaves the tracking refs as this
// does.
func (t Transport) Fetch(ctx context.Context, r Remote, refspecs []string, prune bool) error {
	s := t.s
	if s.readOnly {
		return fmt.Errorf("fetch: %w", ErrReadOnly)
	}
	if err := ValidRemote(r.URL); err != nil {
		return err
	}
	if len(refspecs) == 0 {
		return errors.New("fetch: no refspec")
	}
	for _, rs := range refspecs {
		src, dst, ok := strings.Cut(strings.TrimPrefix(rs, "+"), ":")
		if !ok || !strings.HasPrefix(dst, TrackingPrefix) || !strings.HasPrefix(src, "refs/") {
			return fmt.Errorf("fetch: refspec %q must fetch refs/... into %s", rs, TrackingPrefix)
		}
	}
	args := []string{"fetch", "--no-tags", "--no-write-fetch-head", "--no-recurse-submodules", "--quiet"}
	if prune {
		args = append(args, "--prune")
	}
	args = append(args, "--", r.URL)
	cmd := s.git(ctx, r, append(args, refspecs...)...)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("git fetch %s: %s", QuotePath(r.URL), gitMessage(errb.Bytes(), err))
	}
	return nil
}

// RefPush is one ref update of PushRefs: send commit (or tag) Src as Dst
// on the remote. Without Leased the remote itself allows only a
// fast-forward (or a new ref); with it the update is a compare-and-swap
// against Lease ("" = Dst must not exist there), which also lets a
// non-fast-forward through when the remote is at Lease: the caller must
// have judged that.
type RefPush struct {
	Src, Dst string
	Leased   bool
	Lease    string
}

// PushRefs runs the user's `git push` of updates to r: one refspec
// SRC:DST per update, never '+', with --atomic when asked (a remote that
// takes any takes all). Outcomes per ref as git reports them; the error
// says which remote and why.
func (t Transport) PushRefs(ctx context.Context, r Remote, ups []RefPush, atomic bool) ([]PushedRef, error) {
	s := t.s
	if err := ValidRemote(r.URL); err != nil {
		return nil, err
	}
	if len(ups) == 0 {
		return nil, errors.New("push: nothing to push")
	}
	args := []string{"push", "--porcelain", "--no-recurse-submodules", "--no-verify"}
	if atomic {
		args = append(args, "--atomic")
	}
	sorted := append([]RefPush(nil), ups...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Dst < sorted[j].Dst })
	var specs []string
	for _, u := range sorted {
		if !gitobj.IsID(u.Src) || u.Lease != "" && !gitobj.IsID(u.Lease) || validRefName(u.Dst) != nil || !strings.HasPrefix(u.Dst, "refs/") {
			return nil, fmt.Errorf("push: bad update %s -> %s (lease %q)", u.Src, u.Dst, u.Lease)
		}
		if u.Leased {
			args = append(args, "--force-with-lease="+u.Dst+":"+u.Lease)
		}
		specs = append(specs, u.Src+":"+u.Dst)
	}
	args = append(args, "--", r.URL)
	return s.runPush(ctx, r, append(args, specs...))
}

// RemoteURL resolves r to the URL git pushes to: a configured remote's
// push URL (`git remote get-url --push`, insteadOf applied), else r.URL
// itself, a local path made absolute against r.Dir. Anchors key what they
// remember about a remote by it, so a remote renamed is still itself.
func (t Transport) RemoteURL(ctx context.Context, r Remote) (string, error) {
	s := t.s
	if err := ValidRemote(r.URL); err != nil {
		return "", err
	}
	cmd := s.git(ctx, r, "remote", "get-url", "--push", "--", r.URL)
	if out, err := cmd.Output(); err == nil {
		if u := strings.TrimSpace(string(out)); u != "" {
			return u, nil
		}
	}
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	u := r.URL
	// Not a configured remote: a URL, to which insteadOf may apply.
	if strings.Contains(u, "://") || isSCPLike(u) {
		if out, err := s.git(ctx, r, "ls-remote", "--get-url", "--", u).Output(); err == nil {
			if v := strings.TrimSpace(string(out)); v != "" {
				u = v
			}
		}
	}
	if !strings.Contains(u, "://") && !isSCPLike(u) {
		if !filepath.IsAbs(u) {
			base := r.Dir
			if base == "" {
				base = s.loc.WorkTree
			}
			if base == "" {
				base = s.loc.CommonDir
			}
			u = filepath.Join(base, u)
		}
		u = filepath.Clean(u)
		if _, err := os.Stat(u); err != nil {
			return "", fmt.Errorf("%s is not a remote of this repository (`git remote -v` lists them), a URL, or an existing path", QuotePath(r.URL))
		}
	}
	return u, nil
}

// isSCPLike: host:path, git's scp-like ssh syntax (a colon before any
// slash, and not a Windows drive letter).
func isSCPLike(u string) bool {
	c := strings.IndexByte(u, ':')
	s := strings.IndexByte(u, '/')
	return c > 1 && (s < 0 || c < s)
}

// LsRemoteRefs returns the remote's refs matching patterns (git ls-remote
// patterns: a full ref name, or a glob such as refs/lossless-anchor/*),
// tags' peeled "^{}" lines left out, from the user's own `git ls-remote`.
func (t Transport) LsRemoteRefs(ctx context.Context, r Remote, patterns ...string) (map[string]string, error) {
	s := t.s
	if err := ValidRemote(r.URL); err != nil {
		return nil, err
	}
	for _, p := range patterns {
		if !strings.HasPrefix(p, "refs/") {
			return nil, fmt.Errorf("ls-remote pattern %q must start with refs/", p)
		}
	}
	out, err := s.lsRemote(ctx, r, patterns)
	if err != nil {
		return nil, err
	}
	return parseLsRemote(out, nil)
}
