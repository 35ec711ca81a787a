package codex

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/git-lossless/git-lossless/internal/jsonscan"
)

// SessionMeta is a rollout's session_meta line: the thread the rollout
// records. A subagent's rollout has its own thread id, names its parent
// in ParentThreadID and the root session in SessionID.
type SessionMeta struct {
	ID             string    // the thread id: the rollout file's uuid
	SessionID      string    // session_id: the root session (ID when absent)
	ParentThreadID string    // a subagent's parent thread
	Timestamp      time.Time // when the thread started
	Cwd            string
	Originator     string // codex_exec, codex_cli_rs, codex_vscode...
	CLIVersion     string
	Source         string // exec, cli, vscode, mcp...; "subagent" for a subagent
	ThreadSource   string // thread_source: user, subagent
	AgentNickname  string
	AgentRole      string
	Depth          int // a subagent's spawn depth (1 for a child of the root)
	ModelProvider  string
	GitCommit      string
	GitBranch      string
}

// Subagent reports whether the rollout is a subagent's.
func (m *SessionMeta) Subagent() bool {
	return m.ParentThreadID != "" || m.Source == "subagent" || m.ThreadSource == "subagent"
}

// Agent is the context id items of this rollout carry in LineMeta.Agent,
// the same one Codex's hooks pass as agent_id: the thread id of a
// subagent, "" for a main thread.
func (m *SessionMeta) Agent() string {
	if m.Subagent() {
		return m.ID
	}
	return ""
}

// parseSessionMeta reads a session_meta payload.
func parseSessionMeta(payload []byte) (*SessionMeta, bool) {
	m := &SessionMeta{}
	str := func(v []byte) string { s, _ := jsonscan.String(v); return s }
	st := jsonscan.Members(payload, func(k, v []byte) bool {
		switch string(k) {
		case "id":
			m.ID = str(v)
		case "session_id":
			m.SessionID = str(v)
		case "parent_thread_id":
			m.ParentThreadID = str(v)
		case "timestamp":
			if t, err := time.Parse(time.RFC3339Nano, str(v)); err == nil {
				m.Timestamp = t
			}
		case "cwd":
			m.Cwd = str(v)
		case "originator":
			m.Originator = str(v)
		case "cli_version":
			m.CLIVersion = str(v)
		case "source":
			if len(v) > 0 && v[0] == '"' {
				m.Source = str(v)
			} else if sub := jsonscan.Field(v, "subagent"); sub != nil {
				m.Source = "subagent"
				if ts := jsonscan.Field(sub, "thread_spawn"); ts != nil {
					jsonscan.Members(ts, func(k, v []byte) bool {
						switch string(k) {
						case "parent_thread_id":
							if m.ParentThreadID == "" {
								m.ParentThreadID = str(v)
							}
						case "depth":
							if n, ok := jsonscan.Int(v); ok {
								m.Depth = int(n)
							}
						case "agent_nickname":
							if m.AgentNickname == "" {
								m.AgentNickname = str(v)
							}
						case "agent_role":
							m.AgentRole = str(v)
						}
						return true
					})
				}
			}
		case "thread_source":
			m.ThreadSource = str(v)
		case "agent_nickname":
			m.AgentNickname = str(v)
		case "agent_role":
			if s := str(v); s != "" {
				m.AgentRole = s
			}
		case "model_provider":
			m.ModelProvider = str(v)
		case "git":
			m.GitCommit = str(jsonscan.Field(v, "commit_hash"))
			m.GitBranch = str(jsonscan.Field(v, "branch"))
		}
		return true
	})
	if st != jsonscan.OK || m.ID == "" {
		return nil, false
	}
	if m.SessionID == "" {
		m.SessionID = m.ID
	}
	return m, true
}

// MaxMetaLine bounds the first line ReadSessionMeta reads (the base
// instructions make it tens of kilobytes).
const MaxMetaLine = 16 << 20

// ErrNoSessionMeta is a rollout whose first line is not a session_meta.
var ErrNoSessionMeta = errors.New("codex rollout: the first line is not a session_meta")

// ReadSessionMeta reads a rollout's first line, its session_meta. A
// reader started past offset 0 needs it (NewReader) for the session,
// agent and keys of what it reads.
func ReadSessionMeta(r io.Reader) (*SessionMeta, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var line []byte
	for {
		frag, err := br.ReadSlice('\n')
		line = append(line, frag...)
		if len(line) > MaxMetaLine {
			return nil, fmt.Errorf("codex rollout: first line longer than %d bytes", MaxMetaLine)
		}
		if err == nil {
			break
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if errors.Is(err, io.EOF) {
			if len(line) == 0 {
				return nil, ErrNoSessionMeta
			}
			return nil, fmt.Errorf("%w (the line is not complete yet)", ErrNoSessionMeta)
		}
		return nil, fmt.Errorf("codex rollout: read first line: %w", err)
	}
	var typ, payload []byte
	jsonscan.Members(bytes.TrimSpace(line), func(k, v []byte) bool {
		switch string(k) {
		case "type":
			typ = v
		case "payload":
			payload = v
		}
		return true
	})
	if s, _ := jsonscan.String(typ); s != "session_meta" || payload == nil {
		return nil, ErrNoSessionMeta
	}
	m, ok := parseSessionMeta(payload)
	if !ok {
		return nil, fmt.Errorf("%w (no thread id)", ErrNoSessionMeta)
	}
	return m, nil
}

// rolloutName is a rollout file's name: rollout-<local time>-<thread>.jsonl.
// Compiled on first use, not at package initialisation: every process
// that links this adapter (each hook, each command) would pay for it
// (about 30 KB in 290 allocations), most without reading a rollout.
var rolloutName = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^rollout-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})\.jsonl$`)
})

// ThreadIDFromPath returns the thread id a rollout file's name ends with
// ("" when the name is not a rollout's).
func ThreadIDFromPath(path string) string {
	m := rolloutName().FindStringSubmatch(filepath.Base(path))
	if m == nil {
		return ""
	}
	return strings.ToLower(m[1])
}

// FileChange is an item_completed event of type FileChange: what an
// apply_patch call did, as Codex reports it (paths absolute).
type FileChange struct {
	CallID  string // the apply_patch call's call_id
	Status  string // completed, failed, declined
	Changes []FileChangeEntry
}

// FileChangeEntry is one file of a FileChange.
type FileChangeEntry struct {
	Path        string
	Kind        string // add, update, delete
	UnifiedDiff string // update: the diff Codex computed
	MovePath    string // update with a move: the destination
	Content     string // add, delete: the file's content, when given
}

func parseFileChange(item []byte) *FileChange {
	fc := &FileChange{}
	str := func(v []byte) string { s, _ := jsonscan.String(v); return s }
	jsonscan.Members(item, func(k, v []byte) bool {
		switch string(k) {
		case "id":
			fc.CallID = str(v)
		case "status":
			fc.Status = str(v)
		case "changes":
			jsonscan.Members(v, func(path, ch []byte) bool {
				p, ok := jsonscan.Unquote(append(append([]byte{'"'}, path...), '"'))
				if !ok {
					return true
				}
				e := FileChangeEntry{Path: string(p)}
				jsonscan.Members(ch, func(k, v []byte) bool {
					switch string(k) {
					case "type":
						e.Kind = str(v)
					case "unified_diff":
						e.UnifiedDiff = str(v)
					case "move_path":
						e.MovePath = str(v)
					case "content":
						e.Content = str(v)
					}
					return true
				})
				fc.Changes = append(fc.Changes, e)
				return true
			})
		}
		return true
	})
	return fc
}
