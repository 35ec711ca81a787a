package hooks

// Transcript sweep: archive what a harness's transcript holds, from where
// the last sweep stopped. The harness reads its format
// (Harness.ReadTranscript) into the neutral items of hooks/transcript;
// everything else — cursors, records, writers, dedupe — is here.
//
// A cursor per transcript (under <common dir>/lossless/<prefix>cursors,
// cc-cursors for Claude Code, named by the first 16 bytes of
// sha256(path) in hex) records the byte offset swept, the file's identity
// (device and inode), its size and the sha256 of its first min(offset,
// 4096) bytes, plus the tool calls whose results had not arrived yet and,
// per context, the last compaction boundary before the offset (so that
// evidence swept later is stamped with its epoch). A transcript that
// shrank below the offset, was replaced (new inode) or rewritten (prefix
// hash differs) is swept again from 0: the dedupe keys make re-recording
// harmless. The cursor moves only after the store accepted the records; a
// trailing line without its '\n' (being written) is left for the next
// sweep.
//
// Records follow hooks/doc.go, all with source "sweep", the harness's
// name, the line's own timestamp, session, agent, sidechain and the extra
// field "uuid":
//
//   - read/write/edit/attach: the FileSeen evidence, with its content
//     (none for an edit the transcript cannot reconstruct), key
//     <tool call id> or attach:<uuid>, and extra "epoch": the key of the
//     last compaction boundary of the same context above it in the
//     transcript (absent above the first). The guard places evidence
//     against a compaction by this, transcript order, not by timestamps;
//     see package guard;
//   - compact: a compaction boundary, no content, key compact:<uuid>,
//     extra "trigger";
//   - span: every text, tool call, tool result and compaction summary as
//     compact JSON, key span:<uuid> (span:<uuid>:<block> when a line holds
//     several), extra "kind". Spans of file tools carry the file's path,
//     so that the deny list also keeps a denied file's text out of them.
//     What the model produced (assistant text, thinking, tool calls)
//     carries extra "model" when the transcript names it
//     (transcript.LineMeta.Model), and such a tool call extra
//     "tool_use_id", its id: see Models.
//
// Paths are Store.RelPath of the absolute path, and Record.File is the
// absolute path (the deny list follows its symlinks). File evidence
// carries extra "real_path" when the path resolves through a symlink to
// another one (see realpath.go), resolved when the sweep runs. Nothing is
// read from the files themselves. One writer per session:
// <prefix><session> (cc-<sessionId> for Claude Code). Big sweeps are
// written as one pack per writer (Store.Import), small ones appended; an
// import stores a session's transcripts together (sweep_group.go).

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/hooks/transcript"
	"github.com/git-lossless/git-lossless/internal/jsonscan"
)

// SweepOptions tunes a sweep. The zero value is what hooks use.
type SweepOptions struct {
	// SessionID is the session of lines that carry none (default: the one
	// last seen in the transcript, else the transcript's file name).
	SessionID string
	// BatchSize is the number of events per batch commit when a sweep
	// goes through gitstore's Import (0: its default).
	BatchSize int
	// ImportMin: a sweep with at least this many records writes them as
	// one pack (Store.Import); smaller ones use Store.Append (loose
	// objects). 0: 64.
	ImportMin int
	// MaxBatchBytes bounds the content a sweep holds in memory: when the
	// records gathered reach it they are stored and the cursor saved, and
	// the sweep goes on. 0: 64 MiB.
	MaxBatchBytes int64
	// resolved, when set, memoises realFile across the sweeps sharing
	// it (an import's): many sessions name the same files, many of them
	// long gone, and each resolution walks the path a component at a
	// time. It holds what the files resolve to when the import runs,
	// which is what each sweep would have resolved.
	resolved *sync.Map
}

