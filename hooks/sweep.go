package hooks

// Transcript sweep: archive what a Claude Code transcript holds, from where
// the last sweep stopped.
//
// A cursor per transcript (under <common dir>/lossless/cc-cursors, named by
// the first 16 bytes of sha256(path) in hex) records the byte offset swept,
// the file's identity (device and inode), its size and the sha256 of its
// first min(offset, 4096) bytes, plus the tool calls whose results had not
// arrived yet. A transcript that shrank below the offset, was replaced (new
// inode) or rewritten (prefix hash differs) is swept again from 0: the
// dedupe keys make re-recording harmless. The cursor moves only after the
// store accepted the records; a trailing line without its '\n' (being
// written) is left for the next sweep.
//
// Records follow hooks/doc.go, all with source "sweep", the line's own
// timestamp, session, agent, sidechain and the extra field "uuid":
//
//   - read/write/edit/attach: the FileSeen evidence, with its content
//     (none for an edit the transcript cannot reconstruct), key
//     <tool_use_id> or attach:<uuid>;
//   - compact: a compaction boundary, no content, key compact:<uuid>,
//     extra "trigger";
//   - span: every text, tool call, tool result and compaction summary as
//     compact JSON, key span:<uuid> (span:<uuid>:<block> when a line holds
//     several), extra "kind". Spans of file tools carry the file's path,
//     so that the deny list also keeps a denied file's text out of them.
//
// Paths are Store.RelPath of the absolute path, and Record.File is the
// absolute path (the deny list follows its symlinks). Nothing is read from
// the files themselves. One writer per session: cc-<sessionId>. Big sweeps
// are written as one pack per writer (Store.Import), small ones appended.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/git-lossless/git-lossless/gitstore"
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
}

// SweepStats says what a sweep did.
type SweepStats struct {
	Transcripts int   // transcripts looked at
	Resets      int   // cursors reset (transcript truncated or replaced)
	Lines       int   // complete lines read
	Invalid     int   // lines that are not JSON (skipped)
	Skipped     int   // lines of types not archived
	Bytes       int64 // bytes read
	Records     int   // records built
	Evidence    int   // of which file evidence (read/write/edit/attach)
	Spans       int   // of which spans
	Compactions int   // of which compaction boundaries
	Appended    int   // events stored
	Deduped     int   // records already stored (same key)
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

// CursorDir is the StateDir name of the sweep cursors.
const CursorDir = "cc-cursors"

// cursorPrefix is how many leading bytes the cursor's hash covers.
const cursorPrefix = 4096

// sweepCursor is a transcript's cursor file.
type sweepCursor struct {
	Version   int              `json:"v"`
	Path      string           `json:"path"`
	Offset    int64            `json:"offset"`
	Dev       uint64           `json:"dev"`
	Ino       uint64           `json:"ino"`
	Size      int64            `json:"size"`
	PrefixLen int64            `json:"prefix_len"`
	Prefix    string           `json:"prefix_sha256"`
	Session   string           `json:"session,omitempty"`
	Pending   []PendingToolUse `json:"pending,omitempty"`
}

// CursorFile returns the cursor file of the transcript at path.
func CursorFile(st *gitstore.Store, path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	dir, err := st.StateDir(CursorDir)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(abs))
	return filepath.Join(dir, hex.EncodeToString(sum[:16])), nil
}

func readCursor(file string) *sweepCursor {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	var c sweepCursor
	if json.Unmarshal(b, &c) != nil || c.Version != 1 || c.Offset < 0 {
		return nil // unreadable: sweep from the start (dedupe makes it safe)
	}
	return &c
}

