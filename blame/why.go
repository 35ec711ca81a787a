package blame

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"filippo.io/age"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/hooks"
	"github.com/git-lossless/git-lossless/hooks/transcript"
	"github.com/git-lossless/git-lossless/internal/jsonscan"
	"github.com/git-lossless/git-lossless/recall"
	"github.com/git-lossless/git-lossless/receipt"
	"github.com/git-lossless/git-lossless/receipt/note"
)

// Why is the context at the moment a line was written: what the person
// asked, what the context had seen, the call that wrote the line and the
// receipt of the commit that carries it.
type Why struct {
	Line Line `json:"line"`
	// Request is the context's last user request before the write,
	// masked as recall masks ("" with RequestLocked when it is encrypted
	// to an identity not given).
	Request       string `json:"request,omitempty"`
	RequestLocked bool   `json:"request_locked,omitempty"`
	// Call is the tool call that wrote the line, as the transcript
	// archived it (nil when no span of it is archived).
	Call *Call `json:"call,omitempty"`
	// Seen is every file the context had a version of before the write,
	// the latest version of each, in path order.
	Seen []Seen `json:"seen"`
	// Receipts are the receipts of the commit that carries the line.
	Receipts []ReceiptRef `json:"receipts"`
}

// Call is an archived tool call.
type Call struct {
	ID     string          `json:"id"`
	Tool   string          `json:"tool"`
	Input  json.RawMessage `json:"input,omitempty"` // masked as recall masks
	Locked bool            `json:"locked,omitempty"`
}

// Seen is one file version a context had before the write.
type Seen struct {
	Path string      `json:"path"`
	Op   gitstore.Op `json:"op"` // read, edit, write, attach, restore
	TS   time.Time   `json:"ts"`
	Blob string      `json:"blob,omitempty"` // "" for a deny-listed file: accessed, not archived
	View string      `json:"view,omitempty"`
	// CurrentAtWrite: no other version of the file is archived between
	// this one and the write (the archive knows no newer version then).
	// Never set for a partial view (View lines:A-B): it pins no version.
	CurrentAtWrite bool `json:"current_at_write"`
	// Compacted: seen before the context's last compaction before the
	// write, so no longer in its window when it wrote.
	Compacted bool `json:"compacted,omitempty"`
	Excluded  bool `json:"excluded,omitempty"`
}

// State names what the version was to the context when it wrote: denied
// (a deny-listed file: accessed, not archived), partial (lines only: no
// version pinned), compacted (seen before its last compaction), current
// (no newer version archived before the write) or stale.
func (s Seen) State() string {
	switch {
	case s.Excluded:
		return "denied"
	case s.View != "" && s.View != "full":
		return "partial"
	case s.Compacted:
		return "compacted"
	case s.CurrentAtWrite:
		return "current"
	}
	return "stale"
}

// ReceiptRef names a receipt of the commit that carries the line.
type ReceiptRef struct {
	Writer  string `json:"writer"`
	Note    string `json:"note"` // the note blob
	Carried bool   `json:"carried,omitempty"`
	// Names: the receipt lists the writing context among its contexts.
	Names bool `json:"names_context"`
}

// WhyOptions tune Why.
type WhyOptions struct {
	Options
}

// ErrNoOrigin is returned by Why for a line no archived agent write made.
var ErrNoOrigin = errors.New("no archived agent write made this line")

// WhyLine explains line n (from 1) of path at rev ("" the working tree).
func WhyLine(ctx context.Context, st *gitstore.Store, rev, path string, n int, opt WhyOptions) (*Why, error) {
	o := opt.Options
	o.Start, o.End = n, n
	lines, err := File(ctx, st, rev, path, o)
	if err != nil {
		return nil, err
	}
	if len(lines) != 1 {
		return nil, fmt.Errorf("blame: %s has no line %d", path, n)
	}
	w := &Why{Line: lines[0], Seen: []Seen{}, Receipts: []ReceiptRef{}}
	if w.Line.Commit != Uncommitted {
		rs, err := receipt.Find(ctx, st, w.Line.Commit)
		if err != nil {
			return nil, fmt.Errorf("blame: receipts of %s: %w", short(w.Line.Commit), err)
		}
		for _, r := range rs {
			ref := ReceiptRef{Writer: r.Writer, Note: r.Note.Blob}
			if p := r.Parsed; p != nil {
				ref.Carried = len(p.Carried) > 0
				if o := w.Line.Origin; o != nil {
					ref.Names = receiptNames(p.Contexts, p.Writers, o)
				}
			}
			w.Receipts = append(w.Receipts, ref)
		}
	}
	org := w.Line.Origin
	if org == nil {
		return w, ErrNoOrigin
	}
	if err := whyContext(ctx, st, org, w, opt); err != nil {
		return nil, err
	}
	return w, nil
}

