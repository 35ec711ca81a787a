package receipt

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/git-lossless/git-lossless/internal/tokens"
	"strings"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/receipt/note"
)

// Options tunes Build.
type Options struct {
	// Now is the issue time (default time.Now).
	Now func() time.Time
	// NoTokens skips token counting (counts are then zero).
	NoTokens bool
	// Counter counts the tokens (nil: tokens.NewCounter(st), with the
	// repository's cache). Pass one to read its Stats afterwards.
	Counter *tokens.Counter
	// HarnessOf maps a writer to its agent harness's name for events
	// that do not name theirs (note.Input.HarnessOf); nil: only the
	// events' own field names a context's harness.
	HarnessOf func(writer string) string
	// Carried makes the receipt a carried one (see Carry): its window is
	// the union of these sources' windows.
	Carried []note.Carried
}

// Build builds the receipt of commit (a 40-hex id) from the repository's
// archive: it reads the commit and its first parent, diffs their trees,
// reads the events on the changed paths and then every event of the
// contexts that touched them, and applies note.Compute.
//
// Reading is done in two passes over the writers' stored lines, each
// filtering on raw bytes before anything is parsed: first the lines whose
// path is one of the commit's, then — in the writers that hold them only —
// the lines of the sessions those events belong to.
func Build(ctx context.Context, st *gitstore.Store, commit string, opt Options) (*note.Receipt, error) {
	if st.Location().Embedded {
		return nil, errors.New("receipts describe commits of a repository; this is the embedded archive (run inside the repository)")
	}
	now := opt.Now
	if now == nil {
		now = time.Now
	}
	if !opt.NoTokens {
		// Nearly every build counts something new (the edits of the
		// session being committed): build the tokenizer on the second
		// core while this one reads the archive.
		tokens.Preload()
	}
	c, err := ReadCommit(ctx, st.Objects(), commit)
	if err != nil {
		return nil, fmt.Errorf("read commit %s: %w", commit, err)
	}
	in := note.Input{Commit: c.ID, Tree: c.Tree, Parents: c.Parents, Committed: c.Committed, Issued: now(), HarnessOf: opt.HarnessOf, Carried: opt.Carried}
	tc := newTreeCache(st.Objects())
	var oldTree string
	if len(c.Parents) > 0 {
		p, err := ReadCommit(ctx, st.Objects(), c.Parents[0])
		if err != nil {
			return nil, fmt.Errorf("read parent %s: %w", c.Parents[0], err)
		}
		oldTree, in.From, in.HasFrom = p.Tree, p.Committed, true
	}
	if in.Changes, err = diffTrees(ctx, tc, oldTree, c.Tree); err != nil {
		return nil, fmt.Errorf("diff %s against its parent: %w", short(c.ID), err)
	}
	paths := make(map[string]bool, len(in.Changes))
	for _, ch := range in.Changes {
		paths[ch.Path] = true
	}

	// Pass 1: the events on the changed paths; and, for every writer, the
	// sessions it holds.
	writerSessions := map[string]map[string]bool{}
	first, err := st.Select(ctx, gitstore.Selection{Keep: func(w string, line []byte) bool {
		keep, rest := matchPath(line, paths)
		ws := writerSessions[w]
		if ws == nil {
			ws = map[string]bool{}
			writerSessions[w] = ws
		}
		// Keys are sorted: "session" comes after "path", so the search
		// goes on from there.
		sess, _ := fieldValue(rest, sessNeedle, nil)
		ws[sess] = true
		return keep
	}})
	if err != nil {
		return nil, err
	}
	// The sessions that touched a changed path in the window.
	touching := map[string]bool{}
	for i := range first {
		e := &first[i]
		if in.Touches(e, paths) {
			touching[e.Session] = true
		}
	}
	// Pass 2: every event of those sessions, in the writers holding them.
	var writers []string
	for w, ws := range writerSessions {
		for sess := range ws {
			if touching[sess] {
				writers = append(writers, w)
				break
			}
		}
	}
	events := first
	if len(writers) > 0 {
		second, err := st.Select(ctx, gitstore.Selection{Writers: writers, Keep: func(w string, line []byte) bool {
			v, _ := fieldValue(line, sessNeedle, nil)
			return touching[v]
		}})
		if err != nil {
			return nil, err
		}
		events = append(events, second...)
	}
	in.Events = events

	// Heads, read after the events: each is at or past what was read.
	in.Heads = map[string]gitstore.WriterInfo{}
	for i := range events {
		w := events[i].Writer
		if _, ok := in.Heads[w]; ok {
			continue
		}
		h, err := st.WriterHead(ctx, w)
		if err != nil {
			return nil, err
		}
		in.Heads[w] = h
	}
	in.TreeBlob = func(p string) (string, bool) {
		e, ok, err := tc.lookup(ctx, c.Tree, p)
		if err != nil || !ok {
			return "", false
		}
		return e.id, true
	}
	deny := st.Deny()
	in.Denied = func(p string) bool {
		_, d := deny.Match(p)
		return d
	}
	if !opt.NoTokens {
		counter := opt.Counter
		if counter == nil {
			counter = tokens.NewCounter(ctx, st)
		}
		in.Tokens = func(evs []*gitstore.Event) []int64 { return counter.CountAll(ctx, evs) }
	}
	return note.Compute(in)
}

