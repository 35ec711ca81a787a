package meter

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/git-lossless/git-lossless/internal/tokens"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/guard"
	"github.com/git-lossless/git-lossless/secrets"
)

// Pack defaults.
const (
	DefaultBudget int64 = 20_000
	DefaultWindow       = 7 * 24 * time.Hour
)

// Why a file is in or out of the pack (PackFile.Reason).
const (
	ReasonIn         = "in"
	ReasonOverBudget = "over budget" // counted; its section did not fit in what was left
	ReasonBudgetFull = "budget full" // not counted: less than minSection tokens were left
	ReasonGone       = "gone"        // not in the working tree (or not a regular file)
	ReasonDenied     = "denied"      // the archive's deny list matches it
	ReasonBinary     = "binary"      // a NUL byte or invalid UTF-8
	ReasonOutside    = "outside"     // an absolute path, or one leading outside the work tree
	// ReasonSecret: the file's current content holds a credential the
	// secret scanner finds (package secrets). A pack is pasted into the
	// system prompt of every agent of a type and sent to its provider;
	// the archive keeps credentials out of what it stores, and a pack
	// keeps them out of what it hands on, by leaving the whole file out
	// (a redacted copy would no longer match the blob id it names).
	ReasonSecret = "secret"
)

// minSection is the fewest tokens a section costs (its two fence lines);
// with less left, the remaining files are not read or counted.
const minSection = 16

// PackOptions configures BuildPack.
type PackOptions struct {
	// Budget is the most o200k tokens the text may hold (0: DefaultBudget).
	Budget int64
	// Since is the window's length (0: DefaultWindow).
	Since time.Duration
	// Now is the window's end (zero: the newest read in the archive).
	Now time.Time
	// Dir is the working tree to read files from ("": the store's).
	Dir string
	// Harness counts the reads of one agent harness's contexts only (""
	// = every harness's, and the events of none); HarnessOf tells the
	// harness of events that do not name theirs (see Options.HarnessOf).
	Harness   string
	HarnessOf func(writer string) string
}

// PackFile is one file considered, in rank order.
type PackFile struct {
	Path   string `json:"path"`
	Blob   string `json:"blob,omitempty"` // git blob id of the disk content
	Tokens int64  `json:"tokens"`         // o200k tokens of its section (0: not counted)
	Reads  int    `json:"reads"`          // reads in the window
	// Harnesses are the agent harnesses whose contexts read it in the
	// window, sorted ("-" for reads of no harness).
	Harnesses []string `json:"harnesses"`
	In        bool     `json:"in"`
	Reason    string   `json:"reason"`
	// LastRead is the blob of the newest full read of the path (any
	// session, up to the window's end); Changed is true when the disk
	// differs from it.
	LastRead string `json:"last_read_blob,omitempty"`
	Changed  bool   `json:"changed_since_last_read"`
}

// Pack is a built pack.
type Pack struct {
	Text   []byte `json:"-"`
	SHA256 string `json:"sha256"` // of Text
	Budget int64  `json:"budget"`
	// Harness is the harness whose reads were counted (PackOptions.Harness).
	Harness string     `json:"harness,omitempty"`
	Tokens  int64      `json:"tokens"` // o200k tokens of Text
	Window  string     `json:"window"` // the window's length, as the header names it
	From    time.Time  `json:"from,omitzero"`
	Until   time.Time  `json:"until,omitzero"`
	Reads   int        `json:"reads"` // reads in the window
	Files   []PackFile `json:"files"`
}

