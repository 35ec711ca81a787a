package hooks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/guard"
)

// Presence states: what a context holds of a file, as the guard would
// judge its next edit (see Presence).
const (
	HeldCurrent   = "current"   // its latest evidence is the version on disk
	HeldStale     = "stale"     // its latest evidence is another version (or the file is gone)
	HeldPartial   = "partial"   // its latest view was part of the file: no version pinned
	HeldAccessed  = "accessed"  // a deny-listed file: accessed, no content archived
	HeldCompacted = "compacted" // seen only before the context's last compaction: not held
)

// Holder is one context's hold on a file.
type Holder struct {
	Harness string      `json:"harness,omitempty"`
	Writer  string      `json:"writer"`
	Session string      `json:"session,omitempty"`
	Agent   string      `json:"agent,omitempty"`
	State   string      `json:"state"`
	Op      gitstore.Op `json:"op"` // what put its latest version into the context
	TS      time.Time   `json:"ts"` // when
	Blob    string      `json:"blob,omitempty"`
}

// Change is an edit or write of a file by some context.
type Change struct {
	Harness string      `json:"harness,omitempty"`
	Writer  string      `json:"writer"`
	Session string      `json:"session,omitempty"`
	Agent   string      `json:"agent,omitempty"`
	Op      gitstore.Op `json:"op"`
	TS      time.Time   `json:"ts"`
	Blob    string      `json:"blob,omitempty"`
	// Current is true when the change produced the version on disk now.
	Current bool `json:"current"`
}

// Describe names the context that made the change, for a model: "codex
// session X (subagent Y)".
func (c Change) Describe() string {
	s := guard.Printable(c.Harness)
	if c.Harness == "" {
		s = "writer " + guard.Printable(c.Writer)
	}
	if c.Session != "" {
		s += " session " + guard.Printable(c.Session)
	}
	if c.Agent != "" {
		s += " (subagent " + guard.Printable(c.Agent) + ")"
	}
	return s
}

// FilePresence is who holds one file.
type FilePresence struct {
	Path     string `json:"path"` // repo-relative (absolute outside the work tree)
	Exists   bool   `json:"exists"`
	DiskBlob string `json:"disk_blob,omitempty"`
	// Denied: a deny-listed file; its content is never read nor hashed.
	Denied     bool     `json:"denied,omitempty"`
	Holders    []Holder `json:"holders"`
	LastWriter *Change  `json:"last_writer,omitempty"`
}

// PresenceOptions select the files.
type PresenceOptions struct {
	// Paths are absolute paths; empty: every file an archived context has
	// seen or written.
	Paths []string
	// HarnessOf maps a writer to its harness (gitstore.HarnessOf).
	HarnessOf func(writer string) string
}

type ctxKey struct{ writer, session, agent string }

// Presence answers, for each file, which contexts hold its current version,
// which a stale one, and who wrote it last. A context's hold is what the
// guard would decide for its next edit of the file (guard.Decide on the
// same archived evidence and compaction boundary the pre-tool-use hook
// uses, see archivedEvidence and archivedBoundary), so who and the guard
// never disagree about the archive. The unswept tail of a live transcript
// is not read: post-tool-use sweeps it on every tool call, and who must not
// open every session's transcript.
//
// It reads the archive once: one selection of the lines whose op puts
// content into a context (sifted on their bytes before parsing, and by the
// files' paths when Paths is set), one of the compaction boundaries.
func Presence(ctx context.Context, st *gitstore.Store, opt PresenceOptions) ([]FilePresence, error) {
	keys := make([]fileKey, 0, len(opt.Paths))
	var needles [][]byte
	named := map[fileKey]bool{}
	for _, p := range opt.Paths {
		k := keyOf(st, p)
		n := k.needles()
		if n == nil {
			return nil, fmt.Errorf("path %q cannot be searched for", k.rel)
		}
		if !named[k] {
			named[k] = true
			keys = append(keys, k)
			needles = append(needles, n...)
		}
	}
	keep := func(_ string, line []byte) bool { return lineOp(line).IsFileVersion() }
	evs, err := st.Select(ctx, gitstore.Selection{Any: needles, Keep: keep})
	if err != nil {
		return nil, fmt.Errorf("presence: %w", err)
	}
	bounds, err := allBoundaries(ctx, st)
	if err != nil {
		return nil, err
	}
	// Archive order within a context is its writer's seq order (Select
	// returns writer by writer); Decide breaks timestamp ties by it.
	if len(keys) == 0 {
		seen := map[string]bool{}
		for _, e := range evs {
			p := realPathOf(e)
			if p == "" || seen[p] {
				continue
			}
			seen[p] = true
			keys = append(keys, fileKey{rel: p, real: p})
		}
		sort.Slice(keys, func(i, j int) bool { return keys[i].rel < keys[j].rel })
	}
	// Index the events by each path they are found under (the path named
	// and the file it resolved to), so each file looks at its own events
	// only: the default lists every file the archive knows.
	byPath := map[string][]int{}
	for i, e := range evs {
		raw, real := e.RawPath(), realPathOf(e)
		byPath[raw] = append(byPath[raw], i)
		if real != raw {
			byPath[real] = append(byPath[real], i)
		}
	}
	out := make([]FilePresence, 0, len(keys))
	for _, k := range keys {
		idx := byPath[k.real]
		if k.rel != k.real {
			idx = mergeIdx(idx, byPath[k.rel])
		}
		mine := make([]gitstore.Event, len(idx))
		for j, i := range idx {
			mine[j] = evs[i]
		}
		out = append(out, presenceOf(st, k, mine, bounds, opt.HarnessOf))
	}
	return out, nil
}

