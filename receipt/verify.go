package receipt

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"

	pgperrors "github.com/ProtonMail/go-crypto/openpgp/errors"

	"github.com/git-lossless/git-lossless/anchor"
	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/receipt/note"
	"github.com/git-lossless/git-lossless/seal"
)

// Problem kinds reported by Verify. They are part of the CLI's output.
const (
	ProblemSignature  = "bad-signature"     // the note's or the notes commit's signature does not verify
	ProblemUnknownKey = "unknown-key"       // signed by a key not in the keyring
	ProblemKey        = "key-mismatch"      // signed by another key than the notes ref names
	ProblemFormat     = "malformed"         // the note is not a canonical receipt
	ProblemCommit     = "commit-mismatch"   // commit, tree, parents, times or paths differ from the annotated commit
	ProblemChain      = "chain"             // a writer's chain does not hold the head the receipt rests on
	ProblemEvent      = "event-missing"     // a referenced event is not in the sealed chain
	ProblemMismatch   = "event-mismatch"    // a referenced event does not say what the receipt says
	ProblemBlob       = "blob-missing"      // a named blob is not in the repository
	ProblemContent    = "blob-mismatch"     // a named blob's bytes do not hash to its id (or the event's sha256)
	ProblemPruned     = "pruned"            // content removed by a prune record: expected, not a failure
	ProblemNotes      = "notes-ref-invalid" // the notes ref cannot be read
	ProblemAlarm      = "alarm"             // an open alarm about a writer it rests on, or about the archive (anchor.Check)
)

// Problem is one thing Verify found wrong.
type Problem struct {
	Kind   string `json:"kind"`
	Detail string `json:"detail"`
}

// Result is the outcome of verifying one stored receipt.
type Result struct {
	Commit   string    `json:"commit"`
	Writer   string    `json:"writer"` // receipts-<key id>
	Ref      string    `json:"ref"`
	KeyID    string    `json:"key,omitempty"`
	UserID   string    `json:"signer,omitempty"`
	Problems []Problem `json:"problems,omitempty"`
	Pruned   []string  `json:"pruned,omitempty"` // blobs gone on purpose
	Checked  struct {
		Paths   int `json:"paths"`
		Events  int `json:"events"`
		Writers int `json:"writers"`
		Blobs   int `json:"blobs"`
	} `json:"checked"`
	// Harnesses are the agent harnesses the receipt names for its
	// contexts, sorted (none for a receipt issued before contexts named
	// theirs). An event that names its harness is checked against its
	// context's.
	Harnesses []string `json:"harnesses,omitempty"`
	// Carried lists, for a receipt carried through a rewrite, each
	// source commit and what Verify could check of it.
	Carried []CarriedSource `json:"carried,omitempty"`
	Receipt *note.Receipt   `json:"-"`
}

// CarriedSource is one commit a receipt was carried from, as Verify found
// it: Receipt is true when that commit's own receipt is still on the same
// notes ref (its window then must be the one the carried line names: a
// mismatch is a problem); Commit is true when the source commit object is
// still in the repository (a rewritten commit may be pruned by gc, and
// its receipt then stands as a signed claim).
type CarriedSource struct {
	Commit       string `json:"commit"`
	HasReceipt   bool   `json:"receipt"`
	CommitExists bool   `json:"exists"`
}

// OK reports whether the receipt verified.
func (r *Result) OK() bool { return len(r.Problems) == 0 }

func (r *Result) add(kind, format string, a ...any) {
	r.Problems = append(r.Problems, Problem{Kind: kind, Detail: fmt.Sprintf(format, a...)})
}

