package gitstore

// The push gate: what a push of the archive would send, and whether it may.
//
// Everything that sends the archive to another machine (git lossless push;
// later anchor push and sync) goes through the same three steps:
//
//  1. the remote's refs, as `git ls-remote` reports them (LsRemote, or any
//     map of ref name to commit id);
//  2. the plan (Store.Outgoing): every object the push sends. Per writer,
//     the batches from the local head back to (not including) the
//     remote's commit for that ref: their commits, trees, events.jsonl
//     blobs, the content blobs their trees list (blobs/) — a pruned blob is
//     in no tree and is not sent — and anything else a hand-made tree
//     holds; a remote commit that is not an ancestor of the local head (a
//     writer rewritten by prune, or one the remote has batches of that
//     this machine lacks) makes the update non-fast-forward and the plan
//     holds the writer's whole history. Per receipts' notes ref
//     (refs/notes/lossless/*), the notes commits the remote lacks, their
//     trees and note blobs, less what the remote's notes commit's tree
//     already holds. Items lists every blob; commits and trees are
//     counted (Counts.Objects) and kept for the check;
//  3. the check (Outgoing.Check): everything that leaves is scanned for
//     secrets — every blob that is not age ciphertext (content, notes,
//     anything unnamed), every field of every event line (session, agent,
//     path, real_path, tool, key, extra fields), every commit (message and
//     headers), every tree's entry names and every ref name; every file
//     version marked "secrets": N at write is flagged; every file version
//     (and every span naming a path) that git would not commit is flagged
//     — its path is ignored there, or outside the repository, judged by
//     the file it was read from: the path, its recorded real_path, what
//     the path resolves to now, and the other names of a hard-linked file
//     (linkcheck.go); non-fast-forward updates are flagged; a policy
//     (PushPolicy) allows some kinds, the rest refuse the push. Encrypted
//     content cannot be scanned: it is counted and listed, never refused.
//
// Then Push sends exactly the planned refs, each as a compare-and-swap
// against the remote value the plan was made from (--force-with-lease), so
// what leaves is what was checked.

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/git-lossless/git-lossless/internal/gitobj"
)

// PushRefPatterns are the ref patterns that hold the archive: the writers'
// logs and the receipts' notes. `git ls-remote REMOTE PATTERNS...` lists
// what a remote holds of them.
var PushRefPatterns = []string{RefPrefix + "*", NotesPrefix + "*"}

// ContentKind classifies an outgoing content blob by the event naming it.
type ContentKind string

const (
	// ContentFile is a file version: any op with content that is not a
	// span or a vault entry (read, edit, write, attach, restore, ...).
	ContentFile ContentKind = "file"
	// ContentSpan is conversation text (op "span").
	ContentSpan ContentKind = "span"
	// ContentVault is a vault entry (op "vault"): redacted values, age
	// ciphertext to the local identity.
	ContentVault ContentKind = "vault"
	// ContentUnnamed is a blob a batch tree lists that no event of the
	// batch names (a damaged or hand-made archive): sent all the same.
	ContentUnnamed ContentKind = "unnamed"
	// ContentEvents is a batch's events.jsonl: the event lines themselves
	// (sessions, agents, paths, tools, ...).
	ContentEvents ContentKind = "events"
	// ContentNote is a note blob on a notes ref (a signed receipt: paths,
	// session ids, ...).
	ContentNote ContentKind = "note"
	// ContentCommit is a commit (a problem in its message or headers), and
	// ContentTree a tree (a problem in an entry's name): not items, as
	// Items lists blobs.
	ContentCommit ContentKind = "commit"
	ContentTree   ContentKind = "tree"
	// ContentRef is a ref name (a problem in the name itself).
	ContentRef ContentKind = "ref"
)

// contentKind returns the kind of an event's content.
func contentKind(op Op) ContentKind {
	switch op {
	case OpSpan:
		return ContentSpan
	case OpVault:
		return ContentVault
	}
	return ContentFile
}

