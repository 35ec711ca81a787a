package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/guard"
	"github.com/git-lossless/git-lossless/hooks/transcript"
)

// Env is what a hook run touches of the outside world.
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Getenv         func(string) string
	// Open opens the archive for a directory (default gitstore.OpenDir,
	// which witnesses every head it moves).
	Open func(dir string) (*gitstore.Store, error)
	// Now is the clock of the records a hook writes (default time.Now).
	// Records of hook results are placed against compaction boundaries
	// by time (see package guard), so tests set it.
	Now func() time.Time
	// HarnessOf maps a writer to its harness's name (harnesses.
	// WriterHarness), for naming another context in a deny reason when
	// its events carry no harness field; nil: only this call's harness
	// is known by its prefix.
	HarnessOf func(writer string) string
}

// Run handles one hook call of harness h for event (as the hook command
// line names it) and returns the process exit code. It never blocks or
// breaks the harness because of our own failure: any error, even a
// panic, becomes exactly one line on stderr and exit 0 (for pre-tool-use:
// the edit is allowed). Claude Code, for one, treats exit 2 from
// PreToolUse as a block and shows stderr to the model, so neither may
// come from a failure of ours. The only deliberate block is the guard's
// deny, which is an exit 0 with the harness's deny on stdout.
//
// Everything on that line that came from outside — paths, the payload's
// text, errors that quote them — is escaped (see logLine): a file name
// can hold a newline that would forge a second line, or an escape
// sequence the terminal showing the harness's output would obey.
func Run(ctx context.Context, h Harness, event string, e Env) (code int) {
	name := h.Event(event)
	hd := &handler{e: e, h: h}
	var problems []string
	defer func() {
		if r := recover(); r != nil {
			problems = append(problems, fmt.Sprintf("internal error: %v", r))
		}
		if len(problems) > 0 {
			label := "hook"
			if name != "" {
				label += " " + string(name)
			}
			if hd.c.Tool != "" {
				label += " " + guard.Printable(hd.c.Tool)
			}
			fmt.Fprintf(e.Stderr, "git-lossless: %s: %s (ignored)\n", label, LogLine(strings.Join(problems, "; ")))
		}
		code = 0
	}()
	if name == "" {
		problems = append(problems, fmt.Sprintf("unknown event %q", event))
		return 0
	}
	if e.Getenv == nil {
		e.Getenv = os.Getenv
	}
	if e.Open == nil {
		e.Open = func(dir string) (*gitstore.Store, error) { return gitstore.OpenDir(dir, gitstore.Options{}) }
	}
	if e.Now == nil {
		e.Now = time.Now
	}
	hd.e = e
	err := hd.run(ctx, name)
	problems = append(problems, hd.warnings...)
	if err != nil {
		problems = append(problems, errText(err))
	}
	return 0
}

// errText is an error's message with the errors errors.Join put together
// separated by "; " instead of newlines, so that a newline left in it is
// one that came from outside (a path) and logLine escapes it.
func errText(err error) string {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs := j.Unwrap()
		parts := make([]string, 0, len(errs))
		for _, e := range errs {
			if e != nil {
				parts = append(parts, e.Error())
			}
		}
		// Only errors.Join's own layout; fmt.Errorf with several %w
		// also unwraps to a list, but words its message itself.
		if err.Error() == strings.Join(parts, "\n") {
			parts = parts[:0]
			for _, e := range errs {
				if e != nil {
					parts = append(parts, errText(e))
				}
			}
			return strings.Join(parts, "; ")
		}
	}
	return strings.TrimSpace(err.Error())
}

// LogLine makes the text of a hook's one stderr line printable: every
// control character (newlines included: see errText), byte of invalid
// UTF-8 or non-printable rune is escaped the way strconv.Quote escapes it
// (\n, \x00, \x1b, \u202e). Our own messages quote the paths and client
// text they name already; this also covers what wrapped errors of other
// packages repeat raw (an *os.PathError names its path as it was given).
func LogLine(s string) string {
	s = strings.TrimSpace(s)
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case strconv.IsPrint(r):
			b.WriteString(s[i : i+n])
		default:
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		}
		i += n
	}
	return b.String()
}