// Verify checks one stored receipt (s, found on writer for commit):
//
//  1. the note is clear-signed by a key in kr, and that key is the one the
//     notes ref is named after; the notes commit carries a valid signature
//     by the same key;
//  2. the body is a canonical receipt naming exactly the annotated commit:
//     its id, tree, parents and committer time, its first parent's
//     committer time, and the paths it changes with their modes and blobs;
//  3. every writer it rests on verifies as a sealed chain (seal.Verify,
//     structure and links) that still holds, at the recorded head seq, the
//     recorded seal — the chain may have grown since, never changed;
//  4. every referenced event is in that chain at or below the head and says
//     what the receipt says of it (path, context, op, blob, exclusion,
//     view);
//  5. every blob named exists, is a blob, hashes to its id and, where an
//     event names it, to the event's sha256 (a blob removed by a prune
//     record is reported as pruned, expected).
//
// note.Token counts and the coverage notes are signed claims: Verify does not
// recount them.
func Verify(ctx context.Context, st *gitstore.Store, s Stored, kr *Keyring) *Result {
	res := &Result{Commit: s.Note.Target, Writer: s.Writer, Ref: gitstore.NotesPrefix + s.Writer}
	wantKey := KeyIDOfWriter(s.Writer)

	// 1. Signatures.
	body, signer, err := VerifyNote(s.Text, kr)
	if err != nil {
		kind := ProblemSignature
		var se *SignatureError
		if errors.As(err, &se) && errors.Is(err, pgperrors.ErrUnknownIssuer) {
			kind = ProblemUnknownKey
			res.KeyID = se.KeyID
		}
		res.add(kind, "%v", err)
		return res
	}
	res.KeyID, res.UserID = KeyID(signer), UserID(signer)
	if res.KeyID != wantKey {
		res.add(ProblemKey, "note on %s is signed by key %s, not by the key the ref is named after", res.Ref, strings.ToUpper(res.KeyID))
	}
	head, err := st.NotesHead(ctx, s.Writer)
	if err != nil {
		res.add(ProblemNotes, "%s: %v", res.Ref, err)
	} else if csigner, err := VerifyCommitSignature(head.Payload, head.Signature, kr); err != nil {
		kind := ProblemSignature
		if errors.Is(err, pgperrors.ErrUnknownIssuer) {
			kind = ProblemUnknownKey
		}
		res.add(kind, "%s head %s: %v", res.Ref, short(head.ID), err)
	} else if KeyID(csigner) != wantKey {
		res.add(ProblemKey, "%s head %s is signed by key %s, not by the key the ref is named after", res.Ref, short(head.ID), strings.ToUpper(KeyID(csigner)))
	}

	// 2. The body and the commit.
	r, err := note.Parse(body)
	if err != nil {
		res.add(ProblemFormat, "%v", err)
		return res
	}
	res.Receipt = r
	res.Harnesses = r.Harnesses()
	if r.Commit != s.Note.Target {
		res.add(ProblemCommit, "the receipt names commit %s but is attached to %s", r.Commit, s.Note.Target)
		return res
	}
	c, err := ReadCommit(ctx, st.Objects(), r.Commit)
	if err != nil {
		res.add(ProblemCommit, "read the annotated commit: %v", err)
		return res
	}
	if c.Tree != r.Tree {
		res.add(ProblemCommit, "the receipt names tree %s, the commit has tree %s", r.Tree, c.Tree)
	}
	if strings.Join(c.Parents, " ") != strings.Join(r.Parents, " ") {
		res.add(ProblemCommit, "the receipt names parents %v, the commit has %v", r.Parents, c.Parents)
	}
	if c.Committed != r.Committed {
		res.add(ProblemCommit, "the receipt names committer time %d, the commit has %d", r.Committed, c.Committed)
	}
	tc := newTreeCache(st.Objects())
	var oldTree string
	if len(c.Parents) > 0 {
		p, err := ReadCommit(ctx, st.Objects(), c.Parents[0])
		if err != nil {
			res.add(ProblemCommit, "read the first parent: %v", err)
			return res
		}
		oldTree = p.Tree
		if len(r.Carried) == 0 && (!r.HasFrom || r.From != p.Committed) {
			res.add(ProblemCommit, "the window must start at the first parent's committer time %d", p.Committed)
		}
	}
	for _, cs := range r.Carried {
		res.Carried = append(res.Carried, checkCarried(ctx, st, s.Writer, cs, res))
	}
	changes, err := diffTrees(ctx, tc, oldTree, c.Tree)
	if err != nil {
		res.add(ProblemCommit, "diff the commit against its parent: %v", err)
		return res
	}
	res.Checked.Paths = len(changes)
	if len(changes) != len(r.Paths) {
		res.add(ProblemCommit, "the commit changes %d paths, the receipt lists %d", len(changes), len(r.Paths))
	}
	for i := 0; i < len(changes) && i < len(r.Paths); i++ {
		ch, pe := changes[i], r.Paths[i]
		blobOK := pe.Blob == ch.Blob || (pe.Status == note.Excluded && pe.Blob == "")
		if ch.Path != pe.Path || ch.Change != pe.Change || ch.Mode != pe.Mode || !blobOK {
			res.add(ProblemCommit, "path %s: the commit has %s %s %s, the receipt says %s %s %s", note.Token(ch.Path), ch.Change, orDash(ch.Mode), orDash(ch.Blob), pe.Change, orDash(pe.Mode), orDash(pe.Blob))
		}
	}
	if !res.OK() {
		return res
	}

	// 3 and 4. Writers and events.
	need := make([]map[int64]bool, len(r.Writers)+1)
	for i := range need {
		need[i] = map[int64]bool{}
	}
	mark := func(ref note.Ref) {
		if !ref.IsZero() {
			need[ref.W][ref.Seq] = true
		}
	}
	for _, p := range r.Paths {
		mark(p.Evidence)
	}
	for _, e := range r.Reads {
		mark(e.Evidence)
	}
	for _, c := range r.Contexts {
		for _, s := range c.Spans {
			mark(s)
		}
	}
	events := map[note.Ref]*gitstore.Event{}
	pruned := map[string]bool{}
	// The writers it rests on, through the one verify policy: their chains
	// against every head this clone saw, and the alarms about them or
	// about the whole archive.
	names := make([]string, 0, len(r.Writers))
	for _, w := range r.Writers {
		names = append(names, w.Name)
	}
	reps := map[string]*seal.Report{}
	if len(names) > 0 {
		v, err := anchor.Check(ctx, st, anchor.CheckOptions{Writers: names, SkipContent: true})
		if err != nil {
			res.add(ProblemChain, "verify the writers: %v", err)
			return res
		}
		for _, rep := range v.Writers {
			reps[rep.Writer] = rep
		}
		for _, f := range v.Findings {
			who := f.Writer
			if who == "" {
				who = "the archive"
			}
			res.add(ProblemAlarm, "%s: %s (%s): %s", who, f.Kind, f.Remote, f.Detail)
		}
	}
	for i, w := range r.Writers {
		for seq := range need[i+1] {
			if seq < w.From || seq > w.To {
				res.add(ProblemEvent, "w%d#%d is outside the entries %d-%d the receipt lists for %s", i+1, seq, w.From, w.To, w.Name)
			}
		}
		evs, pr, ok := checkWriter(ctx, st, w, reps[w.Name], need[i+1], res)
		res.Checked.Writers++
		if !ok {
			continue
		}
		for b := range pr {
			pruned[b] = true
		}
		for _, e := range evs {
			events[note.Ref{W: i + 1, Seq: e.Seq}] = e
		}
	}
	get := func(ref note.Ref, what string) *gitstore.Event {
		e := events[ref]
		if e == nil && len(need) > ref.W && need[ref.W][ref.Seq] {
			if ref.W <= len(r.Writers) {
				res.add(ProblemEvent, "%s: event %s#%d is not in the writer's sealed chain", what, r.Writers[ref.W-1].Name, ref.Seq)
			}
		}
		return e
	}
	ctxOf := func(e *gitstore.Event) int {
		for i, c := range r.Contexts {
			if c.Session == e.Session && c.Agent == e.Agent {
				return i + 1
			}
		}
		return 0
	}
	type blobUse struct {
		sha256 string // from an event; "" for a committed blob
		what   string
	}
	blobs := map[string][]blobUse{}
	for _, p := range r.Paths {
		what := "path " + note.Token(p.Path)
		if p.Blob != "" && p.Mode != "160000" {
			blobs[p.Blob] = append(blobs[p.Blob], blobUse{what: what})
		}
		if p.Evidence.IsZero() {
			if p.Status != note.Unseen && p.Status != note.Excluded {
				res.add(ProblemMismatch, "%s is %s without evidence", what, p.Status)
			}
			continue
		}
		e := get(p.Evidence, what)
		if e == nil {
			continue
		}
		res.Checked.Events++
		if msg := note.PathEvidence(p, e, r.WindowEnd()); msg != "" {
			res.add(ProblemMismatch, "%s: %s#%d %s", what, e.Writer, e.Seq, msg)
		}
		if ctxOf(e) == 0 {
			res.add(ProblemMismatch, "%s: %s#%d belongs to no listed context", what, e.Writer, e.Seq)
		}
	}
	for _, rd := range r.Reads {
		what := "read of " + note.Token(rd.Path) + " by " + note.ContextID(rd.Context-1)
		e := get(rd.Evidence, what)
		if e == nil {
			continue
		}
		res.Checked.Events++
		if msg := checkReadEvidence(ctx, rd, e, r, tc); msg != "" {
			res.add(ProblemMismatch, "%s: %s#%d %s", what, e.Writer, e.Seq, msg)
		}
		if ctxOf(e) != rd.Context {
			res.add(ProblemMismatch, "%s: %s#%d is an event of another context", what, e.Writer, e.Seq)
		} else if msg := harnessMismatch(r.Contexts[rd.Context-1], e); msg != "" {
			res.add(ProblemMismatch, "%s: %s#%d %s", what, e.Writer, e.Seq, msg)
		}
		if rd.Blob != "" {
			blobs[rd.Blob] = append(blobs[rd.Blob], blobUse{sha256: e.SHA256, what: what})
		}
	}
	for ci, c := range r.Contexts {
		for _, s := range c.Spans {
			e := get(s, "span of "+note.ContextID(ci))
			if e == nil {
				continue
			}
			res.Checked.Events++
			if e.Op != gitstore.OpSpan || ctxOf(e) != ci+1 {
				res.add(ProblemMismatch, "span of %s: %s#%d is not a span of that context", note.ContextID(ci), e.Writer, e.Seq)
			} else if msg := harnessMismatch(c, e); msg != "" {
				res.add(ProblemMismatch, "span of %s: %s#%d %s", note.ContextID(ci), e.Writer, e.Seq, msg)
			}
		}
	}

	// 5. Blobs.
	ids := make([]string, 0, len(blobs))
	for id := range blobs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		uses := blobs[id]
		typ, body, err := st.Objects().ReadObject(ctx, id)
		switch {
		case errors.Is(err, gitstore.ErrObjectMissing) && pruned[id]:
			res.Pruned = append(res.Pruned, id)
			continue
		case errors.Is(err, gitstore.ErrObjectMissing):
			res.add(ProblemBlob, "blob %s (%s) is not in the repository", id, uses[0].what)
			continue
		case err != nil:
			res.add(ProblemContent, "blob %s (%s): %v", id, uses[0].what, err)
			continue
		case typ != "blob":
			res.add(ProblemContent, "%s (%s) is a %s, not a blob", id, uses[0].what, typ)
			continue
		}
		res.Checked.Blobs++
		if gitstore.BlobID(body) != id {
			res.add(ProblemContent, "blob %s (%s) does not hash to its id", id, uses[0].what)
			continue
		}
		sum := sha256.Sum256(body)
		h := hex.EncodeToString(sum[:])
		for _, u := range uses {
			if u.sha256 != "" && u.sha256 != h {
				res.add(ProblemContent, "blob %s (%s) does not hash to the sha256 its event sealed", id, u.what)
				break
			}
		}
	}
	return res
}