var (
	pathNeedle   = []byte(`"path":"`)
	path64Needle = []byte(`,"path64":"`)
	sessNeedle   = []byte(`"session":"`)
)

// matchPath reports whether a canonical event line's path is in paths (or
// is stored as path64, not valid UTF-8: decided after parsing), and
// returns the rest of the line after the path (the whole line when it has
// none).
func matchPath(line []byte, paths map[string]bool) (bool, []byte) {
	i := indexKey(line, pathNeedle)
	if i < 0 {
		return false, line
	}
	rest := line[i+len(pathNeedle):]
	end, esc := 0, false
	for end < len(rest) && rest[end] != '"' {
		if rest[end] == '\\' {
			esc = true
			end++
		}
		end++
	}
	if end >= len(rest) {
		return false, line
	}
	tail := rest[end+1:]
	if bytes.HasPrefix(tail, path64Needle) {
		return true, tail
	}
	if esc {
		// Rare: an escaped path; decode it.
		_, ok := fieldValue(line, pathNeedle, paths)
		return ok, tail
	}
	return paths[string(rest[:end])], tail
}

// fieldValue finds a top-level string member by its needle (`"key":"`) in
// a canonical event line and returns its value. With set, it returns the
// first occurrence whose value is in set (ok false when none is); without,
// the first occurrence. Escaped values are decoded. The needle may also
// occur inside an unknown field's nested object, which is why every
// occurrence is tried: the result is a superset filter, and callers
// re-check parsed events.
func fieldValue(line, needle []byte, set map[string]bool) (string, bool) {
	rest := line
	for {
		i := indexKey(rest, needle)
		if i < 0 {
			return "", false
		}
		rest = rest[i+len(needle):]
		end, esc := 0, false
		for end < len(rest) && rest[end] != '"' {
			if rest[end] == '\\' {
				esc = true
				end++
			}
			end++
		}
		if end >= len(rest) {
			return "", false
		}
		v := string(rest[:end])
		if esc {
			var s string
			if json.Unmarshal(append(append([]byte{'"'}, rest[:end]...), '"'), &s) != nil {
				rest = rest[end:]
				continue
			}
			v = s
		}
		if set == nil || set[v] {
			return v, true
		}
		rest = rest[end:]
	}
}

// indexKey returns the index of needle (`"key":"`) in line, -1 if there
// is none, as bytes.Index would. It searches for the needle without its
// leading quote and then checks the quote: a key's first letter is far
// rarer in an event line than '"', on which bytes.Index would stop and
// compare at every field (about 2.5 times faster over the archive's
// lines, which Build filters 100,000 at a time).
func indexKey(line, needle []byte) int {
	tail := needle[1:]
	off := 0
	for {
		i := bytes.Index(line[off:], tail)
		if i < 0 {
			return -1
		}
		i += off
		if i > 0 && line[i-1] == needle[0] {
			return i - 1
		}
		off = i + 1
	}
}