// BuildPack builds the pack of the archive st over the working tree (see
// the package doc, "The pack", for what goes in and why).
func BuildPack(ctx context.Context, st *gitstore.Store, opt PackOptions) (*Pack, error) {
	if opt.Budget == 0 {
		opt.Budget = DefaultBudget
	}
	if opt.Since == 0 {
		opt.Since = DefaultWindow
	}
	if opt.Budget < 0 || opt.Since < 0 {
		return nil, errors.New("pack: budget and window must be positive")
	}
	dir := opt.Dir
	if dir == "" {
		dir = st.Location().WorkTree
	}
	if dir == "" {
		return nil, errors.New("pack: the archive has no work tree to read files from (a bare repository or the embedded archive)")
	}
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, fmt.Errorf("pack: work tree: %w", err)
	}
	// What is kept of each read: the path, when, the blob of a full view
	// (for "changed since the last read"), and its archive position.
	var evs []packRead
	if _, err := eachEvent(ctx, st, filter{harness: opt.Harness, harnessOf: opt.HarnessOf}, false, func(e *gitstore.Event) {
		if e.Path == "" && e.Path64 == "" {
			return // names no file
		}
		r := packRead{path: packPath(e.RawPath()), ts: e.TS, writer: e.Writer, seq: e.Seq,
			harness: orDash(gitstore.HarnessOf(e.Harness, e.Writer, opt.HarnessOf))}
		if e.Blob != "" && !e.Excluded && (e.View == "" || e.View == "full") {
			r.blob = e.Blob
		}
		evs = append(evs, r)
	}); err != nil {
		return nil, err
	}
	until := opt.Now
	if until.IsZero() {
		for i := range evs {
			if evs[i].ts.After(until) {
				until = evs[i].ts
			}
		}
	}
	p := &Pack{Budget: opt.Budget, Harness: opt.Harness, Window: FormatAge(opt.Since), Files: []PackFile{}}
	if !until.IsZero() {
		p.From, p.Until = until.Add(-opt.Since), until
	}

	// Reads per path in the window, and the newest full read of each
	// path up to the window's end (time order; ties writer, seq).
	reads := map[string]int{}
	readBy := map[string]map[string]bool{} // path -> harnesses
	newest := map[string]*packRead{}
	for i := range evs {
		e := &evs[i]
		if e.ts.After(until) {
			continue
		}
		if !e.ts.Before(p.From) {
			reads[e.path]++
			p.Reads++
			if readBy[e.path] == nil {
				readBy[e.path] = map[string]bool{}
			}
			readBy[e.path][e.harness] = true
		}
		if e.blob == "" {
			continue
		}
		if n := newest[e.path]; n == nil || e.later(n) {
			newest[e.path] = e
		}
	}
	for k, n := range reads {
		hs := make([]string, 0, len(readBy[k]))
		for h := range readBy[k] {
			hs = append(hs, h)
		}
		sort.Strings(hs)
		p.Files = append(p.Files, PackFile{Path: k, Reads: n, Harnesses: hs})
	}
	sort.Slice(p.Files, func(i, j int) bool {
		a, b := &p.Files[i], &p.Files[j]
		if a.Reads != b.Reads {
			return a.Reads > b.Reads
		}
		return a.Path < b.Path
	})

	header := packHeader(p.Window, opt.Budget)
	htok, err := tokens.CountText(header)
	if err != nil {
		return nil, err
	}
	if htok > opt.Budget {
		return nil, fmt.Errorf("pack: a budget of %d tokens does not hold the header (%d tokens)", opt.Budget, htok)
	}
	left := opt.Budget - htok
	sections := map[string]string{}
	for i := range p.Files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		f := &p.Files[i]
		if n := newest[f.Path]; n != nil {
			f.LastRead = n.blob
		}
		content, reason := readPackFile(st, realDir, f.Path)
		if reason != "" {
			f.Reason = reason
			continue
		}
		f.Blob = gitstore.BlobID(content)
		f.Changed = f.LastRead != "" && f.LastRead != f.Blob
		if left < minSection {
			f.Reason = ReasonBudgetFull
			continue
		}
		sec := packSection(f.Path, f.Blob, content)
		n, err := tokens.CountText(sec)
		if err != nil {
			return nil, err
		}
		f.Tokens = n
		if n > left {
			f.Reason = ReasonOverBudget
			continue
		}
		f.In, f.Reason = true, ReasonIn
		left -= n
		sections[f.Path] = sec
	}

	// The text: header, then the chosen files in path order. Its count is
	// the sum (see above); recounted to be sure, and should it ever
	// exceed the budget the lowest-ranked file goes.
	for {
		var names []string
		for name := range sections {
			names = append(names, name)
		}
		sort.Strings(names)
		var b strings.Builder
		b.WriteString(header)
		for _, name := range names {
			b.WriteString(sections[name])
		}
		total, err := tokens.CountText(b.String())
		if err != nil {
			return nil, err
		}
		if total <= opt.Budget || len(sections) == 0 {
			p.Text, p.Tokens = []byte(b.String()), total
			break
		}
		for i := len(p.Files) - 1; i >= 0; i-- {
			if f := &p.Files[i]; f.In {
				f.In, f.Reason = false, ReasonOverBudget
				delete(sections, f.Path)
				break
			}
		}
	}
	sum := sha256.Sum256(p.Text)
	p.SHA256 = hex.EncodeToString(sum[:])
	return p, nil
}