// SweepStats says what a sweep did.
type SweepStats struct {
	Transcripts int   `json:"transcripts"` // transcripts looked at
	Resets      int   `json:"resets"`      // cursors reset (transcript truncated or replaced)
	Lines       int   `json:"lines"`       // complete lines read
	Invalid     int   `json:"invalid"`     // lines that are not JSON (skipped)
	Skipped     int   `json:"skipped"`     // lines of types not archived
	Bytes       int64 `json:"bytes"`       // bytes read
	Records     int   `json:"records"`     // records built
	Evidence    int   `json:"evidence"`    // of which file evidence (read/write/edit/attach)
	Spans       int   `json:"spans"`       // of which spans
	Compactions int   `json:"compactions"` // of which compaction boundaries
	Appended    int   `json:"appended"`    // events stored
	Deduped     int   `json:"deduped"`     // records already stored (same key)
}

func (s *SweepStats) add(o SweepStats) {
	s.Transcripts += o.Transcripts
	s.Resets += o.Resets
	s.Lines += o.Lines
	s.Invalid += o.Invalid
	s.Skipped += o.Skipped
	s.Bytes += o.Bytes
	s.Records += o.Records
	s.Evidence += o.Evidence
	s.Spans += o.Spans
	s.Compactions += o.Compactions
	s.Appended += o.Appended
	s.Deduped += o.Deduped
}

// CursorDir is the StateDir name of a harness's sweep cursors: its
// prefix, then "cursors" (cc-cursors for Claude Code).
func CursorDir(h Harness) string { return h.Prefix() + "cursors" }

// cursorPrefix is how many leading bytes the cursor's hash covers.
const cursorPrefix = 4096

// Cursor is a transcript's cursor file: how far the sweeps of one
// transcript got (see the top of this file).
type Cursor struct {
	Version   int                         `json:"v"`
	Path      string                      `json:"path"`
	Offset    int64                       `json:"offset"`
	Dev       uint64                      `json:"dev"`
	Ino       uint64                      `json:"ino"`
	Size      int64                       `json:"size"`
	PrefixLen int64                       `json:"prefix_len"`
	Prefix    string                      `json:"prefix_sha256"`
	Session   string                      `json:"session,omitempty"`
	Pending   []transcript.PendingToolUse `json:"pending,omitempty"`
	// Epochs maps each context of the transcript (its agent id, "" for
	// the main context) to its last compaction boundary before Offset.
	// The guard reads a context's current boundary from here and from the
	// lines past Offset, instead of searching the archive for it.
	Epochs map[string]CursorEpoch `json:"epochs,omitempty"`
	// State is the harness's reader's own state at Offset
	// (TranscriptStater), opaque to the sweep.
	State json.RawMessage `json:"state,omitempty"`
}

// CursorEpoch is a compaction boundary as a cursor keeps it.
type CursorEpoch struct {
	Key string    `json:"key"` // compact:<line uuid>
	TS  time.Time `json:"ts"`  // the line's timestamp
}

// cursorVersion is the cursor format. Version 1 had no epochs: such a
// cursor is treated as absent, so the transcript is swept again from the
// start (deduped) and the epochs are rebuilt.
const cursorVersion = 2

// CursorFile returns the cursor file of harness h's transcript at path.
func CursorFile(ctx context.Context, st *gitstore.Store, h Harness, path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	dir, err := st.StateDir(ctx, CursorDir(h))
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(abs))
	return filepath.Join(dir, hex.EncodeToString(sum[:16])), nil
}

// ReadCursor returns the cursor of harness h's transcript at path: nil
// when there is none yet or it cannot be read (the next sweep starts
// from the beginning).
func ReadCursor(ctx context.Context, st *gitstore.Store, h Harness, path string) *Cursor {
	file, err := CursorFile(ctx, st, h, path)
	if err != nil {
		return nil
	}
	return readCursor(file)
}