func writeCursor(file string, c *sweepCursor) error {
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

// sessionFromPath guesses the session of a transcript from its name:
// <session>.jsonl, or <session>/subagents/agent-<id>.jsonl.
func sessionFromPath(abs string) string {
	dir, base := filepath.Split(abs)
	if strings.HasPrefix(base, "agent-") && filepath.Base(filepath.Clean(dir)) == "subagents" {
		return filepath.Base(filepath.Dir(filepath.Clean(dir)))
	}
	return strings.TrimSuffix(base, ".jsonl")
}

// SweepTranscript archives what the transcript at path holds beyond its
// cursor. A missing transcript is an error that wraps fs.ErrNotExist.
func SweepTranscript(ctx context.Context, st *gitstore.Store, path string, opt SweepOptions) (SweepStats, error) {
	var s SweepStats
	err := sweepFile(ctx, st, path, opt, &s)
	return s, err
}

// SweepSession sweeps a session's main transcript and every subagent
// transcript beside it (<main without .jsonl>/subagents/agent-*.jsonl).
// It sweeps all it can and returns the errors joined.
func SweepSession(ctx context.Context, st *gitstore.Store, mainTranscript string, opt SweepOptions) (SweepStats, error) {
	var s SweepStats
	var errs []error
	if err := sweepFile(ctx, st, mainTranscript, opt, &s); err != nil {
		errs = append(errs, err)
	}
	dir := filepath.Join(strings.TrimSuffix(mainTranscript, ".jsonl"), "subagents")
	ents, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, fmt.Errorf("sweep %s: %w", dir, err))
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		n := e.Name()
		if strings.HasPrefix(n, "agent-") && strings.HasSuffix(n, ".jsonl") && !e.IsDir() {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		if err := ctx.Err(); err != nil {
			errs = append(errs, err)
			break
		}
		if err := sweepFile(ctx, st, filepath.Join(dir, n), opt, &s); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return s, errors.Join(errs...)
}

func sweepFile(ctx context.Context, st *gitstore.Store, path string, opt SweepOptions, total *SweepStats) error {
	var stats SweepStats
	defer func() { total.add(stats) }()
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("sweep %s: %w", path, err)
	}
	cfile, err := CursorFile(st, abs)
	if err != nil {
		return fmt.Errorf("sweep %s: %w", abs, err)
	}
	f, err := os.Open(abs)
	if err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("sweep %s: not a regular file", abs)
	}
	stats.Transcripts = 1
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
			stats.Resets = 1
			cur = nil
		} else if fi.Size() == cur.Offset {
			return nil // nothing new
		}
	}
	if cur == nil {
		cur = &sweepCursor{Version: 1, Path: abs, Dev: dev, Ino: ino}
	}

	if _, err := f.Seek(cur.Offset, io.SeekStart); err != nil {
		return fmt.Errorf("sweep %s: %w", abs, err)
	}
	p := NewTranscriptParser(f, cur.Offset)
	p.SetPending(cur.Pending)
	b := &sweepBatch{st: st, optSession: opt.SessionID, pathSession: sessionFromPath(abs), lastSession: cur.Session,
		stats: &stats, rel: map[string]string{}}
	maxBytes := opt.MaxBatchBytes
	if maxBytes <= 0 {
		maxBytes = 64 << 20
	}
	saved := false
	flush := func() error {
		if err := b.store(ctx, opt); err != nil {
			return fmt.Errorf("sweep %s: %w", abs, err)
		}
		// Only now, the store having accepted the records, the cursor moves.
		off := p.Offset()
		if saved && off == cur.Offset {
			return nil
		}
		nfi, err := f.Stat()
		if err != nil {
			return fmt.Errorf("sweep %s: %w", abs, err)
		}
		n := min(off, cursorPrefix)
		if n != cur.PrefixLen || cur.Prefix == "" {
			if cur.Prefix, err = prefixHash(f, n); err != nil {
				return fmt.Errorf("sweep %s: %w", abs, err)
			}
			cur.PrefixLen = n
		}
		cur.Offset, cur.Size = off, nfi.Size()
		cur.Session = b.lastSession
		cur.Pending = p.Pending()
		if err := writeCursor(cfile, cur); err != nil {
			return fmt.Errorf("sweep %s: save cursor: %w", abs, err)
		}
		saved = true
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
		if b.bytes >= maxBytes {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	ps := p.Stats()
	stats.Lines, stats.Invalid, stats.Skipped, stats.Bytes = ps.Lines, ps.Invalid, ps.Skipped, ps.Bytes
	return flush()
}

// sweepBatch gathers the records of a sweep, by writer.
type sweepBatch struct {
	st          *gitstore.Store
	optSession  string // SweepOptions.SessionID
	pathSession string // from the transcript's name
	lastSession string // the last sessionId a line carried
	stats       *SweepStats
	order       []string
	recs        map[string][]gitstore.Record
	bytes       int64
	rel         map[string]string // absolute path -> recorded path
}

func (b *sweepBatch) relPath(abs string) string {
	if r, ok := b.rel[abs]; ok {
		return r
	}
	r := b.st.RelPath(abs)
	b.rel[abs] = r
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
}

// addLine turns a line's items into records, as hooks/doc.go specifies.
func (b *sweepBatch) addLine(tl *TranscriptLine) {
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
	writer := gitstore.WriterName("cc-", session)
	var uuidJSON json.RawMessage
	if tl.UUID != "" {
		uuidJSON = tjQuote(tl.UUID)
	}
	for _, it := range tl.Items {
		m := it.Meta()
		r := gitstore.Record{Event: gitstore.Event{
			TS: m.TS, Session: session, Agent: m.Agent, Sidechain: m.Sidechain, Source: "sweep",
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
		case *FileSeen:
			r.Op, r.Tool, r.Key = x.Op, x.Tool, x.Key
			if x.HasContent {
				r.View = x.View
				r.Content, r.HasContent = x.Content, true
			}
			setPath(x.Path)
		case *CompactBoundary:
			r.Op, r.Key = "compact", x.Key
			if x.Trigger != "" {
				extra["trigger"] = tjQuote(x.Trigger)
			}
		default:
			content := SpanJSON(it)
			if content == nil {
				continue
			}
			r.Op = "span"
			r.Content, r.HasContent = content, true
			extra["kind"] = tjQuote(SpanKind(it))
			switch x := it.(type) {
			case *TextSpan:
				r.Key = x.Key
			case *ToolUse:
				r.Key, r.Tool = x.SpanKey, x.Name
				setPath(x.Path) // the deny list applies to what a span holds
			case *ToolResult:
				r.Key, r.Tool = x.SpanKey, x.Tool
				setPath(x.Path)
			case *CompactSummary:
				r.Key = x.Key
			}
		}
		if r.Key == "" {
			continue // no key (a line without uuid): it could not be deduped
		}
		switch r.Op {
		case "span":
			b.stats.Spans++
		case "compact":
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
	importMin := opt.ImportMin
	if importMin <= 0 {
		importMin = 64
	}
	for _, w := range b.order {
		recs := b.recs[w]
		if len(recs) == 0 {
			continue
		}
		if len(recs) >= importMin {
			res, err := b.st.Import(ctx, w, recs, opt.BatchSize)
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
	b.order = b.order[:0]
	b.bytes = 0
	return nil
}
