package anchor

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/git-lossless/git-lossless/gitstore"
)

// Local anchor state, under <common dir>/lossless/anchor/ (0700, files
// 0600): derived and small, but not all of it rebuildable — the pinned
// keys and the per-remote records are what this machine saw, which is the
// point of a witness. Deleting it loses that memory, never the archive.
//
//	clone                this clone's id (random, made on first use)
//	keys/<machine>       the public key first seen for a machine (pinned)
//	remotes/<rid>.json   per remote: what was last anchored there
//	evidence/            both signed checkpoints of every alarm
//
// <rid> is the first 16 hex digits of sha256 of the remote's resolved URL,
// so a remote renamed or reached by another name is still the same.

func stateDir(st *gitstore.Store, parts ...string) string {
	return filepath.Join(append([]string{st.Location().CommonDir, "lossless", "anchor"}, parts...)...)
}

// writeState writes data at path atomically (temporary file, fsync,
// rename), 0600, creating its directories 0700.
func writeState(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"~*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// CloneID returns this clone's id (gitstore.Store.CloneID): it tells
// two clones of one repository apart, each with its own writers and its
// own checkpoint chain.
func CloneID(ctx context.Context, st *gitstore.Store) (string, error) { return st.CloneID(ctx) }

// RemoteID is the short stable id of a remote's resolved URL.
func RemoteID(url string) string {
	sum := sha256.Sum256([]byte(url))
	return hex.EncodeToString(sum[:8])
}

// RemoteRecord is what this machine last anchored on one remote.
type RemoteRecord struct {
	Remote     string    `json:"remote"` // as the user named it
	URL        string    `json:"url"`    // resolved
	Mode       string    `json:"mode"`   // ref, tags or path
	N          int64     `json:"n"`
	Commit     string    `json:"commit,omitempty"` // the checkpoint commit (ref mode), or the tag's target
	Tag        string    `json:"tag,omitempty"`    // the tag object (tags mode)
	Time       time.Time `json:"time"`
	Checkpoint string    `json:"checkpoint"` // the signed checkpoint
}

// ReadRecords returns every remote's records, by "<remote id>.<mode>":
// one per mode, as a remote can hold ref-mode and tags-mode anchors both.
func ReadRecords(st *gitstore.Store) (map[string]RemoteRecord, error) {
	ents, err := os.ReadDir(stateDir(st, "remotes"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string]RemoteRecord{}
	for _, e := range ents {
		key, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(stateDir(st, "remotes"), e.Name()))
		if err != nil {
			return nil, err
		}
		var r RemoteRecord
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, fmt.Errorf("anchor record %s: %w", e.Name(), err)
		}
		out[key] = r
	}
	return out, nil
}

func writeRecord(st *gitstore.Store, r RemoteRecord) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return writeState(stateDir(st, "remotes", RemoteID(r.URL)+"."+r.Mode+".json"), append(b, '\n'))
}

// PinnedKey returns the public key pinned for machine ("" when none).
func PinnedKey(st *gitstore.Store, machine string) (string, error) {
	if validName("machine", machine) != nil {
		return "", fmt.Errorf("machine name %q", machine)
	}
	b, err := os.ReadFile(stateDir(st, "keys", machine))
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	return strings.TrimSpace(string(b)), err
}

// pinKey pins vkey for its machine on first sight and returns the pinned
// key: the same when it was pinned before, the old one when it differs
// (the caller reports a changed key).
func pinKey(st *gitstore.Store, vkey string) (string, error) {
	v, err := ParseVerifierKey(vkey)
	if err != nil {
		return "", err
	}
	old, err := PinnedKey(st, v.Name())
	if err != nil || old != "" {
		return old, err
	}
	p := stateDir(st, "keys", v.Name())
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return "", err
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return PinnedKey(st, v.Name())
	}
	if err != nil {
		return "", err
	}
	_, err = f.WriteString(strings.TrimSpace(vkey) + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return strings.TrimSpace(vkey), err
}

// verifierFor returns the verifier to check machine's checkpoints with:
// this machine's own key, else the pinned one.
func verifierFor(st *gitstore.Store, own *Key, machine string) (note.Verifier, error) {
	if own != nil && own.Name() == machine {
		return own.Verifier, nil
	}
	vkey, err := PinnedKey(st, machine)
	if err != nil {
		return nil, err
	}
	if vkey == "" {
		return nil, fmt.Errorf("no public key pinned for machine %s", machine)
	}
	return ParseVerifierKey(vkey)
}

