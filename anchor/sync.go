package anchor

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/seal"
)

// Sync states of one writer (or notes ref) between here and a remote.
const (
	StateEqual     = "equal"      // the same head on both sides
	StateAhead     = "ahead"      // here has batches the remote lacks: pushed
	StateBehind    = "behind"     // the remote has batches here lacks: fast-forwarded here
	StateNewHere   = "new-here"   // only here: pushed
	StateNewThere  = "new-there"  // only on the remote: adopted here
	StateDiverged  = "diverged"   // neither contains the other: an alarm, never merged or overwritten
	StateRefused   = "refused"    // the remote's chain does not verify here: not adopted
	StateGoneThere = "gone-there" // seen on the remote before, gone now: an alarm, not pushed again
	// StateForeignAppend: the remote extends a writer this clone owns (it
	// appended to it), or holds a writer named as this clone's that this
	// clone never wrote: another clone wrote under this clone's name. An
	// alarm; never adopted, and this clone's writer is not pushed over it.
	// The remote's head is kept as evidence under
	// refs/lossless-tracking/<rid>/alarm/lossless/<writer>.
	StateForeignAppend = "foreign-append"
)

// RefState is one writer's (or notes ref's) sync state.
type RefState struct {
	Ref    string `json:"ref"`
	State  string `json:"state"`
	Local  string `json:"local,omitempty"`  // before the sync
	Remote string `json:"remote,omitempty"` // as fetched
	Detail string `json:"detail,omitempty"`
}

// SyncResult is what one sync did.
type SyncResult struct {
	Remote   string                 `json:"remote"`
	URL      string                 `json:"url"`
	Refs     []RefState             `json:"refs"`
	Adopted  int                    `json:"adopted"` // refs fast-forwarded or created here
	Anchors  *RemoteCheck           `json:"anchors"`
	Plan     *gitstore.Outgoing     `json:"plan"`
	Problems []gitstore.PushProblem `json:"problems"`
	Pushed   []gitstore.PushedRef   `json:"pushed,omitempty"`
	Verdict  string                 `json:"verdict"` // pushed, nothing to push, refused, dry run
	Attempts int                    `json:"attempts"`
}

// Alarms counts the diverged, refused and vanished refs and the anchor
// findings: what makes a sync exit non-zero.
func (r *SyncResult) Alarms() int {
	n := 0
	for _, s := range r.Refs {
		if alarmState(s.State) {
			n++
		}
	}
	if r.Anchors != nil {
		n += len(r.Anchors.Findings)
	}
	return n
}

// alarmState reports whether a ref state is an alarm.
func alarmState(state string) bool {
	switch state {
	case StateDiverged, StateRefused, StateGoneThere, StateForeignAppend:
		return true
	}
	return false
}

// refAlarms turns the alarm states of a sync into findings (kind: the
// state), which stay open (OpenAlarms) until a sync no longer sees them.
func refAlarms(refs []RefState) []Finding {
	var out []Finding
	for _, s := range refs {
		if !alarmState(s.State) {
			continue
		}
		name := strings.TrimPrefix(s.Ref, gitstore.RefPrefix)
		if strings.HasPrefix(s.Ref, gitstore.NotesPrefix) {
			name = "notes:" + strings.TrimPrefix(s.Ref, gitstore.NotesPrefix)
		}
		out = append(out, Finding{Kind: s.State, Writer: name, Detail: fmt.Sprintf("%s: %s", s.Ref, s.Detail)})
	}
	return out
}

// SyncOptions says what a sync may do.
type SyncOptions struct {
	Target Target
	Policy gitstore.PushPolicy // what the push may send anyway (never Force)
	DryRun bool                // fetch, classify and plan; adopt and push nothing
	Now    time.Time
}

// maxSyncAttempts bounds the retries when another machine pushed between
// this sync's fetch and its push (the push's lease fails): each retry
// fetches again, so nothing is lost and nothing is overwritten.
const maxSyncAttempts = 5

