package proxy

import (
	_ "embed"
	"encoding/json"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Event is one entry of /lossless/events: something the proxy did or
// learned. Kinds: compaction (with recall_lines when it quoted archived
// lines), fail-open, truncation, window, overflow,
// upstream-cut (the backend broke an answer off), loop (a request
// refused with 508), tool_budget (a session's system prompt and tools
// alone exceed tool-share of its budget; once per session).
type Event struct {
	Seq     int64     `json:"seq"`
	TS      time.Time `json:"ts"`
	Kind    string    `json:"kind"`
	Session string    `json:"session,omitempty"`
	Model   string    `json:"model,omitempty"`
	Window  int       `json:"window,omitempty"`
	Before  int       `json:"tokens_before,omitempty"`
	After   int       `json:"tokens_after,omitempty"`
	Source  string    `json:"count_source,omitempty"`
	Spans   []string  `json:"spans,omitempty"`
	Reused  bool      `json:"summary_reused,omitempty"`
	Spills  int       `json:"spills,omitempty"`
	// RecallLines are the archived lines a stale recall quoted.
	RecallLines int     `json:"recall_lines,omitempty"`
	AddedMs     float64 `json:"added_ms,omitempty"`
	Reason      string  `json:"reason,omitempty"`
	Detail      string  `json:"detail,omitempty"`

	// ToolBudget is the fixed floor a tool_budget event reports.
	ToolBudget *ToolBudget `json:"tool_budget,omitempty"`
}

type eventRing struct {
	mu   sync.Mutex
	buf  []Event // circular once full
	head int     // index of the oldest event when full
	next int64
	max  int
}

func newEventRing(max int) *eventRing { return &eventRing{max: max, next: 1} }

func (r *eventRing) add(e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e.Seq = r.next
	r.next++
	if len(r.buf) < r.max {
		r.buf = append(r.buf, e)
		return
	}
	r.buf[r.head] = e
	r.head = (r.head + 1) % r.max
}

func (r *eventRing) since(seq int64) []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := []Event{}
	for i := range r.buf {
		e := r.buf[(r.head+i)%len(r.buf)]
		if e.Seq > seq {
			out = append(out, e)
		}
	}
	return out
}

func (p *Proxy) note(e Event) {
	if e.TS.IsZero() {
		e.TS = p.now()
	}
	p.events.add(e)
}

// samples keeps the last latencies for percentiles.
type samples struct {
	v []float64
	i int
}

func (s *samples) add(x float64) {
	if len(s.v) < 4096 {
		s.v = append(s.v, x)
		return
	}
	s.v[s.i] = x
	s.i = (s.i + 1) % len(s.v)
}

func (s *samples) pct(p float64) float64 {
	if len(s.v) == 0 {
		return 0
	}
	c := append([]float64(nil), s.v...)
	sort.Float64s(c)
	return c[int(p*float64(len(c)-1)+0.5)]
}

type statCounters struct {
	mu              sync.Mutex
	chatRequests    int
	forwarded       int
	compacted       int
	summaries       int
	reused          int
	spills          int
	spans           int
	summaryCalls    int
	truncations     int
	overflows       int
	retries         int
	passthrough     int
	upstreamErrors  int
	upstreamCuts    int
	loops           int
	recalls         int
	recallLines     int
	recallErrors    int
	tokensBefore    int64
	tokensAfter     int64
	failOpen        map[string]int
	refused         map[string]int
	bodyTimeouts    int
	addedPlain      samples
	addedCompacting samples

	toolBudget int // sessions noted with a tool_budget event
	stateful   int // Responses requests forwarded as they are (previous_response_id)
}

func newStatCounters() *statCounters {
	return &statCounters{failOpen: map[string]int{}, refused: map[string]int{}}
}

func (s *statCounters) add(f func(*statCounters)) {
	s.mu.Lock()
	f(s)
	s.mu.Unlock()
}

