package proxy

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"filippo.io/age"

	"github.com/git-lossless/git-lossless/gitstore"
)

// SpanFormat is the first member of every span document.
const SpanFormat = "git-lossless proxy span v1"

// Span is what one compaction folds away: the original messages it
// removed from (or cut in) the forwarded request, and the summary that
// stands in for them. Its JSON form is the archived content:
//
//	{"format":"git-lossless proxy span v1","id":"sp-...","kind":"summary",
//	 "session":"s-...","model":"...","route":"openai","ts":"...",
//	 "window":8192,"tokens_before":9000,"tokens_after":5000,"count_source":"est",
//	 "messages":[{"index":3,"message":{...the client's message, as sent...}},
//	             {"index":4,"archived_in":"sp-..."}],
//	 "summary":"...","pins":["..."],"extends":"sp-..."}
//
// kind is "summary" (messages folded into the summary), "spill" (one
// oversized message, archived whole and forwarded as head + tail) or
// "journal" (one message as a client sent it, archived by full capture
// whether or not it was ever compacted: journal.go; it has no window,
// token counts or summary, and its id is its dedupe key).
type Span struct {
	Format       string        `json:"format"`
	ID           string        `json:"id"`
	Kind         string        `json:"kind"`
	Session      string        `json:"session"`
	Model        string        `json:"model"`
	Route        string        `json:"route"`
	TS           time.Time     `json:"ts"`
	Window       int           `json:"window,omitempty"`
	TokensBefore int           `json:"tokens_before,omitempty"`
	TokensAfter  int           `json:"tokens_after,omitempty"`
	CountSource  string        `json:"count_source,omitempty"`
	Messages     []SpanMessage `json:"messages,omitempty"`
	Summary      string        `json:"summary,omitempty"`
	Pins         []string      `json:"pins,omitempty"`
	Extends      string        `json:"extends,omitempty"`
}

// SpanMessage is one archived message and its index in the request. A
// message an earlier span of the session already holds whole (a spill) is
// not archived again: ArchivedIn names that span instead.
type SpanMessage struct {
	Index      int             `json:"index"`
	Message    json.RawMessage `json:"message,omitempty"`
	ArchivedIn string          `json:"archived_in,omitempty"`
}

// Archive stores spans. WriteSpan must be durable when it returns: the
// compacted request, which names the span, is sent only afterwards. The
// span's message bytes belong to the request being handled: an archive
// that keeps them must copy them.
type Archive interface {
	WriteSpan(ctx context.Context, sp *Span) error
}

var spanEnc = sync.OnceValue(func() *base32.Encoding {
	return base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)
})

// NewSpanID returns a fresh span id: "sp-" and 80 random bits (16 base32
// characters). Ids never depend on the clock, so two compactions in the
// same instant cannot collide.
func NewSpanID() string {
	var b [10]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return "sp-" + spanEnc().EncodeToString(b[:])
}

// ValidSpanID reports whether id has the form NewSpanID returns.
func ValidSpanID(id string) bool {
	rest, ok := strings.CutPrefix(id, "sp-")
	if !ok || len(rest) != 16 {
		return false
	}
	_, err := spanEnc().DecodeString(rest)
	return err == nil
}

// StoreArchive writes spans to a git archive, one event per span on the
// proxy's writer: op "span", source "proxy", the span id in the extra field
// "span" (not the dedupe key: ids are random, and a key would make every
// append check the writer's whole history; journal spans, whose ids are
// hashes, are keyed by them: WriteJournal), the span document as content
// (age-encrypted when lossless.encrypt is on), and counts in clear extra
// fields. The event line holds no message text.
type StoreArchive struct {
	Store  *gitstore.Store
	Writer string
}

// WriteSpan appends the span and returns when it is durable.
func (a *StoreArchive) WriteSpan(ctx context.Context, sp *Span) error {
	return a.WriteSpans(ctx, []*Span{sp})
}

// WriteSpans appends the spans of one request as one batch.
func (a *StoreArchive) WriteSpans(ctx context.Context, spans []*Span) error {
	recs := make([]gitstore.Record, 0, len(spans))
	for _, sp := range spans {
		rec, err := spanRecord(sp)
		if err != nil {
			return err
		}
		recs = append(recs, rec)
	}
	res, err := a.Store.Append(ctx, a.Writer, recs)
	if err != nil {
		return err
	}
	stored := 0
	for _, e := range res.Events {
		if e.Op == gitstore.OpSpan { // not the vault event of redacted secrets
			stored++
		}
	}
	if stored != len(recs) {
		return fmt.Errorf("%d of %d spans were not stored", len(recs)-stored, len(recs))
	}
	return nil
}

