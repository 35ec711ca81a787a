package gemini

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/git-lossless/git-lossless/hooks/transcript"
	"github.com/git-lossless/git-lossless/internal/jsonscan"
)

// ChatOptions says what a chat file's lines do not say.
type ChatOptions struct {
	// SessionID is the session of the chat's items. For a main chat it
	// defaults to its header's sessionId. A subagent's chat names only
	// the subagent: pass the parent's session (ChatFile.SessionID).
	SessionID string
	// Agent is the subagent the chat belongs to ("" for a main chat); it
	// defaults to the header's sessionId when the header's kind is
	// "subagent".
	Agent string
	// Cwd is the project directory the CLI ran in: tool arguments name
	// files relative to it. Without it relative paths name no file.
	Cwd string
}

// ChatState is what a ChatReader knows of the lines before its offset:
// store it beside the offset (it is JSON) and hand it to the next reader.
// Its sets are bounded (the oldest members are forgotten first, see
// maxSeen); a reader that has forgotten a message yields it again when
// the CLI lists it again, under the same keys.
type ChatState struct {
	Version   int    `json:"v"`
	SessionID string `json:"session,omitempty"`
	Agent     string `json:"agent,omitempty"`
	// Epoch is the key of the context's last boundary ("" before the
	// first).
	Epoch string `json:"epoch,omitempty"`
	// Seen are digests of the ids of the messages read, oldest first.
	Seen []string `json:"seen,omitempty"`
	// Last is the id of the chat's last message, the only one the CLI
	// rewrites, and LastSubs the parts of it already handled.
	Last     string   `json:"last,omitempty"`
	LastSubs []string `json:"last_subs,omitempty"`
	// In the current epoch: the calls whose ToolUse was yielded (Used),
	// whose result was (Answered), and digests of the texts yielded.
	Used     []string       `json:"used,omitempty"`
	Answered []AnsweredCall `json:"answered,omitempty"`
	Texts    []string       `json:"texts,omitempty"`
	// Pending are calls yielded without their result.
	Pending []PendingCall `json:"pending,omitempty"`
	// Held are user texts held back as likely copies (see the package
	// doc).
	Held []HeldText `json:"held,omitempty"`
	// AfterHeader: the last line that was not a $set was a header.
	AfterHeader bool `json:"after_header,omitempty"`
}

// AnsweredCall is a call whose result a reader yielded in the current
// epoch, with a digest of the result's text.
type AnsweredCall struct {
	ID       string `json:"id"`
	Digest   string `json:"digest"`
	Evidence bool   `json:"evidence,omitempty"` // a FileSeen came of it
}

// PendingCall is a call yielded without its result.
type PendingCall struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"` // file tools only
}

// HeldText is a user text span held back.
type HeldText struct {
	Msg   string          `json:"msg"`
	TS    time.Time       `json:"ts"`
	Key   string          `json:"key"`
	Block int             `json:"block"`
	Text  json.RawMessage `json:"text"`
}

// chatStateVersion is the ChatState format.
const chatStateVersion = 1

// Bounds of what a reader remembers: message ids, and per epoch calls and
// texts.
const (
	maxSeen  = 1 << 14
	maxCalls = 4096
	maxTexts = 4096
)

// boundedSet is a set of strings that forgets its oldest members past
// max.
type boundedSet struct {
	m     map[string]bool
	order []string
	max   int
}

func newSet(max int) *boundedSet { return &boundedSet{m: map[string]bool{}, max: max} }

func (s *boundedSet) has(k string) bool { return s.m[k] }

func (s *boundedSet) add(k string) {
	if s.m[k] {
		return
	}
	s.m[k] = true
	s.order = append(s.order, k)
	if len(s.order) > s.max {
		delete(s.m, s.order[0])
		s.order = s.order[1:]
	}
}

func (s *boundedSet) list() []string { return append([]string(nil), s.order...) }

// ChatReader reads a Gemini CLI chat file (JSONL) from an offset and
// yields, for each complete line, the items of the messages it adds or
// completes: see the package doc for what a line yields and when.
type ChatReader struct {
	br    *bufio.Reader
	off   int64
	buf   []byte
	opt   ChatOptions
	stats transcript.Stats

	session, agent string
	epoch          string
	seen           *boundedSet // digests of message ids
	used           *boundedSet // call ids (epoch)
	texts          *boundedSet // text digests (epoch)
	answered       map[string]*AnsweredCall
	answeredOrder  []string
	pending        map[string]*PendingCall
	pendingOrder   []string
	held           []HeldText
	last           string
	lastSubs       map[string]bool
	afterHeader    bool
}