func readCursor(file string) *Cursor {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	var c Cursor
	if json.Unmarshal(b, &c) != nil || c.Version != cursorVersion || c.Offset < 0 {
		return nil // unreadable: sweep from the start (dedupe makes it safe)
	}
	return &c
}

func writeCursor(file string, c *Cursor) error {
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), ".tmp-cursor-")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(append(b, '\n'))
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

func prefixHash(f *os.File, n int64) (string, error) {
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, 0); err != nil && !(errors.Is(err, io.EOF) && n == 0) {
		return "", err
	}
	sum := sha256.Sum256(buf)
	return hex.EncodeToString(sum[:]), nil
}

// SweepTranscript archives what harness h's transcript at path holds
// beyond its cursor. A missing transcript is an error that wraps
// fs.ErrNotExist.
func SweepTranscript(ctx context.Context, st *gitstore.Store, h Harness, path string, opt SweepOptions) (SweepStats, error) {
	var s SweepStats
	err := sweepFile(ctx, st, h, path, opt, &s, nil)
	return s, err
}

// hookRecords are records of a hook that a sweep stores in the same store
// call as its own (one Append, one dedupe pass over the writer, one ref
// update instead of two). stored says whether that happened; when it did
// not (nothing new in the transcript, an error) the hook stores them
// itself.
type hookRecords struct {
	writer string
	recs   []gitstore.Record
	stored bool
}

// SweepSession sweeps a session's main transcript and every subagent
// transcript the harness keeps beside it (Harness.Subagents). It sweeps
// all it can and returns the errors joined.
func SweepSession(ctx context.Context, st *gitstore.Store, h Harness, mainTranscript string, opt SweepOptions) (SweepStats, error) {
	return sweepSession(ctx, st, h, mainTranscript, opt, nil)
}

