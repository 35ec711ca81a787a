package gitstore

// Notes: git notes under refs/notes/lossless/<writer>, read and written
// through the store with the same ref lock protocol as every other ref
// (refs.go). Receipts (package receipt) are stored this way; the store
// knows nothing about their content and does not import any OpenPGP code:
// a caller that wants a signed notes commit passes a signer callback.
//
// Layout, as git itself defines notes: the notes ref points at a commit
// whose tree maps the annotated object's 40-hex id to a blob holding the
// note, either flat ("<40 hex>") or fanned out ("xx/<38 hex>",
// "xx/xx/<36 hex>", ...). Each change is a new commit whose parent is the
// previous notes commit. Readers here accept any fanout; WriteNote writes
// flat, removing any fanned-out entry for the same object first, and keeps
// every other entry of the tree (other notes, non-note files) as it was.
// Plain git reads the result: `git notes --ref=lossless/<writer> show
// <commit>`, `git log --notes='lossless/*'`.
//
// C git's `git notes add` takes the same <ref>.lock but moves the ref
// without comparing it with the commit it built on: it never corrupts a
// notes ref we write, but if it races with a writer on the same ref it can
// drop that writer's newest note. Writers here compare and swap.
//
// The ref refs/notes/lossless itself is never created: a ref cannot be
// both a file and a directory, and refs/notes/lossless/<writer> are the
// refs.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/git-lossless/git-lossless/internal/gitobj"
)

// NotesPrefix is where notes writers live: refs/notes/lossless/<writer>.
const NotesPrefix = "refs/notes/lossless/"

// ErrNoNote is returned when an object has no note on a notes ref (or the
// ref does not exist).
var ErrNoNote = errors.New("no note")

// NoteSigner signs a notes commit: it receives the commit exactly as
// encoded without a signature (the payload git verify-commit checks) and
// returns an ASCII-armored detached OpenPGP signature of it.
type NoteSigner func(payload []byte) (armoredSig string, err error)

// Note is one note on a notes ref.
type Note struct {
	Writer string // the notes writer (ref refs/notes/lossless/<writer>)
	Target string // the annotated object's id
	Blob   string // the note blob's id
	// Path is the note's path in the notes tree ("<40 hex>" when flat,
	// "xx/<38 hex>" and so on when fanned out).
	Path string
}

// NotesCommit is a notes ref's head commit, split the way a signature
// check needs it.
type NotesCommit struct {
	ID      string
	Tree    string
	Parents []string
	// Payload is the commit without its gpgsig header: the bytes the
	// signature signs. Signature is the armored signature from the
	// gpgsig header ("" when the commit carries none).
	Payload   []byte
	Signature string
}

// noteIdentity signs notes commits: like batch commits, they are written
// by the tool, and the signature (not the name) says who vouches for them.
const noteIdentity = commitIdent

// WriteNote attaches text to target (a 40-hex object id) on writer's notes
// ref, replacing any note target had there. It writes the note blob, the
// tree and a new notes commit whose parent is the ref's current commit,
// signed through sign when sign is not nil (a gpgsig header, as `git
// commit -S` writes it), makes them durable, and moves the ref by
// compare-and-swap under <ref>.lock, rebuilding on the new head when
// another process moved it first. It returns the new notes commit.
func (s *Store) WriteNote(ctx context.Context, writer, target string, text []byte, sign NoteSigner) (string, error) {
	return s.WriteNotes(ctx, writer, []NoteText{{Target: target, Text: text}}, sign)
}

// NoteText is one note to write: its target object and its text.
type NoteText struct {
	Target string
	Text   []byte
}

