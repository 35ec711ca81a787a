package anchor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
)

// Files of a checkpoint commit's tree.
const (
	checkpointFile = "checkpoint" // the signed checkpoint
	keyFile        = "key.pub"    // the signing machine's public key
)

// Modes of an anchor.
const (
	ModeRef  = "ref"  // refs/lossless-anchor/<machine>/<clone>, fast-forward only
	ModeTags = "tags" // refs/tags/lossless-anchor/<machine>/<clone>/<n>, never moved
	ModePath = "path" // <dir>/lossless-anchor/<machine>/<clone>/<n>.checkpoint files
)

// AnchorRef returns the ref of a clone's checkpoint chain.
func AnchorRef(machine, clone string) string {
	return gitstore.AnchorPrefix + machine + "/" + clone
}

// TagName returns the tag (without refs/tags/) of a clone's n-th
// checkpoint in tags mode.
func TagName(machine, clone string, n int64) string {
	return strings.TrimPrefix(gitstore.AnchorTagPrefix, "refs/tags/") + machine + "/" + clone + "/" + strconv.FormatInt(n, 10)
}

// Made is the local checkpoint an anchor push sends.
type Made struct {
	Checkpoint *Checkpoint
	Signed     []byte
	Commit     string // the checkpoint commit on AnchorRef
	New        bool   // made now (false: nothing changed since the last one, which is reused)
	VKey       string // the public key that signed it
	Skipped    []string
	// PrevSigned is the signed checkpoint before it on this clone's chain
	// (nil for the first), whose recorded heads need not be written again.
	PrevSigned []byte
}

// MakeCheckpoint makes this clone's next checkpoint of every writer's head
// and every notes ref, signed with key, as a commit on its AnchorRef —
// unless nothing changed since the last one, which is then returned as it
// is (one signature per change, not per push). Writers whose head cannot be
// read are left out and named in Skipped.
func MakeCheckpoint(ctx context.Context, st *gitstore.Store, key *Key, now time.Time) (*Made, error) {
	clone, err := CloneID(ctx, st)
	if err != nil {
		return nil, fmt.Errorf("clone id: %w", err)
	}
	ref := AnchorRef(key.Name(), clone)
	for attempt := 0; ; attempt++ {
		cur, err := st.Objects().Ref(ctx, ref)
		if err != nil {
			return nil, err
		}
		var last *Checkpoint
		var lastSigned []byte
		if cur != "" {
			cf, err := st.Objects().ReadCommitFiles(ctx, cur)
			if err != nil {
				return nil, fmt.Errorf("last checkpoint %s: %w", ref, err)
			}
			lastSigned = cf.Files[checkpointFile]
			if last, err = OpenSigned(lastSigned, key.Verifier); err != nil {
				return nil, fmt.Errorf("last checkpoint on %s does not check with this machine's key: %w", ref, err)
			}
		}
		c := &Checkpoint{Machine: key.Name(), Clone: clone, N: 1, Time: now.UTC().Truncate(time.Second)}
		var skipped []string
		ws, err := st.Writers(ctx)
		if err != nil {
			return nil, err
		}
		for _, w := range ws {
			if w.Err != "" || w.Seq < 1 {
				skipped = append(skipped, fmt.Sprintf("%s (%s)", w.Name, w.Err))
				continue
			}
			c.Writers = append(c.Writers, WriterHead{Name: w.Name, Entries: w.Seq, Seal: w.Seal, Commit: w.Commit})
		}
		notes, err := st.Objects().RefsUnder(ctx, gitstore.NotesPrefix)
		if err != nil {
			return nil, err
		}
		for r, id := range notes {
			c.Notes = append(c.Notes, NotesHead{Name: strings.TrimPrefix(r, gitstore.NotesPrefix), Commit: id})
		}
		sort.Slice(c.Writers, func(i, j int) bool { return c.Writers[i].Name < c.Writers[j].Name })
		sort.Slice(c.Notes, func(i, j int) bool { return c.Notes[i].Name < c.Notes[j].Name })
		if last != nil {
			if sameHeads(last, c) {
				return &Made{Checkpoint: last, Signed: lastSigned, Commit: cur, VKey: key.VKey, Skipped: skipped}, nil
			}
			c.N, c.Prev = last.N+1, Digest(lastSigned)
			if !c.Time.After(last.Time) {
				c.Time = last.Time.Add(time.Second) // a clock set back still orders them
			}
		}
		// Sign only chains that verify: a checkpoint vouches for every head
		// it names, so a broken writer (rolled back, forked, foreign
		// batches) is refused here rather than anchored as this clone's.
		if changed := changedWriters(last, c); len(changed) > 0 {
			v, err := Check(ctx, st, CheckOptions{Writers: changed, SkipContent: true, ChainsOnly: true})
			if err != nil {
				return nil, fmt.Errorf("verify before anchoring: %w", err)
			}
			if n := v.Broken(); n > 0 {
				var names []string
				for _, r := range v.Writers {
					if !r.OK() {
						names = append(names, fmt.Sprintf("%s (%s at entry %d)", r.Writer, r.Break.Kind, r.Break.Seq))
					}
				}
				return nil, fmt.Errorf("refusing to anchor: %s failed verification: %s; run `git lossless verify`", plural(n, "writer"), strings.Join(names, ", "))
			}
		}
		signed, err := Sign(c, key.Signer)
		if err != nil {
			return nil, err
		}
		msg := fmt.Sprintf("git-lossless checkpoint %d of %s/%s\n\n%d writers, %d notes refs.\n", c.N, c.Machine, c.Clone, len(c.Writers), len(c.Notes))
		commit, err := st.Objects().CommitFiles(ctx, ref, cur, []gitstore.TreeFile{
			{Name: checkpointFile, Data: signed},
			{Name: keyFile, Data: []byte(key.VKey + "\n")},
		}, msg, "", c.Time)
		if errors.Is(err, gitstore.ErrRefChanged) && attempt < 8 {
			continue // another process made a checkpoint: build on it
		}
		if err != nil {
			return nil, err
		}
		return &Made{Checkpoint: c, Signed: signed, Commit: commit, New: true, VKey: key.VKey, Skipped: skipped, PrevSigned: lastSigned}, nil
	}
}

