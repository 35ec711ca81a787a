package note

import (
	"errors"
	"strconv"
)

// Carried names one commit a receipt was carried from (a rewrite: amend,
// rebase, cherry-pick, a host-side squash) and the window that commit's
// receipt had. A rewritten commit's own committer dates say when it was
// rewritten, not when its changes were made, so its membership window is
// the union of its sources' windows: the contexts that wrote the changes
// belong to it as they belonged to the commits they were made for.
type Carried struct {
	Commit  string // the source commit (40 hex)
	From    int64  // its window's start (Unix seconds)
	HasFrom bool   // false: the source's window had no start (a root commit)
	To      int64  // its window's end
}

// WindowEnd is the end of the receipt's window: the committer time, or for
// a carried receipt the latest end of its sources' windows.
func (r *Receipt) WindowEnd() int64 {
	if len(r.Carried) == 0 {
		return r.Committed
	}
	_, _, to := carriedWindow(r.Carried)
	return to
}

// carriedWindow is the union of the sources' windows: the earliest start
// (none when a source had none) and the latest end.
func carriedWindow(cs []Carried) (from int64, hasFrom bool, to int64) {
	hasFrom = true
	for i, c := range cs {
		if i == 0 || c.To > to {
			to = c.To
		}
		if !c.HasFrom {
			hasFrom = false
		} else if i == 0 || c.From < from {
			from = c.From
		}
	}
	if !hasFrom {
		from = 0
	}
	return from, hasFrom, to
}

func (r *Receipt) checkCarried() error {
	seen := map[string]bool{}
	for i, c := range r.Carried {
		if !isHex40(c.Commit) || c.Commit == r.Commit {
			return errors.New("receipt: carried must name 40-hex commits other than the receipt's own")
		}
		if seen[c.Commit] || (i > 0 && r.Carried[i-1].Commit > c.Commit) {
			return errors.New("receipt: carried commits must be sorted and unique")
		}
		seen[c.Commit] = true
		// A window may end before it starts (a parent committed later
		// than its child, as an amended parent is): the source's receipt
		// had that window, and the carried one keeps it.
		if c.To < 0 || c.From < 0 {
			return errors.New("receipt: a carried window has negative times")
		}
	}
	if len(r.Carried) > 0 {
		from, has, _ := carriedWindow(r.Carried)
		if has != r.HasFrom || (has && from != r.From) {
			return errors.New("receipt: a carried receipt's window is the union of its sources' windows")
		}
	}
	return nil
}

func (c Carried) fields() []string {
	from := "-"
	if c.HasFrom {
		from = strconv.FormatInt(c.From, 10)
	}
	return []string{"carried", c.Commit, "window", from, strconv.FormatInt(c.To, 10)}
}