// Stats is what /lossless/stats reports.
type Stats struct {
	Upstream        string         `json:"upstream"`
	Backend         string         `json:"backend"`
	Writer          string         `json:"writer"`
	StartedAt       time.Time      `json:"started_at"`
	Requests        int            `json:"requests"`
	Forwarded       int            `json:"forwarded_unchanged"`
	Compacted       int            `json:"compacted"`
	Summaries       int            `json:"summaries"`
	SummariesReused int            `json:"summaries_reused"`
	SummaryCalls    int            `json:"summary_calls"`
	Spills          int            `json:"spills"`
	Spans           int            `json:"spans_archived"`
	TokensBefore    int64          `json:"tokens_before"`
	TokensAfter     int64          `json:"tokens_after"`
	TokensKeptOut   int64          `json:"tokens_kept_out"`
	FailOpen        map[string]int `json:"fail_open"`
	Truncations     int            `json:"truncations"`
	OverflowErrors  int            `json:"overflow_errors"`
	OverflowRetries int            `json:"overflow_retries"`
	UpstreamErrors  int            `json:"upstream_errors"`
	// UpstreamCuts counts answers the backend broke off (it closed the
	// connection inside a chunked answer, or before the Content-Length
	// it announced): each reached its client as a cut, never as a
	// complete answer.
	UpstreamCuts int `json:"upstream_cuts"`
	// LoopsRefused counts requests answered 508 Loop Detected: they had
	// passed through this proxy before (the upstream leads back to it)
	// or through too many proxies (loop.go).
	LoopsRefused int `json:"loops_refused"`
	Passthrough  int `json:"passthrough"`
	// Refused counts requests answered 403 before anything was read,
	// forwarded or archived, by reason: host (the Host header names
	// another site: DNS rebinding), origin (a web page's Origin),
	// sec-fetch-site (a browser's cross-site request without Origin).
	Refused map[string]int `json:"refused"`
	// BodyTimeouts counts requests whose body did not arrive within
	// body-timeout (answered 408).
	BodyTimeouts int `json:"body_timeouts"`
	// Journal is full capture's counters (capture "off" without it).
	Journal JournalStats `json:"journal"`
	// Recalls counts compacted requests that carried a stale recall
	// (recall.go), RecallLines the archived lines they quoted, and
	// RecallErrors the recalls that failed open (the request went
	// without one).
	Recalls         int            `json:"recalls"`
	RecallLines     int            `json:"recall_lines"`
	RecallErrors    int            `json:"recall_errors"`
	AddedMsPlainP50 float64        `json:"added_ms_p50_forwarded"`
	AddedMsPlainP95 float64        `json:"added_ms_p95_forwarded"`
	AddedMsCompP50  float64        `json:"added_ms_p50_compacted"`
	AddedMsCompP95  float64        `json:"added_ms_p95_compacted"`
	Sessions        []SessionUsage `json:"sessions"`

	// ToolBudgetSessions counts sessions whose system prompt and tool
	// definitions alone exceeded tool-share of the budget (one
	// tool_budget event each).
	ToolBudgetSessions int `json:"tool_budget_sessions"`
	// Stateful counts Responses requests naming previous_response_id:
	// the server holds their history, so they are forwarded untouched.
	Stateful int `json:"stateful"`
}

