package codex

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/git-lossless/git-lossless/hooks/transcript"
	"github.com/git-lossless/git-lossless/internal/jsonscan"
)

// Line is one complete rollout line and what it yielded: the neutral
// line (offsets, meta, items) and what only Codex has.
type Line struct {
	transcript.Line
	// Ordinal is the line's "ordinal" (-1 when it has none).
	Ordinal int64
	// Payload is the payload's "type" for response_item and event_msg
	// lines (message, function_call, item_completed...), "" otherwise.
	Payload string
	// Meta is a session_meta line's content.
	Meta *SessionMeta
	// Call is the tool call a function_call, custom_tool_call or
	// local_shell_call line makes, or the call an output line completes.
	Call *Call
	// FileChange is an item_completed FileChange event (what an
	// apply_patch did): no items, for the recorder to cross-check.
	FileChange *FileChange
}

// CallKind says what a tool call does, for the runtime.
type CallKind uint8

const (
	CallOther CallKind = iota
	CallShell          // a shell command: Command, Workdir (ask hooks/shellread)
	CallPatch          // apply_patch: Patch (a shell heredoc call also sets Command)
)

// Call is a tool call. On the call's line Use is set; on its output's
// line Result and Output are, and the call's name, command or patch come
// from the call line, also when an earlier read saw it (Pending).
type Call struct {
	ID        string // call_id
	Name      string // the tool's name: exec_command, apply_patch, shell, spawn_agent...
	Namespace string // a namespaced tool's namespace (multi_agent_v1)
	Kind      CallKind
	Command   string // CallShell (and a heredoc CallPatch): the command line
	Workdir   string // the directory the call names ("" for the session's cwd)
	Patch     string // CallPatch: the patch text
	Use       *transcript.ToolUse
	Result    *transcript.ToolResult
	// Output is the result's text split from Codex's framing: for a
	// shell call, Output.Output is what the command wrote as the model
	// received it.
	Output ExecOutput
	// Known is false on an output line whose call was never read (Name,
	// Kind, Command and Patch are then empty).
	Known bool
}

// PatchApplied reports whether an apply_patch call's output says Codex
// applied it: exit code 0 and "Success. Updated the following files:".
// A denied call ("Command blocked by PreToolUse hook: ...") or a failed
// one did not (a failed one may have applied its first hunks).
func (c *Call) PatchApplied() bool {
	return c.Kind == CallPatch && c.Result != nil && c.Output.Framed && c.Output.Exited && c.Output.ExitCode == 0 &&
		strings.HasPrefix(c.Output.Output, "Success. Updated the following files:")
}

// Reader reads a rollout from an offset, line by line, into
// hooks/transcript items (see doc.go). It holds one line at a time.
type Reader struct {
	br      *bufio.Reader
	off     int64
	buf     []byte
	meta    SessionMeta
	cwd     string
	model   string // the last turn_context's model
	pending map[string]*pending
	seq     int64
	stats   transcript.Stats
}

type pending struct {
	transcript.PendingToolUse
	seq int64
}

// NewReader reads r, whose first byte is at offset of the rollout.
// meta is the rollout's session_meta (ReadSessionMeta): a reader that
// starts at 0 may pass nil and learns it from the first line. Without
// it, items have no session, agent nor keys.
func NewReader(r io.Reader, offset int64, meta *SessionMeta) *Reader {
	return NewReaderSize(r, offset, meta, 256<<10)
}

// NewReaderSize is NewReader with a buffer of about size bytes (4 KiB to
// 256 KiB); longer lines are read all the same.
func NewReaderSize(r io.Reader, offset int64, meta *SessionMeta, size int64) *Reader {
	rd := &Reader{
		br:      bufio.NewReaderSize(r, int(max(4<<10, min(256<<10, size)))),
		off:     offset,
		pending: map[string]*pending{},
	}
	if meta != nil {
		rd.meta = *meta
		rd.cwd = meta.Cwd
	}
	return rd
}

// Offset is where the next read must start: after the last complete line.
func (r *Reader) Offset() int64 { return r.off }

// Stats returns the counts so far.
func (r *Reader) Stats() transcript.Stats { return r.stats }

