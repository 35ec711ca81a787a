package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/guard"
)

// Env is what a hook run touches of the outside world.
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Getenv         func(string) string
	// Open opens the archive for a directory (default gitstore.OpenDir).
	Open func(dir string) (*gitstore.Store, error)
}

// Run handles one hook event and returns the process exit code. It never
// blocks or breaks Claude Code because of our own failure: any error, even
// a panic, becomes one line on stderr and exit 0 (for pre-tool-use: the
// edit is allowed). The only deliberate block is the guard's deny, which
// is an exit 0 with a deny decision on stdout.
func Run(ctx context.Context, event string, e Env) (code int) {
	name := EventName(event)
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(e.Stderr, "git-lossless: hook %s: internal error: %v (ignored)\n", event, r)
			code = 0
		}
	}()
	if name == "" {
		fmt.Fprintf(e.Stderr, "git-lossless: hook: unknown event %q (ignored)\n", event)
		return 0
	}
	if e.Getenv == nil {
		e.Getenv = os.Getenv
	}
	if e.Open == nil {
		e.Open = func(dir string) (*gitstore.Store, error) { return gitstore.OpenDir(dir, gitstore.Options{}) }
	}
	if err := run(ctx, name, e); err != nil {
		fmt.Fprintf(e.Stderr, "git-lossless: hook %s: %v (ignored)\n", name, err)
	}
	return 0
}

func run(ctx context.Context, name string, e Env) error {
	p, err := DecodePayload(e.Stdin)
	if err != nil {
		return err
	}
	if name == "pre-tool-use" && e.Getenv("LOSSLESS_GUARD") == "off" {
		return nil
	}
	dir := p.Cwd
	if dir == "" {
		dir, _ = os.Getwd()
	}
	st, err := e.Open(dir)
	if err != nil {
		return err
	}
	h := &handler{st: st, p: p, e: e}
	switch name {
	case "post-tool-use":
		return h.postToolUse(ctx)
	case "pre-tool-use":
		return h.preToolUse(ctx)
	case "session-start":
		return h.sessionStart(ctx)
	case "pre-compact":
		return h.preCompact(ctx)
	case "subagent-stop":
		_, err := SweepTranscript(ctx, st, p.contextTranscript(), SweepOptions{})
		return err
	case "session-end":
		_, err := SweepSession(ctx, st, p.TranscriptPath, SweepOptions{})
		return err
	}
	return nil
}

type handler struct {
	st *gitstore.Store
	p  Payload
	e  Env
}

func (h *handler) writer() string { return gitstore.WriterName("cc-", h.p.SessionID) }

func (h *handler) baseEvent(op string) gitstore.Event {
	return gitstore.Event{
		Session:   h.p.SessionID,
		Agent:     h.p.AgentID,
		Sidechain: h.p.AgentID != "",
		Source:    "hook",
		Op:        op,
		Tool:      h.p.ToolName,
		Key:       h.p.ToolUseID,
		View:      "full",
	}
}

// readResponse is PostToolUse's tool_response for Read.
type readResponse struct {
	Type string `json:"type"`
	File *struct {
		Content    *string `json:"content"`
		StartLine  int64   `json:"startLine"`
		NumLines   int64   `json:"numLines"`
		TotalLines int64   `json:"totalLines"`
	} `json:"file"`
}

