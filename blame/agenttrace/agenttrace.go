// Package agenttrace writes line provenance as Agent Trace records: the
// vendor-neutral format of the Agent Trace specification, version 0.1.0
// (RFC, https://github.com/cursor/agent-trace), so that tools reading that
// format see which lines of each commit an agent wrote and which a person
// did, without reading git-lossless's archive.
//
// One record per commit, in the order given (blame.Commits: oldest first), one
// compact JSON object per line (JSON Lines, as the specification's reference
// store .agent-trace/traces.jsonl keeps them). In a record:
//
//   - version is "0.1.0", the specification's version.
//   - id is a name-based UUID (version 5) of the commit and of the record's
//     content (without id and tool): the same attribution of the same
//     commit always gets the same id, whatever git-lossless's version, a
//     different attribution a different one.
//   - timestamp is the commit's committer time (UTC, RFC 3339): when the
//     change was recorded, and the same on every run.
//   - vcs is {"type": "git", "revision": the commit's full id}.
//   - tool is git-lossless and its version: the tool that made the trace.
//     The harness that made the code (claude-code, codex, ...) is per line,
//     in metadata, since one commit may carry lines of several harnesses.
//   - files lists the files the commit added lines to (relative to its
//     first parent), by path. Each added line is in exactly one range.
//     Consecutive added lines form one range when they came from the same
//     archived write and are consecutive lines of that write's version, or
//     when no archived write produced any of them.
//   - conversations: one per agent context (harness, session, subagent),
//     with url git-lossless:session/SESSION (…/agent/AGENT for a subagent,
//     whose related names its parent session), contributor "ai" and the
//     model of its first range; a range whose model differs carries its own
//     contributor. Lines no archived write produced form one more
//     conversation without url, contributor EncodeOptions.Unrecorded
//     ("human" unless set).
//   - content_hash of a range is "sha256:" and the hex SHA-256 of its lines,
//     each followed by "\n".
//   - metadata["com.github.git-lossless"] carries what the format has no
//     field for: the first parent, and per changed file its old path,
//     binary flag, counts of removed and rewritten lines, and per agent
//     range the write it came from (harness, writer, seq, session, agent,
//     op, tool, call, model as archived, time, blob, line in the blob,
//     request when the caller asked blame for it).
//
// Same input, same bytes: nothing depends on the clock, map order or the
// order of files in the input.
package agenttrace

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/git-lossless/git-lossless/blame"
)

// Version is the Agent Trace specification version the records follow.
const Version = "0.1.0"

// MetadataKey is the reverse-domain key of git-lossless's data inside a
// record's metadata (the specification's §7.2 asks vendors for one).
const MetadataKey = "com.github.git-lossless"

// URIScheme starts the conversation URLs: git-lossless names sessions by
// their harness's id, and a URL is what the format has for a conversation.
const URIScheme = "git-lossless"

// Contributor types of the specification (§4).
const (
	Human   = "human"
	AI      = "ai"
	Mixed   = "mixed"
	Unknown = "unknown"
)

// EncodeOptions shapes the records.
type EncodeOptions struct {
	// ToolVersion is git-lossless's version, the record's tool.version.
	ToolVersion string
	// Unrecorded is the contributor type of lines no archived agent write
	// produced: Human (the default) or Unknown, for history from before
	// the archive recorded, where an agent may have written them.
	Unrecorded string
}

// Record is one Agent Trace record (§6.1). Field order is the output's.
type Record struct {
	Version   string    `json:"version"`
	ID        string    `json:"id"`
	Timestamp string    `json:"timestamp"`
	VCS       *VCS      `json:"vcs,omitempty"`
	Tool      *Tool     `json:"tool,omitempty"`
	Files     []File    `json:"files"`
	Metadata  *Metadata `json:"metadata,omitempty"`
}

// VCS names the revision a record's line numbers refer to.
type VCS struct {
	Type     string `json:"type"`
	Revision string `json:"revision"`
}

// Tool is the tool that generated the trace.
type Tool struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// File is one file's attributed ranges.
type File struct {
	Path          string         `json:"path"`
	Conversations []Conversation `json:"conversations"`
}

