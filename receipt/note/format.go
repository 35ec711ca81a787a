package note

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/git-lossless/git-lossless/seal"

	"github.com/git-lossless/git-lossless/gitstore"
)

// Header is the first line of every version 1 receipt. A later format
// changes the version here; parsers reject what they do not know.
const Header = "git-lossless receipt v1"

// Tokenizer names the tokenizer token counts are made with.
const Tokenizer = "o200k_base"

// Limits a parser enforces.
const (
	MaxSize = 16 << 20 // a receipt body
	MaxLine = 1 << 20  // one line
	MaxRefs = 1 << 20  // span references, after expanding runs
)

// Change kinds of a path against the first parent, as git's name-status.
const (
	Added    = "A"
	Modified = "M"
	Deleted  = "D"
)

// Path statuses.
const (
	Written      = "written"
	Seen         = "seen"
	ChangedAfter = "changed-after"
	Unseen       = "unseen"
	Excluded     = "excluded"
)

// Read states: how a version a context saw relates to the commit's tree.
const (
	Current    = "current"    // equals the version in the commit's tree
	Stale      = "stale"      // differs, and is the context's last version of the path
	Superseded = "superseded" // differs, and the context later had another version
	Absent     = "absent"     // the path is not in the commit's tree
	Outside    = "outside"    // the path is outside the repository
	Partial    = "partial"    // only part of the file was shown: not comparable
	Withheld   = "excluded"   // deny-listed: access recorded, content withheld
)

// Receipt is one commit's receipt: the facts, in the order the text form
// writes them. See the package documentation for the meaning of each
// field and the exact text form.
type Receipt struct {
	Commit    string
	Tree      string
	Parents   []string
	Committed int64 // committer time, Unix seconds
	// From is the first parent's committer time (Unix seconds); HasFrom is
	// false for a root commit. To is Committed.
	From    int64
	HasFrom bool
	// Carried lists, sorted by commit, the commits this receipt was
	// carried from (empty for a receipt built for its own commit). When
	// it is set the window is the union of their windows, not [From,
	// Committed].
	Carried []Carried
	Issued  time.Time // when the receipt was built, UTC, whole seconds

	Paths    []PathEntry
	Contexts []Context
	Reads    []ReadEntry
	Writers  []Writer
	Coverage Coverage
	Notes    []string
}

// Ref names one event: writer (an index into Receipt.Writers, from 1) and
// seq. The zero Ref means none.
type Ref struct {
	W   int
	Seq int64
}

// IsZero reports whether r names no event.
func (r Ref) IsZero() bool { return r.W == 0 }

// PathEntry is one path the commit changes against its first parent.
type PathEntry struct {
	Change   string // A, M or D
	Status   string
	Mode     string // the mode in the commit ("" when deleted)
	Blob     string // the blob in the commit ("" when deleted or excluded)
	Evidence Ref    // the event the status rests on (zero for unseen paths no agent touched)
	Path     string
}

// Context is one model context (a session's main agent or one subagent)
// that touched a path of the commit.
type Context struct {
	Session     string // "" when the events carry none
	Agent       string // "" for the main context
	Events      int64  // events of this context belonging to the commit
	First, Last time.Time
	Spans       []Ref // conversation spans, in order
	FileTokens  int64 // o200k tokens of the file versions in its read set
	SpanTokens  int64 // o200k tokens of its spans
	// Harness is the agent harness the context's events came from
	// (gitstore.HarnessOf: their "harness" field, else their writer's
	// prefix), several comma-separated in byte order should its events
	// name more than one; "" when none is known (a proxy's or the CLI's
	// events, or a receipt issued before the field existed).
	Harness string
}

// Harnesses lists the agent harnesses the receipt's contexts name,
// sorted, each once.
func (r *Receipt) Harnesses() []string {
	var out []string
	for _, c := range r.Contexts {
		if c.Harness == "" {
			continue
		}
		for _, h := range strings.Split(c.Harness, ",") {
			if !slices.Contains(out, h) {
				out = append(out, h)
			}
		}
	}
	slices.Sort(out)
	return out
}