// postToolUse archives what a tool result put into the context: the
// timely source of evidence (the transcript may lag a turn behind).
func (h *handler) postToolUse(ctx context.Context) error {
	abs := h.p.target()
	if abs == "" {
		return nil
	}
	var op string
	switch h.p.ToolName {
	case "Read":
		op = "read"
	case "Write":
		op = "write"
	case "Edit", "MultiEdit", "NotebookEdit":
		op = "edit"
	default:
		return nil
	}
	rec := gitstore.Record{Event: h.baseEvent(op), File: abs}
	rec.SetPath(h.st.RelPath(abs))
	if _, _, denied := h.st.Deny().Check(abs); denied {
		rec.Excluded = true // never read, never archived
		_, err := h.st.Append(ctx, h.writer(), []gitstore.Record{rec})
		return err
	}
	switch op {
	case "read":
		var r readResponse
		if err := json.Unmarshal(h.p.ToolResponse, &r); err != nil || r.File == nil || r.File.Content == nil {
			// image, pdf, notebook, file_unchanged: in the context, but
			// not as text we can hash; recorded without content.
			rec.View = "unknown"
			if r.Type != "" {
				rec.Extra = map[string]json.RawMessage{"result_type": jsonStr(r.Type)}
			}
			break
		}
		content := *r.File.Content
		rec.Content, rec.HasContent = []byte(content), true
		start := max(r.File.StartLine, 1)
		if start > 1 || (r.File.TotalLines > 0 && r.File.NumLines < r.File.TotalLines) {
			rec.View = fmt.Sprintf("lines:%d-%d", start, start+max(r.File.NumLines, 1)-1)
		} else if disk, err := os.ReadFile(abs); err == nil && sameText(disk, rec.Content) {
			rec.Extra = map[string]json.RawMessage{"disk_blob": jsonStr(gitstore.BlobID(disk))}
		}
	case "write":
		in := h.p.input()
		rec.Content, rec.HasContent = []byte(in.Content), true
	case "edit":
		disk, err := os.ReadFile(abs)
		if err != nil {
			return fmt.Errorf("read %s after %s: %w", abs, h.p.ToolName, err)
		}
		rec.Content, rec.HasContent = disk, true
	}
	_, err := h.st.Append(ctx, h.writer(), []gitstore.Record{rec})
	return err
}

func jsonStr(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

// sameText reports whether disk bytes and shown text are the same text up
// to line endings: Claude Code shows CRLF files with LF.
func sameText(disk, shown []byte) bool {
	if bytes.Equal(disk, shown) {
		return true
	}
	return bytes.Equal(bytes.ReplaceAll(disk, []byte("\r\n"), []byte("\n")), bytes.ReplaceAll(shown, []byte("\r\n"), []byte("\n")))
}

// preToolUse is the guard. It first sweeps the context's own transcript
// (incrementally) so compaction boundaries and re-attached files are in the
// archive, then decides from the archive alone.
func (h *handler) preToolUse(ctx context.Context) error {
	switch h.p.ToolName {
	case "Edit", "Write", "MultiEdit", "NotebookEdit":
	default:
		return nil
	}
	abs := h.p.target()
	if abs == "" {
		return nil
	}
	if tp := h.p.contextTranscript(); tp != "" {
		if _, err := SweepTranscript(ctx, h.st, tp, SweepOptions{}); err != nil && !errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(h.e.Stderr, "git-lossless: hook pre-tool-use: sweep %s: %v (deciding from the archive)\n", tp, err)
		}
	}
	rel := h.st.RelPath(abs)
	in := guard.Input{Path: abs, Agent: h.p.AgentID}
	in.RestoreHint = restoreHint(h.p.SessionID, h.p.AgentID, abs)
	disk, err := os.ReadFile(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("read %s: %w", abs, err)
	default:
		in.Exists = true
		in.DiskBlob = gitstore.BlobID(disk)
	}
	if in.Exists {
		ev, boundary, err := contextEvidence(ctx, h.st, h.writer(), h.p.SessionID, h.p.AgentID, rel)
		if err != nil {
			return err
		}
		in.Evidence, in.Boundary = ev, boundary
	}
	d := guard.Decide(in)
	if d.Allow {
		return nil
	}
	out, _ := json.Marshal(map[string]any{"hookSpecificOutput": map[string]any{
		"hookEventName":            "PreToolUse",
		"permissionDecision":       "deny",
		"permissionDecisionReason": d.Reason,
	}})
	if _, err := h.e.Stdout.Write(append(out, '\n')); err != nil {
		return err
	}
	// Record the denial for receipts and audits; a failure here must not
	// change the decision already printed.
	rec := gitstore.Record{Event: h.baseEvent("deny"), File: abs}
	rec.Key = "deny:" + h.p.ToolUseID
	rec.SetPath(rel)
	rec.Extra = map[string]json.RawMessage{"reason_kind": jsonStr(string(d.Kind))}
	if _, err := h.st.Append(ctx, h.writer(), []gitstore.Record{rec}); err != nil {
		fmt.Fprintf(h.e.Stderr, "git-lossless: hook pre-tool-use: record denial: %v\n", err)
	}
	return nil
}