// Meta returns the session_meta the reader knows (ok false: none yet).
func (r *Reader) Meta() (SessionMeta, bool) { return r.meta, r.meta.ID != "" }

// Pending returns the calls still waiting for their output, oldest
// first: a sweep keeps them beside its offset (shell and patch calls
// with their input, the rest by name only).
func (r *Reader) Pending() []transcript.PendingToolUse {
	ps := make([]*pending, 0, len(r.pending))
	for _, p := range r.pending {
		ps = append(ps, p)
	}
	slices.SortFunc(ps, func(a, b *pending) int { return int(a.seq - b.seq) })
	out := make([]transcript.PendingToolUse, len(ps))
	for i, p := range ps {
		out[i] = p.PendingToolUse
	}
	return out
}

// SetPending restores calls saved from an earlier read.
func (r *Reader) SetPending(ts []transcript.PendingToolUse) {
	for _, t := range ts {
		if t.ID != "" {
			r.remember(t)
		}
	}
}

func (r *Reader) remember(t transcript.PendingToolUse) {
	r.seq++
	r.pending[t.ID] = &pending{PendingToolUse: t, seq: r.seq}
	if len(r.pending) > transcript.MaxPendingToolUses {
		var oldest *pending
		for _, c := range r.pending {
			if oldest == nil || c.seq < oldest.seq {
				oldest = c
			}
		}
		delete(r.pending, oldest.ID)
	}
}

// Next reads the next complete line. At the end of the input, or before
// a last line without its '\n', it returns io.EOF and Offset stays
// before that line. After any other error the reader must not be used
// again: make a new one at Offset.
func (r *Reader) Next() (*Line, error) {
	line, err := r.readLine()
	if err != nil {
		return nil, err
	}
	l := &Line{Ordinal: -1}
	l.Start = r.off
	r.off += int64(len(line))
	l.End = r.off
	r.stats.Lines++
	r.stats.Bytes += int64(len(line))
	r.parse(bytes.TrimRight(line, "\r\n"), l)
	switch {
	case l.Invalid:
		r.stats.Invalid++
	case l.Skipped:
		r.stats.Skipped++
	}
	r.stats.Items += len(l.Items)
	if cap(r.buf) > 8<<20 {
		r.buf = nil
	}
	return l, nil
}

func (r *Reader) readLine() ([]byte, error) {
	r.buf = r.buf[:0]
	for {
		frag, err := r.br.ReadSlice('\n')
		switch {
		case err == nil:
			if len(r.buf) == 0 {
				return frag, nil
			}
			r.buf = append(r.buf, frag...)
			return r.buf, nil
		case errors.Is(err, bufio.ErrBufferFull):
			r.buf = append(r.buf, frag...)
		case errors.Is(err, io.EOF):
			return nil, io.EOF
		default:
			return nil, err
		}
	}
}

// envelope is a line's top-level members, raw.
type envelope struct {
	ts, ord, typ, payload []byte
	typName               string
	skip, done            bool
}

// wantLine says which line types are read at all.
func wantLine(t string) bool {
	switch t {
	case "session_meta", "response_item", "event_msg", "compacted", "turn_context":
		return true
	}
	return false
}

// wantItem says which response_item payloads yield items.
func wantItem(t string) bool {
	switch t {
	case "message", "reasoning", "function_call", "custom_tool_call", "local_shell_call",
		"function_call_output", "custom_tool_call_output":
		return true
	}
	return false
}