// encodeSpan writes a span's document. The archived messages are written
// as the bytes the client sent (they were decoded when folded, so they are
// valid JSON), not re-encoded.
func encodeSpan(sp *Span) ([]byte, error) {
	c := *sp
	c.Messages = nil
	head, err := marshalNoEscape(&c)
	if err != nil {
		return nil, err
	}
	size := len(head) + 16
	for _, m := range sp.Messages {
		size += len(m.Message) + len(m.ArchivedIn) + 48
	}
	out := make([]byte, 0, size)
	out = append(out, head[:len(head)-1]...) // without the closing brace
	out = append(out, `,"messages":[`...)
	for i, m := range sp.Messages {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, `{"index":`...)
		out = strconv.AppendInt(out, int64(m.Index), 10)
		if m.Message != nil {
			out = append(out, `,"message":`...)
			out = append(out, m.Message...)
		}
		if m.ArchivedIn != "" {
			out = append(out, `,"archived_in":`...)
			out = strconv.AppendQuote(out, m.ArchivedIn)
		}
		out = append(out, '}')
	}
	return append(out, "]}"...), nil
}

// spanRecord is the archive record of a span: the document as content,
// counts and names (never message text) in the event line.
func spanRecord(sp *Span) (gitstore.Record, error) {
	doc, err := encodeSpan(sp)
	if err != nil {
		return gitstore.Record{}, err
	}
	extra := map[string]json.RawMessage{}
	put := func(k string, v any) {
		b, _ := json.Marshal(v)
		extra[k] = b
	}
	put("span", sp.ID)
	put("kind", sp.Kind)
	put("model", sp.Model)
	put("route", sp.Route)
	put("messages", len(sp.Messages))
	put("tokens_before", sp.TokensBefore)
	put("tokens_after", sp.TokensAfter)
	put("window", sp.Window)
	put("count_source", sp.CountSource)
	if sp.Extends != "" {
		put("extends", sp.Extends)
	}
	if sp.Kind == KindJournal && len(sp.Messages) == 1 {
		put("index", sp.Messages[0].Index)
	}
	chars := 0
	for _, m := range sp.Messages {
		chars += len(m.Message)
	}
	return gitstore.Record{
		Event: gitstore.Event{
			TS: sp.TS, Session: sp.Session, Source: "proxy", Op: gitstore.OpSpan,
			Tokens: int64(float64(chars)/charsPerToken + 0.5), Extra: extra,
		},
		Content: doc, HasContent: true, Encrypt: true,
	}, nil
}

// MemoryArchive keeps spans in memory (tests, and embedding without a
// repository).
type MemoryArchive struct {
	mu    sync.Mutex
	spans []*Span
	ids   map[string]bool // journal span ids held
	// Fail, when set, makes WriteSpan fail (tests of the fail-open path).
	Fail error
}

// WriteSpan stores a copy of sp.
func (a *MemoryArchive) WriteSpan(ctx context.Context, sp *Span) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.Fail != nil {
		return a.Fail
	}
	c := *sp
	c.Messages = make([]SpanMessage, len(sp.Messages))
	for i, m := range sp.Messages {
		c.Messages[i] = SpanMessage{Index: m.Index, Message: append(json.RawMessage(nil), m.Message...), ArchivedIn: m.ArchivedIn}
	}
	a.spans = append(a.spans, &c)
	return nil
}

// Spans returns the spans written so far.
func (a *MemoryArchive) Spans() []*Span {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]*Span(nil), a.spans...)
}

// ErrNoSpan is returned by ReadSpan for an unknown id.
var ErrNoSpan = errors.New("no such span")

// ReadSpan finds a span in a git archive by id and returns its event and
// document. Encrypted spans need ids (else the error wraps
// gitstore.ErrContentLocked).
func ReadSpan(ctx context.Context, st *gitstore.Store, id string, ids []age.Identity) (gitstore.Event, *Span, error) {
	evs, err := st.Events(ctx, gitstore.Query{Op: gitstore.OpSpan, Source: "proxy"})
	if err != nil {
		return gitstore.Event{}, nil, err
	}
	want := `"` + id + `"`
	var ev gitstore.Event
	found := false
	for _, e := range evs {
		if string(e.Extra["span"]) == want {
			ev, found = e, true
		}
	}
	if !found {
		return gitstore.Event{}, nil, fmt.Errorf("%w %s in %s", ErrNoSpan, id, st.Location().CommonDir)
	}
	data, err := st.Crypt().OpenContent(ctx, ev, ids)
	if err != nil {
		return ev, nil, err
	}
	var sp Span
	if err := json.Unmarshal(data, &sp); err != nil {
		return ev, nil, fmt.Errorf("span %s: %w", id, err)
	}
	return ev, &sp, nil
}

// SpanIDOf returns the span id a span event carries ("" for other events).
func SpanIDOf(ev *gitstore.Event) string {
	var id string
	if json.Unmarshal(ev.Extra["span"], &id) != nil {
		return ""
	}
	return id
}