// NewChatReader reads r, whose first byte is at offset of the chat file,
// with the state saved at that offset (nil at offset 0).
func NewChatReader(r io.Reader, offset int64, st *ChatState, opt ChatOptions) *ChatReader {
	c := &ChatReader{
		br:       bufio.NewReaderSize(r, 64<<10),
		off:      offset,
		opt:      opt,
		seen:     newSet(maxSeen),
		used:     newSet(maxCalls),
		texts:    newSet(maxTexts),
		answered: map[string]*AnsweredCall{},
		pending:  map[string]*PendingCall{},
		lastSubs: map[string]bool{},
	}
	if st != nil && st.Version == chatStateVersion {
		c.session, c.agent, c.epoch = st.SessionID, st.Agent, st.Epoch
		for _, s := range st.Seen {
			c.seen.add(s)
		}
		for _, s := range st.Used {
			c.used.add(s)
		}
		for _, s := range st.Texts {
			c.texts.add(s)
		}
		c.last = st.Last
		for _, s := range st.LastSubs {
			c.lastSubs[s] = true
		}
		for _, a := range st.Answered {
			c.answer(a.ID, a.Digest, a.Evidence)
		}
		for _, p := range st.Pending {
			c.remember(p.ID, p.Name, p.Args)
		}
		c.held = append(c.held, st.Held...)
		c.afterHeader = st.AfterHeader
	}
	if opt.SessionID != "" {
		c.session = opt.SessionID
	}
	if opt.Agent != "" {
		c.agent = opt.Agent
	}
	return c
}

// Offset is the offset after the last complete line read.
func (c *ChatReader) Offset() int64 { return c.off }

// Stats returns the counts so far.
func (c *ChatReader) Stats() transcript.Stats { return c.stats }

// State returns what the reader knows at Offset.
func (c *ChatReader) State() *ChatState {
	st := &ChatState{Version: chatStateVersion, SessionID: c.session, Agent: c.agent, Epoch: c.epoch,
		Seen: c.seen.list(), Last: c.last, Used: c.used.list(), Texts: c.texts.list(),
		Held: append([]HeldText(nil), c.held...), AfterHeader: c.afterHeader}
	for s := range c.lastSubs {
		st.LastSubs = append(st.LastSubs, s)
	}
	sort.Strings(st.LastSubs)
	for _, id := range c.answeredOrder {
		st.Answered = append(st.Answered, *c.answered[id])
	}
	for _, id := range c.pendingOrder {
		st.Pending = append(st.Pending, *c.pending[id])
	}
	return st
}

func idDigest(id string) string { return digest(id)[:16] }

func (c *ChatReader) isSeen(id string) bool { return c.seen.has(idDigest(id)) }

func (c *ChatReader) markSeen(id string) { c.seen.add(idDigest(id)) }

func textDigest(kind string, raw []byte) string { return digest(kind, string(raw))[:16] }

func (c *ChatReader) answer(id, dg string, evidence bool) {
	if a, ok := c.answered[id]; ok {
		a.Digest, a.Evidence = dg, a.Evidence || evidence
		return
	}
	c.answered[id] = &AnsweredCall{ID: id, Digest: dg, Evidence: evidence}
	c.answeredOrder = append(c.answeredOrder, id)
	if len(c.answeredOrder) > maxCalls {
		delete(c.answered, c.answeredOrder[0])
		c.answeredOrder = c.answeredOrder[1:]
	}
}

func (c *ChatReader) remember(id, name string, args json.RawMessage) {
	if _, ok := c.pending[id]; !ok {
		c.pendingOrder = append(c.pendingOrder, id)
	}
	c.pending[id] = &PendingCall{ID: id, Name: name, Args: args}
	if len(c.pendingOrder) > maxCalls {
		delete(c.pending, c.pendingOrder[0])
		c.pendingOrder = c.pendingOrder[1:]
	}
}

func (c *ChatReader) forget(id string) {
	if _, ok := c.pending[id]; !ok {
		return
	}
	delete(c.pending, id)
	for i, p := range c.pendingOrder {
		if p == id {
			c.pendingOrder = append(c.pendingOrder[:i], c.pendingOrder[i+1:]...)
			break
		}
	}
}

// newEpoch starts the epoch after a boundary: nothing is yielded in it
// yet.
func (c *ChatReader) newEpoch(key string) {
	c.epoch = key
	c.answered, c.answeredOrder = map[string]*AnsweredCall{}, nil
	c.used, c.texts = newSet(maxCalls), newSet(maxTexts)
}

// release yields the held user texts, in order.
func (c *ChatReader) release(tl *transcript.Line) {
	for _, h := range c.held {
		meta := c.meta()
		meta.UUID, meta.TS = h.Msg, h.TS
		tl.Items = append(tl.Items, &transcript.TextSpan{LineMeta: meta, Kind: "user", Role: "user", Block: h.Block, Key: h.Key, TextJSON: h.Text})
	}
	c.held = nil
}