// ID returns the context's id in the text form: "c" + its 1-based index.
func ContextID(i int) string { return "c" + strconv.Itoa(i+1) }

// ReadEntry is one version of one file a context saw (or wrote).
type ReadEntry struct {
	Context  int    // index into Receipt.Contexts, from 1
	State    string // Current, Stale, ...
	Ops      []string
	Blob     string // "" when excluded
	View     string // "full" or "lines:A-B"
	Evidence Ref    // the context's last event with this version
	Path     string
}

// Writer is one writer whose events the receipt rests on.
type Writer struct {
	Name     string
	From, To int64 // seq range of the belonging events
	HeadSeq  int64 // the writer's head when the receipt was built
	HeadSeal string
}

// Coverage counts what the receipt covers.
type Coverage struct {
	Written, Seen, ChangedAfter, Unseen, Excluded int
	Events                                        int64 // events belonging to the commit
	Sources                                       []string
}

// FileTokens and SpanTokens total the contexts' token counts.
func (r *Receipt) FileTokens() (n int64) {
	for _, c := range r.Contexts {
		n += c.FileTokens
	}
	return n
}

func (r *Receipt) SpanTokens() (n int64) {
	for _, c := range r.Contexts {
		n += c.SpanTokens
	}
	return n
}

// ---- encoding ----

// Marshal returns the receipt's canonical text: the body that is
// clear-signed and stored as the note. It fails when a field cannot be
// written canonically (an invalid id, status, reference...).
func (r *Receipt) Marshal() ([]byte, error) {
	if err := r.check(); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	line := func(fields ...string) {
		b.WriteString(strings.Join(fields, " "))
		b.WriteByte('\n')
	}
	line(Header)
	line("commit", r.Commit)
	line("tree", r.Tree)
	for _, p := range r.Parents {
		line("parent", p)
	}
	line("committed", strconv.FormatInt(r.Committed, 10))
	from := "-"
	if r.HasFrom {
		from = strconv.FormatInt(r.From, 10)
	}
	line("window", from, strconv.FormatInt(r.WindowEnd(), 10))
	for _, c := range r.Carried {
		line(c.fields()...)
	}
	line("issued", r.Issued.UTC().Format(timeLayout))
	line("tokenizer", Tokenizer)
	for _, p := range r.Paths {
		line("path", p.Change, p.Status, dash(p.Mode), dash(p.Blob), r.refString(p.Evidence), Token(p.Path))
	}
	for i, c := range r.Contexts {
		f := []string{ContextID(i), "session", Token(c.Session), "agent", agentToken(c.Agent),
			"events", strconv.FormatInt(c.Events, 10),
			"first", c.First.UTC().Format(timeLayout), "last", c.Last.UTC().Format(timeLayout)}
		if c.Harness != "" {
			f = append(f, "harness", Token(c.Harness))
		}
		line(append([]string{"context"}, f...)...)
	}
	for _, e := range r.Reads {
		line("read", ContextID(e.Context-1), e.State, strings.Join(e.Ops, ","), dash(e.Blob), e.View, r.refString(e.Evidence), Token(e.Path))
	}
	for i, c := range r.Contexts {
		line("spans", ContextID(i), strconv.Itoa(len(c.Spans)), r.refList(c.Spans))
	}
	for i, c := range r.Contexts {
		line("tokens", ContextID(i), "files", strconv.FormatInt(c.FileTokens, 10), "spans", strconv.FormatInt(c.SpanTokens, 10))
	}
	line("tokens", "total", "files", strconv.FormatInt(r.FileTokens(), 10), "spans", strconv.FormatInt(r.SpanTokens(), 10))
	for i, w := range r.Writers {
		line("writer", "w"+strconv.Itoa(i+1), w.Name, "entries", strconv.FormatInt(w.From, 10)+"-"+strconv.FormatInt(w.To, 10),
			"head", strconv.FormatInt(w.HeadSeq, 10), w.HeadSeal)
	}
	c := r.Coverage
	line("coverage", "paths", strconv.Itoa(len(r.Paths)), Written, strconv.Itoa(c.Written), Seen, strconv.Itoa(c.Seen),
		ChangedAfter, strconv.Itoa(c.ChangedAfter), Unseen, strconv.Itoa(c.Unseen), Excluded, strconv.Itoa(c.Excluded))
	line("coverage", "contexts", strconv.Itoa(len(r.Contexts)), "events", strconv.FormatInt(c.Events, 10),
		"sources", dash(strings.Join(c.Sources, ",")))
	for _, n := range r.Notes {
		line("note", n)
	}
	return b.Bytes(), nil
}

