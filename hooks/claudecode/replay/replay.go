package replay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/git-lossless/git-lossless/internal/tokens"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/hooks/claudecode"
	"github.com/git-lossless/git-lossless/hooks/claudecode/cctranscript"
	"github.com/git-lossless/git-lossless/hooks/transcript"
	"github.com/git-lossless/git-lossless/internal/jsonscan"
)

// Options tunes Replay. The zero value is what the bench uses.
type Options struct {
	// Packer plans the pack of the packs figure (nil: HotPack with
	// DefaultPackBudget).
	Packer PackPlanner
	// Counter counts archived contents (nil: tokens.NewCounter,
	// whose cache lives under the repository's git dir).
	Counter *tokens.Counter
}

// MaxDivergencesKept bounds the divergences a report lists; all are
// counted.
const MaxDivergencesKept = 1000

// Divergence is one place where the archive does not give back what the
// transcript shows the model.
type Divergence struct {
	Session    string
	Transcript string // the transcript file
	Line       int    // 1-based line of the transcript
	Path       string // the file, as the transcript names it
	Key        string // the dedupe key looked up
	Reason     string
}

func (d Divergence) String() string {
	return fmt.Sprintf("session %s: %s line %d: %s: %s", d.Session, d.Transcript, d.Line, d.Path, d.Reason)
}

// Counts are what a replay found, for one session or in total.
type Counts struct {
	Transcripts int
	Lines       int
	Bytes       int64 // bytes of transcript replayed
	Compactions int

	Ops           int // file operations (read, write, edit, attach)
	Compared      int // of which given back by the archive byte for byte
	ShownCompared int // reads whose numbered result text was held to the archive too
	Withheld      int // content kept out by the deny list (not compared)
	Unverifiable  int // edits the transcript holds no resulting file for
	ReusedKeys    int // operations under a tool_use_id an earlier one used
	Divergences   int

	Reads            int // Read results with file text
	ReReads          int // of which of a path the context held
	ReReadsUnchanged int // of which arriving as the context held it
	DiffCheaper      int // changed re-reads a diff sent cheaper than the text
	UnchangedByCC    int // Reads Claude Code itself answered file_unchanged

	// Tokens (o200k) under each model of "sent"; see the package doc.
	Baseline, Restore, Packs int64
}

func (c *Counts) add(o Counts) {
	c.Transcripts += o.Transcripts
	c.Lines += o.Lines
	c.Bytes += o.Bytes
	c.Compactions += o.Compactions
	c.Ops += o.Ops
	c.Compared += o.Compared
	c.ShownCompared += o.ShownCompared
	c.Withheld += o.Withheld
	c.Unverifiable += o.Unverifiable
	c.ReusedKeys += o.ReusedKeys
	c.Divergences += o.Divergences
	c.Reads += o.Reads
	c.ReReads += o.ReReads
	c.ReReadsUnchanged += o.ReReadsUnchanged
	c.DiffCheaper += o.DiffCheaper
	c.UnchangedByCC += o.UnchangedByCC
	c.Baseline += o.Baseline
	c.Restore += o.Restore
	c.Packs += o.Packs
}

// Savings returns 1 − sent/baseline (0 when nothing was read).
func (c Counts) Savings(sent int64) float64 {
	if c.Baseline == 0 {
		return 0
	}
	return 1 - float64(sent)/float64(c.Baseline)
}

// RestoreSavings is the savings of restore against re-reading.
func (c Counts) RestoreSavings() float64 { return c.Savings(c.Restore) }

// PackSavings is the savings of the pack against re-reading.
func (c Counts) PackSavings() float64 { return c.Savings(c.Packs) }

// SessionReport is one session's replay.
type SessionReport struct {
	Session Session
	Counts
}

// Report is a replay's result.
type Report struct {
	Sessions    []SessionReport
	Total       Counts
	Divergences []Divergence // the first MaxDivergencesKept
	Pack        Pack         // the pack the packs figure was computed with
}

// Lossless reports whether no divergence was found.
func (r *Report) Lossless() bool { return r.Total.Divergences == 0 }