// Next reads the next complete line. At the end of the input, or before
// a last line without its '\n', it returns io.EOF and Offset stays before
// that line. After an error other than io.EOF the reader must not be used
// again.
func (c *ChatReader) Next() (*transcript.Line, error) {
	line, err := c.readLine()
	if err != nil {
		return nil, err
	}
	start := c.off
	c.off += int64(len(line))
	c.stats.Lines++
	c.stats.Bytes += int64(len(line))
	tl := c.ParseLine(bytes.TrimRight(line, "\r\n"))
	tl.Start, tl.End = start, c.off
	if cap(c.buf) > 8<<20 {
		c.buf = nil
	}
	return tl, nil
}

func (c *ChatReader) readLine() ([]byte, error) {
	c.buf = c.buf[:0]
	for {
		frag, err := c.br.ReadSlice('\n')
		switch {
		case err == nil:
			if len(c.buf) == 0 {
				return frag, nil
			}
			c.buf = append(c.buf, frag...)
			return c.buf, nil
		case errors.Is(err, bufio.ErrBufferFull):
			c.buf = append(c.buf, frag...)
		case errors.Is(err, io.EOF):
			return nil, io.EOF
		default:
			return nil, err
		}
	}
}

// ParseLine reads one line (without its '\n') and counts it; the line's
// offsets are zero.
func (c *ChatReader) ParseLine(line []byte) *transcript.Line {
	tl := &transcript.Line{}
	c.parse(line, tl)
	switch {
	case tl.Invalid:
		c.stats.Invalid++
	case tl.Skipped:
		c.stats.Skipped++
	}
	c.stats.Items += len(tl.Items)
	return tl
}

func (c *ChatReader) meta() transcript.LineMeta {
	return transcript.LineMeta{SessionID: c.session, Agent: c.agent, Sidechain: c.agent != "", Cwd: c.opt.Cwd}
}

func (c *ChatReader) parse(line []byte, tl *transcript.Line) {
	tl.LineMeta = c.meta()
	i := jsonscan.WS(line, 0)
	if i == len(line) {
		tl.Skipped = true
		return
	}
	var id, set, rewind, session, kind []byte
	end, st := jsonscan.Object(line, i, jsonscan.Escapes, nil, func(k, v []byte) bool {
		switch string(k) {
		case "id":
			id = v
		case "$set":
			set = v
		case "$rewindTo":
			rewind = v
		case "sessionId":
			session = v
		case "kind":
			kind = v
		}
		return true
	})
	if st != jsonscan.OK || jsonscan.WS(line, end) != len(line) {
		tl.Invalid = true
		return
	}
	// The CLI's loader tells records apart in this order.
	switch {
	case isJSONString(rewind):
		tl.Type = "$rewindTo"
		c.afterHeader = false
		r, _ := jsonscan.String(rewind)
		c.rewind(r, tl)
	case isJSONString(id):
		tl.Type = "message"
		c.afterHeader = false
		m, ok := parseMessage(line[i:end])
		if !ok {
			tl.Skipped = true
			return
		}
		tl.UUID, tl.TS = m.id, m.ts
		c.appended(m, tl)
	case len(set) > 0 && set[0] == '{':
		tl.Type = "$set"
		f, _ := fields(set, "messages", "sessionId")
		if s, ok := jsonscan.String(f["sessionId"]); ok && s != "" && c.agent == "" && c.opt.SessionID == "" {
			c.session = s
			tl.SessionID = s
		}
		msgs := f["messages"]
		if len(msgs) == 0 || msgs[0] != '[' {
			tl.Skipped = true
			return
		}
		c.setMessages(msgs, tl)
	case isJSONString(session) && isJSONString(jsonscan.Field(line[i:end], "projectHash")):
		tl.Type = "header"
		s, _ := jsonscan.String(session)
		if k, _ := jsonscan.String(kind); k == "subagent" {
			if c.opt.Agent == "" {
				c.agent = s
			}
		} else if c.opt.SessionID == "" && s != "" {
			c.session = s
		}
		tl.LineMeta = c.meta()
		// A header may hold the messages (the CLI's loader reads them
		// like a $set of the list).
		if msgs := jsonscan.Field(line[i:end], "messages"); len(msgs) > 0 && msgs[0] == '[' {
			c.afterHeader = false
			c.setMessages(msgs, tl)
			return
		}
		c.afterHeader = true
		tl.Skipped = true
	default:
		tl.Skipped = true
	}
}

func isJSONString(v []byte) bool { return len(v) > 0 && v[0] == '"' }

