package codex

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/git-lossless/git-lossless/hooks"
	"github.com/git-lossless/git-lossless/hooks/shellread"
	"github.com/git-lossless/git-lossless/hooks/transcript"
)

// ReadTranscript implements hooks.Harness with the rollout Reader. A read
// that starts past the first line learns the rollout's session_meta
// (session, agent, keys) from its first line, when r can be read at
// offset 0 (the sweep hands it the open file).
//
// A shell call that hooks/shellread recognises as a read of one file has
// that file named on its call's and its result's spans (ToolUse.Path,
// ToolResult.Path), resolved against the call's workdir (else the
// session's cwd): the store's deny list then keeps a denied file's
// content (`cat .env`) out of the spans as it keeps it out of the
// evidence. Shell reads become evidence only in the hook, which proves
// the output against the disk; the sweep records them as spans.
func (Harness) ReadTranscript(r io.Reader, at hooks.TranscriptPos) hooks.TranscriptReader {
	size := at.Left
	if size <= 0 {
		size = 256 << 10
	}
	var meta *SessionMeta
	if at.Offset > 0 {
		if ra, ok := r.(io.ReaderAt); ok {
			meta, _ = ReadSessionMeta(io.NewSectionReader(ra, 0, MaxMetaLine+1))
		}
	}
	rd := NewReaderSize(r, at.Offset, meta, size)
	rd.SetPending(at.Pending)
	if at.Offset > 0 && len(at.State) > 0 {
		var st rolloutState
		if json.Unmarshal(at.State, &st) == nil {
			rd.SetModel(st.Model)
		}
	}
	return &rolloutReader{r: rd}
}

// rolloutReader is the Reader as a hooks.TranscriptReader.
type rolloutReader struct{ r *Reader }

// rolloutState is what a rollout's cursor keeps beside its offset: the
// model of the turn the offset is in, named only by the turn_context
// line that began it (a sweep resuming mid-turn would not know it).
type rolloutState struct {
	Model string `json:"model,omitempty"`
}

// State implements hooks.TranscriptStater: nil until a turn_context
// named the model.
func (t *rolloutReader) State() json.RawMessage {
	if t.r.model == "" {
		return nil
	}
	b, err := json.Marshal(rolloutState{Model: t.r.model})
	if err != nil {
		return nil
	}
	return b
}

func (t *rolloutReader) Next() (*transcript.Line, error) {
	l, err := t.r.Next()
	if err != nil {
		return nil, err
	}
	if c := l.Call; c != nil && c.Kind == CallShell && c.Command != "" {
		base := t.r.cwd
		if m, ok := t.r.Meta(); ok && base == "" {
			base = m.Cwd
		}
		cwd := base
		if c.Workdir != "" {
			cwd = ResolvePath(base, c.Workdir)
		}
		if rd, err := shellread.Parse(c.Command); err == nil && cwd != "" {
			if name := rd.Resolve(cwd); filepath.IsAbs(name) {
				path := filepath.Clean(name)
				for _, it := range l.Items {
					switch x := it.(type) {
					case *transcript.ToolUse:
						x.Path = path
					case *transcript.ToolResult:
						x.Path = path
					}
				}
			}
		}
	}
	return &l.Line, nil
}

func (t *rolloutReader) Offset() int64                        { return t.r.Offset() }
func (t *rolloutReader) Pending() []transcript.PendingToolUse { return t.r.Pending() }
func (t *rolloutReader) Stats() transcript.Stats              { return t.r.Stats() }

// sessionsRoot is the sessions directory a rollout lies under
// (sessions/YYYY/MM/DD/rollout-*.jsonl).
func sessionsRoot(rollout string) string {
	return filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(rollout))))
}

// Subagents implements hooks.Harness: the rollouts whose session_meta
// names main's thread as their session or parent, from main's day on
// (a subagent starts after its parent), in start order.
func (Harness) Subagents(main string) ([]string, error) {
	id := ThreadIDFromPath(main)
	if id == "" {
		if f, err := os.Open(main); err == nil {
			m, merr := ReadSessionMeta(f)
			f.Close()
			if merr == nil {
				id = m.ID
			}
		}
	}
	if id == "" {
		return nil, nil
	}
	root := sessionsRoot(main)
	files, err := filepath.Glob(filepath.Join(root, "*", "*", "*", "rollout-*.jsonl"))
	if err != nil {
		return nil, err
	}
	mainDir := filepath.Dir(main)
	var out []string
	for _, f := range files {
		if f == main || filepath.Dir(f) < mainDir {
			continue
		}
		m, err := readMeta(f)
		if err != nil || !m.Subagent() {
			continue
		}
		if strings.EqualFold(m.SessionID, id) || strings.EqualFold(m.ParentThreadID, id) {
			out = append(out, f)
		}
	}
	return out, nil
}

func readMeta(path string) (*SessionMeta, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadSessionMeta(f)
}

// SessionOf implements hooks.Harness: the thread id the rollout's name
// ends with (items carry the root session from the session_meta; this
// is for lines that carry none).
func (Harness) SessionOf(path string) string { return ThreadIDFromPath(path) }

