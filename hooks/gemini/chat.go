package gemini

// The chat reader: complete lines from an offset, each told apart (header,
// message, $set, $rewindTo) and handed to the message and list handling.

import (
	"bufio"
	"bytes"
	"errors"
	"io"
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
	model     string // gemini: the model that wrote it
}

func parseMessage(obj []byte) (*message, bool) {
	f, ok := fields(obj, "id", "type", "timestamp", "content", "thoughts", "toolCalls", "model")
	if !ok {
		return nil, false
	}
	m := &message{content: f["content"], thoughts: f["thoughts"], toolCalls: f["toolCalls"]}
	m.id, _ = jsonscan.String(f["id"])
	m.typ, _ = jsonscan.String(f["type"])
	m.model, _ = jsonscan.String(f["model"])
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
