package anchor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/git-lossless/git-lossless/gitstore"
)

// Alarm kinds of a remote's checkpoints (FORMAT.md, "Checking an anchor").
const (
	// KindRollback: the remote's checkpoints moved backwards from what this
	// machine saw there before (a checkpoint ref reset to an older one or
	// deleted, a tag deleted): history rewritten there.
	KindRollback = "anchor-rollback"
	// KindFork: they moved sideways (a checkpoint ref that is neither
	// ahead of nor behind what was seen, a tag pointed elsewhere, a
	// checkpoint of this clone that this clone never made, a chain of
	// checkpoints that contradicts itself).
	KindFork = "anchor-fork"
	// KindBadSignature: a checkpoint whose signature does not check with
	// its machine's key.
	KindBadSignature = "anchor-bad-signature"
	// KindKeyChanged: a machine's checkpoints are signed by another key
	// than the one pinned when it was first seen.
	KindKeyChanged = "anchor-key-changed"
	// KindMismatch: the local chain (or notes ref) does not extend a head
	// anchored in a checkpoint: history rewritten here. Reported by
	// verify (seal.AnchorMismatch) and by CheckNotes.
	KindMismatch = "anchor-mismatch"
)

// Finding is one alarm about a remote's checkpoints.
type Finding struct {
	Kind     string `json:"kind"`
	Remote   string `json:"remote"`
	Clone    string `json:"checkpoints"`      // <machine>/<clone>
	Writer   string `json:"writer,omitempty"` // the writer whose anchored head moved ("" for the whole checkpoint)
	Detail   string `json:"detail"`
	Evidence string `json:"evidence,omitempty"` // the file keeping both signed checkpoints

	Seen, Now []byte `json:"-"` // the signed checkpoints compared ("" when none)
}

// RemoteCheck is what checking one remote's checkpoints found.
type RemoteCheck struct {
	Remote   string    `json:"remote"`
	URL      string    `json:"url"`
	Mode     string    `json:"mode"`
	Clones   int       `json:"checkpoint_chains"` // machine clones with checkpoints there
	Accepted int       `json:"accepted"`          // checkpoints (tips, tags or files) newly accepted
	Findings []Finding `json:"findings"`
}

// OK reports whether nothing was found.
func (r *RemoteCheck) OK() bool { return len(r.Findings) == 0 }

// trackingRef names a tracking ref of remote rid.
func trackingRef(rid, part string) string { return gitstore.TrackingPrefix + rid + "/" + part }

// CheckRemote fetches a remote's checkpoints (refs and tags) into
// tracking refs — refs/lossless-tracking/<rid>/incoming/..., never over a
// local ref — and compares them with what this machine accepted from it
// before (.../seen/...): each clone's checkpoint chain must only have
// grown, each tag must be where it was, every new checkpoint must be
// signed by its machine's pinned key and name its predecessor, and this
// clone's own checkpoints there must be ones it made and not older than
// what it last anchored there. What checks is accepted (seen moves up);
// what does not stays as it was, and both signed checkpoints are kept as
// evidence. A target in path mode is read from its directory instead.
func CheckRemote(ctx context.Context, st *gitstore.Store, t Target, now time.Time) (*RemoteCheck, error) {
	url, err := resolve(ctx, st, t)
	if err != nil {
		return nil, err
	}
	rc := &RemoteCheck{Remote: t.Remote, URL: url, Mode: t.Mode, Findings: []Finding{}}
	own, err := ownKey()
	if err != nil {
		return nil, err
	}
	rid := RemoteID(url)
	rememberRemote(st, t.Remote, url)
	recs, err := ReadRecords(st)
	if err != nil {
		return nil, err
	}
	if t.Mode == ModePath {
		rec, hasRec := recs[rid+"."+ModePath]
		if err := checkPath(ctx, st, rc, rid, own, rec, hasRec, now); err != nil {
			return rc, err
		}
		return rc, saveAlarms(st, rid, alarmsAnchors, t.Remote, url, rc.Findings, now)
	}
	r := gitstore.Remote{URL: url, Dir: t.Dir}
	q, err := st.Transport().FetchQuarantine(ctx, r, anchorFetchSpecs(rid), checkpointLimits)
	if errors.Is(err, gitstore.ErrOverLimit) {
		rc.Findings = append(rc.Findings, overLimit(t.Remote, err))
		return rc, saveAlarms(st, rid, alarmsAnchors, t.Remote, url, rc.Findings, now)
	}
	if err != nil {
		return nil, err
	}
	defer q.Discard()
	ck, err := checkFetched(ctx, st, q.Store(), rc, rid, own, recs, now)
	if err != nil {
		return rc, err
	}
	if err := ck.commit(ctx, q); err != nil {
		return rc, err
	}
	return rc, saveAlarms(st, rid, alarmsAnchors, t.Remote, url, rc.Findings, now)
}