// message is one message record, its members raw.
type message struct {
	id, typ   string
	ts        time.Time
	content   []byte // a string, a part or an array of parts
	thoughts  []byte // gemini: [{subject, description}]
	toolCalls []byte // gemini: [{id, name, args, result, status, resultDisplay}]
}

func parseMessage(obj []byte) (*message, bool) {
	f, ok := fields(obj, "id", "type", "timestamp", "content", "thoughts", "toolCalls")
	if !ok {
		return nil, false
	}
	m := &message{content: f["content"], thoughts: f["thoughts"], toolCalls: f["toolCalls"]}
	m.id, _ = jsonscan.String(f["id"])
	m.typ, _ = jsonscan.String(f["type"])
	if s, ok := jsonscan.String(f["timestamp"]); ok {
		m.ts, _ = time.Parse(time.RFC3339Nano, s)
	}
	return m, m.id != ""
}

// parts calls fn with each part of a content value: a string is one text
// part, an object one part, an array its elements (strings are text).
func parts(content []byte, fn func(i int, p []byte)) {
	if len(content) == 0 {
		return
	}
	switch content[0] {
	case '"':
		fn(0, content)
	case '{':
		fn(0, content)
	case '[':
		n := 0
		jsonscan.Elems(content, func(v []byte) bool {
			fn(n, v)
			n++
			return true
		})
	}
}

// text returns the text of a part ("" for a part without one) and
// whether it is a thought.
func partText(p []byte) (text []byte, thought bool) {
	if len(p) == 0 {
		return nil, false
	}
	if p[0] == '"' {
		return p, false
	}
	if p[0] != '{' {
		return nil, false
	}
	f, _ := fields(p, "text", "thought")
	if isJSONString(f["text"]) {
		return f["text"], string(f["thought"]) == "true"
	}
	return nil, false
}

// messageText is the text of a message's content: its text parts joined.
func messageText(content []byte) string {
	var b strings.Builder
	parts(content, func(_ int, p []byte) {
		if t, th := partText(p); t != nil && !th {
			s, _ := jsonscan.String(t)
			b.WriteString(s)
		}
	})
	return b.String()
}

// emitter gathers the items of one message, skipping the parts already
// handled (subs) and recording the ones it handles.
type emitter struct {
	c    *ChatReader
	m    *message
	meta transcript.LineMeta
	subs map[string]bool
	out  []transcript.Item
	// evidenceOnly: the message was read in an earlier epoch and is
	// still in the context after a boundary: only its evidence is
	// yielded again (keys tagged with the epoch); no spans.
	evidenceOnly bool
	block        int
}

func (e *emitter) take(sub string) bool {
	if e.subs[sub] {
		return false
	}
	e.subs[sub] = true
	return true
}

func (e *emitter) add(it transcript.Item) { e.out = append(e.out, it) }

func (e *emitter) spanKey(sub string) string { return "span:" + e.m.id + ":" + sub }

// text yields a text part. copyForm: the part is in the form the CLI
// gives a history it re-records (a model message's parts), and a text
// already yielded in this epoch is a copy of it, not said again.
func (e *emitter) text(sub, kind, role string, raw []byte, copyForm bool) {
	if !e.take(sub) || len(raw) <= 2 {
		return
	}
	dg := textDigest(kind, raw)
	if e.evidenceOnly || (copyForm && e.c.texts.has(dg)) {
		e.c.texts.add(dg)
		return
	}
	e.c.texts.add(dg)
	e.add(&transcript.TextSpan{LineMeta: e.meta, Kind: kind, Role: role, Block: e.block, Key: e.spanKey(sub), TextJSON: clone(raw)})
}

func clone(b []byte) json.RawMessage { return append(json.RawMessage(nil), b...) }

// jsonSafe is raw as a value ChatState can hold: json.Marshal refuses raw
// values that are not strict JSON (a control byte in a string), which a
// chat line the reader accepted may hold. A string is encoded again; any
// other such value is dropped.
func jsonSafe(raw []byte) json.RawMessage {
	if json.Valid(raw) {
		return clone(raw)
	}
	if s, ok := jsonscan.String(raw); ok {
		return jsonscan.Quote(s)
	}
	return nil
}