// sweepSession is SweepSession storing hr with the main transcript's
// records.
func sweepSession(ctx context.Context, st *gitstore.Store, h Harness, mainTranscript string, opt SweepOptions, hr *hookRecords) (SweepStats, error) {
	var s SweepStats
	var errs []error
	if err := sweepFile(ctx, st, h, mainTranscript, opt, &s, hr); err != nil {
		errs = append(errs, err)
	}
	subs, err := h.Subagents(mainTranscript)
	if err != nil {
		errs = append(errs, fmt.Errorf("sweep the subagents of %s: %w", mainTranscript, err))
	}
	for _, p := range subs {
		if err := ctx.Err(); err != nil {
			errs = append(errs, err)
			break
		}
		if err := sweepFile(ctx, st, h, p, opt, &s, nil); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return s, errors.Join(errs...)
}

// transcriptAt is a transcript opened to be read on from its cursor.
type transcriptAt struct {
	h          Harness
	abs, cfile string
	f          *os.File
	fi         os.FileInfo
	// cur is the cursor to read on from: a fresh one at offset 0 when
	// there was none, or it was unreadable or reset (fresh).
	cur   *Cursor
	fresh bool
	reset bool // a cursor was there but no longer fits the file
}

// openTranscript opens the transcript at path and its cursor, checking
// that the cursor still describes this file: a transcript that shrank
// below the offset, was replaced (new inode) or rewritten (prefix hash
// differs) is read again from 0. A missing transcript is an error that
// wraps fs.ErrNotExist.
func openTranscript(ctx context.Context, st *gitstore.Store, h Harness, path string) (*transcriptAt, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("sweep %s: %w", path, err)
	}
	cfile, err := CursorFile(ctx, st, h, abs)
	if err != nil {
		return nil, fmt.Errorf("sweep %s: %w", abs, err)
	}
	f, err := os.Open(abs)
	if err != nil {
		return nil, fmt.Errorf("sweep: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("sweep: %w", err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("sweep %s: not a regular file", abs)
	}
	t := &transcriptAt{h: h, abs: abs, cfile: cfile, f: f, fi: fi}
	dev, ino := fileIdentity(fi)
	cur := readCursor(cfile)
	if cur != nil {
		reset := cur.Path != abs || cur.Dev != dev || cur.Ino != ino || fi.Size() < cur.Offset ||
			cur.PrefixLen != min(cur.Offset, cursorPrefix)
		if !reset {
			h, err := prefixHash(f, cur.PrefixLen)
			reset = err != nil || h != cur.Prefix
		}
		if reset {
			t.reset = true
			cur = nil
		}
	}
	if cur == nil {
		t.fresh = true
		cur = &Cursor{Version: cursorVersion, Path: abs, Dev: dev, Ino: ino}
	}
	t.cur = cur
	return t, nil
}

func (t *transcriptAt) close() { t.f.Close() }

// upToDate reports whether the cursor is at the end of the file.
func (t *transcriptAt) upToDate() bool { return !t.fresh && t.fi.Size() == t.cur.Offset }

// reader returns the harness's reader positioned at the cursor, with its
// pending calls.
func (t *transcriptAt) reader() (TranscriptReader, error) {
	if _, err := t.f.Seek(t.cur.Offset, io.SeekStart); err != nil {
		return nil, fmt.Errorf("sweep %s: %w", t.abs, err)
	}
	return t.h.ReadTranscript(t.f, TranscriptPos{Offset: t.cur.Offset, Left: t.fi.Size() - t.cur.Offset + 1, Pending: t.cur.Pending,
		Path: t.abs, State: t.cur.State}), nil
}

// tailItem is one item of a transcript's unswept tail, with the context's
// compaction epoch in effect at its line.
type tailItem struct {
	seen     *transcript.FileSeen        // evidence for the file asked about, or
	boundary *transcript.CompactBoundary // a compaction boundary of the context
	epoch    string
}

// scanTail reads the lines past the cursor — what no sweep has archived
// yet — without storing anything, and returns, in transcript order, the
// compaction boundaries of context agent and its evidence for the file
// asked about (file reports whether a path names it: the same file may be
// named through a symlink). The guard uses it so that it never writes (and never waits for a
// writer's lock) to learn of a compaction that happened since the last
// sweep or of the files re-attached after it.
func (t *transcriptAt) scanTail(ctx context.Context, agent string, file func(path string) bool) ([]tailItem, error) {
	if t.upToDate() {
		return nil, nil
	}
	p, err := t.reader()
	if err != nil {
		return nil, err
	}
	epoch := t.cur.Epochs[agent].Key
	var out []tailItem
	for {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		tl, err := p.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, fmt.Errorf("read %s: %w", t.abs, err)
		}
		for _, it := range tl.Items {
			if it.Meta().Agent != agent {
				continue
			}
			switch x := it.(type) {
			case *transcript.CompactBoundary:
				if x.Key != "" {
					epoch = x.Key
					out = append(out, tailItem{boundary: x, epoch: epoch})
				}
			case *transcript.FileSeen:
				if x.Key != "" && x.Path != "" && file(x.Path) {
					out = append(out, tailItem{seen: x, epoch: epoch})
				}
			}
		}
	}
}

func sweepFile(ctx context.Context, st *gitstore.Store, h Harness, path string, opt SweepOptions, total *SweepStats, hr *hookRecords) error {
	return sweepFileTo(ctx, st, h, path, opt, total, hr, nil)
}