// WriteNotes is WriteNote for several targets at once: one notes commit
// that sets every note (a later entry for the same target wins), one
// flush, one ref update. Carrying a rebase's receipts writes a hundred
// notes; one commit for them all costs one fsync round, not a hundred.
func (s *Store) WriteNotes(ctx context.Context, writer string, notes []NoteText, sign NoteSigner) (string, error) {
	if err := ValidWriter(writer); err != nil {
		return "", err
	}
	if err := checkWriterName(writer); err != nil {
		return "", err
	}
	if len(notes) == 0 {
		return "", errors.New("no notes to write")
	}
	if s.loc.Embedded {
		return "", errors.New("notes need a repository; this is the embedded archive")
	}
	ref := NotesPrefix + writer
	var pending []string
	blobs := map[string]string{}
	var targets []string
	for _, n := range notes {
		target := strings.ToLower(n.Target)
		if !gitobj.IsID(target) {
			return "", fmt.Errorf("note target %q is not a full 40-hex object id", n.Target)
		}
		blob, err := s.odb.Write("blob", n.Text, &pending)
		if err != nil {
			return "", err
		}
		if _, ok := blobs[target]; !ok {
			targets = append(targets, target)
		}
		blobs[target] = blob
	}
	ctx, cancel := context.WithTimeout(ctx, s.lockT)
	defer cancel()
	var commit string
	err := s.casRef(ctx, ref, func(_ int, cur string) (string, error) {
		var oldTree string
		if cur != "" {
			c, err := s.readCommit(cur)
			if err != nil {
				return "", fmt.Errorf("notes ref %s: %w", ref, err)
			}
			oldTree = c.Tree
		}
		tree, err := s.notesTreeWithAll(oldTree, blobs, &pending)
		if err != nil {
			return "", fmt.Errorf("notes ref %s: %w", ref, err)
		}
		msg := "Notes added by 'git lossless receipt'\n\nLossless-Note-Writer: " + writer + "\n"
		for _, t := range targets {
			msg += "Lossless-Note-Target: " + t + "\n"
		}
		body, err := gitobj.EncodeSignedCommit(tree, cur, noteIdentity, s.now().Unix(), msg, sign)
		if err != nil {
			return "", fmt.Errorf("notes commit: %w", err)
		}
		if commit, err = s.odb.Write("commit", body, &pending); err != nil {
			return "", err
		}
		if err := s.odb.Flush(pending); err != nil {
			return "", err
		}
		pending = pending[:0]
		return commit, nil
	})
	if err != nil {
		return "", err
	}
	return commit, nil
}

// SplitCommitSignature splits a raw commit into the signed payload and
// the armored signature ("" when unsigned), as `git verify-commit` does.
func SplitCommitSignature(body []byte) (payload []byte, sig string) {
	return gitobj.SplitCommitSignature(body)
}

// notesTreeWithAll returns the id of oldTree ("" = empty) with each
// target's note set to its blob at the top level, any fanned-out entry for
// a target removed.
func (s *Store) notesTreeWithAll(oldTree string, blobs map[string]string, pending *[]string) (string, error) {
	var ents []gitobj.TreeEntry
	if oldTree != "" {
		typ, body, err := s.odb.Read(oldTree)
		if err != nil {
			return "", err
		}
		if typ != "tree" {
			return "", fmt.Errorf("%s is a %s, not a tree", gitobj.Short(oldTree), typ)
		}
		if ents, err = gitobj.ParseTree(body); err != nil {
			return "", err
		}
	}
	out := make([]gitobj.TreeEntry, 0, len(ents)+len(blobs))
	var targets []string
	for t := range blobs {
		targets = append(targets, t)
	}
	sort.Strings(targets)
entries:
	for _, e := range ents {
		if _, ok := blobs[e.Name]; ok {
			continue // replaced below
		}
		if e.Mode == "40000" && len(e.Name) == 2 && isHexPrefix(e.Name) {
			for _, target := range targets {
				if !strings.HasPrefix(target, e.Name) {
					continue
				}
				id, empty, err := s.withoutNote(e.ID, target[2:], pending)
				if err != nil {
					return "", err
				}
				if empty {
					continue entries
				}
				e.ID = id
			}
		}
		out = append(out, e)
	}
	for _, t := range targets {
		out = append(out, gitobj.TreeEntry{Mode: "100644", Name: t, ID: blobs[t]})
	}
	return s.odb.Write("tree", gitobj.EncodeTree(out), pending)
}