func restoreHint(session, agent, path string) string {
	s := "git lossless restore --session " + session
	if agent != "" {
		s += " --agent " + agent
	}
	return s + " --files " + shellQuote(path)
}

// seenOps are the ops that put content into a context.
var seenOps = map[string]bool{"read": true, "write": true, "edit": true, "attach": true, "restore": true}

// contextEvidence gathers, from the archive, the evidence for one path in
// one context and that context's last compaction boundary.
func contextEvidence(ctx context.Context, st *gitstore.Store, writer, session, agent, rel string) ([]guard.Evidence, time.Time, error) {
	ag := agent
	if ag == "" {
		ag = gitstore.MainAgent
	}
	evs, err := st.Events(ctx, gitstore.Query{Writers: []string{writer}, Session: session, Agent: ag, Path: rel})
	if err != nil {
		return nil, time.Time{}, err
	}
	marks, err := st.Events(ctx, gitstore.Query{Writers: []string{writer}, Session: session, Agent: ag, Op: "compact"})
	if err != nil {
		return nil, time.Time{}, err
	}
	var boundary time.Time
	for _, m := range marks {
		if m.TS.After(boundary) {
			boundary = m.TS
		}
	}
	var out []guard.Evidence
	for _, e := range evs {
		if !seenOps[e.Op] {
			continue
		}
		out = append(out, evidenceOf(e))
	}
	return out, boundary, nil
}

func evidenceOf(e gitstore.Event) guard.Evidence {
	ev := guard.Evidence{TS: e.TS, Op: e.Op, Blob: e.Blob, Partial: e.View != "" && e.View != "full"}
	if raw, ok := e.Extra["disk_blob"]; ok {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			ev.DiskBlob = s
		}
	}
	if e.Excluded {
		ev.Blob, ev.DiskBlob = "", ""
	}
	return ev
}

func shellQuote(s string) string {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '/' || r == '.' || r == '_' || r == '-') {
			return "'" + bytesReplace(s, "'", `'\''`) + "'"
		}
	}
	return s
}

func bytesReplace(s, old, new string) string {
	return string(bytes.ReplaceAll([]byte(s), []byte(old), []byte(new)))
}

// preCompact marks the compaction boundary of the main context (the
// transcript's compact_boundary line, swept later, marks it precisely)
// and sweeps the session while everything is still in the transcript.
func (h *handler) preCompact(ctx context.Context) error {
	rec := gitstore.Record{Event: h.baseEvent("compact")}
	rec.Tool, rec.View = "", ""
	rec.TS = time.Now()
	rec.Key = "precompact:" + strconv.FormatInt(rec.TS.UnixNano(), 10)
	if h.p.Trigger != "" {
		rec.Extra = map[string]json.RawMessage{"trigger": jsonStr(h.p.Trigger)}
	}
	var errs []error
	if _, err := SweepSession(ctx, h.st, h.p.TranscriptPath, SweepOptions{}); err != nil {
		errs = append(errs, err)
	}
	if _, err := h.st.Append(ctx, h.writer(), []gitstore.Record{rec}); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// sessionStart hands the compacted context its working set back.
func (h *handler) sessionStart(ctx context.Context) error {
	if h.p.Source != "compact" && h.p.Source != "resume" {
		return nil
	}
	if h.p.TranscriptPath != "" {
		if _, err := SweepSession(ctx, h.st, h.p.TranscriptPath, SweepOptions{}); err != nil && !errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(h.e.Stderr, "git-lossless: hook session-start: sweep: %v\n", err)
		}
	}
	text, err := Manifest(ctx, h.st, h.p.SessionID, "", h.p.Source, ManifestBudget)
	if err != nil || text == "" {
		return err
	}
	out, _ := json.Marshal(map[string]any{"hookSpecificOutput": map[string]any{
		"hookEventName":     "SessionStart",
		"additionalContext": text,
	}})
	_, err = h.e.Stdout.Write(append(out, '\n'))
	return err
}