// checkWriter checks one writer's verified chain (rep) against the head
// the receipt recorded and returns the events at the needed seqs and the blobs its
// prune records removed.
func checkWriter(ctx context.Context, st *gitstore.Store, w note.Writer, rep *seal.Report, need map[int64]bool, res *Result) ([]*gitstore.Event, map[string]bool, bool) {
	if rep == nil {
		res.add(ProblemChain, "writer %s was not verified", w.Name)
		return nil, nil, false
	}
	if rep.Batches == 0 && rep.OK() {
		res.add(ProblemChain, "writer %s is not in this repository (fetch refs/lossless/*)", w.Name)
		return nil, nil, false
	}
	if !rep.OK() {
		b := rep.Break
		res.add(ProblemChain, "writer %s: %s at entry %d: %s", w.Name, b.Kind, b.Seq, b.Detail)
		return nil, nil, false
	}
	// Read the lines (index or commits) and re-chain them: lines that
	// chain from the genesis value to the verified head seal are the
	// sealed lines.
	prev := seal.Genesis(w.Name)
	var n int64
	broken := false
	var atHead string
	prevNeedle := []byte(`"prev":"`)
	pruneNeedle := gitstore.OpPrune.Needle()
	evs, err := st.SelectEvents(ctx, []string{w.Name}, func(_ string, line []byte) bool {
		n++
		if p, ok := fieldValue(line, prevNeedle, nil); !ok || p != prev {
			broken = true
		}
		prev = seal.Hash(line)
		if n == w.HeadSeq {
			atHead = prev
		}
		return need[n] || bytes.Contains(line, pruneNeedle)
	})
	if err != nil {
		res.add(ProblemChain, "writer %s: %v", w.Name, err)
		return nil, nil, false
	}
	if broken || n != rep.Entries || prev != rep.Head {
		res.add(ProblemChain, "writer %s: the stored lines do not chain to the sealed head (run `git lossless reindex`, then verify again)", w.Name)
		return nil, nil, false
	}
	if w.HeadSeq > n {
		res.add(ProblemChain, "writer %s holds %d entries, but the receipt rests on its head at entry %d: rolled back or replaced", w.Name, n, w.HeadSeq)
		return nil, nil, false
	}
	if atHead != w.HeadSeal {
		res.add(ProblemChain, "writer %s: entry %d seals to %.16s, the receipt recorded %.16s: the chain was rewritten", w.Name, w.HeadSeq, atHead, w.HeadSeal)
		return nil, nil, false
	}
	pruned := map[string]bool{}
	var out []*gitstore.Event
	for i := range evs {
		e := &evs[i]
		for _, b := range gitstore.PrunedBlobs(e) {
			pruned[b] = true
		}
		if need[e.Seq] {
			out = append(out, e)
		}
	}
	return out, pruned, true
}

