package anchor

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/git-lossless/git-lossless/gitstore"
)

// Header is the first line of every checkpoint text.
const Header = "git-lossless checkpoint v1"

// Checkpoint is what one anchor push says (FORMAT.md): these writers'
// chains had these heads, and these notes refs these commits, at Time, as
// seen by Machine's clone Clone; it is that clone's N-th checkpoint, and
// Prev is the sha256 of its previous signed checkpoint.
type Checkpoint struct {
	Machine string
	Clone   string
	N       int64
	Time    time.Time
	Prev    string // 64 hex, or "" for the first
	Writers []WriterHead
	Notes   []NotesHead
}

// WriterHead is one writer's chain head in a checkpoint.
type WriterHead struct {
	Name    string
	Entries int64
	Seal    string // the seal of entry Entries, 64 hex
	Commit  string // the batch commit that seals it, 40 hex
}

// NotesHead is one notes ref's head in a checkpoint.
type NotesHead struct {
	Name   string // refs/notes/lossless/<Name>
	Commit string
}

// Text encodes c as the checkpoint text (the note body: every line ends
// in a newline, no blank line). Writers and notes are sorted by name.
func (c *Checkpoint) Text() (string, error) {
	if err := c.check(); err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString(Header + "\n")
	fmt.Fprintf(&b, "machine %s\nclone %s\nn %d\ntime %s\n", c.Machine, c.Clone, c.N, c.Time.UTC().Format(time.RFC3339))
	prev := c.Prev
	if prev == "" {
		prev = "none"
	}
	fmt.Fprintf(&b, "prev %s\n", prev)
	ws := append([]WriterHead(nil), c.Writers...)
	sort.Slice(ws, func(i, j int) bool { return ws[i].Name < ws[j].Name })
	for _, w := range ws {
		fmt.Fprintf(&b, "writer %s %d %s %s\n", w.Name, w.Entries, w.Seal, w.Commit)
	}
	ns := append([]NotesHead(nil), c.Notes...)
	sort.Slice(ns, func(i, j int) bool { return ns[i].Name < ns[j].Name })
	for _, n := range ns {
		fmt.Fprintf(&b, "notes %s %s\n", n.Name, n.Commit)
	}
	return b.String(), nil
}

func (c *Checkpoint) check() error {
	if err := validName("machine", c.Machine); err != nil {
		return err
	}
	if err := validName("clone", c.Clone); err != nil {
		return err
	}
	if c.N < 1 {
		return fmt.Errorf("checkpoint number %d: must be 1 or more", c.N)
	}
	if c.Prev != "" && !isHex(c.Prev, 64) {
		return fmt.Errorf("checkpoint prev %q: want 64 hex digits", c.Prev)
	}
	if c.N == 1 && c.Prev != "" || c.N > 1 && c.Prev == "" {
		return fmt.Errorf("checkpoint %d: prev %q (the first has none, every later one names its predecessor)", c.N, c.Prev)
	}
	seen := map[string]bool{}
	for _, w := range c.Writers {
		if err := gitstore.ValidWriter(w.Name); err != nil {
			return err
		}
		if seen[w.Name] {
			return fmt.Errorf("writer %s twice in a checkpoint", w.Name)
		}
		seen[w.Name] = true
		if w.Entries < 1 || !isHex(w.Seal, 64) || !isHex(w.Commit, 40) {
			return fmt.Errorf("writer %s: bad head %d %q %q", w.Name, w.Entries, w.Seal, w.Commit)
		}
	}
	seen = map[string]bool{}
	for _, n := range c.Notes {
		if err := gitstore.ValidWriter(n.Name); err != nil {
			return err
		}
		if seen[n.Name] || !isHex(n.Commit, 40) {
			return fmt.Errorf("notes %s: repeated or bad commit %q", n.Name, n.Commit)
		}
		seen[n.Name] = true
	}
	return nil
}

// Writer returns the head of writer name in c.
func (c *Checkpoint) Writer(name string) (WriterHead, bool) {
	i := sort.Search(len(c.Writers), func(i int) bool { return c.Writers[i].Name >= name })
	if i < len(c.Writers) && c.Writers[i].Name == name {
		return c.Writers[i], true
	}
	return WriterHead{}, false
}

// NotesRef returns the head of notes ref name in c.
func (c *Checkpoint) NotesRef(name string) (NotesHead, bool) {
	for _, n := range c.Notes {
		if n.Name == name {
			return n, true
		}
	}
	return NotesHead{}, false
}