func (r *Reader) parse(line []byte, l *Line) {
	i := jsonscan.WS(line, 0)
	if i == len(line) {
		l.Skipped = true
		return
	}
	var env envelope
	peek := func(k, rest []byte) bool {
		if string(k) != "payload" || env.typ == nil {
			return true
		}
		return r.peekPayload(&env, rest, l)
	}
	end, st := jsonscan.Object(line, i, jsonscan.Escapes, peek, func(k, v []byte) bool {
		switch string(k) {
		case "timestamp":
			env.ts = v
		case "ordinal":
			env.ord = v
		case "type":
			env.typ = v
			env.typName, _ = jsonscan.String(v)
			if !wantLine(env.typName) {
				env.skip = true
				return false
			}
		case "payload":
			env.payload = v
		}
		return true
	})
	l.Type = env.typName
	if n, ok := jsonscan.Int(env.ord); ok {
		l.Ordinal = n
	}
	if env.skip {
		l.Skipped = true
		return
	}
	if !env.done && (st != jsonscan.OK || jsonscan.WS(line, end) != len(line)) {
		l.Invalid = true
		l.Type, l.Payload, l.Ordinal, l.Items = "", "", -1, nil
		return
	}
	r.lineMeta(l, env.ts)
	if env.done {
		return
	}
	if env.payload == nil {
		l.Skipped = true
		return
	}
	switch env.typName {
	case "session_meta":
		r.sessionMeta(l, env.payload)
	case "response_item":
		r.responseItem(l, env.payload)
	case "event_msg":
		r.eventMsg(l, env.payload)
	case "compacted":
		r.compacted(l, env.payload)
	case "turn_context":
		r.turnContext(env.payload)
		l.Skipped = true
	}
}

// peekPayload decides from the payload's first members, before it is
// scanned, whether the line is worth scanning: most bytes of a rollout
// are in lines it skips here (developer instructions, world state, turn
// context, token counts, command events). It returns false to stop the
// scan, with env.skip or env.done set.
func (r *Reader) peekPayload(env *envelope, rest []byte, l *Line) bool {
	switch env.typName {
	case "response_item":
		pt := firstType(rest)
		if pt == "" {
			return true // not led by its type: read it whole
		}
		l.Payload = pt
		if !wantItem(pt) {
			env.skip = true
			return false
		}
		if pt == "message" {
			if role := leadingMember(rest, "role"); role == "developer" || role == "system" {
				env.skip = true
				return false
			}
		}
	case "event_msg":
		pt := firstType(rest)
		if pt == "" {
			return true
		}
		l.Payload = pt
		if pt != "item_completed" || itemType(rest) != "FileChange" {
			env.skip = true
			return false
		}
	case "turn_context":
		// Only the cwd (it resolves later relative paths) and the model
		// (it wrote the turn's items) matter; the values between them
		// are skipped unchecked.
		r.turnContext(rest)
		env.skip = true
		return false
	case "compacted":
		// The replacement history after the message can be the whole
		// conversation again: read the message and stop.
		if msg, ok := compactMessage(rest); ok {
			r.lineMeta(l, env.ts)
			r.compactItems(l, msg)
			env.done = true
			return false
		}
	}
	return true
}

// firstType returns an object's "type" when it is its first member.
func firstType(v []byte) string {
	var t string
	jsonscan.Object(v, 0, jsonscan.Quotes, nil, func(k, val []byte) bool {
		if string(k) == "type" {
			t, _ = jsonscan.String(val)
		}
		return false
	})
	return t
}

// leadingMember returns a string member of an object, scanning members
// until it is found (callers ask for members that come early).
func leadingMember(v []byte, key string) string {
	var s string
	jsonscan.Object(v, 0, jsonscan.Quotes, nil, func(k, val []byte) bool {
		if string(k) == key {
			s, _ = jsonscan.String(val)
			return false
		}
		return true
	})
	return s
}

// turnContext takes the cwd and the model from a turn_context payload,
// scanning its members until it has both.
func (r *Reader) turnContext(v []byte) {
	var cwd, model string
	jsonscan.Object(v, 0, jsonscan.Quotes, nil, func(k, val []byte) bool {
		switch string(k) {
		case "cwd":
			cwd, _ = jsonscan.String(val)
		case "model":
			model, _ = jsonscan.String(val)
		}
		return cwd == "" || model == ""
	})
	if cwd != "" {
		r.cwd = cwd
	}
	if model != "" {
		r.model = model
	}
}

// Model is the model of the turn being read: the last turn_context's
// ("" before the first).
func (r *Reader) Model() string { return r.model }

// SetModel sets the model of the turn being read, for a reader that
// starts past its turn_context (the sweep keeps it in its cursor).
func (r *Reader) SetModel(m string) { r.model = m }