// SessionFile implements hooks.Harness: rollout-*.jsonl files; a
// subagent's rollout belongs to the session of its session_meta, whose
// main rollout is looked for under the same sessions directory (the
// subagent's own path when it is not there: it is then imported alone,
// its items still under the root session's writer).
func (Harness) SessionFile(path string) (string, bool) {
	if ThreadIDFromPath(path) == "" {
		return "", false
	}
	m, err := readMeta(path)
	if err != nil || !m.Subagent() || m.SessionID == "" || strings.EqualFold(m.SessionID, m.ID) {
		return path, true
	}
	if main := findRollout(filepath.Dir(path), m.SessionID); main != "" {
		return main, true
	}
	return path, true
}

// TranscriptCwd implements hooks.Harness: the session_meta's cwd.
func (Harness) TranscriptCwd(path string, size int64) (string, error) {
	m, err := readMeta(path)
	if err != nil {
		if errors.Is(err, ErrNoSessionMeta) {
			return "", nil
		}
		return "", err
	}
	if !filepath.IsAbs(m.Cwd) {
		return "", nil
	}
	return filepath.Clean(m.Cwd), nil
}

// ImportDirs implements hooks.Harness: $CODEX_HOME/sessions.
func (Harness) ImportDirs(dir string, getenv func(string) string) ([]string, error) {
	home, err := Home(getenvOr(getenv))
	if err != nil {
		return nil, err
	}
	return []string{filepath.Join(home, "sessions")}, nil
}

func getenvOr(getenv func(string) string) func(string) string {
	if getenv == nil {
		return os.Getenv
	}
	return getenv
}

// Sessions implements hooks.Harness: the main rollouts under
// $CODEX_HOME/sessions whose session ran in wt (session_meta cwd), the
// one of session or the latest.
func (Harness) Sessions(ctx context.Context, wt, session string, getenv func(string) string) (hooks.SessionFound, error) {
	home, err := Home(getenvOr(getenv))
	if err != nil {
		return hooks.SessionFound{}, err
	}
	ss, err := FindSessions(ctx, home)
	if err != nil {
		return hooks.SessionFound{}, err
	}
	var best *RolloutFile
	for i := range ss {
		m := ss[i].Main
		if m == nil || m.MetaErr != nil || filepath.Clean(m.Meta.Cwd) != filepath.Clean(wt) {
			continue
		}
		if session != "" {
			if strings.EqualFold(ss[i].ID, session) {
				return hooks.SessionFound{Session: ss[i].ID, Transcript: m.Path}, nil
			}
			continue
		}
		if best == nil || !m.Meta.Timestamp.Before(best.Meta.Timestamp) {
			best = m
		}
	}
	if best == nil {
		if session != "" {
			return hooks.SessionFound{}, fmt.Errorf("no Codex rollout of session %s under %s", session, filepath.Join(home, "sessions"))
		}
		return hooks.SessionFound{}, fmt.Errorf("no Codex rollouts for this repository under %s", filepath.Join(home, "sessions"))
	}
	return hooks.SessionFound{Session: best.Meta.SessionID, Transcript: best.Path}, nil
}

// ContextUsage implements hooks.Harness: the last token_count event's
// last_token_usage.total_tokens after the last compaction.
func (Harness) ContextUsage(path string) (hooks.ContextUsage, error) {
	f, err := os.Open(path)
	if err != nil {
		return hooks.ContextUsage{}, err
	}
	defer f.Close()
	u := hooks.ContextUsage{Session: ThreadIDFromPath(path)}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case bytes.Contains(line, []byte(`"type":"compacted"`)):
			u.Compactions++
			u.Known, u.Used = false, 0
		case bytes.Contains(line, []byte(`"token_count"`)):
			var v struct {
				Payload struct {
					Type string `json:"type"`
					Info *struct {
						Last struct {
							Total int64 `json:"total_tokens"`
						} `json:"last_token_usage"`
					} `json:"info"`
				} `json:"payload"`
			}
			if json.Unmarshal(line, &v) == nil && v.Payload.Type == "token_count" && v.Payload.Info != nil {
				u.Used, u.Known = v.Payload.Info.Last.Total, true
			}
		case bytes.Contains(line, []byte(`"turn_context"`)):
			var v struct {
				Type    string `json:"type"`
				Payload struct {
					Model string `json:"model"`
				} `json:"payload"`
			}
			if json.Unmarshal(line, &v) == nil && v.Type == "turn_context" && v.Payload.Model != "" {
				u.Model = v.Payload.Model
			}
		}
	}
	return u, sc.Err()
}

// MCPNamespace is the namespace under which Codex 0.169.0 offers our MCP
// server's tools to the model: "mcp__" and the server's name with "-"
// turned into "_" (mcp__git_lossless), a deferred namespace the model
// finds with tool_search and calls as namespace + tool name (seen
// driving the real CLI: TestCodexMCPReadCountsAsSeen).
const MCPNamespace = "mcp__git_lossless"

// MCPTools implements hooks.Harness: Codex starts the MCP servers of its
// user config.toml ([mcp_servers.<name>]) for every session; when ours is
// registered there, its tools are named mcp__git_lossless.<tool>.
func (Harness) MCPTools(dir string, getenv func(string) string) (func(string) string, error) {
	home, err := Home(getenvOr(getenv))
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(filepath.Join(home, "config.toml"))
	if err != nil {
		return nil, nil
	}
	if !tomlHasTable(b, mcpTableHeader) {
		return nil, nil
	}
	return func(tool string) string { return MCPNamespace + "." + tool }, nil
}
