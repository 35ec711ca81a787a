package gemini

// What a chat reader remembers across reads: ChatState and its bounded
// sets, the epoch, the held texts.

import (
	"encoding/json"
	"sort"
	"time"

	"github.com/git-lossless/git-lossless/hooks/transcript"
)

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