// Conversation groups the ranges one contributor context produced.
type Conversation struct {
	URL         string       `json:"url,omitempty"`
	Contributor *Contributor `json:"contributor,omitempty"`
	Ranges      []Range      `json:"ranges"`
	Related     []Related    `json:"related,omitempty"`
}

// Contributor is human, ai, mixed or unknown, with the model for ai.
type Contributor struct {
	Type    string `json:"type"`
	ModelID string `json:"model_id,omitempty"`
}

// Range is lines StartLine..EndLine (from 1, inclusive) of the file at the
// record's revision.
type Range struct {
	StartLine   int          `json:"start_line"`
	EndLine     int          `json:"end_line"`
	ContentHash string       `json:"content_hash,omitempty"`
	Contributor *Contributor `json:"contributor,omitempty"`
}

// Related links a conversation to another resource.
type Related struct {
	Type string `json:"type"`
	URL  string `json:"url"`
}

// Metadata is the record's metadata object: git-lossless's part only.
type Metadata struct {
	Lossless LosslessMeta `json:"com.github.git-lossless"`
}

// LosslessMeta is what the format has no field for.
type LosslessMeta struct {
	Parent string     `json:"parent,omitempty"` // first parent; none for a root
	Files  []FileMeta `json:"files"`
}

// FileMeta is one changed file: every file the commit changed, including
// those with no added line (deleted, binary, only removals).
type FileMeta struct {
	Path      string      `json:"path"`
	OldPath   string      `json:"old_path,omitempty"`
	Binary    bool        `json:"binary,omitempty"`
	Added     int         `json:"added"`
	Removed   int         `json:"removed"`
	Rewritten int         `json:"rewritten"`
	Writes    []WriteMeta `json:"writes,omitempty"`
}

// WriteMeta is the archived write one agent range came from.
type WriteMeta struct {
	StartLine int    `json:"start_line"`
	EndLine   int    `json:"end_line"`
	Harness   string `json:"harness,omitempty"`
	Writer    string `json:"writer"`
	Seq       int64  `json:"seq"`
	Session   string `json:"session,omitempty"`
	Agent     string `json:"agent,omitempty"`
	Model     string `json:"model,omitempty"`
	Op        string `json:"op"`
	Tool      string `json:"tool,omitempty"`
	Call      string `json:"call,omitempty"`
	TS        string `json:"ts"`
	Path      string `json:"path"` // as the write named it
	Blob      string `json:"blob"`
	Line      int    `json:"line"` // StartLine's number in Blob
	Request   string `json:"request,omitempty"`
}

// Encode writes one record per change to w, one JSON object per line.
func Encode(w io.Writer, changes []blame.CommitChange, opt EncodeOptions) error {
	for i := range changes {
		r, err := Build(&changes[i], opt)
		if err != nil {
			return err
		}
		b, err := marshal(r)
		if err != nil {
			return fmt.Errorf("agent trace of %s: %w", changes[i].Commit, err)
		}
		b = append(b, '\n')
		if _, err := w.Write(b); err != nil {
			return fmt.Errorf("write agent trace: %w", err)
		}
	}
	return nil
}