// emit returns a message's items, as the package doc says.
func (c *ChatReader) emit(m *message, subs map[string]bool, evidenceOnly bool) []transcript.Item {
	meta := c.meta()
	meta.UUID, meta.TS = m.id, m.ts
	e := &emitter{c: c, m: m, meta: meta, subs: subs, evidenceOnly: evidenceOnly}
	switch m.typ {
	case "user":
		if !evidenceOnly && c.userCopy(m, subs) {
			return nil
		}
		parts(m.content, func(i int, p []byte) {
			e.block = i
			if t, _ := partText(p); t != nil {
				e.text("c"+strconv.Itoa(i), "user", "user", t, false)
				return
			}
			if fr := jsonscan.Field(p, "functionResponse"); len(fr) > 0 && fr[0] == '{' {
				c.functionResponse(e, fr)
			}
		})
	case "gemini":
		n := 0
		jsonscan.Elems(m.thoughts, func(v []byte) bool {
			e.block = n
			f, _ := fields(v, "subject", "description")
			subj, _ := jsonscan.String(f["subject"])
			desc, _ := jsonscan.String(f["description"])
			t := desc
			if subj != "" {
				t = "**" + subj + "** " + desc
			}
			e.text("t"+strconv.Itoa(n), "thinking", "assistant", jsonscan.Quote(t), false)
			n++
			return true
		})
		// The model's own text is a string; parts are the form of a
		// re-recorded history (and of the CLI's synthetic turns).
		copyForm := len(m.content) > 0 && m.content[0] != '"'
		parts(m.content, func(i int, p []byte) {
			e.block = i
			if t, thought := partText(p); t != nil {
				kind := "assistant"
				if thought {
					kind = "thinking"
				}
				e.text("c"+strconv.Itoa(i), kind, "assistant", t, copyForm)
				return
			}
			if fc := jsonscan.Field(p, "functionCall"); len(fc) > 0 && fc[0] == '{' {
				f, _ := fields(fc, "id", "name", "args")
				id, _ := jsonscan.String(f["id"])
				name, _ := jsonscan.String(f["name"])
				sub := "call:" + id
				if id == "" {
					sub = "c" + strconv.Itoa(i)
				}
				c.toolUse(e, sub, id, name, f["args"])
			}
		})
		n = 0
		jsonscan.Elems(m.toolCalls, func(v []byte) bool {
			e.block = n
			n++
			f, _ := fields(v, "id", "name", "args", "result", "status", "resultDisplay")
			id, _ := jsonscan.String(f["id"])
			name, _ := jsonscan.String(f["name"])
			if id == "" {
				return true
			}
			c.toolUse(e, "call:"+id, id, name, f["args"])
			status, _ := jsonscan.String(f["status"])
			if !finalStatus(status) {
				return true
			}
			c.result(e, id, name, f["args"], callResponse(f["result"], id), status, f["resultDisplay"])
			return true
		})
	}
	return e.out
}

// userCopy holds back a user message that may be the CLI's copy of one
// already yielded: every text of it was yielded in this epoch, and it
// answers no call that is not answered. When the CLI rewrites its history
// (tool output masking) it records every turn again under a new id, then
// lists them in a $set; a user who says the same thing twice is told
// apart by what follows (see release). It reports whether m was held.
func (c *ChatReader) userCopy(m *message, subs map[string]bool) bool {
	var texts []HeldText
	copyOf := true
	parts(m.content, func(i int, p []byte) {
		if !copyOf {
			return
		}
		if t, _ := partText(p); t != nil {
			if len(t) <= 2 {
				return
			}
			if !c.texts.has(textDigest("user", t)) || subs["c"+strconv.Itoa(i)] {
				copyOf = false
				return
			}
			texts = append(texts, HeldText{Msg: m.id, TS: m.ts, Key: "span:" + m.id + ":c" + strconv.Itoa(i), Block: i, Text: jsonSafe(t)})
			return
		}
		if fr := jsonscan.Field(p, "functionResponse"); len(fr) > 0 && fr[0] == '{' {
			id, _ := jsonscan.String(jsonscan.Field(fr, "id"))
			if _, done := c.answered[id]; !done {
				copyOf = false
			}
		}
	})
	if !copyOf || len(texts) == 0 {
		return false
	}
	for k := range subsOf(m) {
		subs[k] = true
	}
	c.held = append(c.held, texts...)
	return true
}

// finalStatus: the CLI records a call once it completed (success, error,
// cancelled); other states, should a release record them, are not final.
func finalStatus(s string) bool {
	switch s {
	case "success", "error", "cancelled":
		return true
	}
	return false
}

// callResponse finds the function response of call id in a toolCalls
// entry's result: an array of parts (the functionResponse part, maybe
// with media parts beside it) or, from older releases, a string.
func callResponse(result []byte, id string) []byte {
	if len(result) == 0 {
		return nil
	}
	if result[0] == '"' {
		return []byte(`{"output":` + string(result) + `}`)
	}
	var out []byte
	jsonscan.Elems(result, func(v []byte) bool {
		fr := jsonscan.Field(v, "functionResponse")
		if len(fr) == 0 || fr[0] != '{' {
			return true
		}
		f, _ := fields(fr, "id", "response")
		rid, _ := jsonscan.String(f["id"])
		if out == nil || rid == id {
			out = f["response"]
		}
		return rid != id
	})
	return out
}