// changedWriters lists the writers of c whose head is not the one last
// names (all of them when there is no last).
func changedWriters(last, c *Checkpoint) []string {
	var out []string
	for _, w := range c.Writers {
		if last != nil {
			if lw, ok := last.Writer(w.Name); ok && lw == w {
				continue
			}
		}
		out = append(out, w.Name)
	}
	return out
}

func sameHeads(a, b *Checkpoint) bool {
	if len(a.Writers) != len(b.Writers) || len(a.Notes) != len(b.Notes) {
		return false
	}
	for i := range a.Writers {
		if a.Writers[i] != b.Writers[i] {
			return false
		}
	}
	for i := range a.Notes {
		if a.Notes[i] != b.Notes[i] {
			return false
		}
	}
	return true
}

// Target is one place to anchor: a git remote (ref or tags mode) or a
// directory (path mode).
type Target struct {
	Remote string // as the user named it: a remote name, URL or path
	Mode   string // ModeRef, ModeTags or ModePath
	Dir    string // where git runs (relative paths resolve there)
}

// Sent is the outcome of anchoring on one target.
type Sent struct {
	Target   Target
	URL      string
	UpToDate bool   // the target had this checkpoint already
	Err      error  // nil: anchored, and recorded locally
	Pushed   string // what was sent: the ref or tag, or the file
}

// Send anchors made on every target and records, per target, the last
// checkpoint anchored there. A target that fails (network, auth, a
// rejected update) is recorded as nothing and its error says which remote
// and why; the others go on.
func Send(ctx context.Context, st *gitstore.Store, made *Made, targets []Target) []Sent {
	out := make([]Sent, 0, len(targets))
	for _, t := range targets {
		s := Sent{Target: t}
		s.URL, s.Err = resolve(ctx, st, t)
		if s.Err == nil {
			switch t.Mode {
			case ModeRef:
				s.UpToDate, s.Pushed, s.Err = sendRef(ctx, st, made, t, s.URL)
			case ModeTags:
				s.UpToDate, s.Pushed, s.Err = sendTag(ctx, st, made, t, s.URL)
			case ModePath:
				s.UpToDate, s.Pushed, s.Err = sendPath(made, s.URL)
			default:
				s.Err = fmt.Errorf("anchor mode %q: want ref, tags or path", t.Mode)
			}
		}
		if s.Err == nil {
			rec := RemoteRecord{Remote: t.Remote, URL: s.URL, Mode: t.Mode, N: made.Checkpoint.N, Commit: made.Commit,
				Time: made.Checkpoint.Time, Checkpoint: string(made.Signed)}
			if err := writeRecord(st, rec); err != nil {
				s.Err = fmt.Errorf("anchored on %s, but the local record failed: %w", t.Remote, err)
			} else if err := recordCheckpointHeads(ctx, st, made.Checkpoint, made.Signed, made.PrevSigned, true, "anchored on "+t.Remote); err != nil {
				s.Err = fmt.Errorf("anchored on %s, but the local record failed: %w", t.Remote, err)
			}
		}
		out = append(out, s)
	}
	return out
}

func resolve(ctx context.Context, st *gitstore.Store, t Target) (string, error) {
	if t.Mode == ModePath {
		p := t.Remote
		if !filepath.IsAbs(p) {
			base := t.Dir
			if base == "" {
				base, _ = os.Getwd()
			}
			p = filepath.Join(base, p)
		}
		return filepath.Clean(p), nil
	}
	return st.Transport().RemoteURL(ctx, gitstore.Remote{URL: t.Remote, Dir: t.Dir})
}

