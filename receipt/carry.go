package receipt

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/receipt/note"
)

// Carry statuses.
const (
	CarryDone     = "carried"    // a carried receipt was built, signed and stored
	CarryKept     = "kept"       // the commit has a receipt already (no --force)
	CarryNoSource = "no-receipt" // no source commit has a receipt: nothing to carry
)

// CarryResult says what Carry did for one rewritten commit.
type CarryResult struct {
	Commit  string   // the new commit
	Sources []string // the source commits whose receipts were carried, sorted
	Status  string   // CarryDone, CarryKept or CarryNoSource
	Receipt *note.Receipt
}

// Carry gives commit, a rewrite of sources (one commit for an amend, a
// reorder or a cherry-pick; several for a squash), a receipt of its own:
// built from the archive for commit's own tree and changed paths (so a
// squash covers the union of what its sources' contexts saw), with the
// window the sources' receipts had (a rewrite's committer dates say when
// history was rewritten, not when the work was done), naming each source,
// signed by k and stored on k's notes ref. Sources without a receipt on
// any receipts ref are left out; when none has one, nothing is written. A
// commit that has a receipt on k's ref keeps it unless force.
//
// Copying the old note (git's notes.rewriteRef) is not an option: a
// receipt names its commit, tree, parents and committer time and is
// signed, so a copy never verifies for the new commit.
func Carry(ctx context.Context, st *gitstore.Store, commit string, sources []string, k *Key, opt Options, force bool) (CarryResult, error) {
	res, err := CarryAll(ctx, st, []Rewrite{{New: commit, Olds: sources}}, k, opt, force)
	if err != nil {
		return CarryResult{Commit: commit}, err
	}
	return res[0], nil
}

// CarryAll is Carry for every rewrite of a rebase, stored in one notes
// commit.
func CarryAll(ctx context.Context, st *gitstore.Store, rws []Rewrite, k *Key, opt Options, force bool) ([]CarryResult, error) {
	out := make([]CarryResult, len(rws))
	var notes []gitstore.NoteText
	for i, rw := range rws {
		res, err := carryOne(ctx, st, rw.New, rw.Olds, k, opt, force)
		if err != nil {
			return nil, err
		}
		if res.Status == CarryDone {
			text, err := Sign(res.Receipt, k)
			if err != nil {
				return nil, fmt.Errorf("sign the carried receipt of %s: %w", short(rw.New), err)
			}
			notes = append(notes, gitstore.NoteText{Target: rw.New, Text: text})
		}
		out[i] = res
	}
	if len(notes) > 0 {
		if _, err := st.WriteNotes(ctx, k.Writer(), notes, k.SignCommit); err != nil {
			return nil, fmt.Errorf("store %d carried receipts: %w", len(notes), err)
		}
	}
	return out, nil
}

func carryOne(ctx context.Context, st *gitstore.Store, commit string, sources []string, k *Key, opt Options, force bool) (CarryResult, error) {
	res := CarryResult{Commit: commit}
	if !force {
		// A note that names another commit is a copy git made (the
		// user's notes.rewriteRef covering our refs): it never verifies
		// here, so it is replaced; a receipt of this commit is kept.
		if s, err := Load(ctx, st, k.Writer(), commit); err == nil {
			if s.Parsed == nil || s.Parsed.Commit == commit {
				res.Status = CarryKept
				return res, nil
			}
		} else if !errors.Is(err, gitstore.ErrNoNote) {
			return res, err
		}
	}
	var carried []note.Carried
	seen := map[string]bool{}
	for _, src := range sources {
		if src == commit || seen[src] {
			continue
		}
		seen[src] = true
		c, ok, err := sourceWindow(ctx, st, k.Writer(), src)
		if err != nil {
			return res, err
		}
		if ok {
			carried = append(carried, c)
			res.Sources = append(res.Sources, src)
		}
	}
	sort.Strings(res.Sources)
	if len(carried) == 0 {
		res.Status = CarryNoSource
		return res, nil
	}
	opt.Carried = carried
	r, err := Build(ctx, st, commit, opt)
	if err != nil {
		return res, fmt.Errorf("build the carried receipt of %s: %w", short(commit), err)
	}
	res.Status, res.Receipt = CarryDone, r
	return res, nil
}

// sourceWindow returns the window of src's receipt: the one on the
// preferred writer (our key's ref) if there is one, else the first that
// parses on any receipts ref.
func sourceWindow(ctx context.Context, st *gitstore.Store, preferred, src string) (note.Carried, bool, error) {
	var found []Stored
	if s, err := Load(ctx, st, preferred, src); err == nil {
		found = append(found, s)
	} else if !errors.Is(err, gitstore.ErrNoNote) {
		return note.Carried{}, false, err
	}
	if len(found) == 0 {
		all, err := Find(ctx, st, src)
		if err != nil {
			return note.Carried{}, false, err
		}
		found = all
	}
	for _, s := range found {
		if r := s.Parsed; r != nil {
			return note.Carried{Commit: src, From: r.From, HasFrom: r.HasFrom, To: r.WindowEnd()}, true, nil
		}
	}
	return note.Carried{}, false, nil
}

// HasReceipt reports whether commit has a receipt on any receipts ref.
func HasReceipt(ctx context.Context, st *gitstore.Store, commit string) (bool, error) {
	f, err := Find(ctx, st, commit)
	return len(f) > 0, err
}