// Stats returns the proxy's counters and its sessions, most recent first.
func (p *Proxy) Stats() Stats {
	s := p.stats
	s.mu.Lock()
	st := Stats{
		Upstream: p.up.base.String(), Writer: p.writer, StartedAt: p.started,
		Requests: s.chatRequests, Forwarded: s.forwarded, Compacted: s.compacted, Summaries: s.summaries,
		SummariesReused: s.reused, SummaryCalls: s.summaryCalls, Spills: s.spills, Spans: s.spans,
		TokensBefore: s.tokensBefore, TokensAfter: s.tokensAfter, TokensKeptOut: s.tokensBefore - s.tokensAfter,
		FailOpen: map[string]int{}, Truncations: s.truncations, OverflowErrors: s.overflows, OverflowRetries: s.retries,
		UpstreamErrors: s.upstreamErrors, UpstreamCuts: s.upstreamCuts, LoopsRefused: s.loops, Passthrough: s.passthrough,
		Recalls: s.recalls, RecallLines: s.recallLines, RecallErrors: s.recallErrors,
		AddedMsPlainP50: s.addedPlain.pct(0.5), AddedMsPlainP95: s.addedPlain.pct(0.95),
		AddedMsCompP50: s.addedCompacting.pct(0.5), AddedMsCompP95: s.addedCompacting.pct(0.95),
	}
	for k, v := range s.failOpen {
		st.FailOpen[k] = v
	}
	st.Refused, st.BodyTimeouts = map[string]int{}, s.bodyTimeouts
	st.ToolBudgetSessions, st.Stateful = s.toolBudget, s.stateful
	for k, v := range s.refused {
		st.Refused[k] = v
	}
	s.mu.Unlock()
	p.up.mu.Lock()
	st.Backend = p.up.kind
	p.up.mu.Unlock()
	if st.Backend == "" {
		st.Backend = "(not detected yet)"
	}
	st.Journal = JournalStats{Capture: CaptureOff}
	if p.journal != nil {
		st.Journal = p.journal.snapshot()
	}
	st.Sessions = []SessionUsage{}
	for _, ss := range p.sessions.all() {
		st.Sessions = append(st.Sessions, ss.usage())
	}
	sort.Slice(st.Sessions, func(i, j int) bool { return st.Sessions[i].UpdatedAt.After(st.Sessions[j].UpdatedAt) })
	return st
}

// Usage returns a session's usage ("" for the most recent session).
func (p *Proxy) Usage(session string) (SessionUsage, bool) {
	s := p.sessions.lookup(session)
	if s == nil {
		return SessionUsage{}, false
	}
	u := s.usage()
	if u.Requests == 0 {
		return SessionUsage{}, false
	}
	return u, true
}

//go:embed dashboard.html
var dashboardHTML []byte

// surface serves /lossless/*.
func (p *Proxy) surface(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		jsonError(w, http.StatusMethodNotAllowed, "use GET")
		return
	}
	switch strings.TrimSuffix(r.URL.Path, "/") {
	case "/lossless/usage":
		u, ok := p.Usage(r.URL.Query().Get("session"))
		if !ok {
			if r.URL.Query().Get("session") != "" {
				jsonError(w, http.StatusNotFound, "unknown session")
			} else {
				jsonError(w, http.StatusNotFound, "no request yet")
			}
			return
		}
		writeJSON(w, u)
	case "/lossless/stats":
		writeJSON(w, p.Stats())
	case "/lossless/events":
		after, _ := strconv.ParseInt(r.URL.Query().Get("after"), 10, 64)
		writeJSON(w, p.events.since(after))
	case "/lossless/health", "/lossless":
		if wantsJSON(r) {
			writeJSON(w, map[string]any{"ok": true, "upstream": p.up.base.String(), "writer": p.writer, "started_at": p.started})
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Content-Security-Policy", "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'")
		w.Write(dashboardHTML)
	default:
		jsonError(w, http.StatusNotFound, "unknown path; see /lossless/health")
	}
}

func wantsJSON(r *http.Request) bool {
	if r.URL.Query().Get("format") == "json" {
		return true
	}
	a := r.Header.Get("Accept")
	return strings.Contains(a, "application/json") && !strings.Contains(a, "text/html")
}

func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		jsonError(w, http.StatusInternalServerError, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(append(b, '\n'))
}

func jsonError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	b, _ := json.Marshal(map[string]any{"error": msg})
	w.Write(append(b, '\n'))
}