// fileOps are the ops whose events carry file versions.
var fileOps = []gitstore.Op{gitstore.OpRead, gitstore.OpWrite, gitstore.OpEdit, gitstore.OpAttach}

// held is a file version a context holds: the text the transcript shows
// (equal to the archived blob of the operation that set it, or a
// divergence was reported there).
type held struct {
	text []byte
	view string
}

// readKind says how the restore model charges a Read.
type readKind int

const (
	readFirst     readKind = iota // nothing held: the text
	readUnchanged                 // held as it arrives: a reference
	readChanged                   // held, changed: min(diff, text)
	readStub                      // Claude Code answered file_unchanged
)

// readRec is one Read, kept for the token tally.
type readRec struct {
	sess    int
	context string
	path    string
	blob    string          // the text's git blob id: a version's identity
	ev      *gitstore.Event // the archived event counted for the text
	text    string          // the text, when no archived event gives it back
	kind    readKind
	diff    string // readChanged: the unified diff from the held version
}

// replayer replays sessions one after the other; Replay runs one per
// core, each with its own caches (sessions share nothing: one writer
// each).
type replayer struct {
	ctx      context.Context
	st       *gitstore.Store
	rep      *Report // the sessions' reports (tally)
	rel      map[string]string
	verified map[string]bool // blob ids whose archived bytes matched a transcript's
	index    map[string]map[string]*gitstore.Event
	reads    []readRec    // the current session's reads (all of them in tally)
	divs     []Divergence // the current session's divergences
}

func newReplayer(ctx context.Context, st *gitstore.Store) *replayer {
	return &replayer{ctx: ctx, st: st, rel: map[string]string{}, verified: map[string]bool{},
		index: map[string]map[string]*gitstore.Event{}}
}

// sessionResult is one session replayed.
type sessionResult struct {
	sr    SessionReport
	reads []readRec
	divs  []Divergence
	err   error
}

// session replays session si.
func (r *replayer) session(si int, s Session) sessionResult {
	r.reads, r.divs = nil, nil
	res := sessionResult{sr: SessionReport{Session: s}}
	keys := map[string]int{}
	for _, t := range s.Transcripts {
		if res.err = r.walk(si, &s, t, keys, &res.sr.Counts); res.err != nil {
			break
		}
	}
	res.reads, res.divs = r.reads, r.divs
	return res
}

// Replay replays each session (already archived: see Archive) against
// st and returns the report. Divergences are in the report, not errors;
// an error means the replay could not run (a transcript or the archive
// unreadable, ctx done). Sessions are replayed on up to GOMAXPROCS
// goroutines; the report lists them in the order given.
func Replay(ctx context.Context, st *gitstore.Store, sessions []Session, opt Options) (*Report, error) {
	results := make([]sessionResult, len(sessions))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(sessions)) {
		wg.Go(func() {
			w := newReplayer(ctx, st)
			for {
				i := int(next.Add(1) - 1)
				if i >= len(sessions) {
					return
				}
				results[i] = w.session(i, sessions[i])
			}
		})
	}
	wg.Wait()
	r := newReplayer(ctx, st)
	r.rep = &Report{}
	for _, res := range results {
		if res.err != nil {
			return nil, res.err
		}
		r.rep.Sessions = append(r.rep.Sessions, res.sr)
		r.reads = append(r.reads, res.reads...)
		for _, d := range res.divs {
			if len(r.rep.Divergences) < MaxDivergencesKept {
				r.rep.Divergences = append(r.rep.Divergences, d)
			}
		}
	}
	tc := opt.Counter
	if tc == nil {
		tc = tokens.NewCounter(ctx, st)
	}
	packer := opt.Packer
	if packer == nil {
		packer = HotPack{Budget: DefaultPackBudget}
	}
	if err := r.tally(tc, packer); err != nil {
		return nil, err
	}
	for _, s := range r.rep.Sessions {
		r.rep.Total.add(s.Counts)
	}
	return r.rep, nil
}