// itemType returns an item_completed payload's item type without
// scanning the item.
func itemType(v []byte) string {
	var t string
	jsonscan.Object(v, 0, jsonscan.Quotes, func(k, rest []byte) bool {
		if string(k) == "item" {
			t = firstType(rest)
			return false
		}
		return true
	}, func(k, val []byte) bool { return true })
	return t
}

// compactMessage reads a compacted payload's message, stopping before
// the replacement history.
func compactMessage(v []byte) ([]byte, bool) {
	var msg []byte
	_, st := jsonscan.Object(v, 0, jsonscan.Escapes, func(k, rest []byte) bool {
		return msg == nil // stop at the member after the message
	}, func(k, val []byte) bool {
		if string(k) == "message" {
			msg = val
		}
		return true
	})
	return msg, msg != nil && (st == jsonscan.OK || st == jsonscan.Stopped)
}

func (r *Reader) lineMeta(l *Line, ts []byte) {
	m := &l.LineMeta
	if s, ok := jsonscan.String(ts); ok {
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			m.TS = t
		}
	}
	m.SessionID = r.meta.SessionID
	m.Agent = r.meta.Agent()
	m.Cwd = r.cwd
	m.Model = r.model
}

func (r *Reader) sessionMeta(l *Line, payload []byte) {
	m, ok := parseSessionMeta(payload)
	if !ok {
		l.Skipped = true
		return
	}
	l.Meta = m
	if r.meta.ID == "" {
		// The first session_meta names the thread; a later one (a
		// resumed or forked history) does not rename it.
		r.meta = *m
		if r.cwd == "" {
			r.cwd = m.Cwd
		}
		r.lineMeta(l, nil)
		l.TS = m.Timestamp
	}
}

// key is the dedupe key of the line's span items: see doc.go.
func (r *Reader) key(prefix string, l *Line) string {
	if r.meta.ID == "" {
		return ""
	}
	return prefix + r.meta.ID + ":" + strconv.FormatInt(l.Start, 10)
}

// spanKeys keys the line's span items: span:<thread>:<offset>, with
// :<block> when the line has several.
func (r *Reader) spanKeys(l *Line) {
	base := r.key("span:", l)
	if base == "" {
		return
	}
	n := 0
	for _, it := range l.Items {
		if transcript.SpanKind(it) != "" {
			n++
		}
	}
	key := func(b int) string {
		if n == 1 {
			return base
		}
		return base + ":" + strconv.Itoa(b)
	}
	for _, it := range l.Items {
		switch x := it.(type) {
		case *transcript.TextSpan:
			x.Key = key(x.Block)
		case *transcript.ToolUse:
			x.SpanKey = key(x.Block)
		case *transcript.ToolResult:
			x.SpanKey = key(x.Block)
		case *transcript.CompactSummary:
			x.Key = key(0)
		}
	}
}

func clone(b []byte) json.RawMessage { return append(json.RawMessage(nil), b...) }

func emptyString(raw []byte) bool { return len(raw) == 2 && raw[0] == '"' }

func (r *Reader) compacted(l *Line, payload []byte) {
	msg := jsonscan.Field(payload, "message")
	r.compactItems(l, msg)
}

// compactItems makes a compaction's items: the boundary, and the summary
// the new context starts from when the message holds one (a remote
// compaction's may be empty: its summary is encrypted).
func (r *Reader) compactItems(l *Line, msg []byte) {
	cb := &transcript.CompactBoundary{LineMeta: l.LineMeta, Key: r.key("compact:", l)}
	l.Items = append(l.Items, cb)
	if len(msg) > 0 && msg[0] == '"' && !emptyString(msg) {
		l.Items = append(l.Items, &transcript.CompactSummary{LineMeta: l.LineMeta, TextJSON: clone(msg)})
	}
	r.spanKeys(l)
}

func (r *Reader) eventMsg(l *Line, payload []byte) {
	var typ, item []byte
	jsonscan.Members(payload, func(k, v []byte) bool {
		switch string(k) {
		case "type":
			typ = v
		case "item":
			item = v
		}
		return true
	})
	l.Payload, _ = jsonscan.String(typ)
	if l.Payload != "item_completed" || firstType(item) != "FileChange" {
		l.Skipped = true
		return
	}
	l.FileChange = parseFileChange(item)
}