// notDone says what a hook leaves undone when its payload cannot be used.
func notDone(name HookEvent) string {
	switch name {
	case PreToolUse:
		return "edit not checked"
	case PostToolUse:
		return "result not recorded"
	}
	return "nothing done"
}

// payloadError is a problem with the payload (see the adapter's
// decoder), with what the hook therefore left undone.
func (h *handler) payloadError(name HookEvent, err error) error {
	return fmt.Errorf("%w; %s", err, notDone(name))
}

func (h *handler) run(ctx context.Context, name HookEvent) error {
	c, err := h.h.Decode(name, h.e.Stdin)
	if err != nil {
		return h.payloadError(name, err)
	}
	if name == PreToolUse && h.e.Getenv("LOSSLESS_GUARD") == "off" {
		return nil
	}
	c.Event = name
	h.c = c
	dir := c.Cwd
	if dir == "" {
		if dir, err = os.Getwd(); err != nil {
			return fmt.Errorf("no cwd in the payload and none of our own: %w", err)
		}
	}
	if h.st, err = h.e.Open(dir); err != nil {
		return fmt.Errorf("open archive for %q: %w", dir, err)
	}
	switch name {
	case PostToolUse:
		err := h.postToolUse(ctx)
		if c.HandBack {
			err = errors.Join(err, h.handBack(ctx, false))
		}
		return err
	case BeforeAgent:
		return h.handBack(ctx, true)
	case PreToolUse:
		return h.preToolUse(ctx)
	case SessionStart:
		return h.sessionStart(ctx)
	case PreCompact:
		return h.preCompact(ctx)
	case SubagentStop:
		_, err := SweepTranscript(ctx, h.st, h.h, c.ContextTranscript, SweepOptions{})
		return err
	case SessionEnd:
		_, err := SweepSession(ctx, h.st, h.h, c.Transcript, SweepOptions{})
		return err
	case Stop, PostCompact:
		if c.Transcript == "" {
			return nil
		}
		_, err := SweepSession(ctx, h.st, h.h, c.Transcript, SweepOptions{})
		return err
	}
	return nil
}

type handler struct {
	st *gitstore.Store
	h  Harness
	c  Call
	e  Env
	// warnings are problems that did not stop the hook; Run prints them
	// with the error, if any, on its one stderr line.
	warnings []string
}

func (h *handler) warn(format string, a ...any) {
	for i, v := range a {
		if err, ok := v.(error); ok {
			a[i] = errText(err)
		}
	}
	h.warnings = append(h.warnings, fmt.Sprintf(format, a...))
}

func (h *handler) writer() string { return Writer(h.h, h.c.Session) }

// harnessOf is Env.HarnessOf, else the mapping that knows this call's
// harness alone.
func (h *handler) harnessOf() func(string) string {
	if h.e.HarnessOf != nil {
		return h.e.HarnessOf
	}
	return func(w string) string {
		if hs, ok := OfWriter([]Harness{h.h}, w); ok {
			return hs.Name()
		}
		return ""
	}
}

func (h *handler) baseEvent(op gitstore.Op) gitstore.Event {
	return gitstore.Event{
		TS:        h.e.Now(),
		Session:   h.c.Session,
		Agent:     h.c.Agent,
		Sidechain: h.c.Agent != "",
		Source:    "hook",
		Op:        op,
		Tool:      h.c.Tool,
		Key:       h.c.CallID,
		View:      "full",
		Harness:   h.h.Name(),
	}
}