// Sync shares the archive through a git remote: it fetches the remote's
// writers, notes refs and checkpoints into tracking refs
// (refs/lossless-tracking/<rid>/...), checks the checkpoints as verify
// --anchor does, classifies every writer and notes ref (equal, ahead,
// behind, new here or there, diverged), fast-forwards what is behind here
// after verifying the remote's chain against what this machine saw,
// and pushes what is ahead through the push gate (secrets and ignored
// files refused unless the policy allows them). A diverged ref is an
// alarm: neither side is changed. One ref per writer means two machines
// never write the same ref, so there is nothing to merge.
func Sync(ctx context.Context, st *gitstore.Store, o SyncOptions) (*SyncResult, error) {
	if o.Policy.Force {
		return nil, errors.New("sync never forces: use git lossless push --force for a rewritten writer")
	}
	url, err := resolve(ctx, st, o.Target)
	if err != nil {
		return nil, err
	}
	if o.Target.Mode == ModePath {
		return nil, errors.New("sync needs a git remote, not an anchor directory")
	}
	rid := RemoteID(url)
	rememberRemote(st, o.Target.Remote, url)
	r := gitstore.Remote{URL: url, Dir: o.Target.Dir}
	own, err := ownKey()
	if err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		res, retry, err := syncOnce(ctx, st, o, r, rid, own)
		if res != nil {
			res.Remote, res.URL, res.Attempts = o.Target.Remote, url, attempt
		}
		if err == nil && !retry {
			// What this sync found stays open until a sync no longer
			// finds it (alarms.go).
			if err := saveAlarms(st, rid, alarmsAnchors, o.Target.Remote, url, res.Anchors.Findings, o.Now); err != nil {
				return res, err
			}
			if err := saveAlarms(st, rid, alarmsSync, o.Target.Remote, url, refAlarms(res.Refs), o.Now); err != nil {
				return res, err
			}
		}
		if err != nil || !retry {
			return res, err
		}
		if attempt >= maxSyncAttempts {
			// Every attempt lost a race: what was to be pushed (or
			// adopted) was not, and returning no error would report the
			// sync as done.
			return res, fmt.Errorf("each of %d attempts was raced (the remote moved between fetch and push, or a writer here appended during the sync): nothing was overwritten, but not everything was pushed or adopted; run sync again", attempt)
		}
	}
}