func isFileTool(name string) bool {
	switch name {
	case ToolReadFile, ToolWriteFile, ToolReplace:
		return true
	}
	return false
}

func (c *ChatReader) argPathAbs(args []byte) string {
	p, ok := argPath(args)
	if !ok {
		return ""
	}
	abs, _ := resolvePath(p, c.opt.Cwd, nil)
	return abs
}

// toolUse yields a call, once per epoch.
func (c *ChatReader) toolUse(e *emitter, sub, id, name string, args []byte) {
	if !e.take(sub) {
		return
	}
	if len(args) == 0 || args[0] != '{' {
		args = []byte("{}")
	}
	if id != "" {
		if _, answered := c.answered[id]; !answered {
			var keep json.RawMessage
			if isFileTool(name) || name == ToolReadManyFiles {
				keep = jsonSafe(args)
			}
			c.remember(id, name, keep)
		}
		if c.used.has(id) {
			return // the CLI's copy of a call already yielded
		}
		c.used.add(id)
	}
	if e.evidenceOnly {
		return
	}
	tu := &transcript.ToolUse{LineMeta: e.meta, ID: id, Name: name, Input: clone(args), Block: e.block, SpanKey: e.spanKey(sub)}
	if isFileTool(name) {
		tu.Path = c.argPathAbs(args)
	}
	e.add(tu)
}

// functionResponse handles a functionResponse part of a user message: the
// result the model receives, paired with its call by id.
func (c *ChatReader) functionResponse(e *emitter, fr []byte) {
	f, _ := fields(fr, "id", "name", "response")
	id, _ := jsonscan.String(f["id"])
	name, _ := jsonscan.String(f["name"])
	var args []byte
	if p := c.pending[id]; p != nil {
		args = p.Args
		if name == "" {
			name = p.Name
		}
	}
	status := "success"
	if resp := f["response"]; len(resp) > 0 && resp[0] == '{' && !isNull(jsonscan.Field(resp, "error")) {
		status = "error"
	}
	c.result(e, id, name, args, f["response"], status, nil)
}

// responseText is the text of a function response object: its output
// (or, for a failure, its error) when a string, else the object itself.
func responseText(resp []byte) (text json.RawMessage, isString bool) {
	if len(resp) == 0 || resp[0] != '{' {
		return json.RawMessage(`""`), true
	}
	f, _ := fields(resp, "output", "error", "content")
	for _, k := range []string{"output", "error", "content"} {
		if isJSONString(f[k]) {
			return f[k], true
		}
	}
	return resp, false
}

// result yields the result of call id once per epoch: a ToolResult span
// and the evidence of a file tool's success.
func (c *ChatReader) result(e *emitter, id, name string, args, resp []byte, status string, display []byte) {
	sub := "result:" + id
	if id == "" || !e.take(sub) {
		return
	}
	if _, done := c.answered[id]; done {
		return // the same result again (the CLI records it twice)
	}
	raw, isString := responseText(resp)
	out := ""
	if isString {
		out, _ = jsonscan.String(raw)
	}
	isErr := status != "success"
	if !e.evidenceOnly {
		r := &transcript.ToolResult{LineMeta: e.meta, ToolUseID: id, IsError: isErr, ContentJSON: clone(raw),
			Tool: name, Block: e.block, SpanKey: e.spanKey(sub)}
		if len(display) > 0 && (display[0] == '{' || display[0] == '"') {
			r.ToolUseResult = clone(display)
		}
		if isFileTool(name) {
			r.Path = c.argPathAbs(args)
		}
		e.add(r)
	}
	c.forget(id)
	evidence := false
	if !isErr && isString && args != nil {
		for n, s := range c.seenOf(name, args, out, display) {
			key := "seen:" + e.m.id + ":" + id
			if name == ToolReadManyFiles {
				key += ":" + strconv.Itoa(n)
			}
			if e.evidenceOnly && c.epoch != "" {
				key += "@" + strings.TrimPrefix(c.epoch, "compact:")
			}
			e.add(&transcript.FileSeen{LineMeta: e.meta, Path: s.Path, Content: s.Content, HasContent: s.HasContent,
				View: s.View, Op: s.Op, Tool: s.Tool, Key: key})
			evidence = true
		}
	}
	c.answer(id, digest(string(raw)), evidence)
}