// OutgoingItem is one blob a push sends: a content blob as one event
// names it, a batch's events.jsonl, a note, or a blob no event names.
type OutgoingItem struct {
	Writer string      `json:"writer"`          // the writer or notes name
	Notes  bool        `json:"notes,omitempty"` // on a notes ref
	Seq    int64       `json:"seq,omitempty"`   // the entry naming it (the first of the batch for events); 0 for a note or an unnamed blob
	Op     Op          `json:"op,omitempty"`
	Kind   ContentKind `json:"kind"`
	Path   string      `json:"path,omitempty"` // the raw path (Event.RawPath)
	// RealPath is the file the path resolved to when it was recorded
	// (the event's extra "real_path" or "real_path64"), raw.
	RealPath string `json:"real_path,omitempty"`
	Repo     string `json:"repo,omitempty"`
	// TreePath is where a tree lists the blob when no event names it: a
	// note's path in the notes tree (the annotated object's id), or an
	// unnamed blob's path in a batch tree.
	TreePath  string `json:"tree_path,omitempty"`
	Blob      string `json:"blob"`
	Bytes     int64  `json:"bytes"`
	Encrypted bool   `json:"encrypted,omitempty"` // "enc":"age": sent as ciphertext, not scanned
	Marked    int64  `json:"secrets,omitempty"`   // the "secrets": N mark written with a file version

	// body is an events.jsonl as the plan read it: the check scans it
	// without reading it again (a hook-written archive has one per event).
	body []byte
}

// OutgoingCounts sums up what a push sends.
type OutgoingCounts struct {
	Batches      int `json:"batches"` // batch commits (notes commits for a notes ref)
	Events       int `json:"events"`
	Spans        int `json:"spans"`
	FileVersions int `json:"file_versions"`
	Vault        int `json:"vault"`
	Encrypted    int `json:"encrypted"` // content items sent as age ciphertext (spans, vault entries, ...)
	// Blobs and Bytes: the distinct content blobs (note blobs for a
	// notes ref) and their bytes, as the events record them (as stored,
	// for notes).
	Blobs  int   `json:"blobs"`
	Bytes  int64 `json:"bytes"`
	Pruned int   `json:"pruned"` // events whose content was pruned: the event goes, the content does not
	// Objects and ObjectBytes: every distinct object the ref's update
	// sends — commits, trees, events.jsonl and every other blob — and
	// their sizes as stored (uncompressed). An object the remote already
	// has through an older batch (the same file read again) may be
	// counted: git sends it at most once.
	Objects     int   `json:"objects"`
	ObjectBytes int64 `json:"object_bytes"`
}

func (c *OutgoingCounts) add(o OutgoingCounts) {
	c.Batches += o.Batches
	c.Events += o.Events
	c.Spans += o.Spans
	c.FileVersions += o.FileVersions
	c.Vault += o.Vault
	c.Encrypted += o.Encrypted
	c.Pruned += o.Pruned
}

// outObject is a commit or tree a push sends, kept for the check: where
// it belongs and which entries (a batch's first and last) it carries.
// Compact: a push of hook-written batches holds three per event.
type outObject struct {
	id         string
	first, seq int64 // the batch's entries (0 for notes)
	ref        int32 // index into Outgoing.objRefs
	tree       bool  // a tree, else a commit
	// text is what the check scans, kept from the plan's own read (a
	// commit as read, a tree's entry names); nil: the check reads it.
	text []byte
}

// objRef is a ref objects belong to.
type objRef struct{ ref, name string }

// planned is what one ref's plan sends besides its items' list: its
// objects and their sizes, split into those no other writer shares (a
// writer's commits, root trees and events.jsonl hold its own chain; two
// refs at one history would count them twice) and the rest (content
// blobs, subtrees, notes), which are counted once across refs.
type planned struct {
	ownN     int
	ownBytes int64
	shared   map[string]int64
	objects  []outObject // its commits and trees, for the check
}

// RefUpdate is one ref a push updates.
type RefUpdate struct {
	Ref    string `json:"ref"`
	Name   string `json:"name"` // the writer (refs/lossless/<name>) or notes name (refs/notes/lossless/<name>)
	Notes  bool   `json:"notes,omitempty"`
	Local  string `json:"local"`            // the commit pushed
	Remote string `json:"remote,omitempty"` // the remote's commit before ("" when it lacks the ref)
	// NonFastForward: the remote's commit is not an ancestor of Local, so
	// the update discards the remote's history of this ref (after a prune
	// rewrote the writer, or when the remote holds batches this machine
	// lacks). The plan then holds the whole history.
	NonFastForward bool `json:"non_fast_forward,omitempty"`
	// RemoteMissing: the remote's commit is not on this machine at all
	// (someone else pushed to this writer).
	RemoteMissing bool           `json:"remote_missing,omitempty"`
	FromSeq       int64          `json:"from_seq,omitempty"` // first entry sent (writers)
	ToSeq         int64          `json:"to_seq,omitempty"`   // last entry sent
	Counts        OutgoingCounts `json:"counts"`
	// Err says why the local ref could not be planned (a damaged chain);
	// Check refuses such a ref.
	Err string `json:"error,omitempty"`
}

