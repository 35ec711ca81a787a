package gitstore

// The push gate: what a push of the archive would send, and whether it may.
//
// Everything that sends the archive to another machine (git lossless push;
// later anchor push and sync) goes through the same three steps:
//
//  1. the remote's refs, as `git ls-remote` reports them (LsRemote, or any
//     map of ref name to commit id);
//  2. the plan (Store.Outgoing): per writer, the batches from the local head
//     back to (not including) the remote's commit for that ref, their
//     events and the content blobs their trees list (blobs/) — a pruned
//     blob is in no tree and is not sent; a remote commit that is not an
//     ancestor of the local head (a writer rewritten by prune, or one the
//     remote has batches of that this machine lacks) makes the update
//     non-fast-forward and the plan holds the writer's whole history;
//     receipts' notes refs (refs/notes/lossless/*) likewise by commit;
//  3. the check (Outgoing.Check): every outgoing content blob that is not
//     age ciphertext is scanned for secrets, every file version marked
//     "secrets": N at write is flagged, every file version (and every
//     span naming a path) whose path git ignores — or that git would never
//     commit, being outside the repository — is flagged, non-fast-forward
//     updates are flagged; a policy (PushPolicy) allows some kinds, the
//     rest refuse the push. Encrypted content cannot be scanned: it is
//     counted and listed, never refused.
//
// Then Push sends exactly the planned refs, each as a compare-and-swap
// against the remote value the plan was made from (--force-with-lease), so
// what leaves is what was checked.

import (
	"context"
	"errors"
	"fmt"
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
)

// contentKind returns the kind of an event's content.
func contentKind(op string) ContentKind {
	switch op {
	case "span":
		return ContentSpan
	case OpVault:
		return ContentVault
	}
	return ContentFile
}

// OutgoingItem is one content blob a push sends, as one event names it.
type OutgoingItem struct {
	Writer    string      `json:"writer"`
	Seq       int64       `json:"seq,omitempty"` // 0 for an unnamed blob
	Op        string      `json:"op,omitempty"`
	Kind      ContentKind `json:"kind"`
	Path      string      `json:"path,omitempty"` // the raw path (Event.RawPath)
	Repo      string      `json:"repo,omitempty"`
	Blob      string      `json:"blob"`
	Bytes     int64       `json:"bytes"`
	Encrypted bool        `json:"encrypted,omitempty"` // "enc":"age": sent as ciphertext, not scanned
	Marked    int64       `json:"secrets,omitempty"`   // the "secrets": N mark written with a file version
}

// OutgoingCounts sums up what a push sends.
type OutgoingCounts struct {
	Batches      int   `json:"batches"` // batch commits (notes commits for a notes ref)
	Events       int   `json:"events"`
	Spans        int   `json:"spans"`
	FileVersions int   `json:"file_versions"`
	Vault        int   `json:"vault"`
	Encrypted    int   `json:"encrypted"` // content items sent as age ciphertext (spans, vault entries, ...)
	Blobs        int   `json:"blobs"`     // distinct content blobs
	Bytes        int64 `json:"bytes"`     // their bytes, as the events record them
	Pruned       int   `json:"pruned"`    // events whose content was pruned: the event goes, the content does not
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

	s *Store
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
	seenBlob := map[string]bool{}
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
		u, items, err := s.planWriter(ctx, name, id, rid)
		if err != nil {
			return nil, err
		}
		for _, it := range items {
			if !seenBlob[it.Blob] {
				seenBlob[it.Blob] = true
				o.Total.Blobs++
				o.Total.Bytes += it.Bytes
			}
		}
		o.Total.add(u.Counts)
		o.Writers = append(o.Writers, u)
		o.Items = append(o.Items, items...)
	}
	for _, ref := range sortedKeys(notes) {
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
		u := RefUpdate{Ref: ref, Name: name, Notes: true, Local: id, Remote: rid}
		n, ff, missing, err := s.commitsSince(ctx, id, rid)
		if err != nil {
			u.Err = err.Error()
		}
		u.Counts.Batches, u.NonFastForward, u.RemoteMissing = n, !ff, missing
		o.Notes = append(o.Notes, u)
	}
	return o, nil
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
// the remote lacks it) to local head id.
func (s *Store) planWriter(ctx context.Context, name, id, rid string) (RefUpdate, []OutgoingItem, error) {
	u := RefUpdate{Ref: RefPrefix + name, Name: name, Local: id, Remote: rid}
	h, err := s.headAt(id)
	if err != nil {
		u.Err = err.Error()
		return u, nil, nil
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
	batches, found, err := s.walk(ctx, id, stop, stopSeq)
	if err != nil {
		return u, nil, err
	}
	if stop != "" && !found {
		// The remote's commit is not on this history (a prune rewrote
		// it): the whole history goes.
		u.NonFastForward = true
		if batches, _, err = s.walk(ctx, id, "", 0); err != nil {
			return u, nil, err
		}
	}
	var items []OutgoingItem
	seen := map[string]bool{}
	for _, b := range batches {
		if b.Err != nil {
			u.Err = fmt.Sprintf("batch %s: %v (run `git lossless verify %s`)", gitobj.Short(b.Commit), b.Err, name)
			return u, nil, nil
		}
		u.Counts.Batches++
		named := map[string]bool{}
		for _, l := range b.Lines {
			e, err := ParseEvent(l)
			if err != nil {
				u.Err = fmt.Sprintf("batch %s: %v", gitobj.Short(b.Commit), err)
				return u, nil, nil
			}
			u.Counts.Events++
			if u.FromSeq == 0 {
				u.FromSeq = e.Seq
			}
			u.ToSeq = e.Seq
			if e.Blob == "" || e.Excluded {
				continue
			}
			if !b.Blobs[e.Blob] {
				u.Counts.Pruned++
				continue
			}
			named[e.Blob] = true
			it := OutgoingItem{Writer: name, Seq: e.Seq, Op: e.Op, Kind: contentKind(e.Op), Path: e.RawPath(),
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
			}
			items = append(items, it)
		}
		for _, bl := range sortedSet(b.Blobs) {
			if !named[bl] {
				items = append(items, OutgoingItem{Writer: name, Kind: ContentUnnamed, Blob: bl})
				if !seen[bl] {
					seen[bl] = true
					u.Counts.Blobs++
				}
			}
		}
	}
	return u, items, nil
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

// commitsSince counts the commits reachable from id without passing
// through rid (a notes ref's history: what the push sends), and says
// whether rid is among id's ancestors (a fast-forward) and whether rid is
// missing here.
func (s *Store) commitsSince(ctx context.Context, id, rid string) (n int, ff, missing bool, err error) {
	if rid != "" {
		if _, err := s.readCommit(rid); errors.Is(err, ErrObjectMissing) {
			missing = true
		}
	}
	ff = rid == ""
	seen := map[string]bool{}
	queue := []string{id}
	for len(queue) > 0 {
		if err := ctx.Err(); err != nil {
			return n, false, missing, err
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
		info, err := s.readCommit(c)
		if err != nil {
			return n, false, missing, fmt.Errorf("commit %s: %w", gitobj.Short(c), err)
		}
		n++
		queue = append(queue, info.Parents...)
	}
	return n, ff, missing, nil
}