// seenOf is the evidence of a successful file tool's result: reads only
// when their text is exactly the file's (a read without it yields no
// evidence here), edits with or without content.
func (c *ChatReader) seenOf(name string, args []byte, out string, display []byte) []Seen {
	var all []Seen
	switch name {
	case ToolReadFile:
		ra, err := parseReadFileArgs(args)
		path := c.argPathAbs(args)
		if err != nil || path == "" {
			return nil
		}
		all = []Seen{readSeen(path, ra, out, display)}
	case ToolReadManyFiles:
		all, _ = readManySeen(out, display)
	case ToolWriteFile, ToolReplace:
		path := c.argPathAbs(args)
		if path == "" && len(display) > 0 && display[0] == '{' {
			if p, ok := jsonscan.String(jsonscan.Field(display, "filePath")); ok && filepath.IsAbs(p) {
				path = filepath.Clean(p)
			}
		}
		if path == "" {
			return nil
		}
		return []Seen{editSeen(name, path, args, display)}
	}
	var withText []Seen
	for _, s := range all {
		if s.HasContent {
			withText = append(withText, s)
		}
	}
	return withText
}

// subsOf lists every part of a message a reader could yield (so that a
// message taken as handled yields none of them again).
func subsOf(m *message) map[string]bool {
	subs := map[string]bool{}
	parts(m.content, func(i int, p []byte) {
		subs["c"+strconv.Itoa(i)] = true
		if fc := jsonscan.Field(p, "functionCall"); len(fc) > 0 && fc[0] == '{' {
			if id, _ := jsonscan.String(jsonscan.Field(fc, "id")); id != "" {
				subs["call:"+id] = true
			}
		}
		if fr := jsonscan.Field(p, "functionResponse"); len(fr) > 0 && fr[0] == '{' {
			if id, _ := jsonscan.String(jsonscan.Field(fr, "id")); id != "" {
				subs["result:"+id] = true
			}
		}
	})
	n := 0
	jsonscan.Elems(m.thoughts, func([]byte) bool {
		subs["t"+strconv.Itoa(n)] = true
		n++
		return true
	})
	jsonscan.Elems(m.toolCalls, func(v []byte) bool {
		if id, _ := jsonscan.String(jsonscan.Field(v, "id")); id != "" {
			subs["call:"+id] = true
			if st, _ := jsonscan.String(jsonscan.Field(v, "status")); finalStatus(st) {
				subs["result:"+id] = true
			}
		}
		return true
	})
	return subs
}

// appended handles a message line. The CLI appends a message when it is
// created and again, whole, each time it changes; only the last message
// changes (tokens; tool calls, added once completed). A new message
// yields all its parts; the last one again yields the parts it did not
// have before; an older one (a replay) yields nothing. Held user texts
// are released before the first item a later message yields.
func (c *ChatReader) appended(m *message, tl *transcript.Line) {
	var items []transcript.Item
	switch {
	case m.id == c.last:
		items = c.emit(m, c.lastSubs, false)
	case c.isSeen(m.id):
		c.last, c.lastSubs = m.id, subsOf(m)
	default:
		c.markSeen(m.id)
		c.last, c.lastSubs = m.id, map[string]bool{}
		items = c.emit(m, c.lastSubs, false)
	}
	if len(items) > 0 {
		c.release(tl)
		tl.Items = append(tl.Items, items...)
	}
}

// isSessionContext reports whether m is the CLI's environment message
// (the first user message of every chat).
func isSessionContext(m *message) bool {
	return m.typ == "user" && strings.HasPrefix(strings.TrimSpace(messageText(m.content)), "<session_context>")
}