// sendRef pushes the checkpoint commit as the clone's anchor ref,
// fast-forward only: the remote refuses to move it anywhere else.
func sendRef(ctx context.Context, st *gitstore.Store, made *Made, t Target, url string) (bool, string, error) {
	ref := AnchorRef(made.Checkpoint.Machine, made.Checkpoint.Clone)
	res, err := st.Transport().PushRefs(ctx, gitstore.Remote{URL: url, Dir: t.Dir}, []gitstore.RefPush{{Src: made.Commit, Dst: ref}}, false)
	if err != nil {
		for _, r := range res {
			if !r.OK && (strings.Contains(r.Summary, "non-fast-forward") || strings.Contains(r.Summary, "fetch first")) {
				return false, ref, fmt.Errorf("%s refused %s: it holds a checkpoint this clone never made (rolled back here, or forged there): run `git lossless verify --anchor %s`", t.Remote, ref, t.Remote)
			}
		}
		return false, ref, err
	}
	up := len(res) == 1 && res[0].Flag == "="
	return up, ref, nil
}

// sendTag creates the checkpoint's annotated tag (message: the signed
// checkpoint; object: the checkpoint commit) and pushes it as a new tag.
// A tag already there with the same object is up to date; with another,
// refused (tags are never moved).
func sendTag(ctx context.Context, st *gitstore.Store, made *Made, t Target, url string) (bool, string, error) {
	c := made.Checkpoint
	name := TagName(c.Machine, c.Clone, c.N)
	ref := "refs/tags/" + name
	id, err := st.Objects().Ref(ctx, ref)
	if err != nil {
		return false, ref, err
	}
	if id == "" {
		id, err = st.Objects().WriteTag(ctx, name, made.Commit, string(made.Signed), "", c.Time)
		if errors.Is(err, gitstore.ErrRefChanged) {
			id, err = st.Objects().Ref(ctx, ref) // made by a concurrent push of this checkpoint
		}
		if err != nil {
			return false, ref, err
		}
	}
	r := gitstore.Remote{URL: url, Dir: t.Dir}
	res, err := st.Transport().PushRefs(ctx, r, []gitstore.RefPush{{Src: id, Dst: ref, Leased: true}}, false)
	if err != nil {
		remote, lerr := lsRemote(ctx, st, r, ref)
		if lerr == nil && remote == id {
			return true, ref, nil // pushed before (the lease saw it there)
		}
		if lerr == nil && remote != "" {
			return false, ref, fmt.Errorf("%s holds another %s (%.12s, not %.12s): anchor tags are never moved; run `git lossless verify --anchor %s`", t.Remote, ref, remote, id, t.Remote)
		}
		return false, ref, err
	}
	up := len(res) == 1 && res[0].Flag == "="
	return up, ref, nil
}

// lsRemote returns the remote's value of one ref ("" when it lacks it).
func lsRemote(ctx context.Context, st *gitstore.Store, r gitstore.Remote, ref string) (string, error) {
	refs, err := st.Transport().LsRemoteRefs(ctx, r, ref)
	if err != nil {
		return "", err
	}
	return refs[ref], nil
}

// sendPath writes the checkpoint as <dir>/lossless-anchor/<machine>/<clone>/<n>.checkpoint
// (and key.pub beside it), never over an existing file: a file there with
// other bytes is a fork, refused.
func sendPath(made *Made, dir string) (bool, string, error) {
	c := made.Checkpoint
	d := filepath.Join(dir, "lossless-anchor", c.Machine, c.Clone)
	if err := os.MkdirAll(d, 0o700); err != nil {
		return false, d, fmt.Errorf("anchor directory: %w", err)
	}
	p := filepath.Join(d, strconv.FormatInt(c.N, 10)+".checkpoint")
	if b, err := os.ReadFile(p); err == nil {
		if bytes.Equal(b, made.Signed) {
			return true, p, nil
		}
		return false, p, fmt.Errorf("%s holds another checkpoint %d: run `git lossless verify --anchor %s`", p, c.N, dir)
	}
	if err := writeNew(p, made.Signed); err != nil {
		return false, p, err
	}
	kp := filepath.Join(d, keyFile)
	if _, err := os.Stat(kp); errors.Is(err, os.ErrNotExist) {
		if err := writeNew(kp, []byte(made.VKey+"\n")); err != nil && !errors.Is(err, os.ErrExist) {
			return false, p, err
		}
	}
	return false, p, nil
}

// writeNew creates path with data (0600), fsyncs it and its directory; an
// existing file is an error (os.ErrExist).
func writeNew(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return err
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