// sweepFileTo is sweepFile storing through g when g is not nil: the
// records go to g, and the cursor is written when g has stored them (see
// sweepGroup).
func sweepFileTo(ctx context.Context, st *gitstore.Store, h Harness, path string, opt SweepOptions, total *SweepStats, hr *hookRecords, g *sweepGroup) error {
	var stats SweepStats
	defer func() { total.add(stats) }()
	t, err := openTranscript(ctx, st, h, path)
	if err != nil {
		return err
	}
	defer t.close()
	abs, cfile, f, cur := t.abs, t.cfile, t.f, t.cur
	stats.Transcripts = 1
	if t.reset {
		stats.Resets = 1
	}
	if t.upToDate() {
		return nil // nothing new
	}

	p, err := t.reader()
	if err != nil {
		return err
	}
	b := &sweepBatch{st: st, harness: h.Name(), prefix: h.Prefix(), optSession: opt.SessionID, pathSession: h.SessionOf(abs), lastSession: cur.Session,
		stats: &stats, rel: map[string]string{}, epochs: map[string]CursorEpoch{}, importMin: opt.ImportMin,
		group: g, resolved: opt.resolved}
	if b.importMin <= 0 {
		b.importMin = 64
	}
	defer b.closePrepack()
	for k, v := range cur.Epochs {
		b.epochs[k] = v
	}
	if hr != nil && !hr.stored && len(hr.recs) > 0 {
		// First in the batch: a hook's record of a result wins the dedupe
		// over the same result swept from the transcript.
		b.order = append(b.order, hr.writer)
		b.recs = map[string][]gitstore.Record{hr.writer: append([]gitstore.Record(nil), hr.recs...)}
	}
	maxBytes := opt.MaxBatchBytes
	if maxBytes <= 0 {
		maxBytes = 64 << 20
	}
	saved := false
	// advance moves cur to where the parser is; false when it was there.
	advance := func() (bool, error) {
		off := p.Offset()
		if saved && off == cur.Offset {
			return false, nil
		}
		nfi, err := f.Stat()
		if err != nil {
			return false, fmt.Errorf("sweep %s: %w", abs, err)
		}
		n := min(off, cursorPrefix)
		if n != cur.PrefixLen || cur.Prefix == "" {
			if cur.Prefix, err = prefixHash(f, n); err != nil {
				return false, fmt.Errorf("sweep %s: %w", abs, err)
			}
			cur.PrefixLen = n
		}
		cur.Offset, cur.Size = off, nfi.Size()
		cur.Session = b.lastSession
		cur.Pending = p.Pending()
		cur.State = nil
		if sp, ok := p.(TranscriptStater); ok {
			cur.State = sp.State()
		}
		cur.Epochs = nil
		if len(b.epochs) > 0 {
			cur.Epochs = maps.Clone(b.epochs)
		}
		saved = true
		return true, nil
	}
	flush := func(final bool) error {
		if g != nil {
			g.take(b)
			moved, err := advance()
			if err != nil {
				return err
			}
			if moved {
				c := *cur
				g.saves = append(g.saves, pendingCursor{file: cfile, abs: abs, cur: &c})
			}
			if final && !g.full() {
				return nil // stored with the group's other transcripts
			}
			return g.flush(ctx)
		}
		if err := b.store(ctx, opt); err != nil {
			return fmt.Errorf("sweep %s: %w", abs, err)
		}
		if hr != nil {
			hr.stored = true
		}
		// Only now, the store having accepted the records, the cursor moves.
		moved, err := advance()
		if err != nil || !moved {
			return err
		}
		if err := writeCursor(cfile, cur); err != nil {
			return fmt.Errorf("sweep %s: save cursor: %w", abs, err)
		}
		return nil
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		tl, err := p.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("sweep %s: %w", abs, err)
		}
		b.addLine(tl)
		if b.bytes >= maxBytes || (g != nil && g.bytes+b.bytes >= g.maxBytes) {
			if err := flush(false); err != nil {
				return err
			}
		}
	}
	ps := p.Stats()
	stats.Lines, stats.Invalid, stats.Skipped, stats.Bytes = ps.Lines, ps.Invalid, ps.Skipped, ps.Bytes
	return flush(true)
}