func syncOnce(ctx context.Context, st *gitstore.Store, o SyncOptions, r gitstore.Remote, rid string, own *Key) (*SyncResult, bool, error) {
	specs := append([]string{
		"+" + gitstore.RefPrefix + "*:" + trackingRef(rid, "lossless/*"),
		"+" + gitstore.NotesPrefix + "*:" + trackingRef(rid, "notes/*"),
	}, anchorFetchSpecs(rid)...)
	res := &SyncResult{Refs: []RefState{}, Problems: []gitstore.PushProblem{}}
	res.Anchors = &RemoteCheck{Remote: o.Target.Remote, URL: r.URL, Mode: ModeRef, Findings: []Finding{}}
	// The remote's refs and objects arrive in a quarantine, within the
	// fetch caps: what is refused below (a chain that does not verify, a
	// checkpoint that does not check) never reaches the archive.
	q, err := st.Transport().FetchQuarantine(ctx, r, specs, gitstore.FetchLimits{})
	if errors.Is(err, gitstore.ErrOverLimit) {
		res.Anchors.Findings = append(res.Anchors.Findings, overLimit(o.Target.Remote, err))
		res.Verdict = "refused"
		return res, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	defer q.Discard()
	view := q.Store()
	// What the remote held at the last sync (fetched or pushed), to tell
	// a ref it lost: tracking refs of writers and notes are never pruned.
	before, beforeNotes := map[string]string{}, map[string]string{}
	for ref, id := range q.Before() {
		switch {
		case strings.HasPrefix(ref, trackingRef(rid, "lossless/")):
			before[ref] = id
		case strings.HasPrefix(ref, trackingRef(rid, "notes/")):
			beforeNotes[ref] = id
		}
	}
	recs, err := ReadRecords(st)
	if err != nil {
		return nil, false, err
	}
	ck, err := checkFetched(ctx, st, view, res.Anchors, rid, own, recs, o.Now)
	if err != nil {
		return nil, false, err
	}

	// Classify, then adopt what is behind or new there. A writer this
	// clone owns is never adopted from the remote: only this clone
	// appends to it (classifyOwn).
	owned, err := st.OwnedWriters(ctx)
	if err != nil {
		return nil, false, err
	}
	clone, err := st.CloneID(ctx)
	if err != nil {
		return nil, false, err
	}
	remoteView := map[string]string{} // what Outgoing plans against
	accept := map[string]string{}     // tracking refs (and their objects) taken from the quarantine
	type adoption struct{ ref, old, new string }
	var adopt []adoption
	var alarmHeads [][2]string // writer, the remote's head kept as evidence
	for _, kind := range []struct {
		local, tracking string
		before          map[string]string
	}{
		{gitstore.RefPrefix, trackingRef(rid, "lossless/"), before},
		{gitstore.NotesPrefix, trackingRef(rid, "notes/"), beforeNotes},
	} {
		locals, err := st.Objects().RefsUnder(ctx, kind.local)
		if err != nil {
			return nil, false, err
		}
		remotes, err := view.Objects().RefsUnder(ctx, kind.tracking)
		if err != nil {
			return nil, false, err
		}
		names := map[string]bool{}
		for k := range locals {
			names[strings.TrimPrefix(k, kind.local)] = true
		}
		for k := range remotes {
			names[strings.TrimPrefix(k, kind.tracking)] = true
		}
		for k := range kind.before {
			names[strings.TrimPrefix(k, kind.tracking)] = true
		}
		sorted := make([]string, 0, len(names))
		for n := range names {
			sorted = append(sorted, n)
		}
		sort.Strings(sorted)
		for _, name := range sorted {
			ref := kind.local + name
			if gitstore.ValidWriter(name) != nil {
				continue
			}
			isWriter := kind.local == gitstore.RefPrefix
			l, rv := locals[ref], remotes[kind.tracking+name]
			was := kind.before[kind.tracking+name]
			s := RefState{Ref: ref, Local: l, Remote: rv}
			mine := isWriter && (owned[name] || gitstore.FamilyClone(name) == clone)
			switch {
			case rv == "" && was != "":
				s.State = StateGoneThere
				s.Detail = fmt.Sprintf("the remote had it at %.12s and lacks it now (deleted there); not pushed again: `git lossless push` sends it back on purpose", was)
				if l != "" {
					remoteView[ref] = l // not pushed back blindly: the deletion is an alarm to look at
				}
			case rv == "":
				s.State = StateNewHere
			case l == rv:
				s.State = StateEqual
				remoteView[ref] = rv
			case mine:
				remoteView[ref] = l // never pushed over what the remote holds, never adopted
				if l == "" {
					delete(remoteView, ref)
				}
				state, detail, err := classifyOwn(ctx, view, name, l, rv, owned[name])
				if err != nil {
					return nil, false, err
				}
				s.State, s.Detail = state, detail
				if state == StateAhead || state == StateBehind {
					remoteView[ref] = rv
				}
				if state == StateForeignAppend {
					alarmHeads = append(alarmHeads, [2]string{name, rv})
				}
			case l == "":
				s.State = StateNewThere
				remoteView[ref] = rv
			default:
				remoteView[ref] = rv
				if up, _ := view.Objects().IsAncestor(ctx, l, rv, 0); up {
					s.State = StateBehind
				} else if down, _ := view.Objects().IsAncestor(ctx, rv, l, 0); down {
					s.State = StateAhead
				} else {
					s.State = StateDiverged
					s.Detail = "neither history contains the other: the writer was rewritten on one side; both are kept (here, and the remote's under " + kind.tracking + name + ")"
					remoteView[ref] = l // keep it out of the push
				}
			}
			if s.State == StateBehind || s.State == StateNewThere {
				if isWriter {
					rep, err := view.VerifyAt(ctx, name, rv, seal.Options{SkipContent: true})
					if err != nil {
						return nil, false, err
					}
					if !rep.OK() {
						s.State = StateRefused
						s.Detail = fmt.Sprintf("the remote's chain does not verify here: %s at entry %d: %s", rep.Break.Kind, rep.Break.Seq, rep.Break.Detail)
						remoteView[ref] = l
						if l == "" {
							delete(remoteView, ref)
						}
					}
				}
				if s.State != StateRefused && !o.DryRun {
					adopt = append(adopt, adoption{ref, l, rv})
				}
			}
			if rv != "" && s.State != StateRefused {
				accept[kind.tracking+name] = rv
			}
			res.Refs = append(res.Refs, s)
		}
	}

	// Take what was not refused from the quarantine (the rest is deleted
	// with it), then adopt.
	for k, v := range ck.accept {
		accept[k] = v
	}
	ck.accept = accept
	if err := ck.commit(ctx, q); err != nil {
		return nil, false, err
	}
	for _, h := range alarmHeads {
		if err := keepAlarmHead(ctx, st, rid, h[0], h[1]); err != nil {
			return nil, false, err
		}
	}
	for _, a := range adopt {
		if err := st.Objects().FastForward(ctx, a.ref, a.old, a.new); err != nil {
			if errors.Is(err, gitstore.ErrRefChanged) {
				return res, true, nil // a writer here appended meanwhile: again
			}
			return nil, false, err
		}
		res.Adopted++
	}

	// Push what is ahead or new here, through the gate.
	plan, err := st.Outgoing(ctx, remoteView)
	if err != nil {
		return nil, false, err
	}
	res.Plan = plan
	probs, err := plan.Check(ctx, o.Policy)
	if err != nil {
		return nil, false, err
	}
	res.Problems = probs
	switch {
	case plan.Empty():
		res.Verdict = "nothing to push"
	case len(gitstore.Refused(probs)) > 0:
		res.Verdict = "refused"
	case o.DryRun:
		res.Verdict = "dry run"
	default:
		pushed, err := st.Transport().Push(ctx, r, plan, false)
		res.Pushed = pushed
		if err != nil {
			for _, p := range pushed {
				if !p.OK && (strings.Contains(p.Summary, "stale info") || strings.Contains(p.Summary, "fetch first") || strings.Contains(p.Summary, "non-fast-forward") || strings.Contains(p.Summary, "cannot lock ref") || strings.Contains(p.Summary, "failed to update ref")) {
					return res, true, nil // the remote moved since the fetch: fetch again
				}
			}
			return res, false, err
		}
		res.Verdict = "pushed"
		// What was pushed is what the remote holds now: remember it, so
		// that a later deletion there is gone-there, not new here.
		for _, u := range plan.Refs() {
			tr := trackingRef(rid, "lossless/"+u.Name)
			if u.Notes {
				tr = trackingRef(rid, "notes/"+u.Name)
			}
			if err := st.Objects().SetRef(ctx, tr, u.Remote, u.Local); err != nil && !errors.Is(err, gitstore.ErrRefChanged) {
				return res, false, err
			}
		}
	}
	return res, false, nil
}

// classifyOwn classifies a writer this clone owns (or whose name carries
// this clone's id) against the remote's head rv: equal and ahead are
// ordinary; anything the remote holds beyond what this clone wrote is
// foreign-append. A writer this clone owns but lost here (l empty) is
// restored only when the remote's head is exactly the newest head this
// clone witnessed; the caller adopts nothing else.
func classifyOwn(ctx context.Context, st *gitstore.Store, name, l, rv string, owned bool) (string, string, error) {
	if !owned {
		return StateForeignAppend, fmt.Sprintf("the remote holds writer %s, named as this clone's, which this clone never wrote: not adopted", name), nil
	}
	if l != "" {
		if down, _ := st.Objects().IsAncestor(ctx, rv, l, 0); down {
			return StateAhead, "", nil
		}
		if up, _ := st.Objects().IsAncestor(ctx, l, rv, 0); up {
			seq, _, _ := st.HeadOf(ctx, rv)
			return StateForeignAppend, fmt.Sprintf("the remote extends this clone's writer %s past %.12s to %.12s (entry %d): batches this clone never wrote; not adopted, and the remote's head is kept as evidence", name, l, rv, seq), nil
		}
		return StateDiverged, "neither history contains the other: the writer was rewritten on one side; both are kept (here, and the remote's under the tracking ref)", nil
	}
	seen, err := st.Witness(ctx, name)
	if err != nil {
		return "", "", err
	}
	seq, sl, err := st.HeadOf(ctx, rv)
	if err != nil {
		return StateRefused, fmt.Sprintf("the remote's head %.12s of this clone's writer %s is not a batch: %v", rv, name, err), nil
	}
	if n := len(seen); n > 0 && seen[n-1].Seq == seq && seen[n-1].Seal == sl {
		return StateBehind, "this clone's writer, gone here, restored from the remote at the head this clone last wrote", nil
	}
	return StateForeignAppend, fmt.Sprintf("this clone's writer %s is gone here, and the remote's head (entry %d) is not the head this clone last wrote: not adopted", name, seq), nil
}

// keepAlarmHead keeps the remote's head of a foreign-append as evidence
// (a tracking ref the fetches never write, so its objects stay).
func keepAlarmHead(ctx context.Context, st *gitstore.Store, rid, name, head string) error {
	ref := trackingRef(rid, "alarm/lossless/"+name)
	cur, err := st.Objects().Ref(ctx, ref)
	if err != nil || cur == head {
		return err
	}
	if err := st.Objects().SetRef(ctx, ref, cur, head); err != nil && !errors.Is(err, gitstore.ErrRefChanged) {
		return err
	}
	return nil
}