// Outgoing is the plan of a push: what it would send, ref by ref.
type Outgoing struct {
	Writers  []RefUpdate    `json:"writers"`
	Notes    []RefUpdate    `json:"notes"`
	UpToDate int            `json:"up_to_date"` // local refs the remote already has at the same commit
	Items    []OutgoingItem `json:"items"`      // every content blob sent, per event naming it
	Total    OutgoingCounts `json:"total"`
	// Skipped lists local refs under the archive's prefixes that are not
	// valid writer names: never pushed.
	Skipped []string `json:"skipped,omitempty"`

	s       *Store
	objects []outObject // the commits and trees sent, for Check
	objRefs []objRef
}

// Empty reports whether there is nothing to push.
func (o *Outgoing) Empty() bool { return len(o.Writers) == 0 && len(o.Notes) == 0 }

// Refs returns every planned ref update, writers first.
func (o *Outgoing) Refs() []RefUpdate {
	return append(append([]RefUpdate(nil), o.Writers...), o.Notes...)
}

// ParseLsRemote reads `git ls-remote` output ("<id>\t<ref>" lines) into a
// map of ref name to commit id, keeping only refs under the archive's
// prefixes (ls-remote matches patterns against any tail of a ref name).
func ParseLsRemote(out []byte) (map[string]string, error) {
	return parseLsRemote(out, func(ref string) bool {
		return strings.HasPrefix(ref, RefPrefix) || strings.HasPrefix(ref, NotesPrefix)
	})
}

// parseLsRemote parses `git ls-remote` output into ref name → id, peeled
// "^{}" lines left out, keeping the refs keep accepts (nil: all).
func parseLsRemote(out []byte, keep func(ref string) bool) (map[string]string, error) {
	refs := map[string]string{}
	for n, line := range strings.Split(string(out), "\n") {
		if line == "" {
			continue
		}
		id, ref, ok := strings.Cut(line, "\t")
		if !ok || !gitobj.IsID(id) {
			return nil, fmt.Errorf("ls-remote line %d: not \"<id>\\t<ref>\": %s", n+1, QuotePath(line))
		}
		if strings.HasSuffix(ref, "^{}") {
			continue
		}
		if keep == nil || keep(ref) {
			refs[ref] = id
		}
	}
	return refs, nil
}

// Outgoing plans a push of the archive to a remote whose refs are remote
// (ref name → commit id, as `git ls-remote` reports them; refs outside
// refs/lossless/ and refs/notes/lossless/ are ignored). It reads only
// through the store's own readers and changes nothing.
func (s *Store) Outgoing(ctx context.Context, remote map[string]string) (*Outgoing, error) {
	o := &Outgoing{s: s, Writers: []RefUpdate{}, Notes: []RefUpdate{}, Items: []OutgoingItem{}}
	local, err := s.refs.List(RefPrefix)
	if err != nil {
		return nil, err
	}
	notes, err := s.refs.List(NotesPrefix)
	if err != nil {
		return nil, err
	}
	// Each ref's items and objects are joined once, sized, at the end:
	// growing one slice of a few hundred thousand items costs more than
	// planning them.
	var parts [][]OutgoingItem
	var objParts [][]outObject
	seenBlob := map[string]bool{}
	seenObj := map[string]bool{}
	total := func(items []OutgoingItem, pl planned) {
		for _, it := range items {
			if !seenBlob[it.Blob] && it.Kind != ContentEvents {
				seenBlob[it.Blob] = true
				o.Total.Blobs++
				o.Total.Bytes += it.Bytes
			}
		}
		objParts = append(objParts, pl.objects)
		o.Total.Objects += pl.ownN
		o.Total.ObjectBytes += pl.ownBytes
		for id, n := range pl.shared {
			if !seenObj[id] {
				seenObj[id] = true
				o.Total.Objects++
				o.Total.ObjectBytes += n
			}
		}
	}
	for _, ref := range sortedKeys(local) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		name := strings.TrimPrefix(ref, RefPrefix)
		if ValidWriter(name) != nil {
			o.Skipped = append(o.Skipped, ref)
			continue
		}
		id, rid := local[ref], remote[ref]
		if id == rid {
			o.UpToDate++
			continue
		}
		o.objRefs = append(o.objRefs, objRef{RefPrefix + name, name})
		u, items, pl, err := s.planWriter(ctx, name, id, rid, int32(len(o.objRefs)-1))
		if err != nil {
			return nil, err
		}
		total(items, pl)
		o.Total.add(u.Counts)
		o.Writers = append(o.Writers, u)
		parts = append(parts, items)
	}
	for _, ref := range sortedKeys(notes) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		name := strings.TrimPrefix(ref, NotesPrefix)
		if ValidWriter(name) != nil {
			o.Skipped = append(o.Skipped, ref)
			continue
		}
		id, rid := notes[ref], remote[ref]
		if id == rid {
			o.UpToDate++
			continue
		}
		o.objRefs = append(o.objRefs, objRef{NotesPrefix + name, name})
		u, items, pl, err := s.planNotes(ctx, name, id, rid, int32(len(o.objRefs)-1))
		if err != nil {
			return nil, err
		}
		total(items, pl)
		o.Notes = append(o.Notes, u)
		parts = append(parts, items)
	}
	o.Items = joinParts(parts)
	o.objects = joinParts(objParts)
	return o, nil
}