// packRead is what the pack keeps of a read event.
type packRead struct {
	path   string
	blob   string // of a full view; "" otherwise
	ts     time.Time
	writer string
	seq    int64
	// harness is the read's harness ("-" for none).
	harness string
}

// later orders reads in time (ties: writer, then seq).
func (a *packRead) later(b *packRead) bool {
	if !a.ts.Equal(b.ts) {
		return a.ts.After(b.ts)
	}
	if a.writer != b.writer {
		return a.writer > b.writer
	}
	return a.seq > b.seq
}

// packPath is the key a recorded path is counted under: a relative path
// cleaned (so "./a.go" and "a.go" are one file), an absolute one as it is.
func packPath(p string) string {
	if p == "" || strings.HasPrefix(p, "/") || filepath.IsAbs(p) {
		return p
	}
	return path.Clean(p)
}

// readPackFile reads a ranked path from the working tree at realDir
// (symlinks resolved), or says why it is left out.
func readPackFile(st *gitstore.Store, realDir, rel string) ([]byte, string) {
	local := filepath.FromSlash(rel)
	if rel == "" || !filepath.IsLocal(local) {
		return nil, ReasonOutside
	}
	abs := filepath.Join(realDir, local)
	if _, _, denied := st.Deny().Check(abs); denied {
		return nil, ReasonDenied
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, ReasonGone
	}
	if r, err := filepath.Rel(realDir, real); err != nil || !filepath.IsLocal(r) {
		return nil, ReasonOutside
	}
	fi, err := os.Stat(real)
	if err != nil || !fi.Mode().IsRegular() {
		return nil, ReasonGone
	}
	content, err := os.ReadFile(real)
	if err != nil {
		return nil, ReasonGone
	}
	if bytes.IndexByte(content, 0) >= 0 || !utf8.Valid(content) {
		return nil, ReasonBinary
	}
	if len(secrets.Scan(content)) > 0 {
		return nil, ReasonSecret
	}
	return content, ""
}

// packHeader is the text's fixed first lines; it ends with an empty line,
// after which a section's "=" starts a new o200k piece.
func packHeader(window string, budget int64) string {
	return "# git lossless pack: the files agents read most in this repository (reads over " + window +
		" of archived activity), within " + strconv.FormatInt(budget, 10) + " o200k tokens.\n" +
		"# Each file is its current content in the working tree; blob is its git blob id (git hash-object).\n\n"
}

// packSection is one file: fences naming it and its blob, the content,
// a newline added when the file lacks a final one, then an empty line.
func packSection(rel, blob string, content []byte) string {
	name := guard.Printable(rel)
	var b strings.Builder
	b.Grow(len(content) + 2*len(name) + 80)
	b.WriteString("=== ")
	b.WriteString(name)
	b.WriteString(" (blob ")
	b.WriteString(blob)
	b.WriteString(") ===\n")
	b.Write(content)
	if len(content) > 0 && content[len(content)-1] != '\n' {
		b.WriteByte('\n')
	}
	b.WriteString("=== end of ")
	b.WriteString(name)
	b.WriteString(" ===\n\n")
	return b.String()
}

// FormatAge writes a duration the way --since reads it: 7d, 24h, 30m (the
// largest of those units that divides it; weeks are written in days),
// else Go's form.
func FormatAge(d time.Duration) string {
	switch {
	case d <= 0:
		return d.String()
	case d%(24*time.Hour) == 0:
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	case d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	case d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + "m"
	}
	return d.String()
}