// recordAnchoredHeads records (gitstore.RecordCheckpoint) the writer
// heads of every checkpoint this clone anchored (the last one per remote)
// or accepted from a remote (the newest per machine's clone per remote)
// whose signature checks, so that every store's Verify compares chains
// with them. Accepting and anchoring record them as they happen; this
// pass rebuilds what an older version, or a deleted anchored/ directory,
// left unrecorded, and costs a digest per checkpoint when nothing is
// missing. A checkpoint that does not check is a Finding.
func recordAnchoredHeads(ctx context.Context, st *gitstore.Store) ([]Finding, error) {
	recorded, err := st.RecordedCheckpoints(ctx)
	if err != nil {
		return nil, err
	}
	all, bad, err := anchoredCheckpoints(ctx, st, func(signed []byte) bool {
		return recorded[Digest(signed)]
	})
	if err != nil {
		return nil, err
	}
	for _, a := range all {
		if err := recordCheckpointHeads(ctx, st, a.Checkpoint, a.Signed, nil, a.Own, a.Where); err != nil {
			return nil, err
		}
	}
	return bad, nil
}

// recordCheckpointHeads records the writer heads of c (signed: its signed
// bytes); where names the remote it was anchored on or seen on. prevSigned
// (nil: none) is an earlier checkpoint of the same chain: when its heads
// were recorded, the heads it names as they are now are not written
// again, which keeps a push of one changed writer among thousands cheap.
// A prev whose heads were not recorded (anchored/ deleted since) saves
// nothing, so every head of c is recorded.
func recordCheckpointHeads(ctx context.Context, st *gitstore.Store, c *Checkpoint, signed, prevSigned []byte, own bool, where string) error {
	var prev *Checkpoint
	if prevSigned != nil {
		if done, err := st.CheckpointRecorded(ctx, Digest(prevSigned)); err == nil && done {
			prev, _ = ParseText(noteText(prevSigned))
		}
	}
	kind := gitstore.AnchoredSeen
	if own {
		kind = gitstore.AnchoredOwn
	}
	label := fmt.Sprintf("%s, checkpoint %s/%s #%d of %s", where, c.Machine, c.Clone, c.N, c.Time.Format(time.RFC3339))
	heads := make([]gitstore.AnchoredHead, 0, len(c.Writers))
	for _, w := range c.Writers {
		if prev != nil {
			if pw, ok := prev.Writer(w.Name); ok && pw == w {
				continue
			}
		}
		heads = append(heads, gitstore.AnchoredHead{Writer: w.Name, Seq: w.Entries, Seal: w.Seal})
	}
	return st.RecordCheckpoint(ctx, Digest(signed), heads, kind, label)
}

// seenCheckpoint is the newest accepted checkpoint of one machine's clone
// on one remote.
type seenCheckpoint struct {
	Remote string // the remote's name, from its record (else its id)
	Key    string // <machine>/<clone>
	Signed []byte
}