// mergeIdx merges two ascending index lists, without duplicates.
func mergeIdx(a, b []int) []int {
	out := make([]int, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || (i < len(a) && a[i] < b[j]):
			out = append(out, a[i])
			i++
		case i == len(a) || b[j] < a[i]:
			out = append(out, b[j])
			j++
		default:
			out = append(out, a[i])
			i, j = i+1, j+1
		}
	}
	return out
}

// allBoundaries is every context's last archived compaction boundary
// (the rule of archivedBoundary, for all contexts at once).
func allBoundaries(ctx context.Context, st *gitstore.Store) (map[ctxKey]*guard.Boundary, error) {
	keep := func(_ string, line []byte) bool {
		return lineOp(line) == gitstore.OpCompact && bytes.Contains(line, []byte(`"key":"compact:`))
	}
	evs, err := st.Select(ctx, gitstore.Selection{Any: [][]byte{gitstore.OpCompact.Needle()}, Keep: keep})
	if err != nil {
		return nil, fmt.Errorf("presence: compaction boundaries: %w", err)
	}
	out := map[ctxKey]*guard.Boundary{}
	for _, e := range evs {
		if !strings.HasPrefix(e.Key, "compact:") {
			continue
		}
		k := ctxKey{e.Writer, e.Session, e.Agent}
		if b := out[k]; b == nil || !e.TS.Before(b.TS) {
			out[k] = &guard.Boundary{Key: e.Key, TS: e.TS}
		}
	}
	return out, nil
}

func presenceOf(st *gitstore.Store, k fileKey, evs []gitstore.Event, bounds map[ctxKey]*guard.Boundary, harnessOf func(string) string) FilePresence {
	fp := FilePresence{Path: k.real, Holders: []Holder{}}
	abs := k.real
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(st.Location().WorkTree, filepath.FromSlash(abs))
	}
	// A file that is gone needs no deny check (nothing is read); one
	// that exists is checked before a byte of it is read.
	if _, err := os.Lstat(abs); err == nil {
		fp.Exists = true
		if _, _, denied := st.Deny().Check(abs); denied {
			fp.Denied = true
		} else if disk, err := os.ReadFile(abs); err == nil {
			fp.DiskBlob = gitstore.BlobID(disk)
		} else if errors.Is(err, fs.ErrNotExist) {
			fp.Exists = false // a dangling symlink: no file behind it
		}
		// Otherwise unreadable (a directory, a symlink loop): it exists,
		// with no version.
	}
	type ctxEv struct {
		evs  []guard.Evidence
		srcs []gitstore.Event
	}
	per := map[ctxKey]*ctxEv{}
	var order []ctxKey
	for _, e := range evs {
		if !k.matches(e) {
			continue
		}
		ck := ctxKey{e.Writer, e.Session, e.Agent}
		c := per[ck]
		if c == nil {
			c = &ctxEv{}
			per[ck] = c
			order = append(order, ck)
		}
		c.evs = append(c.evs, evidenceOf(e))
		c.srcs = append(c.srcs, e)
		if e.Op == gitstore.OpEdit || e.Op == gitstore.OpWrite {
			if lw := fp.LastWriter; lw == nil || !e.TS.Before(lw.TS) {
				fp.LastWriter = &Change{Harness: gitstore.HarnessOf(e.Harness, e.Writer, harnessOf), Writer: e.Writer, Session: e.Session, Agent: e.Agent, Op: e.Op, TS: e.TS, Blob: e.Blob}
			}
		}
	}
	if lw := fp.LastWriter; lw != nil {
		lw.Current = fp.DiskBlob != "" && lw.Blob == fp.DiskBlob
	}
	for _, ck := range order {
		c := per[ck]
		// A file that is gone is judged as one whose disk version no
		// evidence has: every hashed hold is stale (Decide would allow
		// a create, which says nothing about what the context holds).
		in := guard.Input{Path: abs, Exists: true, DiskBlob: fp.DiskBlob, Evidence: c.evs, Boundary: bounds[ck], Agent: ck.agent}
		d := guard.Decide(in)
		h := Holder{Harness: "", Writer: ck.writer, Session: ck.session, Agent: ck.agent}
		var src *gitstore.Event
		for i := range c.evs {
			if d.Latest == &c.evs[i] {
				src = &c.srcs[i]
			}
		}
		if src == nil { // compacted away: name the last thing it saw
			src = &c.srcs[len(c.srcs)-1]
		}
		h.Harness = gitstore.HarnessOf(src.Harness, src.Writer, harnessOf)
		h.Op, h.TS = src.Op, src.TS
		if !src.Excluded {
			h.Blob = src.Blob
		}
		switch {
		case d.Kind == guard.DenyCompacted:
			h.State = HeldCompacted
		case src.Excluded || fp.Denied:
			h.State = HeldAccessed
		case d.Kind == guard.AllowCurrent:
			h.State = HeldCurrent
		case d.Kind == guard.AllowPartial:
			h.State = HeldPartial
		default:
			h.State = HeldStale
		}
		fp.Holders = append(fp.Holders, h)
	}
	sort.SliceStable(fp.Holders, func(i, j int) bool {
		if r, s := stateRank(fp.Holders[i].State), stateRank(fp.Holders[j].State); r != s {
			return r < s
		}
		return fp.Holders[i].TS.After(fp.Holders[j].TS)
	})
	return fp
}