// joinParts concatenates slices into one of their total length (never
// nil).
func joinParts[T any](parts [][]T) []T {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	out := make([]T, 0, n)
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// planWriter plans one writer's update from remote commit rid ("" when
// the remote lacks it) to local head id: the ref update, the blobs it
// sends (Items), and its objects: their sizes, and its commits and trees
// (as ref ri) for the check.
func (s *Store) planWriter(ctx context.Context, name, id, rid string, ri int32) (RefUpdate, []OutgoingItem, planned, error) {
	u := RefUpdate{Ref: RefPrefix + name, Name: name, Local: id, Remote: rid}
	h, err := s.headAt(id)
	if err != nil {
		u.Err = err.Error()
		return u, nil, planned{}, nil
	}
	stop, stopSeq := "", int64(0)
	if rid != "" {
		c, err := s.readCommit(rid)
		switch {
		case err == nil && c.Seq > 0 && c.Seq < h.Seq:
			stop, stopSeq = rid, c.Seq
		case errors.Is(err, ErrObjectMissing):
			u.NonFastForward, u.RemoteMissing = true, true
		default:
			// Not a batch commit of ours, or not behind the head: no
			// fast-forward can reach it.
			u.NonFastForward = true
		}
	}
	batches, bobjs, found, err := s.walkObjects(ctx, id, stop, stopSeq, true)
	if err != nil {
		return u, nil, planned{}, err
	}
	if stop != "" && !found {
		// The remote's commit is not on this history (a prune rewrote
		// it): the whole history goes.
		u.NonFastForward = true
		if batches, bobjs, _, err = s.walkObjects(ctx, id, "", 0, true); err != nil {
			return u, nil, planned{}, err
		}
	}
	// Sized up front: a push of hook-written batches holds an item and
	// three objects per event, and growing them is most of the plan's
	// cost.
	nItems, nObjs := 0, 0
	for bi, b := range batches {
		nItems += len(b.Lines) + 1
		nObjs += 1 + len(bobjs[bi].trees)
	}
	items := make([]OutgoingItem, 0, nItems)
	mine := make([]outObject, 0, nObjs)
	var pl planned
	sizes := map[string]int64{} // the shared objects
	seen := map[string]bool{}
	for bi, b := range batches {
		if b.Err != nil {
			u.Err = fmt.Sprintf("batch %s: %v (run `git lossless verify %s`)", gitobj.Short(b.Commit), b.Err, name)
			return u, nil, planned{}, nil
		}
		bo := bobjs[bi]
		u.Counts.Batches++
		named := map[string]bool{}
		first, last := int64(0), int64(0)
		for _, l := range b.Lines {
			e, err := ParseEvent(l)
			if err != nil {
				u.Err = fmt.Sprintf("batch %s: %v", gitobj.Short(b.Commit), err)
				return u, nil, planned{}, nil
			}
			u.Counts.Events++
			if u.FromSeq == 0 {
				u.FromSeq = e.Seq
			}
			if first == 0 {
				first = e.Seq
			}
			u.ToSeq, last = e.Seq, e.Seq
			if e.Blob == "" || e.Excluded {
				continue
			}
			if !b.Blobs[e.Blob] {
				u.Counts.Pruned++
				continue
			}
			named[e.Blob] = true
			it := OutgoingItem{Writer: name, Seq: e.Seq, Op: e.Op, Kind: contentKind(e.Op), Path: e.RawPath(), RealPath: realPathOf(&e),
				Repo: e.Repo, Blob: e.Blob, Bytes: e.Bytes, Encrypted: IsEncrypted(&e), Marked: extraInt(&e, "secrets")}
			switch it.Kind {
			case ContentSpan:
				u.Counts.Spans++
			case ContentVault:
				u.Counts.Vault++
			default:
				u.Counts.FileVersions++
			}
			if it.Encrypted {
				u.Counts.Encrypted++
			}
			if !seen[it.Blob] {
				seen[it.Blob] = true
				u.Counts.Blobs++
				u.Counts.Bytes += it.Bytes
				sizes[it.Blob] = it.Bytes
			}
			items = append(items, it)
		}
		for _, bl := range sortedSet(b.Blobs) {
			if !named[bl] {
				n := s.objectSize(bl) // no event records its size
				items = append(items, OutgoingItem{Writer: name, Kind: ContentUnnamed, Blob: bl, Bytes: n})
				if !seen[bl] {
					seen[bl] = true
					u.Counts.Blobs++
					u.Counts.Bytes += n
					sizes[bl] = n
				}
			}
		}
		// The batch's own objects: its events, its commit and trees, and
		// whatever else its tree holds.
		items = append(items, OutgoingItem{Writer: name, Seq: first, Kind: ContentEvents, Blob: bo.events, Bytes: int64(bo.eventsBytes), body: bo.eventsBody})
		pl.ownN += 2 // the commit and events.jsonl
		pl.ownBytes += int64(bo.eventsBytes) + int64(bo.commitBytes)
		mine = append(mine, outObject{ref: ri, id: b.Commit, first: first, seq: last, text: bo.commit})
		for k, t := range bo.trees {
			if k == 0 { // the root tree: it lists events.jsonl, so it is the batch's own
				pl.ownN++
				pl.ownBytes += int64(t.bytes)
			} else {
				sizes[t.id] = int64(t.bytes)
			}
			mine = append(mine, outObject{ref: ri, id: t.id, tree: true, first: first, seq: last, text: t.names})
		}
		for _, ob := range bo.other {
			n := s.objectSize(ob.id)
			items = append(items, OutgoingItem{Writer: name, Seq: first, Kind: ContentUnnamed, TreePath: ob.path, Blob: ob.id, Bytes: n})
			if !seen[ob.id] {
				seen[ob.id] = true
				u.Counts.Blobs++
				u.Counts.Bytes += n
			}
			sizes[ob.id] = n
		}
	}
	pl.shared, pl.objects = sizes, mine
	u.Counts.Objects = pl.ownN + len(sizes)
	u.Counts.ObjectBytes = pl.ownBytes
	for _, n := range sizes {
		u.Counts.ObjectBytes += n
	}
	return u, items, pl, nil
}

// objectSize is the size of an object no event records (0 when it
// cannot be read: the check reports that).
func (s *Store) objectSize(id string) int64 {
	_, body, err := s.odb.Read(id)
	if err != nil {
		return 0
	}
	return int64(len(body))
}

// realPathOf is the raw real_path recorded beside an event's path (hooks
// record it when the path resolves through a symlink), "" when none.
func realPathOf(e *Event) string {
	if s := e.ExtraString("real_path64"); s != "" {
		if b, err := base64.StdEncoding.DecodeString(s); err == nil {
			return string(b)
		}
	}
	return e.ExtraString("real_path")
}

// planNotes plans one notes ref's update from remote commit rid to local
// commit id: the notes commits the remote lacks (every commit reachable
// from id without passing through rid), every tree and blob their trees
// hold that the remote's notes tree does not, and whether rid is among
// id's ancestors (a fast-forward) or missing here. Each note blob is an
// item (a receipt names paths, sessions and writers: it is scanned like
// content).
func (s *Store) planNotes(ctx context.Context, name, id, rid string, ri int32) (RefUpdate, []OutgoingItem, planned, error) {
	u := RefUpdate{Ref: NotesPrefix + name, Name: name, Notes: true, Local: id, Remote: rid}
	have := map[string]bool{} // trees and blobs the remote's notes commit holds
	if rid != "" {
		c, err := s.readCommit(rid)
		switch {
		case errors.Is(err, ErrObjectMissing):
			u.RemoteMissing = true
		case err == nil:
			if err := s.notesTreeWalk(ctx, c.Tree, "", have, nil); err != nil {
				u.Err = err.Error()
			}
		}
	}
	ff := rid == ""
	sizes := map[string]int64{}
	var items []OutgoingItem
	var mine []outObject
	seen := map[string]bool{}
	queue := []string{id}
	for len(queue) > 0 && u.Err == "" {
		if err := ctx.Err(); err != nil {
			return u, nil, planned{}, err
		}
		c := queue[0]
		queue = queue[1:]
		if seen[c] {
			continue
		}
		seen[c] = true
		if c == rid {
			ff = true
			continue
		}
		typ, body, err := s.odb.Read(c)
		if err == nil && typ != "commit" {
			err = fmt.Errorf("%s is a %s, not a commit", gitobj.Short(c), typ)
		}
		var info commitInfo
		if err == nil {
			info, err = parseCommit(body)
		}
		if err != nil {
			u.Err = fmt.Sprintf("commit %s: %v", gitobj.Short(c), err)
			break
		}
		u.Counts.Batches++
		sizes[c] = int64(len(body))
		mine = append(mine, outObject{ref: ri, id: c, text: body})
		err = s.notesTreeWalk(ctx, info.Tree, "", have, func(kind ContentKind, p, oid string, n int) {
			sizes[oid] = int64(n)
			if kind == ContentTree {
				mine = append(mine, outObject{ref: ri, id: oid, tree: true})
				return
			}
			items = append(items, OutgoingItem{Writer: name, Notes: true, Kind: ContentNote, TreePath: p, Blob: oid, Bytes: int64(n)})
			u.Counts.Blobs++
			u.Counts.Bytes += int64(n)
		})
		if err != nil {
			u.Err = fmt.Sprintf("commit %s: %v", gitobj.Short(c), err)
			break
		}
		queue = append(queue, info.Parents...)
	}
	if u.Err != "" {
		return u, nil, planned{}, nil
	}
	u.NonFastForward = !ff
	u.Counts.Objects = len(sizes)
	for _, n := range sizes {
		u.Counts.ObjectBytes += n
	}
	return u, items, planned{shared: sizes, objects: mine}, nil
}

// notesTreeWalk visits the tree id and everything under it that is not
// in have, adding each to have; fn (when not nil) is called for each tree
// and blob with its path and size. Gitlinks are not sent and not visited.
func (s *Store) notesTreeWalk(ctx context.Context, id, p string, have map[string]bool, fn func(kind ContentKind, p, id string, n int)) error {
	if have[id] {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	typ, body, err := s.odb.Read(id)
	if err == nil && typ != "tree" {
		err = fmt.Errorf("%s is a %s, not a tree", gitobj.Short(id), typ)
	}
	if err != nil {
		return fmt.Errorf("notes tree %s: %w", gitobj.Short(id), err)
	}
	ents, err := gitobj.ParseTree(body)
	if err != nil {
		return fmt.Errorf("notes tree %s: %w", gitobj.Short(id), err)
	}
	have[id] = true
	if fn != nil {
		fn(ContentTree, p, id, len(body))
	}
	for _, e := range ents {
		ep := path.Join(p, e.Name)
		switch {
		case e.Mode == "160000":
		case e.IsTree():
			if err := s.notesTreeWalk(ctx, e.ID, ep, have, fn); err != nil {
				return err
			}
		case !have[e.ID]:
			have[e.ID] = true
			if fn == nil {
				continue
			}
			typ, body, err := s.odb.Read(e.ID)
			if err == nil && typ != "blob" {
				err = fmt.Errorf("%s is a %s, not a blob", gitobj.Short(e.ID), typ)
			}
			if err != nil {
				return fmt.Errorf("note %s: %w", ep, err)
			}
			fn(ContentNote, ep, e.ID, len(body))
		}
	}
	return nil
}

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// extraInt returns an unknown field's value as an integer (0 when absent
// or not a number).
func extraInt(e *Event, k string) int64 {
	raw, ok := e.Extra[k]
	if !ok {
		return 0
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return 0
	}
	return n
}
