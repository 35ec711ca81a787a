package gitstore

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/git-lossless/git-lossless/secrets"
)

// Event is one archived observation: a file version, a conversation span or
// a bookkeeping record, as stored on one line of a batch's events.jsonl.
//
// The line bytes are what the seal hashes (see FORMAT.md), so an Event read
// from the archive keeps them in Raw, and fields this version does not know
// (written by a newer one) are kept in Extra and written back unchanged.
type Event struct {
	Seq  int64  `json:"seq"`  // position in the writer's chain, from 1
	Prev string `json:"prev"` // seal of the previous entry (hex sha256)

	TS        time.Time `json:"ts"`
	Session   string    `json:"session,omitempty"`
	Agent     string    `json:"agent,omitempty"` // empty for a main context
	Sidechain bool      `json:"sidechain,omitempty"`
	Path      string    `json:"path,omitempty"`
	Path64    string    `json:"path64,omitempty"` // raw path bytes when Path is not valid UTF-8
	Repo      string    `json:"repo,omitempty"`
	Blob      string    `json:"blob,omitempty"`   // git blob sha1 (hex)
	SHA256    string    `json:"sha256,omitempty"` // sha256 of the same bytes (hex)
	Bytes     int64     `json:"bytes,omitempty"`
	Tokens    int64     `json:"tokens,omitempty"` // estimate, see EstimateTokens
	Source    string    `json:"source"`           // hook, sweep, proxy, mcp, cli
	Op        Op        `json:"op"`               // read, edit, write, span, prune, ... (op.go)
	View      string    `json:"view,omitempty"`   // full, lines:a-b
	Excluded  bool      `json:"excluded,omitempty"`
	Key       string    `json:"key,omitempty"` // dedupe key, e.g. a tool_use_id
	Tool      string    `json:"tool,omitempty"`
	// Harness is the agent harness the event came from, as its adapter
	// names it ("claude-code"; see package hooks): every event a hook, a
	// sweep, an import or a restore of a harness's session records. Empty
	// for events of no harness (proxy, recorded CLI and MCP reads outside
	// a session) and for events written before the field existed.
	Harness string `json:"harness,omitempty"`

	// Extra holds fields unknown to this version, raw JSON values by name.
	Extra map[string]json.RawMessage `json:"-"`
	// Raw is the exact stored line (no newline) for events read from the
	// archive; nil for events not yet written.
	Raw []byte `json:"-"`
	// Writer is the writer whose chain holds the event (not stored in the
	// line: it is the ref name).
	Writer string `json:"-"`
	// Commit is the batch commit that holds the event (not stored).
	Commit string `json:"-"`

	// vault holds the values redacted from this event's content until the
	// append writes them into its vault event (redact.go); never stored
	// in the line, cleared before events are handed back.
	vault []secrets.Secret
}

// knownKeys lists the line keys Event decodes itself, in canonical order.
var knownKeys = []string{
	"agent", "blob", "bytes", "excluded", "harness", "key", "op", "path", "path64",
	"prev", "repo", "seq", "session", "sha256", "sidechain", "source",
	"tokens", "tool", "ts", "view",
}

// tsLayout is the one timestamp form written: UTC, nanoseconds, fixed width
// so that lines sort and compare as text.
const tsLayout = "2006-01-02T15:04:05.000000000Z"

// Canonical returns the event as the canonical JSON line (no newline): an
// object with keys in byte order, no insignificant white space, zero-valued
// optional fields left out, strings escaped by encoding/json without HTML
// escaping. Writers produce exactly this form; verifiers hash the stored
// bytes as they are and never need to re-encode.
func (e *Event) Canonical() ([]byte, error) {
	type kv struct {
		k string
		v []byte
	}
	fields := make([]kv, 0, 20+len(e.Extra))
	str := func(k, v string) {
		if v != "" {
			fields = append(fields, kv{k, jsonString(v)})
		}
	}
	num := func(k string, v int64) {
		if v != 0 {
			fields = append(fields, kv{k, strconv.AppendInt(nil, v, 10)})
		}
	}
	flag := func(k string, v bool) {
		if v {
			fields = append(fields, kv{k, []byte("true")})
		}
	}
	str("agent", e.Agent)
	str("blob", e.Blob)
	num("bytes", e.Bytes)
	flag("excluded", e.Excluded)
	str("harness", e.Harness)
	str("key", e.Key)
	fields = append(fields, kv{"op", jsonString(string(e.Op))})
	str("path", e.Path)
	str("path64", e.Path64)
	fields = append(fields, kv{"prev", jsonString(e.Prev)})
	str("repo", e.Repo)
	fields = append(fields, kv{"seq", strconv.AppendInt(nil, e.Seq, 10)})
	str("session", e.Session)
	str("sha256", e.SHA256)
	flag("sidechain", e.Sidechain)
	fields = append(fields, kv{"source", jsonString(e.Source)})
	num("tokens", e.Tokens)
	str("tool", e.Tool)
	fields = append(fields, kv{"ts", jsonString(e.TS.UTC().Format(tsLayout))})
	str("view", e.View)
	if len(e.Extra) > 0 {
		for k, v := range e.Extra {
			if isKnownKey(k) {
				return nil, fmt.Errorf("extra field %q shadows a known field", k)
			}
			var buf bytes.Buffer
			if err := json.Compact(&buf, v); err != nil {
				return nil, fmt.Errorf("extra field %q: %w", k, err)
			}
			fields = append(fields, kv{k, buf.Bytes()})
		}
		sort.Slice(fields, func(i, j int) bool { return fields[i].k < fields[j].k })
	}
	out := make([]byte, 0, 256)
	out = append(out, '{')
	for i, f := range fields {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, jsonString(f.k)...)
		out = append(out, ':')
		out = append(out, f.v...)
	}
	out = append(out, '}')
	return out, nil
}