// plainJSON reports whether s is written in JSON as itself between quotes.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// Sign returns the note text for r: its canonical body, clear-signed.
func Sign(r *note.Receipt, k *Key) ([]byte, error) {
	body, err := r.Marshal()
	if err != nil {
		return nil, err
	}
	return k.ClearSign(body)
}

// Save signs r with k and stores it as the note on r.Commit under
// refs/notes/lossless/receipts-<key id>, in a notes commit signed by the
// same key. It returns the notes commit and the note text.
func Save(ctx context.Context, st *gitstore.Store, r *note.Receipt, k *Key) (string, []byte, error) {
	note, err := Sign(r, k)
	if err != nil {
		return "", nil, err
	}
	commit, err := st.WriteNote(ctx, k.Writer(), r.Commit, note, k.SignCommit)
	if err != nil {
		return "", nil, err
	}
	return commit, note, nil
}

// Stored is a receipt found on a notes ref.
type Stored struct {
	Writer string // receipts-<key id>
	Note   gitstore.Note
	Text   []byte        // the note as stored (clear-signed)
	Body   []byte        // the receipt body inside it (nil when the framing is broken)
	Parsed *note.Receipt // nil when the body does not parse
	Err    error         // why Body or Parsed is nil
}

// KeyIDOfWriter returns the key id a receipts writer names ("" when the
// writer is not a receipts writer).
func KeyIDOfWriter(w string) string {
	id, ok := strings.CutPrefix(w, WriterPrefix)
	if !ok || len(id) != 16 || !isLowerHex(id) {
		return ""
	}
	return id
}

// ReceiptWriters lists the notes writers that hold receipts.
func ReceiptWriters(ctx context.Context, st *gitstore.Store) ([]string, error) {
	refs, err := st.NoteRefs(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range refs {
		if KeyIDOfWriter(r.Writer) != "" {
			out = append(out, r.Writer)
		}
	}
	return out, nil
}

// Load reads commit's receipt on one receipts writer. It returns an error
// wrapping gitstore.ErrNoNote when there is none; a note that is there but
// does not parse is returned with Err set.
func Load(ctx context.Context, st *gitstore.Store, writer, commit string) (Stored, error) {
	n, text, err := st.ReadNote(ctx, writer, commit)
	if err != nil {
		return Stored{}, err
	}
	return stored(n, text), nil
}

func stored(n gitstore.Note, text []byte) Stored {
	s := Stored{Writer: n.Writer, Note: n, Text: text}
	body, _, err := SplitNote(text)
	if err != nil {
		s.Err = err
		return s
	}
	s.Body = body
	s.Parsed, s.Err = note.Parse(body)
	return s
}

// Find returns commit's receipts on every receipts writer.
func Find(ctx context.Context, st *gitstore.Store, commit string) ([]Stored, error) {
	ws, err := ReceiptWriters(ctx, st)
	if err != nil {
		return nil, err
	}
	var out []Stored
	for _, w := range ws {
		s, err := Load(ctx, st, w, commit)
		if errors.Is(err, gitstore.ErrNoNote) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// All returns every receipt on every receipts writer, by writer then
// commit.
func All(ctx context.Context, st *gitstore.Store) ([]Stored, error) {
	ws, err := ReceiptWriters(ctx, st)
	if err != nil {
		return nil, err
	}
	var out []Stored
	for _, w := range ws {
		notes, err := st.Notes(ctx, w)
		if err != nil {
			return nil, err
		}
		for _, n := range notes {
			typ, text, err := st.Objects().ReadObject(ctx, n.Blob)
			if err != nil {
				return nil, fmt.Errorf("note %s on %s: %w", n.Path, w, err)
			}
			if typ != "blob" {
				return nil, fmt.Errorf("note %s on %s is a %s", n.Path, w, typ)
			}
			out = append(out, stored(n, text))
		}
	}
	return out, nil
}