// seenCheckpoints reads the accepted (seen) tracking refs and tags.
func seenCheckpoints(ctx context.Context, st *gitstore.Store) ([]seenCheckpoint, error) {
	refs, err := st.Objects().RefsUnder(ctx, gitstore.TrackingPrefix)
	if err != nil {
		return nil, err
	}
	recs, _ := ReadRecords(st)
	names := remoteNames(st)
	for _, r := range recs {
		names[RemoteID(r.URL)] = r.Remote
	}
	newestTag := map[string]int64{} // rid + key -> n
	tagOf := map[string]string{}
	var out []seenCheckpoint
	keys := make([]string, 0, len(refs))
	for k := range refs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, ref := range keys {
		rest := strings.TrimPrefix(ref, gitstore.TrackingPrefix)
		rid, rest, ok := strings.Cut(rest, "/")
		if !ok {
			continue
		}
		remote := names[rid]
		if remote == "" {
			remote = rid
		}
		switch {
		case strings.HasPrefix(rest, "seen/anchor/"):
			key := strings.TrimPrefix(rest, "seen/anchor/")
			cf, err := st.Objects().ReadCommitFiles(ctx, refs[ref])
			if err != nil {
				continue
			}
			if b := cf.Files[checkpointFile]; b != nil {
				out = append(out, seenCheckpoint{Remote: remote, Key: key, Signed: b})
			}
		case strings.HasPrefix(rest, "seen/tags/"):
			key := strings.TrimPrefix(rest, "seen/tags/")
			i := strings.LastIndexByte(key, '/')
			if i < 0 {
				continue
			}
			n, err := strconv.ParseInt(key[i+1:], 10, 64)
			if err != nil {
				continue
			}
			k := rid + " " + key[:i]
			if n > newestTag[k] {
				newestTag[k], tagOf[k] = n, refs[ref]
			}
		}
	}
	tk := make([]string, 0, len(tagOf))
	for k := range tagOf {
		tk = append(tk, k)
	}
	sort.Strings(tk)
	for _, k := range tk {
		t, err := st.Objects().ReadTag(ctx, tagOf[k])
		if err != nil {
			continue
		}
		rid, key, _ := strings.Cut(k, " ")
		remote := names[rid]
		if remote == "" {
			remote = rid
		}
		out = append(out, seenCheckpoint{Remote: remote, Key: key, Signed: []byte(t.Message)})
	}
	// Anchor directories (path mode): the newest accepted file per clone.
	ents, err := os.ReadDir(stateDir(st, "paths"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	for _, e := range ents {
		rid, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok {
			continue
		}
		b, err := os.ReadFile(filepath.Join(stateDir(st, "paths"), e.Name()))
		if err != nil {
			return nil, err
		}
		var ps pathSeen
		if json.Unmarshal(b, &ps) != nil {
			continue
		}
		remote := names[rid]
		if remote == "" {
			remote = rid
		}
		ks := make([]string, 0, len(ps.Newest))
		for k := range ps.Newest {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		for _, k := range ks {
			out = append(out, seenCheckpoint{Remote: remote, Key: k, Signed: []byte(ps.Newest[k])})
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// AnchoredCheckpoints returns every checkpoint this machine anchored (the
// last per remote) or accepted from a remote (the newest per clone per
// remote) whose signature checks, with where it was seen.
func AnchoredCheckpoints(ctx context.Context, st *gitstore.Store) ([]Anchored, error) {
	all, _, err := anchoredCheckpoints(ctx, st, nil)
	return all, err
}

// anchoredCheckpoints is AnchoredCheckpoints, with a Finding for each
// recorded or accepted checkpoint that no longer checks: local anchor
// state that was tampered with (a seen ref pointed at a forged checkpoint,
// a record edited) is a failure, not something to skip.
//
// skip, when set, leaves out (unchecked) the signed checkpoints it
// returns true for: those recorded before, whose bytes were checked then.
func anchoredCheckpoints(ctx context.Context, st *gitstore.Store, skip func(signed []byte) bool) ([]Anchored, []Finding, error) {
	own, err := ownKey()
	if err != nil {
		return nil, nil, err
	}
	var out []Anchored
	var bad []Finding
	recs, err := ReadRecords(st)
	if err != nil {
		return nil, nil, err
	}
	rids := make([]string, 0, len(recs))
	for rid := range recs {
		rids = append(rids, rid)
	}
	sort.Strings(rids)
	for _, rid := range rids {
		r := recs[rid]
		if skip != nil && skip([]byte(r.Checkpoint)) {
			continue
		}
		if own == nil {
			bad = append(bad, Finding{Kind: KindBadSignature, Remote: r.Remote, Detail: fmt.Sprintf("the record of checkpoint %d anchored on %s cannot be checked: this machine's anchor key is gone (%s)", r.N, r.Remote, "git lossless anchor key")})
			continue
		}
		c, err := OpenSigned([]byte(r.Checkpoint), own.Verifier)
		if err != nil {
			bad = append(bad, Finding{Kind: KindBadSignature, Remote: r.Remote, Detail: fmt.Sprintf("the local record of checkpoint %d anchored on %s does not check with this machine's key: %v", r.N, r.Remote, err)})
			continue
		}
		out = append(out, Anchored{Where: "anchored on " + r.Remote, Own: true, Record: &r, Checkpoint: c, Signed: []byte(r.Checkpoint)})
	}
	seen, err := seenCheckpoints(ctx, st)
	if err != nil {
		return nil, nil, err
	}
	clone, err := CloneID(ctx, st)
	if err != nil {
		return nil, nil, err
	}
	for _, s := range seen {
		if skip != nil && skip(s.Signed) {
			continue
		}
		machine := signerName(s.Signed)
		v, err := verifierFor(st, own, machine)
		var c *Checkpoint
		if err == nil {
			c, err = OpenSigned(s.Signed, v)
		}
		if err != nil {
			bad = append(bad, Finding{Kind: KindBadSignature, Remote: s.Remote, Clone: s.Key, Detail: fmt.Sprintf("the checkpoint accepted from %s for %s does not check: %v", s.Remote, s.Key, err)})
			continue
		}
		// Own: this clone's, not another clone's of this machine.
		out = append(out, Anchored{Where: "seen on " + s.Remote, Own: own != nil && c.Machine == own.Name() && c.Clone == clone, Checkpoint: c, Signed: s.Signed})
	}
	return out, bad, nil
}

// Anchored is a checkpoint this machine anchored or accepted.
type Anchored struct {
	Where      string
	Own        bool          // made by this machine
	Record     *RemoteRecord // for one anchored from here: the remote's record
	Checkpoint *Checkpoint
	Signed     []byte // the signed checkpoint
}

// CheckNotes compares the local notes refs (receipts) with the notes heads
// anchored in checkpoints: each anchored head must still be in the local
// ref's history, so a receipt dropped by rolling a notes ref back is
// caught (receipt verify alone sees only the receipts still there). Notes
// refs of other machines' checkpoints are checked only where they exist
// here.
func CheckNotes(ctx context.Context, st *gitstore.Store) ([]Finding, error) {
	all, err := AnchoredCheckpoints(ctx, st)
	if err != nil {
		return nil, err
	}
	var out []Finding
	done := map[string]bool{}
	for _, a := range all {
		for _, n := range a.Checkpoint.Notes {
			k := n.Name + " " + n.Commit
			if done[k] {
				continue
			}
			done[k] = true
			local, err := st.Objects().Ref(ctx, gitstore.NotesPrefix+n.Name)
			if err != nil {
				return nil, err
			}
			if local == "" && !a.Own {
				continue
			}
			ok := false
			if local != "" {
				ok, _ = st.Objects().IsAncestor(ctx, n.Commit, local, 0)
			}
			if !ok {
				what := "is gone"
				if local != "" {
					what = fmt.Sprintf("is at %.12s, whose history lacks it", local)
				}
				out = append(out, Finding{Kind: KindMismatch, Remote: a.Where, Clone: a.Checkpoint.Machine + "/" + a.Checkpoint.Clone,
					Writer: "notes:" + n.Name,
					Detail: fmt.Sprintf("notes ref %s%s was anchored at %.12s (checkpoint %d); the local ref %s: receipts were dropped or rewritten", gitstore.NotesPrefix, n.Name, n.Commit, a.Checkpoint.N, what)})
			}
		}
	}
	return out, nil
}

// ownKey loads this machine's anchor key without creating it (nil when
// there is none yet).
func ownKey() (*Key, error) {
	p, err := KeyPath()
	if err != nil {
		return nil, err
	}
	k, err := LoadKey(p, "", false)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return k, err
}

// writeEvidence keeps both signed checkpoints of an alarm and returns the
// file's path.
func writeEvidence(st *gitstore.Store, rid, kind string, now time.Time, parts ...[]byte) (string, error) {
	var b bytes.Buffer
	for i, p := range parts {
		if i > 0 {
			b.WriteString("\n----\n\n")
		}
		b.Write(p)
	}
	// The digest of the content keeps two alarms of one second apart.
	p := stateDir(st, "evidence", fmt.Sprintf("%s-%s-%s-%.8s.txt", now.UTC().Format("20060102T150405Z"), rid, kind, Digest(b.Bytes())))
	return p, writeState(p, b.Bytes())
}

// rememberRemote notes a remote's name and URL by its id, so that
// checkpoints fetched from it are reported by name (best effort).
func rememberRemote(st *gitstore.Store, name, url string) {
	_ = writeState(stateDir(st, "names", RemoteID(url)), []byte(name+"\n"+url+"\n"))
}

// remoteNames returns the remembered names by remote id.
func remoteNames(st *gitstore.Store) map[string]string {
	out := map[string]string{}
	ents, err := os.ReadDir(stateDir(st, "names"))
	if err != nil {
		return out
	}
	for _, e := range ents {
		if b, err := os.ReadFile(filepath.Join(stateDir(st, "names"), e.Name())); err == nil {
			name, _, _ := strings.Cut(string(b), "\n")
			out[e.Name()] = name
		}
	}
	return out
}