func stateRank(s string) int {
	switch s {
	case HeldCurrent:
		return 0
	case HeldPartial:
		return 1
	case HeldStale:
		return 2
	case HeldAccessed:
		return 3
	}
	return 4
}

// changedBy finds who changed the file key names after evidence seen was
// taken in context self: the latest edit or write by another context after
// it that produced the version on disk (blob match), else the latest edit
// or write by another context after it. Nil when the archive knows none.
// It runs only when the guard denies for drift: one search of every
// writer for the file's paths.
func changedBy(ctx context.Context, st *gitstore.Store, key fileKey, self ctxKey, seen guard.Evidence, diskBlob string, harnessOf func(string) string) (*Change, error) {
	needles := key.needles()
	if len(needles) == 0 {
		return nil, nil
	}
	keep := func(_ string, line []byte) bool {
		op := lineOp(line)
		return op == gitstore.OpEdit || op == gitstore.OpWrite
	}
	evs, err := st.Select(ctx, gitstore.Selection{Any: needles, Keep: keep})
	if err != nil {
		return nil, err
	}
	var match, last *gitstore.Event
	for i := range evs {
		e := &evs[i]
		if (e.Op != gitstore.OpEdit && e.Op != gitstore.OpWrite) || !key.matches(*e) || !e.TS.After(seen.TS) {
			continue
		}
		if (ctxKey{e.Writer, e.Session, e.Agent}) == self {
			continue
		}
		if last == nil || !e.TS.Before(last.TS) {
			last = e
		}
		if diskBlob != "" && e.Blob == diskBlob && !e.Excluded && (match == nil || !e.TS.Before(match.TS)) {
			match = e
		}
	}
	if match == nil {
		match = last
	}
	if match == nil {
		return nil, nil
	}
	return &Change{Harness: gitstore.HarnessOf(match.Harness, match.Writer, harnessOf), Writer: match.Writer, Session: match.Session, Agent: match.Agent,
		Op: match.Op, TS: match.TS, Blob: match.Blob, Current: diskBlob != "" && match.Blob == diskBlob}, nil
}

// FileEvents returns the archived events about the files at the given
// repository-relative paths (the path the model named, or the file it
// resolved to) that are file versions (gitstore.Op.IsFileVersion): one
// selection over every writer, sifted
// on the stored bytes before parsing, writer by writer in seq order. Line
// provenance (package blame) reads the versions agents saw and wrote
// through it, so blame, who and the guard agree on which events are about
// a file. No paths: every file version.
func FileEvents(ctx context.Context, st *gitstore.Store, rels []string) ([]gitstore.Event, error) {
	var keys []fileKey
	var needles [][]byte
	for _, rel := range rels {
		k := fileKey{rel: rel, real: rel}
		n := k.needles()
		if n == nil {
			return nil, fmt.Errorf("path %q cannot be searched for", rel)
		}
		keys = append(keys, k)
		needles = append(needles, n...)
	}
	keep := func(_ string, line []byte) bool { return lineOp(line).IsFileVersion() }
	evs, err := st.Select(ctx, gitstore.Selection{Any: needles, Keep: keep})
	if err != nil {
		return nil, fmt.Errorf("events of %d files: %w", len(keys), err)
	}
	if len(keys) == 0 {
		return evs, nil
	}
	out := evs[:0]
	for _, e := range evs {
		for _, k := range keys {
			if k.matches(e) {
				out = append(out, e)
				break
			}
		}
	}
	return out, nil
}

// RealPath is the file an archived event is about: the path it resolved
// to when it was recorded (a symlink's target), else the path it names.
func RealPath(e gitstore.Event) string { return realPathOf(e) }