func receiptNames(cs []note.Context, ws []note.Writer, o *Origin) bool {
	for _, c := range cs {
		if c.Session == o.Session && c.Agent == o.Agent {
			for _, wr := range ws {
				if wr.Name == o.Writer {
					return true
				}
			}
		}
	}
	return false
}

// whyContext reads the writing context's events before the write: its
// versions seen, its last request, the call.
func whyContext(ctx context.Context, st *gitstore.Store, o *Origin, w *Why, opt WhyOptions) error {
	needle := []byte(`"session":` + string(jsonscan.Quote(o.Session)))
	sel := gitstore.Selection{Writers: []string{o.Writer}}
	if o.Session != "" {
		sel.Any = [][]byte{needle}
	}
	evs, err := st.Select(ctx, sel)
	if err != nil {
		return fmt.Errorf("blame: events of %s: %w", o.Writer, err)
	}
	var mine []gitstore.Event
	var boundary time.Time
	for _, e := range evs {
		if e.Session != o.Session || e.Agent != o.Agent || e.Seq >= o.Seq {
			continue
		}
		mine = append(mine, e)
		if e.Op == gitstore.OpCompact && strings.HasPrefix(e.Key, "compact:") && e.TS.After(boundary) {
			boundary = e.TS
		}
	}
	// The request: the context's last user text span before the write.
	// The call: the tool_use span whose id is the write's call, looked
	// for among the context's spans of the same tool nearest the write
	// (span keys name transcript lines, not calls, so the id is read from
	// the span's content: a few spans are opened, not all).
	var req *gitstore.Event
	var calls []*gitstore.Event
	for i := range evs {
		e := &evs[i]
		if e.Op != gitstore.OpSpan || e.Session != o.Session || e.Agent != o.Agent {
			continue
		}
		switch spanKind(e) {
		case "tool_use":
			if o.Call != "" && e.Tool == o.Tool {
				calls = append(calls, e)
			}
		case "user":
			if e.Seq < o.Seq {
				req = e
			}
		}
	}
	sort.SliceStable(calls, func(i, j int) bool { return absDur(calls[i].TS.Sub(o.TS)) < absDur(calls[j].TS.Sub(o.TS)) })
	id := callID(o.Call)
	for i, e := range calls {
		if i == maxCallSpans {
			break
		}
		body, err := st.Crypt().OpenContent(ctx, *e, opt.Identities)
		if err != nil {
			if w.Call == nil {
				w.Call = &Call{ID: o.Call, Tool: o.Tool, Locked: true}
			}
			continue
		}
		if got, _ := jsonscan.String(jsonscan.Field(body, "id")); got != id {
			continue
		}
		c := &Call{ID: o.Call, Tool: e.Tool}
		if in := jsonscan.Field(body, "input"); in != nil {
			masked := recall.Mask(string(in))
			if json.Valid([]byte(masked)) {
				c.Input = json.RawMessage(masked)
			} else {
				c.Input, _ = json.Marshal(masked)
			}
		}
		w.Call = c
		break
	}
	if w.Call != nil && w.Call.Locked && w.Call.Input != nil {
		w.Call.Locked = false
	}
	if req != nil {
		w.Request, w.RequestLocked = requestText(ctx, st, req, opt.Identities)
	}
	// Latest version of each file the context had before the write.
	latest := map[string]*gitstore.Event{}
	for i := range mine {
		e := &mine[i]
		if !e.Op.IsFileVersion() {
			continue
		}
		latest[hooks.RealPath(*e)] = e
	}
	paths := make([]string, 0, len(latest))
	for p := range latest {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	// Whether each was current: the newest version any context archived
	// of the file at the write's time.
	all, err := hooks.FileEvents(ctx, st, paths)
	if err != nil {
		return fmt.Errorf("blame: %w", err)
	}
	newest := map[string]gitstore.Event{}
	for _, e := range all {
		if e.Excluded || e.Blob == "" || e.View != "" && e.View != "full" || e.TS.After(o.TS) {
			continue
		}
		if e.Writer == o.Writer && e.Seq >= o.Seq {
			continue
		}
		p := hooks.RealPath(e)
		if cur, ok := newest[p]; !ok || !e.TS.Before(cur.TS) {
			newest[p] = e
		}
	}
	for _, p := range paths {
		e := latest[p]
		s := Seen{Path: p, Op: e.Op, TS: e.TS.UTC(), View: e.View, Excluded: e.Excluded,
			Compacted: !boundary.IsZero() && e.TS.Before(boundary)}
		if !e.Excluded {
			s.Blob = e.Blob
			if n, ok := newest[p]; ok && (e.View == "" || e.View == "full") {
				s.CurrentAtWrite = n.Blob == e.Blob
			}
		}
		w.Seen = append(w.Seen, s)
	}
	return nil
}

func spanKind(e *gitstore.Event) string { return e.ExtraString("kind") }

// maxCallSpans bounds the spans opened to find a write's call.
const maxCallSpans = 8

// callID is the tool call id a write event's key holds: the key itself,
// or "<call id>:<n>" for the n-th file of a call that wrote several
// (Codex's apply_patch).
func callID(key string) string {
	if i := strings.LastIndexByte(key, ':'); i > 0 && i < len(key)-1 {
		digits := true
		for _, c := range key[i+1:] {
			digits = digits && c >= '0' && c <= '9'
		}
		if digits {
			return key[:i]
		}
	}
	return key
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// requestText is a user text span's words, masked as recall masks;
// locked when it is encrypted to an identity not given.
func requestText(ctx context.Context, st *gitstore.Store, ev *gitstore.Event, ids []age.Identity) (string, bool) {
	body, err := st.Crypt().OpenContent(ctx, *ev, ids)
	if err != nil {
		return "", true
	}
	return recall.Mask(transcript.ContentText(jsonscan.Field(body, "text"))), false
}

// fillRequests sets Origin.Request on every line with an origin: the last
// user request of the writing context before the write. Each writing
// context's spans are selected once and each request span opened once,
// however many lines and writes share them.
func fillRequests(ctx context.Context, st *gitstore.Store, lines []Line, ids []age.Identity) error {
	type ctxKey struct{ writer, session, agent string }
	users := map[ctxKey][]*gitstore.Event{} // user text spans, seq order
	texts := map[*gitstore.Event]string{}
	for i := range lines {
		o := lines[i].Origin
		if o == nil {
			continue
		}
		k := ctxKey{o.Writer, o.Session, o.Agent}
		us, ok := users[k]
		if !ok {
			spanNeedle := gitstore.OpSpan.Needle()
			sel := gitstore.Selection{Writers: []string{o.Writer}, Keep: func(_ string, line []byte) bool {
				return bytes.Contains(line, spanNeedle)
			}}
			if o.Session != "" {
				sel.Any = [][]byte{[]byte(`"session":` + string(jsonscan.Quote(o.Session)))}
			}
			evs, err := st.Select(ctx, sel)
			if err != nil {
				return fmt.Errorf("blame: events of %s: %w", o.Writer, err)
			}
			for j := range evs {
				e := &evs[j]
				if e.Op == gitstore.OpSpan && e.Session == o.Session && e.Agent == o.Agent && spanKind(e) == "user" {
					us = append(us, e)
				}
			}
			users[k] = us
		}
		var req *gitstore.Event
		for _, e := range us {
			if e.Seq < o.Seq {
				req = e
			}
		}
		if req == nil {
			continue
		}
		t, ok := texts[req]
		if !ok {
			t, _ = requestText(ctx, st, req, ids)
			texts[req] = t
		}
		o.Request = t
	}
	return nil
}
