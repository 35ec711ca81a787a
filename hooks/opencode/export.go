package opencode

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/git-lossless/git-lossless/hooks/transcript"
)

// Export is what `opencode export <session>` prints: the session and its
// messages with their parts. Only the members read are decoded.
type Export struct {
	Info struct {
		ID        string `json:"id"`
		ParentID  string `json:"parentID"`
		Directory string `json:"directory"`
	} `json:"info"`
	Messages []struct {
		Info struct {
			ID   string `json:"id"`
			Role string `json:"role"`
			// An assistant message's model.
			ProviderID string `json:"providerID"`
			ModelID    string `json:"modelID"`
			// Summary is true on the compaction's summary (a user
			// message holds an object of diffs here).
			Summary json.RawMessage `json:"summary"`
			Time    struct {
				Created   int64 `json:"created"`
				Completed int64 `json:"completed"`
			} `json:"time"`
		} `json:"info"`
		Parts []exportPart `json:"parts"`
	} `json:"messages"`
}

type exportPart struct {
	ID        string `json:"id"`
	Type      string `json:"type"`
	Text      string `json:"text"`
	Synthetic bool   `json:"synthetic"`
	Tool      string `json:"tool"`
	CallID    string `json:"callID"`
	Time      struct {
		Start int64 `json:"start"`
	} `json:"time"`
	State struct {
		Status string          `json:"status"`
		Input  json.RawMessage `json:"input"`
		Output *string         `json:"output"`
		Error  *string         `json:"error"`
		Time   struct {
			End int64 `json:"end"`
		} `json:"time"`
	} `json:"state"`
}

// isExport reports whether a file's start is an `opencode export`
// document (pretty JSON: "{" and a newline, then "info") rather than the
// plugin's log (one compact object per line).
func isExport(head []byte) bool {
	head = exportStart(head)
	rest, ok := bytes.CutPrefix(head, []byte("{"))
	if !ok || len(rest) == 0 || (rest[0] != '\n' && rest[0] != '\r') {
		return false
	}
	return bytes.HasPrefix(bytes.TrimLeft(rest, " \t\r\n"), []byte(`"info"`))
}

// exportStart skips what `opencode export` may print before the
// document on stdout ("Exporting session: ..."): up to the first line that
// starts with "{".
func exportStart(b []byte) []byte {
	if bytes.HasPrefix(b, []byte("{")) {
		return b
	}
	if i := bytes.Index(b, []byte("\n{")); i >= 0 {
		return b[i+1:]
	}
	return b
}

// exportLines turns an export into the plugin log's lines, so that an
// export is archived exactly as the log of that session would be (same
// keys: one archived twice is deduped): user and assistant texts, tool
// calls with their results, the compaction summary, and after it the
// boundary (keyed by the compaction part, as the plugin keys it). A
// child session (info.parentID) is a subagent context of its parent.
func exportLines(ex *Export) []LogLine {
	session, agent := ex.Info.ID, ""
	if ex.Info.ParentID != "" {
		session, agent = ex.Info.ParentID, ex.Info.ID
	}
	var out []LogLine
	add := func(l LogLine) {
		l.V, l.Session, l.Agent, l.Cwd = 1, session, agent, ex.Info.Directory
		out = append(out, l)
	}
	compaction := ""
	for _, m := range ex.Messages {
		ts := m.Info.Time.Created
		summary := string(m.Info.Summary) == "true"
		model := ""
		if m.Info.Role == "assistant" && m.Info.ModelID != "" {
			model = m.Info.ProviderID + "/" + m.Info.ModelID // as the plugin writes it
		}
		for _, p := range m.Parts {
			pts := ts
			if p.Time.Start > 0 {
				pts = p.Time.Start
			}
			switch {
			case p.Type == "compaction":
				compaction = p.ID
			case p.Type == "text" && !p.Synthetic && summary:
				add(LogLine{Type: "summary", ID: p.ID, Message: m.Info.ID, TS: pts, Text: p.Text})
			case p.Type == "text" && !p.Synthetic && (m.Info.Role == "user" || m.Info.Role == "assistant"):
				add(LogLine{Type: m.Info.Role, ID: p.ID, Message: m.Info.ID, TS: pts, Text: p.Text, Model: model})
			case p.Type == "tool" && p.CallID != "" && (p.State.Status == "completed" || p.State.Status == "error"):
				l := LogLine{Type: "tool", ID: p.CallID, Message: m.Info.ID, TS: max(pts, p.State.Time.End), Tool: p.Tool, Args: p.State.Input, Model: model}
				if p.State.Status == "completed" {
					l.Output = p.State.Output
				} else {
					l.Error = p.State.Error
				}
				add(l)
			}
		}
		if summary && compaction != "" {
			end := m.Info.Time.Completed
			if end == 0 {
				end = ts
			}
			add(LogLine{Type: "compacted", ID: compaction, TS: end})
			compaction = ""
		}
	}
	return out
}

// readExport reads a whole export and yields it as one transcript line
// holding every item (its End the size read): an export is written once,
// and read once.
func readExport(r io.Reader, off int64) (*transcript.Line, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	var ex Export
	if err := json.Unmarshal(exportStart(b), &ex); err != nil {
		return nil, fmt.Errorf("opencode export: %w", err)
	}
	tl := &transcript.Line{Type: "export", Start: off, End: off + int64(len(b))}
	tl.SessionID = ex.Info.ID
	if ex.Info.ParentID != "" {
		tl.SessionID, tl.Agent, tl.Sidechain = ex.Info.ParentID, ex.Info.ID, true
	}
	tl.UUID, tl.Cwd = ex.Info.ID, ex.Info.Directory
	for _, l := range exportLines(&ex) {
		m := transcript.LineMeta{UUID: l.ID, SessionID: l.Session, Agent: l.Agent, Sidechain: l.Agent != "", Cwd: l.Cwd}
		if l.TS > 0 {
			m.TS = time.UnixMilli(l.TS).UTC()
		}
		tl.Items = append(tl.Items, l.items(m)...)
	}
	return tl, nil
}