// withoutNote returns the fanout subtree id with the note for rest (the
// target's remaining hex digits) removed, and whether it became empty.
func (s *Store) withoutNote(tree, rest string, pending *[]string) (string, bool, error) {
	typ, body, err := s.odb.Read(tree)
	if err != nil {
		return "", false, err
	}
	if typ != "tree" {
		return "", false, fmt.Errorf("%s is a %s, not a tree", gitobj.Short(tree), typ)
	}
	ents, err := gitobj.ParseTree(body)
	if err != nil {
		return "", false, err
	}
	out := make([]gitobj.TreeEntry, 0, len(ents))
	changed := false
	for _, e := range ents {
		switch {
		case e.Name == rest && e.Mode != "40000":
			changed = true
			continue
		case e.Mode == "40000" && len(e.Name) == 2 && len(rest) > 2 && isHexPrefix(e.Name) && strings.HasPrefix(rest, e.Name):
			id, empty, err := s.withoutNote(e.ID, rest[2:], pending)
			if err != nil {
				return "", false, err
			}
			if id != e.ID || empty {
				changed = true
			}
			if empty {
				continue
			}
			e.ID = id
		}
		out = append(out, e)
	}
	if !changed {
		return tree, false, nil
	}
	if len(out) == 0 {
		return "", true, nil
	}
	id, err := s.odb.Write("tree", gitobj.EncodeTree(out), pending)
	return id, false, err
}

func isHexPrefix(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// NoteRefs returns every notes writer with its notes commit, sorted by
// writer name.
func (s *Store) NoteRefs(ctx context.Context) ([]Note, error) {
	refs, err := s.refs.List(NotesPrefix)
	if err != nil {
		return nil, err
	}
	out := make([]Note, 0, len(refs))
	for name, id := range refs {
		out = append(out, Note{Writer: strings.TrimPrefix(name, NotesPrefix), Blob: id})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Writer < out[j].Writer })
	return out, nil
}

// NotesHead returns writer's notes commit, split for a signature check.
// It returns ErrNoNote when the ref does not exist.
func (s *Store) NotesHead(ctx context.Context, writer string) (NotesCommit, error) {
	if err := ValidWriter(writer); err != nil {
		return NotesCommit{}, err
	}
	id, err := s.refs.Read(NotesPrefix + writer)
	if err != nil {
		return NotesCommit{}, err
	}
	if id == "" {
		return NotesCommit{}, fmt.Errorf("%w: %s%s does not exist", ErrNoNote, NotesPrefix, writer)
	}
	typ, body, err := s.odb.Read(id)
	if err != nil {
		return NotesCommit{}, err
	}
	if typ != "commit" {
		return NotesCommit{}, fmt.Errorf("%s%s points at a %s, not a commit", NotesPrefix, writer, typ)
	}
	c, err := parseCommit(body)
	if err != nil {
		return NotesCommit{}, err
	}
	payload, sig := SplitCommitSignature(body)
	return NotesCommit{ID: id, Tree: c.Tree, Parents: c.Parents, Payload: payload, Signature: sig}, nil
}

// ReadNote returns target's note on writer's notes ref: the note and the
// note's bytes. It returns an error wrapping ErrNoNote when there is none.
func (s *Store) ReadNote(ctx context.Context, writer, target string) (Note, []byte, error) {
	target = strings.ToLower(target)
	if !gitobj.IsID(target) {
		return Note{}, nil, fmt.Errorf("note target %q is not a full 40-hex object id", target)
	}
	head, err := s.NotesHead(ctx, writer)
	if err != nil {
		return Note{}, nil, err
	}
	n, ok, err := s.findNote(head.Tree, target, "")
	if err != nil {
		return Note{}, nil, err
	}
	if !ok {
		return Note{}, nil, fmt.Errorf("%w for %s on %s%s", ErrNoNote, gitobj.Short(target), NotesPrefix, writer)
	}
	n.Writer, n.Target = writer, target
	typ, body, err := s.odb.Read(n.Blob)
	if err != nil {
		return n, nil, err
	}
	if typ != "blob" {
		return n, nil, fmt.Errorf("note %s is a %s, not a blob", n.Path, typ)
	}
	return n, body, nil
}