// sweepBatch gathers the records of a sweep, by writer.
type sweepBatch struct {
	st          *gitstore.Store
	harness     string // the harness's name, on every record
	prefix      string // of its writers
	optSession  string // SweepOptions.SessionID
	pathSession string // from the transcript's name
	lastSession string // the last sessionId a line carried
	stats       *SweepStats
	order       []string
	recs        map[string][]gitstore.Record
	bytes       int64
	rel         map[string]string      // absolute path -> recorded path
	real        map[string]string      // absolute path -> its resolved file, recorded as a path
	epochs      map[string]CursorEpoch // context (agent id) -> its last compaction boundary
	// importMin is SweepOptions.ImportMin with its default. Once a
	// writer has that many records (it will be stored by Import), pre
	// compresses their contents while the transcript is still being
	// parsed: on two cores that takes the compression off the sweep's
	// critical path (see gitstore.Prepack).
	importMin int
	pre       *gitstore.Prepack
	// group, when set, stores the records instead (see sweepGroup), and
	// its Prepack compresses every content as it is added.
	group *sweepGroup
	// resolved, when set, is SweepOptions.resolved.
	resolved *sync.Map
}

func (b *sweepBatch) relPath(abs string) string {
	if r, ok := b.rel[abs]; ok {
		return r
	}
	r := b.st.RelPath(abs)
	b.rel[abs] = r
	return r
}

// realPath is the file abs resolves to, as a recorded path (see
// realFile). It is resolved when the sweep runs, which for a transcript
// swept long after the fact may no longer be what the link named when
// the model saw the file; the hook's own record, taken right after the
// result, wins the dedupe over the sweep's wherever there is one.
func (b *sweepBatch) realPath(abs string) string {
	if r, ok := b.real[abs]; ok {
		return r
	}
	if b.real == nil {
		b.real = map[string]string{}
	}
	var r string
	if b.resolved != nil {
		v, ok := b.resolved.Load(abs)
		if !ok {
			v, _ = b.resolved.LoadOrStore(abs, realFile(abs))
		}
		r = b.st.RelPath(v.(string))
	} else {
		r = b.st.RelPath(realFile(abs))
	}
	b.real[abs] = r
	return r
}

func (b *sweepBatch) add(writer string, r gitstore.Record) {
	if b.recs == nil {
		b.recs = map[string][]gitstore.Record{}
	}
	if _, ok := b.recs[writer]; !ok {
		b.order = append(b.order, writer)
	}
	b.recs[writer] = append(b.recs[writer], r)
	b.bytes += int64(len(r.Content))
	b.stats.Records++
	if b.group != nil {
		b.group.prepack().Add(r.Content)
		return
	}
	switch n := len(b.recs[writer]); {
	case n == b.importMin && b.pre == nil:
		b.pre = gitstore.NewPrepack()
		for _, r := range b.recs[writer] {
			b.pre.Add(r.Content)
		}
	case n >= b.importMin && b.pre != nil:
		b.pre.Add(r.Content)
	}
}