// checkpointLimits bound a fetch of checkpoints alone (gitstore's
// suggested caps: a checkpoint is a few KB to a few MB).
var checkpointLimits = gitstore.FetchLimits{MaxBytes: gitstore.CheckpointFetchMaxBytes, MaxObject: gitstore.CheckpointFetchMaxObject}

// KindOverLimit: the remote serves more than a fetch may take (refs,
// bytes or one object past the caps, gitstore.FetchLimits): nothing of it
// was accepted, and nothing of it stays in the repository.
const KindOverLimit = "remote-over-limit"

// overLimit is the finding of a fetch refused past its caps.
func overLimit(remote string, err error) Finding {
	return Finding{Kind: KindOverLimit, Remote: remote, Detail: err.Error() + "; nothing of it was accepted (git config lossless.fetchMax* raises the caps for a remote you trust)"}
}

// anchorFetchSpecs fetches a remote's checkpoint refs and anchor tags into
// its incoming tracking refs.
func anchorFetchSpecs(rid string) []string {
	return []string{
		"+" + gitstore.AnchorPrefix + "*:" + trackingRef(rid, "incoming/anchor/*"),
		"+" + gitstore.AnchorTagPrefix + "*:" + trackingRef(rid, "incoming/tags/*"),
	}
}

// checkFetched compares the fetched (incoming) checkpoints of remote rid,
// read through view (the quarantine: the archive's refs with the incoming
// tracking refs as the remote lists them, and the quarantine's objects),
// with the seen ones; see CheckRemote. What it accepts is applied to st
// by the returned checker's commit, after the quarantine's objects of what
// was accepted are moved in: a checkpoint refused leaves nothing behind.
func checkFetched(ctx context.Context, st, view *gitstore.Store, rc *RemoteCheck, rid string, own *Key, recs map[string]RemoteRecord, now time.Time) (*checker, error) {
	incoming, err := view.Objects().RefsUnder(ctx, trackingRef(rid, "incoming/"))
	if err != nil {
		return nil, err
	}
	seen, err := view.Objects().RefsUnder(ctx, trackingRef(rid, "seen/"))
	if err != nil {
		return nil, err
	}
	keys := map[string]bool{}
	for k := range incoming {
		keys[strings.TrimPrefix(k, trackingRef(rid, "incoming/"))] = true
	}
	for k := range seen {
		keys[strings.TrimPrefix(k, trackingRef(rid, "seen/"))] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	tips, err := acceptedTips(ctx, st)
	if err != nil {
		return nil, err
	}
	ownClone, err := CloneID(ctx, st)
	if err != nil {
		return nil, err
	}
	ck := &checker{st: view, w: st, rc: rc, rid: rid, own: own, now: now, tips: tips, ownClone: ownClone, accept: map[string]string{}}
	clones := map[string]bool{}
	newestTag := map[string]int64{} // per clone, the newest tag the remote serves
	for _, k := range sorted {
		in, old := incoming[trackingRef(rid, "incoming/"+k)], seen[trackingRef(rid, "seen/"+k)]
		if in != "" && in == old {
			ck.accept[trackingRef(rid, "incoming/"+k)] = in // accepted before: in the archive
		}
		switch {
		case strings.HasPrefix(k, "anchor/"):
			key := strings.TrimPrefix(k, "anchor/")
			clones[key] = true
			ck.anchorRef(ctx, key, in, old)
		case strings.HasPrefix(k, "tags/"):
			key := strings.TrimPrefix(k, "tags/")
			if i := strings.LastIndexByte(key, '/'); i > 0 {
				clones[key[:i]] = true
				if n, err := strconv.ParseInt(key[i+1:], 10, 64); err == nil && in != "" && n > newestTag[key[:i]] {
					newestTag[key[:i]] = n
				}
			}
			ck.tag(ctx, key, in, old)
		}
	}
	// A chain of checkpoints is one object wherever it is served: a remote
	// whose newest tag of a chain is older than what was accepted of that
	// chain (from any remote) serves an older state of it.
	ck.behindTips(newestTag, "tag")
	// This clone's own checkpoints there: not behind what it anchored.
	for _, mode := range []string{ModeRef, ModeTags} {
		rec, hasRec := recs[rid+"."+mode]
		if own == nil || !hasRec {
			continue
		}
		key := own.Name() + "/" + ownClone
		switch rec.Mode {
		case ModeRef:
			in := incoming[trackingRef(rid, "incoming/anchor/"+key)]
			if in == "" {
				ck.alarm(Finding{Kind: KindRollback, Clone: key, Detail: fmt.Sprintf("checkpoint %d of this clone was anchored here on %s; the remote holds none now", rec.N, rec.Time.Format(time.RFC3339)),
					Seen: []byte(rec.Checkpoint)})
			} else if ok, _ := st.Objects().IsAncestor(ctx, rec.Commit, in, 0); !ok {
				ck.alarm(Finding{Kind: KindRollback, Clone: key, Detail: fmt.Sprintf("checkpoint %d of this clone was anchored here on %s; the remote's chain of this clone does not contain it", rec.N, rec.Time.Format(time.RFC3339)),
					Seen: []byte(rec.Checkpoint), Now: ck.signedAt(ctx, in)})
			}
		case ModeTags:
			tag := strings.TrimPrefix(TagName(own.Name(), ownClone, rec.N), strings.TrimPrefix(gitstore.AnchorTagPrefix, "refs/tags/"))
			if incoming[trackingRef(rid, "incoming/tags/"+tag)] == "" {
				ck.alarm(Finding{Kind: KindRollback, Clone: key, Detail: fmt.Sprintf("tag %s was anchored here on %s; the remote lacks it now", TagName(own.Name(), ownClone, rec.N), rec.Time.Format(time.RFC3339)),
					Seen: []byte(rec.Checkpoint)})
			}
		}
	}
	rc.Clones = len(clones)
	return ck, nil
}

// checker holds one CheckRemote's state.
type checker struct {
	st       *gitstore.Store   // what is read: the quarantine's view (the real store in path mode)
	w        *gitstore.Store   // what is written: the real store
	accept   map[string]string // incoming tracking ref -> id: what commit moves into the archive
	toPin    map[string]string // machine -> key seen first this check, pinned once a checkpoint checks
	seenUps  []seenUpdate      // seen refs to move once accepted objects are in
	rc       *RemoteCheck
	rid      string
	own      *Key
	now      time.Time
	tips     map[string]chainTip // the newest checkpoint accepted of each chain, from any remote
	ownClone string
}

// seenUpdate moves a seen ref from old to new.
type seenUpdate struct{ ref, old, new string }

// acceptRef marks a checkpoint ref or tag as accepted: its incoming ref
// and objects go into the archive, and its seen ref moves to it.
func (ck *checker) acceptRef(part, old, in string) {
	ck.accept[trackingRef(ck.rid, "incoming/"+part)] = in
	ck.seenUps = append(ck.seenUps, seenUpdate{trackingRef(ck.rid, "seen/"+part), old, in})
}

// commit applies what the check accepted: the accepted checkpoints'
// objects and incoming refs move from the quarantine into the archive
// (nothing else of the quarantine does), incoming refs the remote no
// longer lists are dropped (a seen ref without one is a rollback), and the
// seen refs move.
func (ck *checker) commit(ctx context.Context, q *gitstore.Quarantine) error {
	if err := q.Accept(ctx, ck.accept); err != nil {
		return fmt.Errorf("accept checkpoints: %w", err)
	}
	for ref, old := range q.Gone() {
		if !strings.HasPrefix(ref, trackingRef(ck.rid, "incoming/")) {
			continue // a writer's or notes ref's stays: its loss is gone-there
		}
		if err := ck.w.Objects().DeleteTrackingRef(ctx, ref, old); err != nil && !errors.Is(err, gitstore.ErrRefChanged) {
			return err
		}
	}
	for _, u := range ck.seenUps {
		if err := ck.w.Objects().SetRef(ctx, u.ref, u.old, u.new); err != nil {
			return fmt.Errorf("record the accepted checkpoint %s: %w", u.ref, err)
		}
	}
	return nil
}

// chainTip is the newest checkpoint of one clone's chain this clone
// accepted, from whichever remote (or anchor directory) served it.
type chainTip struct {
	N      int64
	Digest string
	Remote string
	Signed []byte
}

// acceptedTips returns, per chain (<machine>/<clone>), the newest
// checkpoint accepted from any remote: what a clone has seen of a chain
// is per chain, not per remote, so an older state served by any remote is
// a rollback and another state at the same number a fork. (Signatures
// were checked when each was accepted.)
func acceptedTips(ctx context.Context, st *gitstore.Store) (map[string]chainTip, error) {
	seen, err := seenCheckpoints(ctx, st)
	if err != nil {
		return nil, err
	}
	tips := map[string]chainTip{}
	for _, s := range seen {
		c, err := ParseText(noteText(s.Signed))
		if err != nil {
			continue // anchoredCheckpoints reports it
		}
		key := c.Machine + "/" + c.Clone
		if c.N > tips[key].N {
			tips[key] = chainTip{N: c.N, Digest: Digest(s.Signed), Remote: s.Remote, Signed: s.Signed}
		}
	}
	return tips, nil
}

// ownChain reports whether key is this clone's own checkpoint chain,
// which is judged against the local chain and the per-remote records of
// what was anchored there (a remote anchored less often than another is
// not behind its own record), not against the tips.
func (ck *checker) ownChain(key string) bool {
	return ck.own != nil && key == ck.own.Name()+"/"+ck.ownClone
}

// tipCheck compares a checkpoint n (signed) the remote serves as the
// newest of chain key with the newest accepted of that chain: older is
// anchor-rollback, another at the same number anchor-fork. It reports
// whether it raised an alarm.
func (ck *checker) tipCheck(key string, n int64, signed []byte, what string) bool {
	t, ok := ck.tips[key]
	if !ok || ck.ownChain(key) {
		return false
	}
	switch {
	case n < t.N:
		ck.alarm(Finding{Kind: KindRollback, Clone: key, Detail: fmt.Sprintf("the remote's newest %s of %s is checkpoint %d, but checkpoint %d of that chain was accepted from %s: it serves an older state of the chain (rolled back there, or never given the newer one)", what, key, n, t.N, t.Remote),
			Seen: t.Signed, Now: signed})
		return true
	case n == t.N && signed != nil && Digest(signed) != t.Digest:
		ck.alarm(Finding{Kind: KindFork, Clone: key, Detail: fmt.Sprintf("the remote's checkpoint %d of %s is not the checkpoint %d accepted from %s", n, key, n, t.Remote),
			Seen: t.Signed, Now: signed})
		return true
	}
	return false
}

// behindTips raises tipCheck's rollback for every chain whose newest
// served checkpoint (by number) is older than its accepted tip.
func (ck *checker) behindTips(newest map[string]int64, what string) {
	keys := make([]string, 0, len(newest))
	for k := range newest {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		ck.tipCheck(k, newest[k], nil, what)
	}
}

func (ck *checker) alarm(f Finding) {
	f.Remote = ck.rc.Remote
	if f.Seen != nil || f.Now != nil {
		if p, err := writeEvidence(ck.st, ck.rid, f.Kind, ck.now, labelled("seen before", f.Seen), labelled("on the remote now", f.Now)); err == nil {
			f.Evidence = p
		}
	}
	ck.rc.Findings = append(ck.rc.Findings, f)
}

func labelled(what string, signed []byte) []byte {
	if signed == nil {
		return []byte("# " + what + ": none\n")
	}
	return append([]byte("# "+what+":\n"), signed...)
}

// signedAt returns the signed checkpoint of a checkpoint commit (nil when
// unreadable).
func (ck *checker) signedAt(ctx context.Context, id string) []byte {
	if id == "" {
		return nil
	}
	cf, err := ck.st.Objects().ReadCommitFiles(ctx, id)
	if err != nil {
		return nil
	}
	return cf.Files[checkpointFile]
}

// verifier returns the key to check machine's checkpoints with: this
// machine's own, the pinned one, or — on first sight — vkey, which is
// then pinned. A vkey that differs from the pinned key is an alarm.
func (ck *checker) verifier(machine, vkey, key string) (note.Verifier, bool) {
	if ck.own != nil && ck.own.Name() == machine {
		if vkey != "" && strings.TrimSpace(vkey) != ck.own.VKey {
			ck.alarm(Finding{Kind: KindKeyChanged, Clone: key, Detail: "a checkpoint of this machine carries another public key than this machine's"})
			return nil, false
		}
		return ck.own.Verifier, true
	}
	pinned, err := PinnedKey(ck.st, machine)
	first := false
	if err == nil && pinned == "" && vkey != "" {
		// First sight: the key is pinned only once a checkpoint checks
		// with it (keyChecked), so a forged checkpoint cannot pin its
		// forger's key, and what is pinned does not depend on the order
		// the forged and the genuine ones come in.
		pinned, first = strings.TrimSpace(vkey), true
	}
	if err != nil || pinned == "" {
		ck.alarm(Finding{Kind: KindBadSignature, Clone: key, Detail: fmt.Sprintf("no public key for machine %s to check its checkpoints with", machine)})
		return nil, false
	}
	if vkey != "" && strings.TrimSpace(vkey) != pinned {
		ck.alarm(Finding{Kind: KindKeyChanged, Clone: key, Detail: fmt.Sprintf("machine %s's checkpoints now carry public key %s; %s was pinned when it was first seen", machine, strings.TrimSpace(vkey), pinned)})
		return nil, false
	}
	v, err := ParseVerifierKey(pinned)
	if err != nil {
		ck.alarm(Finding{Kind: KindBadSignature, Clone: key, Detail: err.Error()})
		return nil, false
	}
	if first {
		if v.Name() != machine {
			ck.alarm(Finding{Kind: KindBadSignature, Clone: key, Detail: fmt.Sprintf("machine %s's checkpoints carry a key named %s", machine, v.Name())})
			return nil, false
		}
		if ck.toPin == nil {
			ck.toPin = map[string]string{}
		}
		ck.toPin[machine] = pinned
	}
	return v, true
}

// keyChecked pins machine's key once a checkpoint checked with it, when
// it was seen for the first time.
func (ck *checker) keyChecked(machine string) {
	vk := ck.toPin[machine]
	if vk == "" {
		return
	}
	delete(ck.toPin, machine)
	if _, err := pinKey(ck.w, vk); err != nil {
		ck.alarm(Finding{Kind: KindBadSignature, Detail: fmt.Sprintf("could not pin machine %s's key: %v", machine, err)})
	}
}

// readCheckpointCommit opens the checkpoint of commit id of clone key.
func (ck *checker) readCheckpointCommit(ctx context.Context, id, key string) (*Checkpoint, []byte, []string, bool) {
	cf, err := ck.st.Objects().ReadCommitFiles(ctx, id)
	if err != nil {
		ck.alarm(Finding{Kind: KindFork, Clone: key, Detail: fmt.Sprintf("checkpoint commit %.12s cannot be read: %v", id, err)})
		return nil, nil, nil, false
	}
	signed := cf.Files[checkpointFile]
	machine, _, _ := strings.Cut(key, "/")
	v, ok := ck.verifier(machine, string(cf.Files[keyFile]), key)
	if !ok {
		return nil, signed, nil, false
	}
	c, err := OpenSigned(signed, v)
	if err != nil {
		ck.alarm(Finding{Kind: KindBadSignature, Clone: key, Detail: fmt.Sprintf("checkpoint commit %.12s: %v", id, err), Now: signed})
		return nil, signed, nil, false
	}
	ck.keyChecked(machine)
	if c.Machine+"/"+c.Clone != key {
		ck.alarm(Finding{Kind: KindFork, Clone: key, Detail: fmt.Sprintf("checkpoint commit %.12s is %s/%s's, under %s's ref", id, c.Machine, c.Clone, key), Now: signed})
		return nil, signed, nil, false
	}
	return c, signed, cf.Parents, true
}

// anchorRef compares one clone's checkpoint ref on the remote (in) with
// what was accepted before (old).
func (ck *checker) anchorRef(ctx context.Context, key, in, old string) {
	switch {
	case in == old:
		// Unchanged here since it was accepted: still not older than
		// what another remote showed of the chain since.
		if signed := ck.signedAt(ctx, in); signed != nil {
			if c, err := ParseText(noteText(signed)); err == nil {
				ck.tipCheck(key, c.N, signed, "checkpoint")
			}
		}
		return
	case in == "":
		ck.alarm(Finding{Kind: KindRollback, Clone: key, Detail: "the remote deleted this clone's checkpoints", Seen: ck.signedAt(ctx, old)})
		return
	}
	// New commits from in back to old (or the root): each must check and
	// name its predecessor.
	if old != "" {
		if ok, _ := ck.st.Objects().IsAncestor(ctx, old, in, 0); !ok {
			kind, how := KindFork, "moved sideways: neither ahead of nor behind"
			if back, _ := ck.st.Objects().IsAncestor(ctx, in, old, 0); back {
				kind, how = KindRollback, "moved backwards from"
			}
			ck.compareWriters(ctx, kind, key, how, old, in)
			return
		}
	}
	if own := ck.own; own != nil && strings.HasPrefix(key, own.Name()+"/") {
		// This machine's checkpoints: every one must be in this machine's
		// local chain of that clone (a clone of this machine elsewhere has
		// its own id; a checkpoint of an unknown clone is checked by its
		// signature alone).
		if local, _ := ck.st.Objects().Ref(ctx, gitstore.AnchorPrefix+key); local != "" {
			if ok, _ := ck.st.Objects().IsAncestor(ctx, in, local, 0); !ok {
				ck.alarm(Finding{Kind: KindFork, Clone: key, Detail: "the remote holds a checkpoint of this clone that this clone never made", Seen: ck.signedAt(ctx, local), Now: ck.signedAt(ctx, in)})
				return
			}
		}
	}
	tip, tipSigned, _, ok := ck.readCheckpointCommit(ctx, in, key)
	if !ok {
		return
	}
	if ck.tipCheck(key, tip.N, tipSigned, "checkpoint") {
		return
	}
	accepted, hasTip := ck.tips[key]
	id := in
	var newer *Checkpoint
	var newerSigned []byte
	for steps := 0; id != "" && id != old; steps++ {
		c, signed, parents, ok := ck.readCheckpointCommit(ctx, id, key)
		if !ok {
			return
		}
		if hasTip && c.N == accepted.N && Digest(signed) != accepted.Digest && !ck.ownChain(key) {
			ck.alarm(Finding{Kind: KindFork, Clone: key, Detail: fmt.Sprintf("the remote's chain of %s holds a checkpoint %d that is not the one accepted from %s", key, c.N, accepted.Remote), Seen: accepted.Signed, Now: signed})
			return
		}
		if newer != nil {
			if newer.N != c.N+1 || newer.Prev != Digest(signed) {
				ck.alarm(Finding{Kind: KindFork, Clone: key, Detail: fmt.Sprintf("checkpoint %d does not follow checkpoint %d (its prev names another)", newer.N, c.N), Seen: signed, Now: newerSigned})
				return
			}
			if msg := monotone(c, newer); msg != "" {
				ck.alarm(Finding{Kind: KindFork, Clone: key, Detail: fmt.Sprintf("checkpoint %d contradicts checkpoint %d: %s", newer.N, c.N, msg), Seen: signed, Now: newerSigned})
				return
			}
		}
		newer, newerSigned = c, signed
		if len(parents) == 0 {
			if c.N != 1 || c.Prev != "" {
				ck.alarm(Finding{Kind: KindFork, Clone: key, Detail: fmt.Sprintf("the chain starts at checkpoint %d, not 1", c.N), Now: signed})
				return
			}
			break
		}
		id = parents[0]
	}
	if old != "" && newer != nil {
		oc, osigned, _, ok := ck.readCheckpointCommit(ctx, old, key)
		if !ok {
			return
		}
		if newer.N != oc.N+1 || newer.Prev != Digest(osigned) {
			ck.alarm(Finding{Kind: KindFork, Clone: key, Detail: fmt.Sprintf("checkpoint %d does not follow the checkpoint %d seen before", newer.N, oc.N), Seen: osigned, Now: newerSigned})
			return
		}
		if msg := monotone(oc, newer); msg != "" {
			ck.alarm(Finding{Kind: KindFork, Clone: key, Detail: fmt.Sprintf("checkpoint %d contradicts the checkpoint %d seen before: %s", newer.N, oc.N, msg), Seen: osigned, Now: newerSigned})
			return
		}
	}
	ck.acceptRef("anchor/"+key, old, in)
	ck.accepted(ctx, key, tip, tipSigned)
}

// accepted records what was accepted: its writers' heads for every
// store's Verify, and the chain's new tip for the rest of this check.
func (ck *checker) accepted(ctx context.Context, key string, c *Checkpoint, signed []byte) {
	ck.rc.Accepted++
	var prev []byte
	if t, ok := ck.tips[key]; ok && t.N < c.N {
		prev = t.Signed
	}
	if err := recordCheckpointHeads(ctx, ck.w, c, signed, prev, ck.ownChain(key), "seen on "+ck.rc.Remote); err != nil {
		ck.alarm(Finding{Kind: KindFork, Clone: key, Detail: "accepted, but its heads could not be recorded: " + err.Error()})
	}
	if t := ck.tips[key]; c.N > t.N {
		ck.tips[key] = chainTip{N: c.N, Digest: Digest(signed), Remote: ck.rc.Remote, Signed: signed}
	}
}

// monotone says how newer contradicts older ("" when it does not): a
// writer or notes ref gone, fewer entries, or another seal at the same
// length. (A seal at a greater length can only be checked against the
// chain itself, which verify does.)
func monotone(older, newer *Checkpoint) string {
	for _, w := range older.Writers {
		nw, ok := newer.Writer(w.Name)
		switch {
		case !ok:
			return fmt.Sprintf("writer %s is gone", w.Name)
		case nw.Entries < w.Entries:
			return fmt.Sprintf("writer %s went from %d entries to %d", w.Name, w.Entries, nw.Entries)
		case nw.Entries == w.Entries && nw.Seal != w.Seal:
			return fmt.Sprintf("writer %s has another head at entry %d", w.Name, w.Entries)
		}
	}
	for _, n := range older.Notes {
		if _, ok := newer.NotesRef(n.Name); !ok {
			return fmt.Sprintf("notes ref %s is gone", n.Name)
		}
	}
	return ""
}

// compareWriters reports a checkpoint ref that moved backwards or
// sideways, per writer whose anchored head it took back or replaced.
func (ck *checker) compareWriters(ctx context.Context, kind, key, how, old, in string) {
	osigned, nsigned := ck.signedAt(ctx, old), ck.signedAt(ctx, in)
	oc, _ := ParseText(noteText(osigned))
	nc, _ := ParseText(noteText(nsigned))
	before := len(ck.rc.Findings)
	if oc != nil && nc != nil {
		for _, w := range oc.Writers {
			nw, ok := nc.Writer(w.Name)
			switch {
			case !ok:
				ck.alarm(Finding{Kind: kind, Clone: key, Writer: w.Name, Detail: fmt.Sprintf("anchored at entry %d before; the remote's checkpoint %d %s it no more", w.Entries, nc.N, "names"), Seen: osigned, Now: nsigned})
			case nw.Entries < w.Entries:
				ck.alarm(Finding{Kind: KindRollback, Clone: key, Writer: w.Name, Detail: fmt.Sprintf("anchored at entry %d before; the remote's checkpoint %d says %d", w.Entries, nc.N, nw.Entries), Seen: osigned, Now: nsigned})
			case nw.Entries == w.Entries && nw.Seal != w.Seal:
				ck.alarm(Finding{Kind: KindFork, Clone: key, Writer: w.Name, Detail: fmt.Sprintf("entry %d anchored as %.12s before; the remote's checkpoint %d says %.12s", w.Entries, w.Seal, nc.N, nw.Seal), Seen: osigned, Now: nsigned})
			}
		}
	}
	if len(ck.rc.Findings) == before {
		detail := fmt.Sprintf("the remote's checkpoints of %s %s those seen before", key, how)
		if oc != nil && nc != nil {
			detail += fmt.Sprintf(" (checkpoint %d seen, %d now)", oc.N, nc.N)
		}
		ck.alarm(Finding{Kind: kind, Clone: key, Detail: detail, Seen: osigned, Now: nsigned})
	}
}

// noteText is a signed note's text part (before the blank line), for
// reading a checkpoint whose signature was checked when it was accepted.
func noteText(signed []byte) string {
	i := bytes.Index(signed, []byte("\n\n"))
	if i < 0 {
		return ""
	}
	return string(signed[:i+1])
}

// tag compares one anchor tag (key: <machine>/<clone>/<n>) on the remote
// with what was accepted before: tags never move.
func (ck *checker) tag(ctx context.Context, key, in, old string) {
	i := strings.LastIndexByte(key, '/')
	if i <= 0 {
		return
	}
	clone, nstr := key[:i], key[i+1:]
	switch {
	case in == old:
		return
	case in == "":
		ck.alarm(Finding{Kind: KindRollback, Clone: clone, Detail: fmt.Sprintf("the remote deleted tag %s", "lossless-anchor/"+key), Seen: ck.tagSigned(ctx, old)})
		return
	case old != "":
		ck.alarm(Finding{Kind: KindFork, Clone: clone, Detail: fmt.Sprintf("the remote's tag %s points elsewhere than when it was seen (%.12s, now %.12s)", "lossless-anchor/"+key, old, in), Seen: ck.tagSigned(ctx, old), Now: ck.tagSigned(ctx, in)})
		return
	}
	t, err := ck.st.Objects().ReadTag(ctx, in)
	if err != nil {
		ck.alarm(Finding{Kind: KindFork, Clone: clone, Detail: fmt.Sprintf("tag %s cannot be read: %v", key, err)})
		return
	}
	machine, _, _ := strings.Cut(clone, "/")
	var vkey string
	if cf, err := ck.st.Objects().ReadCommitFiles(ctx, t.Object); err == nil {
		vkey = string(cf.Files[keyFile])
	}
	v, ok := ck.verifier(machine, vkey, clone)
	if !ok {
		return
	}
	c, err := OpenSigned([]byte(t.Message), v)
	if err != nil {
		ck.alarm(Finding{Kind: KindBadSignature, Clone: clone, Detail: fmt.Sprintf("tag %s: %v", key, err), Now: []byte(t.Message)})
		return
	}
	ck.keyChecked(machine)
	if c.Machine+"/"+c.Clone != clone || strconv.FormatInt(c.N, 10) != nstr {
		ck.alarm(Finding{Kind: KindFork, Clone: clone, Detail: fmt.Sprintf("tag %s holds checkpoint %d of %s/%s", key, c.N, c.Machine, c.Clone), Now: []byte(t.Message)})
		return
	}
	if own := ck.own; own != nil && c.Machine == own.Name() {
		if local, _ := ck.st.Objects().Ref(ctx, gitstore.AnchorTagPrefix+key); local != "" && local != in {
			ck.alarm(Finding{Kind: KindFork, Clone: clone, Detail: fmt.Sprintf("the remote's tag %s is not the one this clone made", key), Seen: ck.tagSigned(ctx, local), Now: []byte(t.Message)})
			return
		}
	}
	if tip, ok := ck.tips[clone]; ok && c.N == tip.N && Digest([]byte(t.Message)) != tip.Digest && !ck.ownChain(clone) {
		ck.alarm(Finding{Kind: KindFork, Clone: clone, Detail: fmt.Sprintf("the remote's tag %s holds another checkpoint %d than the one accepted from %s", key, c.N, tip.Remote), Seen: tip.Signed, Now: []byte(t.Message)})
		return
	}
	ck.acceptRef("tags/"+key, "", in)
	ck.accepted(ctx, clone, c, []byte(t.Message))
}

func (ck *checker) tagSigned(ctx context.Context, id string) []byte {
	t, err := ck.st.Objects().ReadTag(ctx, id)
	if err != nil {
		return nil
	}
	return []byte(t.Message)
}