// findNote looks for rest (the remaining hex digits of the target) in
// tree, following fanout directories. prefix is the path so far.
func (s *Store) findNote(tree, rest, prefix string) (Note, bool, error) {
	typ, body, err := s.odb.Read(tree)
	if err != nil {
		return Note{}, false, err
	}
	if typ != "tree" {
		return Note{}, false, fmt.Errorf("%s is a %s, not a tree", gitobj.Short(tree), typ)
	}
	ents, err := gitobj.ParseTree(body)
	if err != nil {
		return Note{}, false, err
	}
	for _, e := range ents {
		if e.Name == rest && e.Mode != "40000" {
			return Note{Blob: e.ID, Path: prefix + e.Name}, true, nil
		}
	}
	for _, e := range ents {
		if e.Mode == "40000" && len(e.Name) == 2 && len(rest) > 2 && strings.HasPrefix(rest, e.Name) {
			if n, ok, err := s.findNote(e.ID, rest[2:], prefix+e.Name+"/"); err != nil || ok {
				return n, ok, err
			}
		}
	}
	return Note{}, false, nil
}

// Notes lists every note on writer's notes ref, sorted by target. Entries
// that are not notes (names that do not make up a 40-hex id) are skipped.
func (s *Store) Notes(ctx context.Context, writer string) ([]Note, error) {
	head, err := s.NotesHead(ctx, writer)
	if errors.Is(err, ErrNoNote) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Note
	if err := s.listNotes(head.Tree, "", "", &out); err != nil {
		return nil, err
	}
	for i := range out {
		out[i].Writer = writer
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Target < out[j].Target })
	return out, nil
}

func (s *Store) listNotes(tree, hexSoFar, prefix string, out *[]Note) error {
	typ, body, err := s.odb.Read(tree)
	if err != nil {
		return err
	}
	if typ != "tree" {
		return fmt.Errorf("%s is a %s, not a tree", gitobj.Short(tree), typ)
	}
	ents, err := gitobj.ParseTree(body)
	if err != nil {
		return err
	}
	for _, e := range ents {
		full := hexSoFar + e.Name
		switch {
		case e.Mode == "40000" && len(e.Name) == 2 && isHexPrefix(e.Name) && len(full) < 40:
			if err := s.listNotes(e.ID, full, prefix+e.Name+"/", out); err != nil {
				return err
			}
		case e.Mode != "40000" && gitobj.IsID(full):
			*out = append(*out, Note{Target: full, Blob: e.ID, Path: prefix + e.Name})
		}
	}
	return nil
}

// ReadObject returns any object's type and body, loose or packed. Receipts
// read the annotated commit and its trees through it.
func (o Objects) ReadObject(ctx context.Context, id string) (typ string, body []byte, err error) {
	s := o.s
	id = strings.ToLower(id)
	if !gitobj.IsID(id) {
		return "", nil, fmt.Errorf("%q is not a full 40-hex object id", id)
	}
	return s.odb.Read(id)
}

// WriterHead returns one writer's head: commit, entries and the seal of
// the last entry. Err is set in the result when the head is not a sealed
// batch commit; the error is for a ref that cannot be read at all.
func (s *Store) WriterHead(ctx context.Context, writer string) (WriterInfo, error) {
	if err := ValidWriter(writer); err != nil {
		return WriterInfo{}, err
	}
	w := WriterInfo{Name: writer, Ref: RefPrefix + writer}
	id, err := s.refs.Read(w.Ref)
	if err != nil {
		return w, err
	}
	if id == "" {
		w.Err = "no such writer"
		return w, nil
	}
	w.Commit = id
	h, err := s.headAt(id)
	if err != nil {
		w.Err = err.Error()
		return w, nil
	}
	w.Seq, w.Seal = h.Seq, h.Seal
	return w, nil
}

// Selection says which events Select reads.
type Selection struct {
	// Writers to read (every writer when empty). A named writer that
	// cannot be read is an error; with Writers empty such a writer is
	// skipped with a warning.
	Writers []string
	// Any, when set, preselects the lines that contain at least one of
	// these byte strings, searching each writer's data as a whole, so a
	// selective needle skips most lines without looking at them one by
	// one. Without Any every line is a candidate.
	Any [][]byte
	// Keep sees every candidate line of a writer, in seq order, before
	// anything of the next writer (writers in name order), and says which
	// to parse and return; nil keeps every candidate. It must not retain
	// line.
	Keep func(writer string, line []byte) bool
}