func (r *replayer) relPath(abs string) string {
	if p, ok := r.rel[abs]; ok {
		return p
	}
	p := r.st.RelPath(abs)
	r.rel[abs] = p
	return p
}

// events returns the file events of writer by key (the first by seq
// when, against the store's dedupe, a key were held twice).
func (r *replayer) events(writer string) (map[string]*gitstore.Event, error) {
	if m, ok := r.index[writer]; ok {
		return m, nil
	}
	m := map[string]*gitstore.Event{}
	for _, op := range fileOps {
		evs, err := r.st.Events(r.ctx, gitstore.Query{Writers: []string{writer}, Op: op})
		if err != nil {
			return nil, fmt.Errorf("read the archive of %s: %w", writer, err)
		}
		for i := range evs {
			e := &evs[i]
			if e.Key == "" {
				continue
			}
			if old, ok := m[e.Key]; !ok || e.Seq < old.Seq {
				m[e.Key] = e
			}
		}
	}
	r.index[writer] = m
	return m, nil
}

// walk replays one transcript of session s. keys maps the dedupe
// keys the session's operations used so far to their line.
func (r *replayer) walk(si int, s *Session, path string, keys map[string]int, c *Counts) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	defer f.Close()
	p := cctranscript.NewParser(f, 0)
	views := map[string]map[string]*held{} // agent -> path -> version held
	line := 0
	for {
		if err := r.ctx.Err(); err != nil {
			return err
		}
		tl, err := p.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("replay %s: %w", path, err)
		}
		line++
		if len(tl.Items) == 0 {
			continue
		}
		var results map[string]*transcript.ToolResult
		for _, it := range tl.Items {
			switch x := it.(type) {
			case *transcript.ToolResult:
				if results == nil {
					results = map[string]*transcript.ToolResult{}
				}
				results[x.ToolUseID] = x
			case *transcript.CompactBoundary:
				c.Compactions++
				delete(views, x.Agent) // the context keeps the summary, not the files
			case *transcript.FileSeen:
				view := views[x.Agent]
				if view == nil {
					view = map[string]*held{}
					views[x.Agent] = view
				}
				var res *transcript.ToolResult
				if x.Op == gitstore.OpRead {
					res = results[x.Key]
					delete(results, x.Key)
				}
				if err := r.op(si, s, path, line, x, res, view, keys, c); err != nil {
					return err
				}
			}
		}
		// Reads Claude Code answered file_unchanged (no file text: the
		// earlier result stands) cost their short answer on every side.
		for _, res := range results {
			if res.Tool == "Read" && !res.IsError && resultType(res.ToolUseResult) == "file_unchanged" {
				c.UnchangedByCC++
				r.reads = append(r.reads, readRec{sess: si, context: contextOf(s, res.SessionID, res.Agent), kind: readStub, text: res.Text()})
			}
		}
	}
	st := p.Stats()
	c.Transcripts++
	c.Lines += st.Lines
	c.Bytes += st.Bytes
	return nil
}

func resultType(raw []byte) string {
	if len(raw) == 0 || raw[0] != '{' {
		return ""
	}
	t, _ := jsonscan.String(jsonscan.Field(raw, "type"))
	return t
}

func sessionOf(s *Session, lineSession string) string {
	if lineSession != "" {
		return lineSession
	}
	return s.ID
}

func contextOf(s *Session, lineSession, agent string) string {
	return sessionOf(s, lineSession) + "/" + agent
}