func isKnownKey(k string) bool {
	i := sort.SearchStrings(knownKeys, k)
	return i < len(knownKeys) && knownKeys[i] == k
}

// jsonString encodes s as a JSON string the way encoding/json does with
// HTML escaping off. Each run of invalid UTF-8 becomes one U+FFFD, written
// as the character itself (encoding/json would write the escape \ufffd,
// which decodes to the character and re-encodes raw: the line would not
// survive a parse and re-encode unchanged). Callers that must keep raw
// bytes (paths) store them base64 beside.
func jsonString(s string) []byte {
	plain := true // printable ASCII without quote or backslash: as it is
	for i := 0; i < len(s) && plain; i++ {
		plain = s[i] >= 0x20 && s[i] < 0x7f && s[i] != '"' && s[i] != '\\'
	}
	if plain {
		b := make([]byte, 0, len(s)+2)
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	b := buf.Bytes()
	return b[:len(b)-1] // drop Encode's newline
}

// ParseEvent decodes one stored line. Unknown fields land in Extra; the
// line itself is kept in Raw.
func ParseEvent(line []byte) (Event, error) {
	if e, ok := parseEventFast(line); ok {
		e.Raw = append([]byte(nil), line...)
		return e, nil
	}
	return parseEventJSON(line)
}

// parseEventJSON decodes any line with encoding/json.
func parseEventJSON(line []byte) (Event, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(line, &m); err != nil {
		return Event{}, fmt.Errorf("event line: %w", err)
	}
	var e Event
	if err := json.Unmarshal(line, &eventAlias{&e}); err != nil {
		return Event{}, fmt.Errorf("event line: %w", err)
	}
	for k, v := range m {
		if !isKnownKey(k) {
			if e.Extra == nil {
				e.Extra = make(map[string]json.RawMessage)
			}
			e.Extra[k] = v
		}
	}
	e.Raw = append([]byte(nil), line...)
	return e, nil
}

// eventAlias decodes the known fields without recursing into Event's methods.
type eventAlias struct{ *Event }

func (a *eventAlias) UnmarshalJSON(b []byte) error {
	type plain Event
	var p struct {
		*plain
		TS string `json:"ts"`
	}
	p.plain = (*plain)(a.Event)
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	if p.TS != "" {
		t, err := time.Parse(time.RFC3339Nano, p.TS)
		if err != nil {
			return fmt.Errorf("ts: %w", err)
		}
		a.Event.TS = t
	}
	return nil
}

// MarshalJSON writes the event as its stored line when it has one, so that
// `log --json` shows exactly what is sealed, unknown fields included, plus
// the writer (and the batch commit, when the reader knows it: events read
// through the index do not carry it) for context.
func (e Event) MarshalJSON() ([]byte, error) {
	line := e.Raw
	if line == nil {
		var err error
		if line, err = e.Canonical(); err != nil {
			return nil, err
		}
	}
	if e.Writer == "" && e.Commit == "" {
		return line, nil
	}
	out := make([]byte, 0, len(line)+80)
	out = append(out, '{')
	if e.Commit != "" {
		out = append(out, `"commit":`...)
		out = append(out, jsonString(e.Commit)...)
		out = append(out, ',')
	}
	if e.Writer != "" {
		out = append(out, `"writer":`...)
		out = append(out, jsonString(e.Writer)...)
		if len(line) > 2 {
			out = append(out, ',')
		}
	}
	out = append(out, line[1:]...)
	return out, nil
}

// SetPath stores p, keeping raw bytes in Path64 when p is not valid UTF-8
// (JSON cannot hold such bytes; file names on Linux can).
func (e *Event) SetPath(p string) {
	e.Path = p
	e.Path64 = ""
	if !utf8.ValidString(p) {
		e.Path64 = base64.StdEncoding.EncodeToString([]byte(p))
	}
}

// RawPath returns the path as the bytes the file system knows.
func (e *Event) RawPath() string {
	if e.Path64 != "" {
		if b, err := base64.StdEncoding.DecodeString(e.Path64); err == nil {
			return string(b)
		}
	}
	return e.Path
}

// EstimateTokens is the tokens figure recorded in events: an estimate of
// o200k tokens, one per four bytes of text rounded up (zero for empty
// content). It is cheap enough for every hook; reports that need exact
// counts (receipts, metering) count the archived bytes with a tokenizer.
func EstimateTokens(n int) int64 {
	return int64((n + 3) / 4)
}

// ExtraString returns the field k this version does not decode itself
// (Extra) when its value is a JSON string, "" otherwise: how adapters,
// blame and recall read the optional keys FORMAT.md lists (kind, model,
// epoch, real_path, ...).
func (e *Event) ExtraString(k string) string {
	raw, ok := e.Extra[k]
	if !ok {
		return ""
	}
	var v string
	if json.Unmarshal(raw, &v) != nil {
		return ""
	}
	return v
}