// postToolUse archives what a tool result put into the context: the
// timely source of evidence (the transcript lags a turn behind). The
// context's transcript is swept in the same store call, which keeps the
// part the guard has to read itself (past the cursor) down to the lines
// of the last tool call or two.
func (h *handler) postToolUse(ctx context.Context) error {
	if h.c.ToolErr != nil {
		return h.payloadError(PostToolUse, h.c.ToolErr)
	}
	var recs []gitstore.Record
	for _, f := range h.c.Files {
		rec, ok, err := h.resultRecord(f)
		if err != nil {
			return err
		}
		if ok {
			recs = append(recs, rec)
		}
	}
	if len(h.c.Files) == 0 {
		if rec, ok := h.shellRecord(ctx); ok {
			recs = append(recs, rec)
		}
	}
	if len(recs) == 0 {
		return nil
	}
	return h.storeWithSweep(ctx, recs)
}

// resultRecord builds the record of one file of a PostToolUse result; ok
// is false for results that are not evidence.
func (h *handler) resultRecord(f FileOp) (rec gitstore.Record, ok bool, err error) {
	switch f.Op {
	case gitstore.OpRead, gitstore.OpWrite, gitstore.OpEdit, gitstore.OpDelete:
	default:
		return rec, false, nil
	}
	abs := f.Path
	rec = gitstore.Record{Event: h.baseEvent(f.Op), File: abs}
	if f.Key != "" {
		rec.Key = f.Key
	}
	if f.Op == gitstore.OpDelete {
		// The file is gone: recorded as removed, no content, no real path
		// (nothing to resolve), and no evidence (not a seen op).
		rec.View = ""
		rec.SetPath(h.st.RelPath(abs))
		return rec, true, nil
	}
	rec.SetPath(h.st.RelPath(abs))
	if h.c.Model != "" && (f.Op == gitstore.OpWrite || f.Op == gitstore.OpEdit) {
		setExtra(&rec, "model", jsonStr(h.c.Model))
	}
	// After the tool ran the file exists (for a write through a dangling
	// symlink: its target), so its resolution names what the model saw.
	setRealPath(&rec, h.st.RelPath(realFile(abs)))
	if _, _, denied := h.st.Deny().Check(abs); denied {
		rec.Excluded = true // never read, never archived
		return rec, true, nil
	}
	switch {
	case f.Op == gitstore.OpRead && f.Unchanged:
		// The harness answered a repeated read of an unchanged file with
		// no content: the earlier read stands, and so does its hash,
		// against which drift is still checked. A record without a hash
		// would become the latest evidence and turn that check off (the
		// sweep skips these results too).
		return rec, false, nil
	case f.Op == gitstore.OpRead && !f.HasContent:
		// image, pdf, notebook: in the context, but not as text we can
		// hash; recorded without content.
		rec.View = "unknown"
		if f.ResultType != "" {
			setExtra(&rec, "result_type", jsonStr(f.ResultType))
		}
	case f.Op == gitstore.OpRead:
		rec.Content, rec.HasContent = f.Content, true
		if f.Partial {
			start := max(f.FirstLine, 1)
			rec.View = fmt.Sprintf("lines:%d-%d", start, start+max(f.NumLines, 1)-1)
			// The version the part was cut from, when the disk still
			// holds those lines: a receipt can then say the model saw
			// part of exactly the committed blob. The guard still treats
			// the view as partial (no drift check).
			if disk, err := os.ReadFile(abs); err == nil && sameLines(disk, int(start), int(f.NumLines), rec.Content) {
				setExtra(&rec, "disk_blob", jsonStr(gitstore.BlobID(disk)))
			}
		} else if disk, err := os.ReadFile(abs); err == nil && sameText(disk, rec.Content) {
			setExtra(&rec, "disk_blob", jsonStr(gitstore.BlobID(disk)))
		}
	case f.HasContent:
		rec.Content, rec.HasContent = f.Content, true
	default:
		// What the model's write or edit produced: the file right after.
		disk, err := os.ReadFile(abs)
		if err != nil {
			return rec, false, fmt.Errorf("read %q after %s: %w", abs, h.c.Tool, err)
		}
		rec.Content, rec.HasContent = disk, true
	}
	return rec, true, nil
}