// Build makes the record of one commit's change.
func Build(c *blame.CommitChange, opt EncodeOptions) (*Record, error) {
	unrecorded := opt.Unrecorded
	switch unrecorded {
	case "":
		unrecorded = Human
	case Human, Unknown:
	default:
		return nil, fmt.Errorf("agent trace: unrecorded lines are %q or %q, not %q", Human, Unknown, opt.Unrecorded)
	}
	if c.Commit == "" {
		return nil, fmt.Errorf("agent trace: a change without a commit id")
	}
	ts := c.CommitTime
	if ts.IsZero() {
		ts = c.AuthorTime
	}
	r := &Record{
		Version:   Version,
		Timestamp: ts.UTC().Format(time.RFC3339),
		VCS:       &VCS{Type: "git", Revision: c.Commit},
		Tool:      &Tool{Name: "git-lossless", Version: opt.ToolVersion},
		Files:     []File{},
		Metadata:  &Metadata{Lossless: LosslessMeta{Parent: c.Parent, Files: []FileMeta{}}},
	}
	fcs := make([]*blame.FileChange, len(c.Files))
	for i := range c.Files {
		fcs[i] = &c.Files[i]
	}
	sort.SliceStable(fcs, func(i, j int) bool { return fcs[i].Path < fcs[j].Path })
	for _, fc := range fcs {
		f, fm := buildFile(fc, unrecorded)
		if len(f.Conversations) > 0 {
			r.Files = append(r.Files, f)
		}
		r.Metadata.Lossless.Files = append(r.Metadata.Lossless.Files, fm)
	}
	// The id covers the record without id and tool: a new git-lossless
	// version re-exporting the same attribution keeps the ids.
	tool := r.Tool
	r.Tool = nil
	b, err := marshal(r)
	r.Tool = tool
	if err != nil {
		return nil, fmt.Errorf("agent trace of %s: %w", c.Commit, err)
	}
	r.ID = recordID(c.Commit, b)
	return r, nil
}

// run is consecutive added lines of one origin.
type run struct {
	start, end int
	origin     *blame.Origin
	hash       []byte // sha256 state input: the lines, each + "\n"
}

// buildFile groups a file's added lines into ranges and the ranges into
// conversations, in the order of their first line.
func buildFile(fc *blame.FileChange, unrecorded string) (File, FileMeta) {
	fm := FileMeta{Path: fc.Path, OldPath: fc.OldPath, Binary: fc.Binary, Added: len(fc.Added), Removed: fc.Removed, Rewritten: fc.Rewritten}
	lines := append([]blame.AddedLine(nil), fc.Added...)
	sort.SliceStable(lines, func(i, j int) bool { return lines[i].N < lines[j].N })
	var runs []*run
	for _, l := range lines {
		if n := len(runs); n > 0 && continues(runs[n-1], l) {
			r := runs[n-1]
			r.end = l.N
			r.hash = append(append(r.hash, l.Text...), '\n')
			continue
		}
		runs = append(runs, &run{start: l.N, end: l.N, origin: l.Origin, hash: append([]byte(l.Text), '\n')})
	}
	type conv struct {
		c     Conversation
		model string // the conversation's contributor model_id
	}
	var convs []*conv
	byKey := map[string]*conv{}
	for _, r := range runs {
		key, o := "\x00unrecorded", r.origin
		if o != nil {
			key = contextKey(o)
		}
		cv := byKey[key]
		if cv == nil {
			cv = &conv{}
			if o == nil {
				cv.c.Contributor = &Contributor{Type: unrecorded}
			} else {
				cv.model = modelID(o.Model)
				cv.c.URL = sessionURL(o.Session, o.Agent)
				cv.c.Contributor = &Contributor{Type: AI, ModelID: cv.model}
				if o.Agent != "" && o.Session != "" {
					cv.c.Related = []Related{{Type: "session", URL: sessionURL(o.Session, "")}}
				}
			}
			byKey[key] = cv
			convs = append(convs, cv)
		}
		sum := sha256.Sum256(r.hash)
		rg := Range{StartLine: r.start, EndLine: r.end, ContentHash: "sha256:" + hex.EncodeToString(sum[:])}
		if o != nil {
			if m := modelID(o.Model); m != cv.model {
				rg.Contributor = &Contributor{Type: AI, ModelID: m}
			}
			fm.Writes = append(fm.Writes, WriteMeta{
				StartLine: r.start, EndLine: r.end,
				Harness: o.Harness, Writer: o.Writer, Seq: o.Seq, Session: o.Session, Agent: o.Agent,
				Model: o.Model, Op: string(o.Op), Tool: o.Tool, Call: o.Call, TS: o.TS.UTC().Format(time.RFC3339Nano),
				Path: o.Path, Blob: o.Blob, Line: o.Line, Request: o.Request,
			})
		}
		cv.c.Ranges = append(cv.c.Ranges, rg)
	}
	f := File{Path: fc.Path, Conversations: make([]Conversation, len(convs))}
	for i, cv := range convs {
		f.Conversations[i] = cv.c
	}
	return f, fm
}