// ParseText reads a checkpoint text (the note body), strictly: the lines
// in the documented order, nothing else.
func ParseText(text string) (*Checkpoint, error) {
	if !strings.HasSuffix(text, "\n") {
		return nil, errors.New("checkpoint: text does not end in a newline")
	}
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if len(lines) < 6 || lines[0] != Header {
		return nil, fmt.Errorf("checkpoint: not a %q text", Header)
	}
	c := &Checkpoint{}
	field := func(i int, key string) (string, error) {
		v, ok := strings.CutPrefix(lines[i], key+" ")
		if !ok || v == "" {
			return "", fmt.Errorf("checkpoint line %d: want %q", i+1, key+" ...")
		}
		return v, nil
	}
	var err error
	if c.Machine, err = field(1, "machine"); err != nil {
		return nil, err
	}
	if c.Clone, err = field(2, "clone"); err != nil {
		return nil, err
	}
	v, err := field(3, "n")
	if err != nil {
		return nil, err
	}
	if c.N, err = strconv.ParseInt(v, 10, 64); err != nil || strconv.FormatInt(c.N, 10) != v {
		return nil, fmt.Errorf("checkpoint line 4: n %q", v)
	}
	if v, err = field(4, "time"); err != nil {
		return nil, err
	}
	if c.Time, err = time.Parse(time.RFC3339, v); err != nil || c.Time.UTC().Format(time.RFC3339) != v {
		return nil, fmt.Errorf("checkpoint line 5: time %q (want UTC RFC 3339, seconds)", v)
	}
	if v, err = field(5, "prev"); err != nil {
		return nil, err
	}
	if v != "none" {
		c.Prev = v
	}
	for i, l := range lines[6:] {
		f := strings.Split(l, " ")
		switch {
		case f[0] == "writer" && len(f) == 5 && len(c.Notes) == 0:
			n, err := strconv.ParseInt(f[2], 10, 64)
			if err != nil || strconv.FormatInt(n, 10) != f[2] {
				return nil, fmt.Errorf("checkpoint line %d: entries %q", i+7, f[2])
			}
			if len(c.Writers) > 0 && c.Writers[len(c.Writers)-1].Name >= f[1] {
				return nil, fmt.Errorf("checkpoint line %d: writers out of order", i+7)
			}
			c.Writers = append(c.Writers, WriterHead{Name: f[1], Entries: n, Seal: f[3], Commit: f[4]})
		case f[0] == "notes" && len(f) == 3:
			if len(c.Notes) > 0 && c.Notes[len(c.Notes)-1].Name >= f[1] {
				return nil, fmt.Errorf("checkpoint line %d: notes out of order", i+7)
			}
			c.Notes = append(c.Notes, NotesHead{Name: f[1], Commit: f[2]})
		default:
			return nil, fmt.Errorf("checkpoint line %d: %q is not a writer or notes line in order", i+7, l)
		}
	}
	if err := c.check(); err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	return c, nil
}

// Sign encodes c and signs it with signer: the signed note that is
// stored and pushed.
func Sign(c *Checkpoint, signer note.Signer) ([]byte, error) {
	text, err := c.Text()
	if err != nil {
		return nil, err
	}
	if signer.Name() != c.Machine {
		return nil, fmt.Errorf("sign checkpoint: the key is %s's, the checkpoint %s's", signer.Name(), c.Machine)
	}
	return note.Sign(&note.Note{Text: text}, signer)
}

// OpenSigned checks a signed checkpoint against verifier (the machine's public
// key) and parses it. The signing key's name must be the checkpoint's
// machine.
func OpenSigned(msg []byte, verifier note.Verifier) (*Checkpoint, error) {
	n, err := note.Open(msg, note.VerifierList(verifier))
	if err != nil {
		return nil, fmt.Errorf("signed checkpoint: %w", err)
	}
	c, err := ParseText(n.Text)
	if err != nil {
		return nil, err
	}
	if c.Machine != verifier.Name() {
		return nil, fmt.Errorf("signed checkpoint: machine %s, signed by %s", c.Machine, verifier.Name())
	}
	return c, nil
}

// Digest is the sha256 of a signed checkpoint's exact bytes, hex: what the
// next checkpoint names as prev.
func Digest(signed []byte) string {
	sum := sha256.Sum256(signed)
	return hex.EncodeToString(sum[:])
}

// signerName returns the key name of a signed note's first signature line
// without checking it (to pick the verifier to check it with).
func signerName(msg []byte) string {
	i := bytes.Index(msg, []byte("\n\n\u2014 "))
	if i < 0 {
		return ""
	}
	rest := msg[i+len("\n\n\u2014 "):]
	if j := bytes.IndexByte(rest, ' '); j > 0 {
		return string(rest[:j])
	}
	return ""
}

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// validName: machine and clone names are 1-64 of [A-Za-z0-9._-], not
// starting with '.' or '-' (they are ref components, tag components and
// signed-note key names, which allow no space or '+').
func validName(what, s string) error {
	if len(s) == 0 || len(s) > 64 || s[0] == '.' || s[0] == '-' || strings.HasSuffix(s, ".lock") || strings.Contains(s, "..") {
		return fmt.Errorf("%s name %q: 1-64 of letters, digits, '.', '_', '-', not starting with '.' or '-'", what, s)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("%s name %q: 1-64 of letters, digits, '.', '_', '-'", what, s)
		}
	}
	return nil
}