// addLine turns a line's items into records, as hooks/doc.go specifies.
func (b *sweepBatch) addLine(tl *transcript.Line) {
	if len(tl.Items) == 0 {
		return
	}
	session := tl.SessionID
	switch {
	case session != "":
		b.lastSession = session
	case b.optSession != "":
		session = b.optSession
	case b.lastSession != "":
		session = b.lastSession
	default:
		session = b.pathSession
	}
	writer := gitstore.WriterName(b.prefix, session)
	var uuidJSON json.RawMessage
	if tl.UUID != "" {
		uuidJSON = jsonscan.Quote(tl.UUID)
	}
	for _, it := range tl.Items {
		m := it.Meta()
		r := gitstore.Record{Event: gitstore.Event{
			TS: m.TS, Session: session, Agent: m.Agent, Sidechain: m.Sidechain, Source: "sweep", Harness: b.harness,
		}}
		extra := map[string]json.RawMessage{}
		if uuidJSON != nil {
			extra["uuid"] = uuidJSON
		}
		setPath := func(abs string) {
			if abs != "" {
				r.SetPath(b.relPath(abs))
				r.File = abs
			}
		}
		switch x := it.(type) {
		case *transcript.FileSeen:
			r.Op, r.Tool, r.Key = x.Op, x.Tool, x.Key
			if x.HasContent {
				r.View = x.View
				r.Content, r.HasContent = x.Content, true
			}
			setPath(x.Path)
			if x.Path != "" {
				// Evidence is keyed by the file, whatever the spelling
				// (see realpath.go).
				if k, v, ok := realPathExtra(r.RawPath(), b.realPath(x.Path)); ok {
					extra[k] = v
				}
			}
			if ep := b.epochs[m.Agent]; ep.Key != "" {
				extra["epoch"] = jsonscan.Quote(ep.Key)
			}
		case *transcript.CompactBoundary:
			r.Op, r.Key = gitstore.OpCompact, x.Key
			if x.Trigger != "" {
				extra["trigger"] = jsonscan.Quote(x.Trigger)
			}
			if x.Key != "" {
				b.epochs[m.Agent] = CursorEpoch{Key: x.Key, TS: m.TS}
			}
		default:
			content := transcript.SpanJSON(it)
			if content == nil {
				continue
			}
			r.Op = gitstore.OpSpan
			// Conversation text is encrypted like the proxy's spans when
			// lossless.encrypt is on; the store redacts secrets first.
			r.Content, r.HasContent, r.Encrypt = content, true, true
			extra["kind"] = jsonscan.Quote(transcript.SpanKind(it))
			switch x := it.(type) {
			case *transcript.TextSpan:
				r.Key = x.Key
				if x.Role == "assistant" && m.Model != "" {
					extra["model"] = jsonscan.Quote(m.Model)
				}
			case *transcript.ToolUse:
				r.Key, r.Tool = x.SpanKey, x.Name
				setPath(x.Path) // the deny list applies to what a span holds
				if m.Model != "" {
					extra["model"] = jsonscan.Quote(m.Model)
					// The call's id, in the clear beside the (maybe
					// encrypted) content: evidence is keyed by it, and
					// this is how its model is found (see Models).
					if x.ID != "" {
						extra["tool_use_id"] = jsonscan.Quote(x.ID)
					}
				}
			case *transcript.ToolResult:
				r.Key, r.Tool = x.SpanKey, x.Tool
				setPath(x.Path)
			case *transcript.CompactSummary:
				r.Key = x.Key
			}
		}
		if r.Key == "" {
			continue // no key (a line without uuid): it could not be deduped
		}
		switch r.Op {
		case gitstore.OpSpan:
			b.stats.Spans++
		case gitstore.OpCompact:
			b.stats.Compactions++
		default:
			b.stats.Evidence++
		}
		if len(extra) > 0 {
			r.Extra = extra
		}
		b.add(writer, r)
	}
}

// store writes the gathered records: one Import (one pack) per writer for
// big batches, Append for small ones.
func (b *sweepBatch) store(ctx context.Context, opt SweepOptions) error {
	for _, w := range b.order {
		recs := b.recs[w]
		if len(recs) == 0 {
			continue
		}
		if len(recs) >= b.importMin {
			res, err := b.st.ImportWith(ctx, w, recs, gitstore.ImportOptions{BatchSize: opt.BatchSize, Prepack: b.pre})
			if err != nil {
				return err
			}
			b.stats.Appended += len(res.Events)
			b.stats.Deduped += res.Deduped
		} else {
			res, err := b.st.Append(ctx, w, recs)
			if err != nil {
				return err
			}
			b.stats.Appended += len(res.Events)
			b.stats.Deduped += res.Deduped
		}
		delete(b.recs, w)
	}
	b.closePrepack()
	b.order = b.order[:0]
	b.bytes = 0
	return nil
}

// closePrepack drops the batch's Prepack, if any.
func (b *sweepBatch) closePrepack() {
	if b.pre != nil {
		b.pre.Close()
		b.pre = nil
	}
}