// continues reports whether l extends r: the next line of the file, and
// either no archived write produced either, or the same write did, as the
// next line of its version.
func continues(r *run, l blame.AddedLine) bool {
	if l.N != r.end+1 {
		return false
	}
	a, b := r.origin, l.Origin
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Writer == b.Writer && a.Seq == b.Seq && a.Blob == b.Blob && a.Path == b.Path &&
		b.Line == a.Line+(r.end-r.start)+1
}

// contextKey names the agent context an origin belongs to: its harness,
// session and subagent (the writer when the session is unknown).
func contextKey(o *blame.Origin) string {
	w := ""
	if o.Session == "" {
		w = o.Writer
	}
	return strings.Join([]string{o.Harness, o.Session, o.Agent, w}, "\x00")
}

// sessionURL is the conversation URL of a session (and subagent): an
// opaque URI in git-lossless's scheme, since sessions have no web address;
// "" when the session is unknown (the field is optional).
func sessionURL(session, agent string) string {
	if session == "" {
		return ""
	}
	u := URIScheme + ":session/" + url.PathEscape(session)
	if agent != "" {
		u += "/agent/" + url.PathEscape(agent)
	}
	return u
}

// modelID writes a model in the models.dev form provider/model the
// specification asks for (§6.7), adding the provider for the model
// families whose provider is certain, as the specification's reference
// implementation does (reference/trace-store.ts normalizeModelId); other
// names are kept as archived. A name longer than the schema's 250
// characters is left out (metadata keeps it).
func modelID(m string) string {
	if m == "" || strings.Contains(m, "/") {
		return limitModel(m)
	}
	for _, p := range []struct{ prefix, provider string }{
		{"claude-", "anthropic"},
		{"gpt-", "openai"},
		{"o1", "openai"},
		{"o3", "openai"},
		{"o4-", "openai"},
		{"codex-", "openai"},
		{"gemini-", "google"},
	} {
		if strings.HasPrefix(m, p.prefix) {
			return limitModel(p.provider + "/" + m)
		}
	}
	return limitModel(m)
}

func limitModel(m string) string {
	if len(m) > 250 {
		return ""
	}
	return m
}

// idNamespace is the UUID namespace of record ids: the version 5 UUID of
// this URL in the URL namespace of RFC 9562, computed on first use (not
// by every git-lossless process at start-up).
var idNamespace = sync.OnceValue(func() [16]byte {
	return uuid5(mustUUID("6ba7b811-9dad-11d1-80b4-00c04fd430c8"), []byte("https://github.com/git-lossless/git-lossless/blame/agenttrace"))
})

// recordID is the version 5 UUID of the commit and the record's bytes
// without id and tool: stable across runs, different when the attribution
// is.
func recordID(commit string, withoutID []byte) string {
	sum := sha256.Sum256(withoutID)
	u := uuid5(idNamespace(), []byte(commit+"\x00"+hex.EncodeToString(sum[:])))
	return formatUUID(u)
}

func uuid5(ns [16]byte, name []byte) [16]byte {
	h := sha1.New()
	h.Write(ns[:])
	h.Write(name)
	var u [16]byte
	copy(u[:], h.Sum(nil))
	u[6] = u[6]&0x0f | 0x50 // version 5
	u[8] = u[8]&0x3f | 0x80 // RFC 9562 variant
	return u
}

func mustUUID(s string) [16]byte {
	var u [16]byte
	b, err := hex.DecodeString(strings.ReplaceAll(s, "-", ""))
	if err != nil || len(b) != 16 {
		panic("agenttrace: bad UUID " + s)
	}
	copy(u[:], b)
	return u
}

func formatUUID(u [16]byte) string {
	h := hex.EncodeToString(u[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// marshal is json.Marshal without HTML escaping (paths and requests stay
// readable) and without the trailing newline.
func marshal(r *Record) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