// op checks one file operation against the archive and moves the
// context's view on.
func (r *replayer) op(si int, s *Session, tpath string, line int, fs *transcript.FileSeen, res *transcript.ToolResult,
	view map[string]*held, keys map[string]int, c *Counts) error {
	c.Ops++
	sid := sessionOf(s, fs.SessionID)
	writer := gitstore.WriterName(claudecode.Prefix, sid)
	byKey, err := r.events(writer)
	if err != nil {
		return err
	}
	diverge := func(format string, a ...any) {
		c.Divergences++
		if len(r.divs) < MaxDivergencesKept {
			r.divs = append(r.divs, Divergence{Session: sid, Transcript: tpath, Line: line,
				Path: fs.Path, Key: fs.Key, Reason: fmt.Sprintf(format, a...)})
		}
	}
	rel := r.relPath(fs.Path)
	ev := byKey[fs.Key]
	_, reused := keys[fs.Key]
	if !reused {
		keys[fs.Key] = line
	}
	var match *gitstore.Event // the event that gave the text back
	switch {
	case ev == nil:
		diverge("%s not in the archive: no event with key %s on %s", fs.Op, fs.Key, writer)
	case ev.Op != fs.Op || ev.Agent != fs.Agent || ev.RawPath() != rel:
		if reused {
			c.ReusedKeys++ // the archive holds the key's first operation
			break
		}
		diverge("the archive's event under key %s is %s of %s in context %q, not %s of %s in context %q",
			fs.Key, ev.Op, ev.RawPath(), ev.Agent, fs.Op, rel, fs.Agent)
	case ev.Excluded:
		c.Withheld++
	case !fs.HasContent:
		c.Unverifiable++
	case ev.Blob == "":
		diverge("%s archived without content (key %s)", fs.Op, fs.Key)
	case ev.View != fs.View:
		diverge("archived view %q, the transcript shows %q", ev.View, fs.View)
	default:
		if reason := r.sameBytes(ev, fs.Content); reason != "" {
			diverge("%s", reason)
			break
		}
		c.Compared++
		match = ev
		if res != nil {
			if text, first, _, ok := cctranscript.StripLineNumbers(res.Text()); ok {
				c.ShownCompared++
				if start := viewStart(fs.View); first != start || text != string(fs.Content) {
					diverge("the numbered text the model was shown is not the archived %d bytes numbered from line %d", len(fs.Content), start)
				}
			}
		}
	}

	prev := view[fs.Path]
	if fs.Op == gitstore.OpRead && fs.HasContent {
		rec := readRec{sess: si, context: contextOf(s, fs.SessionID, fs.Agent), path: rel, ev: match}
		if match != nil {
			rec.blob = match.Blob
		} else {
			rec.blob = gitstore.BlobID(fs.Content)
			rec.text = string(fs.Content)
		}
		c.Reads++
		switch {
		case prev == nil:
			rec.kind = readFirst
		case prev.view == fs.View && bytes.Equal(prev.text, fs.Content):
			c.ReReads++
			c.ReReadsUnchanged++
			rec.kind = readUnchanged
		default:
			c.ReReads++
			rec.kind = readChanged
			rec.diff = unifiedDiff(rel, string(prev.text), string(fs.Content))
		}
		r.reads = append(r.reads, rec)
	}
	if fs.HasContent {
		view[fs.Path] = &held{text: fs.Content, view: fs.View}
	} else {
		delete(view, fs.Path) // the model's edit of a version the transcript does not hold
	}
	return nil
}

// sameBytes reads ev's blob back and compares it with text; it returns
// why they differ ("" when equal). A blob already matched against the
// same bytes is not read again.
func (r *replayer) sameBytes(ev *gitstore.Event, text []byte) string {
	if r.verified[ev.Blob] && gitstore.BlobID(text) == ev.Blob {
		return ""
	}
	b, err := r.st.Objects().Blob(r.ctx, ev.Blob)
	if err != nil {
		return fmt.Sprintf("archived blob %s cannot be read back: %v", ev.Blob, err)
	}
	if !bytes.Equal(b, text) {
		at := 0
		for at < len(b) && at < len(text) && b[at] == text[at] {
			at++
		}
		return fmt.Sprintf("archived blob %s (%d bytes) differs from the transcript's text (%d bytes) at byte %d", ev.Blob, len(b), len(text), at)
	}
	r.verified[ev.Blob] = true
	return ""
}

// viewStart is the first line a view shows.
func viewStart(view string) int {
	if rest, ok := strings.CutPrefix(view, "lines:"); ok {
		a, _, _ := strings.Cut(rest, "-")
		if n, err := strconv.Atoi(a); err == nil {
			return n
		}
	}
	return 1
}