// harnessMismatch checks the harness a receipt names for a context
// against one of the context's referenced events: an event that names
// its harness must name one the context lists. A context that names none
// (a receipt issued before the field existed, or of events of no
// harness) and an event that names none (its harness is its writer's,
// whose name the receipt signs) are not compared, so older receipts
// verify as they did.
func harnessMismatch(c note.Context, e *gitstore.Event) string {
	if c.Harness == "" || e.Harness == "" || note.HasHarness(c.Harness, e.Harness) {
		return ""
	}
	return fmt.Sprintf("came from harness %s, not %s as the receipt says", e.Harness, c.Harness)
}

// checkReadEvidence checks a read-set row against its event and the
// commit's tree (note.ReadEvidence, with the tree read through tc).
func checkReadEvidence(ctx context.Context, rd note.ReadEntry, e *gitstore.Event, r *note.Receipt, tc *treeCache) string {
	return note.ReadEvidence(rd, e, func(p string) (string, bool, error) {
		ent, ok, err := tc.lookup(ctx, r.Tree, p)
		return ent.id, ok, err
	})
}

// orDash writes an empty field as the note does: "-".
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// checkCarried checks one source of a carried receipt: when the source's
// receipt is on the same notes ref, the carried window must be its window.
func checkCarried(ctx context.Context, st *gitstore.Store, writer string, c note.Carried, res *Result) CarriedSource {
	out := CarriedSource{Commit: c.Commit}
	if typ, _, err := st.Objects().ReadObject(ctx, c.Commit); err == nil && typ == "commit" {
		out.CommitExists = true
	}
	src, err := Load(ctx, st, writer, c.Commit)
	if err != nil || src.Parsed == nil {
		return out
	}
	out.HasReceipt = true
	sr := src.Parsed
	if sr.HasFrom != c.HasFrom || (c.HasFrom && sr.From != c.From) || sr.WindowEnd() != c.To {
		res.add(ProblemCommit, "carried from %s with a window its receipt does not have", short(c.Commit))
	}
	return out
}
