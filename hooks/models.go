package hooks

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/internal/jsonscan"
)

// ModelIndex says which model wrote what, from the archive: blame asks it
// for the model behind a write it attributes to an agent's tool call.
//
// Two sources name a model. Spans the sweep archived from a transcript
// carry extra "model" on what the model produced (assistant text,
// thinking, tool calls), and a tool call's span also "tool_use_id", its
// call id; evidence a hook recorded carries extra "model" when the
// harness's payload named it (Codex, opencode), keyed by the call id.
// A context whose transcript names no model (or an archive swept before
// models were recorded) has none: At then says "".
type ModelIndex struct {
	// calls maps a call to its model: (writer, agent, call id), and
	// (writer, "", call id) with any agent set for a call found in no
	// context of that name.
	calls map[callRef]string
	spans map[ctxKey][]modelSpan // per context, in timestamp order
	names map[string]string      // each model's name once (a session names it thousands of times)
}

// callRef names a tool call; anyAgent marks the entry that ignores the
// context (a call id is unique in a session, but a harness's mock or a
// subagent may reuse one: the context's own entry comes first).
type callRef struct {
	writer, agent, call string
	anyAgent            bool
}

// modelSpan is one archived event that names its model.
type modelSpan struct {
	ts    time.Time
	model string
}

// modelNeedle preselects the lines that may name a model: every key of a
// canonical line is a quoted string followed by a colon, so a line
// without these bytes has no "model" key and is never parsed.
var modelNeedle = []byte(`"model":`)

// Models reads the archive of writers (every writer when nil) once and
// indexes the models its events name. Only lines holding the bytes
// `"model":` are parsed, and none is kept: the index holds strings only.
func Models(ctx context.Context, st *gitstore.Store, writers []string) (*ModelIndex, error) {
	m := &ModelIndex{calls: map[callRef]string{}, spans: map[ctxKey][]modelSpan{}, names: map[string]string{}}
	keep := func(writer string, line []byte) bool {
		if m.addPlain(writer, line) {
			return false
		}
		e, err := gitstore.ParseEvent(line)
		if err != nil {
			return true // Select reports it as it reports any unreadable line
		}
		m.add(writer, e.Op, e.Key, e.Session, e.Agent, e.TS, e.ExtraString("model"), e.ExtraString("tool_use_id"))
		return false
	}
	if _, err := st.Select(ctx, gitstore.Selection{Writers: writers, Any: [][]byte{modelNeedle}, Keep: keep}); err != nil {
		return nil, fmt.Errorf("models: %w", err)
	}
	for _, s := range m.spans {
		// Stable: events of one timestamp stay in archive order, so the
		// last of them is the latest.
		slices.SortStableFunc(s, func(a, b modelSpan) int { return a.ts.Compare(b.ts) })
	}
	return m, nil
}

// addPlain indexes a line in jsonscan's plain form (every line a writer
// produces with string, integer and boolean fields only: a span's), read
// in one pass without decoding the event; false for any other line,
// which the caller decodes.
func (m *ModelIndex) addPlain(writer string, line []byte) bool {
	var op, key, ts, session, agent, model, call string
	ok := jsonscan.Plain(line, func(k, v []byte, quoted bool) bool {
		var p *string
		switch string(k) {
		case "op":
			p = &op
		case "key":
			p = &key
		case "ts":
			p = &ts
		case "session":
			p = &session
		case "agent":
			p = &agent
		case "model":
			p = &model
		case "tool_use_id":
			p = &call
		default:
			return true
		}
		if quoted {
			*p = string(v)
		} else if p != &model && p != &call {
			return false // a known field of another type: the caller decides
		}
		return true
	})
	if !ok {
		return false
	}
	var t time.Time
	if ts != "" {
		var err error
		if t, err = time.Parse(time.RFC3339Nano, ts); err != nil {
			return false
		}
	}
	m.add(writer, gitstore.Op(op), key, session, agent, t, model, call)
	return true
}

// add indexes one event of writer, in archive order: its model (""
// when it names none, or not as a string), and call, the tool_use_id
// of a span.
func (m *ModelIndex) add(writer string, op gitstore.Op, key, session, agent string, ts time.Time, model, call string) {
	if model == "" {
		return // a nested "model" member, or not a string
	}
	if name, ok := m.names[model]; ok {
		model = name
	} else {
		m.names[model] = model
	}
	var calls []string
	if op == gitstore.OpSpan {
		if call != "" {
			calls = append(calls, call)
		}
	} else if key != "" {
		calls = callIDs(key)
	}
	for _, c := range calls {
		// Archive order: a later event for the same call (the sweep's
		// span after the hook's evidence) names the same model; the
		// first one stands.
		for _, ref := range []callRef{{writer: writer, agent: agent, call: c}, {writer: writer, call: c, anyAgent: true}} {
			if _, ok := m.calls[ref]; !ok {
				m.calls[ref] = model
			}
		}
	}
	k := ctxKey{writer, session, agent}
	m.spans[k] = append(m.spans[k], modelSpan{ts: ts, model: model})
}

// At returns the model behind an event of context (writer, session,
// agent) at ts: the model of tool call call when the archive names it
// (call is the call id, or an evidence key <call id>:<n>), else the
// model of the context's latest event at or before ts that names one,
// else "". A nil index knows nothing.
func (m *ModelIndex) At(writer, session, agent string, ts time.Time, call string) string {
	if m == nil {
		return ""
	}
	if call != "" {
		ids := callIDs(call)
		for _, loose := range []bool{false, true} {
			for _, id := range ids {
				ref := callRef{writer: writer, call: id, anyAgent: loose}
				if !loose {
					ref.agent = agent
				}
				if model, ok := m.calls[ref]; ok {
					return model
				}
			}
		}
	}
	s := m.spans[ctxKey{writer, session, agent}]
	i, _ := slices.BinarySearchFunc(s, ts, func(e modelSpan, t time.Time) int {
		if e.ts.After(t) {
			return 1
		}
		return -1 // at or before ts: keep searching right
	})
	if i == 0 {
		return ""
	}
	return s[i-1].model
}

// callIDs are the ids an evidence key may name its call by: the key,
// and without its :<n> (a hook keys the files of one call <call id>:<n>).
func callIDs(key string) []string {
	if i := strings.LastIndexByte(key, ':'); i > 0 && isDigits(key[i+1:]) {
		return []string{key, key[:i]}
	}
	return []string{key}
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