// Select reads stored event lines and parses those the selection keeps,
// returning them with Writer set, writer by writer in seq order. Lines
// come from the derived index where it is current, else from the commits
// (as Events reads them). It is the bulk reader receipts use to filter on
// raw bytes before paying for a parse.
func (s *Store) Select(ctx context.Context, sel Selection) ([]Event, error) {
	var names []string
	ids := map[string]string{}
	if len(sel.Writers) == 0 {
		refs, err := s.refs.List(RefPrefix)
		if err != nil {
			return nil, err
		}
		for ref, id := range refs {
			w := strings.TrimPrefix(ref, RefPrefix)
			names = append(names, w)
			ids[w] = id
		}
		sort.Strings(names)
	} else {
		for _, w := range sel.Writers {
			if err := ValidWriter(w); err != nil {
				return nil, err
			}
			id, err := s.refs.Read(RefPrefix + w)
			if err != nil {
				return nil, err
			}
			if id == "" {
				return nil, fmt.Errorf("no writer %q", w)
			}
			names = append(names, w)
			ids[w] = id
		}
	}
	named := len(sel.Writers) > 0
	var out []Event
	for _, w := range names {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var perr error
		each := func(l []byte) {
			if perr != nil || (sel.Keep != nil && !sel.Keep(w, l)) {
				return
			}
			e, err := ParseEvent(l)
			if err != nil {
				perr = fmt.Errorf("writer %s: %w", w, err)
				return
			}
			e.Writer = w
			out = append(out, e)
		}
		if data, release, ok := s.currentIndex(w, ids[w]); ok {
			scanAny(data, sel.Any, each)
			release()
		} else {
			lines, err := s.linesAtRef(ctx, w, ids[w])
			if err != nil {
				if named {
					return nil, fmt.Errorf("writer %s: %w", w, err)
				}
				s.warn(fmt.Sprintf("skipping writer %s: %v", w, err))
				continue
			}
		line:
			for _, l := range lines {
				if len(sel.Any) > 0 {
					for _, n := range sel.Any {
						if bytes.Contains(l, n) {
							each(l)
							continue line
						}
					}
					continue
				}
				each(l)
			}
		}
		if perr != nil {
			if named {
				return nil, perr
			}
			s.warn(perr.Error())
		}
	}
	return out, nil
}

// scanAny calls fn, in order, with every newline-terminated line of data
// that contains any of needles (every line when there are none).
func scanAny(data []byte, needles [][]byte, fn func([]byte)) {
	if len(needles) <= 1 {
		scanLines(data, needles, fn)
		return
	}
	var starts []int
	for _, n := range needles {
		scanLinesAt(data, n, func(start int) { starts = append(starts, start) })
	}
	sort.Ints(starts)
	last := -1
	for _, st := range starts {
		if st == last {
			continue
		}
		last = st
		if line := lineAt(data, st); len(line) > 0 {
			fn(line)
		}
	}
}

// scanLinesAt calls fn with the start offset of every line of data that
// contains needle, once per line.
func scanLinesAt(data, needle []byte, fn func(int)) {
	find := newFinder(needle, data[:min(len(data), 16<<10)])
	pos := 0
	for pos < len(data) {
		k := find.index(data[pos:])
		if k < 0 {
			return
		}
		k += pos
		start := bytes.LastIndexByte(data[:k], '\n') + 1
		end := bytes.IndexByte(data[k:], '\n')
		if end < 0 {
			end = len(data)
		} else {
			end += k
		}
		fn(start)
		pos = end + 1
	}
}

// SelectEvents is Select with only writers and a keep function.
func (s *Store) SelectEvents(ctx context.Context, writers []string, keep func(writer string, line []byte) bool) ([]Event, error) {
	return s.Select(ctx, Selection{Writers: writers, Keep: keep})
}
