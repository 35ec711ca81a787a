package proxy

import (
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/git-lossless/git-lossless/recall"
)

// SessionHeader names a session explicitly; without it a session is keyed
// by a hash of model, first system and first user message.
const SessionHeader = "X-Lossless-Session"

// session is one conversation's state. Every client has its own: memo,
// pins and usage never leak from one session into another.
type session struct {
	key string

	// work serialises compactions of this session (a client that sends
	// two requests at once gets one summary, then a memo hit).
	work sync.Mutex

	mu       sync.Mutex // guards everything below
	lastUsed time.Time
	model    string
	route    dialect
	window   int
	winSrc   string
	// The last forwarded request: tokens before and after compaction, by
	// which count; used is replaced by the backend's reported usage when
	// the response carries it.
	before, after int
	used          int
	usedSrc       string
	updated       time.Time
	lastCompact   time.Time
	requests      int
	compactions   int // requests forwarded compacted
	summaries     int // new summaries written
	reused        int // requests served from the memo alone
	spills        int
	truncations   int
	memo          *memo
	pins          []string
	spilled       map[[32]byte]string // message hash -> span id of its spill

	// toolBudget is set once the session's fixed floor (system prompt and
	// tools) has exceeded ToolShare of its budget (toolbudget.go);
	// floorSeen is the request shape last checked.
	toolBudget *ToolBudget
	floorSeen  floorKey

	// lines indexes the text of the spans this session archived, for
	// stale recall (recall.go); nil until the first span. indexing is
	// closed when the spans handed to it so far are indexed (nil: none
	// pending).
	lines    *recall.LineIndex
	indexing chan struct{}
}

// memo is a session's summary of its conversation's first k messages, so
// that the next turn (which resends the whole history) extends it instead
// of summarising everything again. It is recognised by the hash chain of
// the messages it covers, never by its text: a client cannot forge it.
type memo struct {
	k       int      // messages covered: [0, k)
	chain   [32]byte // chainHash over messages [0, k)
	summary string   // the summary text (pins kept apart)
	spans   []string // spans holding the originals, oldest first
	folded  int      // non-system messages folded into the summary
}

// sessionTable keeps the most recently used sessions.
type sessionTable struct {
	mu  sync.Mutex
	max int
	m   map[string]*session
	// latest is the session of the most recent request.
	latest *session
}

func newSessionTable(max int) *sessionTable {
	return &sessionTable{max: max, m: map[string]*session{}}
}

// get returns the session for key, creating it (and dropping the least
// recently used one when full).
func (t *sessionTable) get(key string, now time.Time) *session {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, ok := t.m[key]
	if !ok {
		if len(t.m) >= t.max {
			var oldest *session
			for _, c := range t.m {
				c.mu.Lock()
				if oldest == nil || c.lastUsed.Before(oldest.lastUsed) {
					oldest = c
				}
				c.mu.Unlock()
			}
			if oldest != nil {
				delete(t.m, oldest.key)
				if t.latest == oldest {
					t.latest = nil
				}
			}
		}
		s = &session{key: key}
		t.m[key] = s
	}
	s.mu.Lock()
	s.lastUsed = now
	s.mu.Unlock()
	t.latest = s
	return s
}

// lookup returns a session without touching it ("" for the latest).
func (t *sessionTable) lookup(key string) *session {
	t.mu.Lock()
	defer t.mu.Unlock()
	if key == "" {
		return t.latest
	}
	return t.m[key]
}

func (t *sessionTable) all() []*session {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]*session, 0, len(t.m))
	for _, s := range t.m {
		out = append(out, s)
	}
	return out
}

// sessionKeyFor returns the header's session id when given, else the
// request's derived key.
func sessionKeyFor(h http.Header, r *request) string {
	if v := strings.TrimSpace(h.Get(SessionHeader)); v != "" {
		if len(v) > 128 {
			v = v[:128]
		}
		return v
	}
	return r.sessionKey()
}

// SessionUsage is what /lossless/usage reports for a session.
type SessionUsage struct {
	Session          string     `json:"session"`
	Model            string     `json:"model"`
	Route            string     `json:"route"`
	Window           int        `json:"window"`
	WindowSource     string     `json:"window_source,omitempty"`
	Used             int        `json:"used"`
	UsedAfterCompact int        `json:"used_after_compaction"`
	TokensBefore     int        `json:"tokens_before"`
	Percent          float64    `json:"pct"`
	CountSource      string     `json:"count_source"`
	Requests         int        `json:"requests"`
	Compactions      int        `json:"compactions"`
	Summaries        int        `json:"summaries"`
	SummariesReused  int        `json:"summaries_reused"`
	Spills           int        `json:"spills"`
	Truncations      int        `json:"truncations"`
	Pins             int        `json:"pins"`
	Spans            []string   `json:"spans,omitempty"`
	LastCompactionAt *time.Time `json:"last_compaction_at"`
	UpdatedAt        time.Time  `json:"updated_at"`

	// ToolBudget is set when the session's system prompt and tool
	// definitions alone exceed tool-share of its budget (the advice the
	// dashboard shows).
	ToolBudget *ToolBudget `json:"tool_budget,omitempty"`
}

func (s *session) usage() SessionUsage {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := SessionUsage{
		Session: s.key, Model: s.model, Route: s.route.String(), Window: s.window, WindowSource: s.winSrc,
		Used: s.used, UsedAfterCompact: s.after, TokensBefore: s.before, CountSource: s.usedSrc,
		Requests: s.requests, Compactions: s.compactions, Summaries: s.summaries, SummariesReused: s.reused,
		Spills: s.spills, Truncations: s.truncations, Pins: len(s.pins), UpdatedAt: s.updated,
	}
	if s.window > 0 {
		u.Percent = float64(int(1000*float64(s.used)/float64(s.window)+0.5)) / 10
	}
	if !s.lastCompact.IsZero() {
		t := s.lastCompact
		u.LastCompactionAt = &t
	}
	if s.toolBudget != nil {
		tb := *s.toolBudget
		u.ToolBudget = &tb
	}
	if s.memo != nil {
		u.Spans = append([]string(nil), s.memo.spans...)
	}
	return u
}