const timeLayout = "2006-01-02T15:04:05Z"

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func agentToken(a string) string {
	if a == "" {
		return "main"
	}
	return Token(a)
}

func (r *Receipt) refString(ref Ref) string {
	if ref.IsZero() {
		return "-"
	}
	return "w" + strconv.Itoa(ref.W) + "#" + strconv.FormatInt(ref.Seq, 10)
}

// refList writes refs as comma-separated runs: w1#5-9,w1#12,w2#3.
func (r *Receipt) refList(refs []Ref) string {
	if len(refs) == 0 {
		return "-"
	}
	var parts []string
	for i := 0; i < len(refs); {
		j := i
		for j+1 < len(refs) && refs[j+1].W == refs[i].W && refs[j+1].Seq == refs[j].Seq+1 {
			j++
		}
		s := r.refString(refs[i])
		if j > i {
			s += "-" + strconv.FormatInt(refs[j].Seq, 10)
		}
		parts = append(parts, s)
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// Token writes a string field: "-" for the empty string; the string itself
// when it is made only of the bytes 0x21-0x7E other than '"' and '\' (and
// is not "-"); else Go's strconv.Quote form, which keeps invalid UTF-8
// as \x escapes, so every byte string round-trips.
func Token(s string) string {
	if s == "" {
		return "-"
	}
	if bareOK(s) {
		return s
	}
	return strconv.Quote(s)
}

func bareOK(s string) bool {
	if s == "" || s == "-" || s == "main" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// check validates what Marshal writes, so that Marshal never produces a
// text Parse would reject.
func (r *Receipt) check() error {
	if !isHex40(r.Commit) || !isHex40(r.Tree) {
		return errors.New("receipt: commit and tree must be 40-hex ids")
	}
	for _, p := range r.Parents {
		if !isHex40(p) {
			return errors.New("receipt: parents must be 40-hex ids")
		}
	}
	if r.Issued.IsZero() || r.Issued.Nanosecond() != 0 {
		return errors.New("receipt: issued must be a whole second")
	}
	if len(r.Carried) == 0 && r.HasFrom != (len(r.Parents) > 0) {
		return errors.New("receipt: the window starts at the first parent, and only a commit with parents has one")
	}
	if err := r.checkCarried(); err != nil {
		return err
	}
	okRef := func(ref Ref) bool {
		if ref.IsZero() {
			return true
		}
		if ref.W < 1 || ref.W > len(r.Writers) {
			return false
		}
		w := r.Writers[ref.W-1]
		return ref.Seq >= w.From && ref.Seq <= w.To
	}
	spans := 0
	for _, c := range r.Contexts {
		spans += len(c.Spans)
	}
	if spans > MaxRefs {
		return fmt.Errorf("receipt: more than %d span references", MaxRefs)
	}
	for i, p := range r.Paths {
		if i > 0 && r.Paths[i-1].Path >= p.Path {
			return errors.New("receipt: paths must be sorted and distinct")
		}
		if !validChange(p.Change) || !validStatus(p.Status) || !okRef(p.Evidence) || p.Path == "" {
			return fmt.Errorf("receipt: bad path entry %q (status, change, or a reference outside its writer's entries)", p.Path)
		}
		if (p.Change == Deleted) != (p.Mode == "") || (p.Mode != "" && !validMode(p.Mode)) {
			return fmt.Errorf("receipt: path %q: mode must be given exactly when the path is not deleted", p.Path)
		}
		if (p.Blob == "") != (p.Change == Deleted || p.Status == Excluded) || (p.Blob != "" && !isHex40(p.Blob)) {
			return fmt.Errorf("receipt: path %q: blob must be given exactly when the path is neither deleted nor excluded", p.Path)
		}
	}
	for _, c := range r.Contexts {
		if c.Events < 0 || c.First.IsZero() || c.Last.Before(c.First) || c.FileTokens < 0 || c.SpanTokens < 0 {
			return errors.New("receipt: bad context")
		}
		for i, s := range c.Spans {
			if !okRef(s) || s.IsZero() || (i > 0 && !refLess(c.Spans[i-1], s)) {
				return errors.New("receipt: span refs must be sorted, distinct, and inside their writer's entries")
			}
		}
	}
	for _, e := range r.Reads {
		if e.Context < 1 || e.Context > len(r.Contexts) || !validState(e.State) || !okRef(e.Evidence) || e.Evidence.IsZero() || e.Path == "" || !validView(e.View) {
			return fmt.Errorf("receipt: bad read entry %q", e.Path)
		}
		if len(e.Ops) == 0 || !sort.StringsAreSorted(e.Ops) {
			return fmt.Errorf("receipt: read entry %q: ops must be sorted", e.Path)
		}
		for i, op := range e.Ops {
			if !validOp(op) || (i > 0 && e.Ops[i-1] == op) {
				return fmt.Errorf("receipt: read entry %q: bad op %q", e.Path, op)
			}
		}
		if (e.Blob == "") != (e.State == Withheld) || (e.Blob != "" && !isHex40(e.Blob)) {
			return fmt.Errorf("receipt: read entry %q: blob must be given exactly when not excluded", e.Path)
		}
	}
	for _, w := range r.Writers {
		if !validWriterName(w.Name) || w.From < 1 || w.To < w.From || w.HeadSeq < w.To || !isHex64(w.HeadSeal) {
			return fmt.Errorf("receipt: bad writer %q", w.Name)
		}
	}
	for i, s := range r.Coverage.Sources {
		if !bareOK(s) || strings.Contains(s, ",") || (i > 0 && r.Coverage.Sources[i-1] >= s) {
			return errors.New("receipt: coverage sources must be sorted bare words")
		}
	}
	for _, n := range r.Notes {
		if !validNote(n) {
			return fmt.Errorf("receipt: bad note %q", n)
		}
	}
	return nil
}

func refLess(a, b Ref) bool {
	if a.W != b.W {
		return a.W < b.W
	}
	return a.Seq < b.Seq
}

func validChange(c string) bool { return c == Added || c == Modified || c == Deleted }

func validStatus(s string) bool {
	switch s {
	case Written, Seen, ChangedAfter, Unseen, Excluded:
		return true
	}
	return false
}

func validState(s string) bool {
	switch s {
	case Current, Stale, Superseded, Absent, Outside, Partial, Withheld:
		return true
	}
	return false
}

// validOp: a read-set row lists the ops that put its versions into the
// context, which are the file-version ops.
func validOp(s string) bool { return gitstore.IsFileVersion(s) }

func validMode(m string) bool {
	switch m {
	case "100644", "100755", "120000", "160000":
		return true
	}
	return false
}

func validView(v string) bool {
	if v == "full" {
		return true
	}
	rest, ok := strings.CutPrefix(v, "lines:")
	if !ok {
		return false
	}
	a, b, ok := strings.Cut(rest, "-")
	return ok && canonicalUint(a) && canonicalUint(b)
}

func canonicalUint(s string) bool {
	if s == "" || len(s) > 18 || (len(s) > 1 && s[0] == '0') {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// validWriterName is the store's one writer-name rule (seal.ValidWriter).
func validWriterName(w string) bool { return seal.ValidWriter(w) }

// validNote: printable UTF-8, no leading or trailing space, no tabs.
func validNote(n string) bool {
	if n == "" || n[0] == ' ' || n[len(n)-1] == ' ' || !utf8.ValidString(n) {
		return false
	}
	for _, r := range n {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

func isHex40(s string) bool { return len(s) == 40 && isLowerHex(s) }
func isHex64(s string) bool { return len(s) == 64 && isLowerHex(s) }

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