// setMessages handles a $set of the whole message list: see the package
// doc (compression, rewrites, resumes).
func (c *ChatReader) setMessages(raw []byte, tl *transcript.Line) {
	var list []*message
	jsonscan.Elems(raw, func(v []byte) bool {
		if len(v) > 0 && v[0] == '{' {
			if m, ok := parseMessage(v); ok {
				list = append(list, m)
			}
		}
		return true
	})
	conversation := false
	for _, m := range list {
		conversation = conversation || !isSessionContext(m)
	}
	if c.afterHeader && len(c.seen.order) > 0 && !conversation {
		// A chat started afresh in a file that holds one already (a
		// resume in the same minute): the resumed list follows.
		tl.Skipped = true
		return
	}
	// Held texts the list holds were the CLI's copies: dropped. Others
	// were said again: yielded now.
	inList := map[string]bool{}
	for _, m := range list {
		inList[m.id] = true
	}
	keep := c.held[:0]
	for _, h := range c.held {
		if !inList[h.Msg] {
			keep = append(keep, h)
		}
	}
	c.held = keep
	c.release(tl)
	// A compression: the first message after the environment is a user
	// message holding a <state_snapshot> not read before.
	var snap *message
	for _, m := range list {
		if isSessionContext(m) {
			continue
		}
		if m.typ == "user" && strings.HasPrefix(strings.TrimSpace(messageText(m.content)), "<state_snapshot>") && !c.isSeen(m.id) {
			snap = m
		}
		break
	}
	old := map[*message]bool{}
	for _, m := range list {
		old[m] = c.isSeen(m.id)
	}
	switch {
	case snap != nil:
		key := "compact:" + snap.id
		meta := c.meta()
		meta.UUID, meta.TS = snap.id, snap.ts
		tl.Items = append(tl.Items,
			&transcript.CompactBoundary{LineMeta: meta, Trigger: "compress", Key: key},
			&transcript.CompactSummary{LineMeta: meta, TextJSON: jsonscan.Quote(messageText(snap.content)), Key: "span:" + snap.id + ":summary"})
		c.newEpoch(key)
		c.markSeen(snap.id)
	case c.lostEvidence(list):
		key := "compact:rewrite:" + listDigest(list)
		meta := c.meta()
		if len(list) > 0 {
			meta.UUID, meta.TS = list[len(list)-1].id, list[len(list)-1].ts
		}
		tl.Items = append(tl.Items, &transcript.CompactBoundary{LineMeta: meta, Trigger: "rewrite", Key: key})
		c.newEpoch(key)
	default:
		// The same context (a resume lists it again): what is new in it
		// (the CLI's copies of results, "<id>_response") is read like an
		// appended message; results already answered yield nothing.
		for _, m := range list {
			if !old[m] {
				c.markSeen(m.id)
				tl.Items = append(tl.Items, c.emit(m, map[string]bool{}, false)...)
			}
		}
		c.setLast(list)
		return
	}
	// After a boundary: messages read before that are still in the list
	// give their evidence again, in the new epoch; new ones give all.
	for _, m := range list {
		if m == snap {
			continue
		}
		if old[m] {
			tl.Items = append(tl.Items, c.emit(m, map[string]bool{}, true)...)
		} else {
			c.markSeen(m.id)
			tl.Items = append(tl.Items, c.emit(m, map[string]bool{}, false)...)
		}
	}
	c.release(tl)
	c.setLast(list)
}

// setLast makes the list's last message the one later lines may complete.
func (c *ChatReader) setLast(list []*message) {
	if len(list) == 0 {
		c.last, c.lastSubs = "", map[string]bool{}
		return
	}
	l := list[len(list)-1]
	c.last, c.lastSubs = l.id, subsOf(l)
}

// lostEvidence reports whether a message list drops or changes a result
// that gave evidence in the current epoch: the CLI rolled the history
// back (a cancelled turn), masked old tool outputs, or cut them.
func (c *ChatReader) lostEvidence(list []*message) bool {
	need := false
	for _, a := range c.answered {
		need = need || a.Evidence
	}
	if !need {
		return false
	}
	have := map[string]map[string]bool{}
	note := func(id string, resp []byte) {
		if id == "" {
			return
		}
		raw, _ := responseText(resp)
		if have[id] == nil {
			have[id] = map[string]bool{}
		}
		have[id][digest(string(raw))] = true
	}
	for _, m := range list {
		parts(m.content, func(_ int, p []byte) {
			if fr := jsonscan.Field(p, "functionResponse"); len(fr) > 0 && fr[0] == '{' {
				f, _ := fields(fr, "id", "response")
				id, _ := jsonscan.String(f["id"])
				note(id, f["response"])
			}
		})
		jsonscan.Elems(m.toolCalls, func(v []byte) bool {
			f, _ := fields(v, "id", "result", "status")
			id, _ := jsonscan.String(f["id"])
			if st, _ := jsonscan.String(f["status"]); finalStatus(st) {
				note(id, callResponse(f["result"], id))
			}
			return true
		})
	}
	for _, a := range c.answered {
		if a.Evidence && !have[a.ID][a.Digest] {
			return true
		}
	}
	return false
}

// listDigest identifies a message list: its ids and contents.
func listDigest(list []*message) string {
	var p []string
	for _, m := range list {
		p = append(p, m.id, digest(string(m.content)), digest(string(m.toolCalls)))
	}
	return digest(p...)
}

// rewind handles a $rewindTo: the CLI dropped the message and every one
// after it. The context lost what they held; which results survived is
// not known here (the reader keeps no copy of them), so no earlier
// evidence counts after the boundary: the guard asks for a read again.
func (c *ChatReader) rewind(id string, tl *transcript.Line) {
	c.release(tl)
	key := "compact:rewind:" + id
	meta := c.meta()
	meta.UUID = id
	tl.Items = append(tl.Items, &transcript.CompactBoundary{LineMeta: meta, Trigger: "rewind", Key: key})
	c.newEpoch(key)
	c.last, c.lastSubs = "", map[string]bool{}
}