// setExtra sets one extra field of rec.
func setExtra(rec *gitstore.Record, k string, v json.RawMessage) {
	if rec.Extra == nil {
		rec.Extra = map[string]json.RawMessage{}
	}
	rec.Extra[k] = v
}

// storeWithSweep appends recs to the session's writer together with what
// the context's transcript holds past its cursor.
func (h *handler) storeWithSweep(ctx context.Context, recs []gitstore.Record) error {
	hr := &hookRecords{writer: h.writer(), recs: recs}
	if tp := h.c.ContextTranscript; tp != "" {
		var s SweepStats
		if err := sweepFile(ctx, h.st, h.h, tp, SweepOptions{}, &s, hr); err != nil && !errors.Is(err, fs.ErrNotExist) {
			h.warn("sweep: %v", err)
		}
	}
	if hr.stored {
		return nil
	}
	if _, err := h.st.Append(ctx, h.writer(), recs); err != nil {
		return fmt.Errorf("record %s: %w", h.c.Tool, err)
	}
	return nil
}

func jsonStr(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

// sameLines reports whether lines start..start+n-1 of disk (1-based, as
// Claude Code numbers them; the text split at newlines, CRLF as LF) are
// what a partial Read showed: those lines joined by newlines.
func sameLines(disk []byte, start, n int, shown []byte) bool {
	if start < 1 || n < 1 {
		return false
	}
	lines := bytes.Split(bytes.ReplaceAll(disk, []byte("\r\n"), []byte("\n")), []byte("\n"))
	if start-1+n > len(lines) {
		return false
	}
	return bytes.Equal(bytes.Join(lines[start-1:start-1+n], []byte("\n")), bytes.ReplaceAll(shown, []byte("\r\n"), []byte("\n")))
}

// sameText reports whether disk bytes and shown text are the same text up
// to line endings: a harness may show CRLF files with LF (Claude Code
// does).
func sameText(disk, shown []byte) bool {
	if bytes.Equal(disk, shown) {
		return true
	}
	return bytes.Equal(bytes.ReplaceAll(disk, []byte("\r\n"), []byte("\n")), bytes.ReplaceAll(shown, []byte("\r\n"), []byte("\n")))
}

// preToolUse is the guard. It only reads: the archive, and the part of
// the context's transcript no sweep has archived yet (compaction
// boundaries and re-attached files that arrived since). A guard that
// swept would write and wait for the writer's lock on every edit, while
// post-tool-use keeps that unswept part short. A call that changes
// several files is denied when one of them is.
func (h *handler) preToolUse(ctx context.Context) error {
	if h.c.ToolErr != nil {
		return h.payloadError(PreToolUse, h.c.ToolErr)
	}
	for _, f := range h.c.Files {
		if denied, err := h.guardFile(ctx, f.Path); denied || err != nil {
			return err
		}
	}
	return nil
}

// guardFile decides the edit of one file; on a deny it prints the
// harness's deny and records the denial.
func (h *handler) guardFile(ctx context.Context, abs string) (denied bool, err error) {
	in := guard.Input{Path: abs, Agent: h.c.Agent, ReadWith: h.h.Dialect().ReadWith}
	in.RestoreHint = restoreHint(h.c.Session, h.c.Agent, abs)
	// os.ReadFile follows symlinks: a dangling one is a file to create
	// (the write creates its target); one that cannot be followed (a
	// loop) is reported, and the edit goes ahead.
	disk, err := os.ReadFile(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return false, fmt.Errorf("read %q: %w", abs, err)
	default:
		in.Exists = true
		in.DiskBlob = gitstore.BlobID(disk)
	}
	key := keyOf(h.st, abs)
	if in.Exists {
		ev, boundary, err := h.contextEvidence(ctx, abs, key)
		if err != nil {
			return false, err
		}
		in.Evidence, in.Boundary = ev, boundary
		in.ChangedBy = func(seen guard.Evidence) *guard.Change {
			c, err := changedBy(ctx, h.st, key, ctxKey{h.writer(), h.c.Session, h.c.Agent}, seen, in.DiskBlob, h.harnessOf())
			if err != nil {
				h.warn("who changed %s: %v", key.rel, err)
			}
			if c == nil {
				return nil
			}
			return &guard.Change{Who: c.Describe(), TS: c.TS}
		}
	}
	d := guard.Decide(in)
	if d.Allow {
		return false, nil
	}
	out := h.h.Reply(h.c, Reply{Deny: d.Reason})
	if _, err := h.e.Stdout.Write(out); err != nil {
		return true, err
	}
	// Record the denial for receipts and audits; a failure here must not
	// change the decision already printed. No dedupe key: one hook run is
	// one denial, no sweep re-creates it, and a key would make the store
	// check it against every key the writer holds.
	rec := gitstore.Record{Event: h.baseEvent(gitstore.OpDeny), File: abs}
	rec.Key = ""
	rec.SetPath(key.rel)
	setRealPath(&rec, key.real)
	setExtra(&rec, "reason_kind", jsonStr(string(d.Kind)))
	if h.c.CallID != "" {
		setExtra(&rec, "tool_use_id", jsonStr(h.c.CallID))
	}
	if _, err := h.st.Append(ctx, h.writer(), []gitstore.Record{rec}); err != nil {
		h.warn("edit denied; recording the denial failed: %v", err)
	}
	return true, nil
}

// restoreHint is the restore command a deny reason names. Every word of
// it is client text (the payload's session, agent and path), quoted for
// the shell and kept printable. It needs no --harness: restore finds the
// harness whose writer holds the session.
func restoreHint(session, agent, path string) string {
	s := "git lossless restore --session " + guard.ShellQuote(session)
	if agent != "" {
		s += " --agent " + guard.ShellQuote(agent)
	}
	return s + " --files " + guard.ShellQuote(path)
}

// pathNeedle is the member a canonical event line holds for path rel
// (nil if it cannot be built).
func pathNeedle(rel string) []byte {
	e := gitstore.Event{Op: "x", Source: "x"}
	e.SetPath(rel)
	if e.Path64 != "" {
		return []byte(`"path64":"` + e.Path64 + `"`)
	}
	line, err := e.Canonical()
	if err != nil {
		return nil
	}
	i := bytes.Index(line, []byte(`"path":`))
	j := bytes.Index(line, []byte(`,"prev":`))
	if i < 0 || j < i {
		return nil
	}
	return line[i:j]
}

// contextEvidence gathers the evidence for one file in the hook's context
// and that context's last compaction boundary. The boundary comes from the
// context's transcript: the last one its cursor recorded, then any in the
// lines past the cursor (which the archive does not hold yet, with the
// files re-attached after them); evidence from the archive (one search of
// the session's writer for the path), then from those lines. The cursor
// is read first: a sweep moves it only after the store accepted
// everything before it, so the two parts cover the whole transcript even
// while another hook sweeps.
//
// Evidence is gathered for the file, whatever path it was recorded
// under (see fileKey): the archive is searched for both spellings and
// the resolved file, the transcript's lines are matched by resolving the
// paths they name.
func (h *handler) contextEvidence(ctx context.Context, abs string, key fileKey) ([]guard.Evidence, *guard.Boundary, error) {
	var tr *transcriptAt
	if tp := h.c.ContextTranscript; tp != "" {
		t, err := openTranscript(ctx, h.st, h.h, tp)
		switch {
		case err == nil:
			tr = t
			defer t.close()
		case errors.Is(err, fs.ErrNotExist):
			// Not written (or already removed): the archive is all there is.
		default:
			h.warn("transcript: %v (deciding from the archive)", err)
		}
	}
	evidence, err := archivedEvidence(ctx, h.st, h.writer(), h.c.Session, h.c.Agent, key)
	if err != nil {
		return nil, nil, err
	}
	var boundary *guard.Boundary
	if tr == nil {
		if boundary, err = archivedBoundary(ctx, h.st, h.writer(), h.c.Session, h.c.Agent); err != nil {
			return nil, nil, err
		}
		return evidence, boundary, nil
	}
	if ep, ok := tr.cur.Epochs[h.c.Agent]; ok && !tr.fresh {
		boundary = &guard.Boundary{Key: ep.Key, TS: ep.TS}
	}
	resolved := map[string]bool{}
	same := func(p string) bool {
		if p == abs {
			return true
		}
		m, ok := resolved[p]
		if !ok {
			m = h.st.RelPath(realFile(p)) == key.real
			resolved[p] = m
		}
		return m
	}
	tail, err := tr.scanTail(ctx, h.c.Agent, same)
	if err != nil {
		h.warn("transcript: %v (deciding from what was read)", err)
	}
	for _, it := range tail {
		switch {
		case it.boundary != nil:
			boundary = &guard.Boundary{Key: it.boundary.Key, TS: it.boundary.TS}
		case it.seen != nil:
			evidence = append(evidence, seenEvidence(it.seen, it.epoch))
		}
	}
	return evidence, boundary, nil
}

// archivedEvidence returns the archived evidence for the file key names
// in one context (agent "" = main), in archive order. The store searches
// the session's writer for the selective needles, the file's paths; the
// lines it finds are sifted on their bytes (op, context) before any is
// parsed — a file denied or spanned a hundred times costs no hundred
// parses — and checked again on the parsed event.
func archivedEvidence(ctx context.Context, st *gitstore.Store, writer, session, agent string, key fileKey) ([]guard.Evidence, error) {
	needles := key.needles()
	if len(needles) == 0 {
		return nil, fmt.Errorf("path %q cannot be searched for", key.rel)
	}
	agentMember := []byte(`"agent":`)
	var wantAgent []byte
	if agent != "" {
		wantAgent = append(agentMember, jsonStr(agent)...)
	}
	keep := func(_ string, line []byte) bool {
		if !lineOp(line).IsFileVersion() {
			return false
		}
		if wantAgent != nil {
			return bytes.Contains(line, wantAgent)
		}
		return !bytes.Contains(line, agentMember)
	}
	evs, err := st.Select(ctx, gitstore.Selection{Writers: []string{writer}, Any: needles, Keep: keep})
	if err != nil {
		if w, herr := st.WriterHead(ctx, writer); herr == nil && w.Commit == "" {
			return nil, nil // nothing archived for this session yet
		}
		return nil, err
	}
	var out []guard.Evidence
	for _, e := range evs {
		if e.Session == session && e.Agent == agent && e.Op.IsFileVersion() && key.matches(e) {
			out = append(out, evidenceOf(e))
		}
	}
	return out, nil
}

// lineOp returns the op of a stored event line without parsing it ("" if
// it cannot tell): ops are plain words, never escaped.
func lineOp(line []byte) gitstore.Op {
	const m = `"op":"`
	i := bytes.Index(line, []byte(m))
	if i < 0 {
		return ""
	}
	rest := line[i+len(m):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return ""
	}
	return gitstore.Op(rest[:j])
}

// archivedBoundary is the context's last archived compaction boundary,
// for when its transcript (and so its cursor) is gone. Only the
// transcript's compact_boundary lines are boundaries: see package guard.
func archivedBoundary(ctx context.Context, st *gitstore.Store, writer, session, agent string) (*guard.Boundary, error) {
	evs, err := st.Events(ctx, gitstore.Query{Writers: []string{writer}, Op: gitstore.OpCompact})
	if err != nil {
		return nil, err
	}
	var b *guard.Boundary
	for _, e := range evs {
		if e.Session == session && e.Agent == agent && strings.HasPrefix(e.Key, "compact:") && (b == nil || !e.TS.Before(b.TS)) {
			b = &guard.Boundary{Key: e.Key, TS: e.TS}
		}
	}
	return b, nil
}

// evidenceOf is an archived event as guard evidence. Swept events come
// from the transcript, and carry the epoch they were in there.
func evidenceOf(e gitstore.Event) guard.Evidence {
	ev := guard.Evidence{TS: e.TS, Op: e.Op, Blob: e.Blob, Partial: e.View != "" && e.View != "full"}
	ev.DiskBlob = e.ExtraString("disk_blob")
	if e.Source == "sweep" {
		ev.Transcript = true
		ev.Epoch = e.ExtraString("epoch")
	}
	if e.Excluded {
		ev.Blob, ev.DiskBlob = "", ""
	}
	return ev
}

// seenEvidence is evidence read from the transcript's unswept tail.
func seenEvidence(x *transcript.FileSeen, epoch string) guard.Evidence {
	ev := guard.Evidence{TS: x.TS, Op: x.Op, Transcript: true, Epoch: epoch}
	if x.HasContent {
		ev.Partial = x.View != "" && x.View != "full"
		ev.Blob = gitstore.BlobID(x.Content)
	}
	return ev
}

// preCompact sweeps the session while everything is still in the
// transcript, and records that a compaction was asked for (op
// "precompact", with its trigger). That mark is for the record only: the
// compaction may still fail or be cancelled, so the guard's boundary is
// the transcript's compact_boundary line alone (see package guard).
func (h *handler) preCompact(ctx context.Context) error {
	rec := gitstore.Record{Event: h.baseEvent(gitstore.OpPreCompact)}
	rec.Tool, rec.View = "", ""
	rec.Key = "precompact:" + strconv.FormatInt(rec.TS.UnixNano(), 10)
	if h.c.Trigger != "" {
		rec.Extra = map[string]json.RawMessage{"trigger": jsonStr(h.c.Trigger)}
	}
	hr := &hookRecords{writer: h.writer(), recs: []gitstore.Record{rec}}
	_, serr := sweepSession(ctx, h.st, h.h, h.c.Transcript, SweepOptions{}, hr)
	if serr != nil {
		h.warn("sweep: %v", serr)
	}
	if !hr.stored {
		if _, err := h.st.Append(ctx, h.writer(), hr.recs); err != nil {
			return fmt.Errorf("record the compaction request: %w", err)
		}
	}
	return nil
}

// sessionStart hands the compacted context its facts and working set
// back (see ManifestWith), naming the MCP tools when the harness starts
// our server for this directory: tool names that do not exist would send
// the model looking for them.
func (h *handler) sessionStart(ctx context.Context) error {
	if h.c.Source != "compact" && h.c.Source != "resume" {
		return nil
	}
	if h.c.Transcript != "" {
		if _, err := SweepSession(ctx, h.st, h.h, h.c.Transcript, SweepOptions{}); err != nil && !errors.Is(err, fs.ErrNotExist) {
			h.warn("sweep: %v", err)
		}
	}
	dir := h.c.Cwd
	if dir == "" {
		dir, _ = os.Getwd()
	}
	tools, err := h.h.MCPTools(dir, h.e.Getenv)
	if err != nil {
		h.warn("%v", err)
	}
	text, err := ManifestWith(ctx, h.st, ManifestOptions{Harness: h.h, Session: h.c.Session, Source: h.c.Source, Budget: ManifestBudget,
		MCPTool: tools, Warn: func(msg string) { h.warn("%s", msg) }})
	if err != nil || text == "" {
		return err
	}
	_, err = h.e.Stdout.Write(h.h.Reply(h.c, Reply{Context: text}))
	return err
}
