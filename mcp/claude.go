package mcp

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

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/git-lossless/git-lossless/receipt"
	"github.com/git-lossless/git-lossless/receipt/note"
)

// projectDir is where Claude Code keeps this repository's transcripts:
// <config dir>/projects/<the work tree's path, every byte that is not a
// letter or digit replaced by '-'> (as Claude Code 2.1 names it).
func (s *Server) projectDir() string {
	wt := s.cfg.Store.Location().WorkTree
	if wt == "" || s.cfg.ClaudeConfigDir == "" {
		return ""
	}
	b := []byte(wt)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			b[i] = '-'
		}
	}
	return filepath.Join(s.cfg.ClaudeConfigDir, "projects", string(b))
}

// latestSession is the session of the most recently written transcript of
// this repository ("" when there is none): the caller's, in the usual case
// of one Claude Code session per repository at a time.
func (s *Server) latestSession() string {
	p, err := s.transcript("")
	if err != nil || p == "" {
		return "" // filepath.Base("") is ".": no session is not session "."
	}
	return strings.TrimSuffix(filepath.Base(p), ".jsonl")
}

// transcript returns the path of session's main transcript, or of the
// newest one when session is "".
func (s *Server) transcript(session string) (string, error) {
	dir := s.projectDir()
	if dir == "" {
		return "", errors.New("no Claude Code config dir or no work tree: cannot find transcripts")
	}
	if session != "" {
		if strings.ContainsAny(session, `/\`) || session == "." || session == ".." {
			return "", fmt.Errorf("session %q is not a session id", session)
		}
		p := filepath.Join(dir, session+".jsonl")
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("no transcript of session %s in %s", session, dir)
		}
		return p, nil
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "", fmt.Errorf("no Claude Code transcripts for this repository (%s)", dir)
	}
	var best string
	var bestTime int64
	for _, e := range ents {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".jsonl") {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		if t := fi.ModTime().UnixNano(); best == "" || t > bestTime {
			best, bestTime = filepath.Join(dir, e.Name()), t
		}
	}
	if best == "" {
		return "", fmt.Errorf("no Claude Code transcripts for this repository (%s)", dir)
	}
	return best, nil
}

// Usage is how full a Claude Code context is, from its transcript.
type Usage struct {
	Session     string
	Model       string
	Used        int64 // tokens in the context after the last assistant turn
	Window      int64
	Compactions int  // compact boundaries in the transcript
	Known       bool // an assistant turn with usage follows the last compaction
}

// readUsage scans a transcript: the last assistant message's usage after
// the last compact_boundary line (input, cache creation and cache read
// tokens, plus what it wrote, are what the next request carries).
func readUsage(r io.Reader) (Usage, error) {
	var u Usage
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case bytes.Contains(line, []byte(`"compact_boundary"`)):
			var v struct {
				Type    string `json:"type"`
				Subtype string `json:"subtype"`
			}
			if json.Unmarshal(line, &v) == nil && v.Subtype == "compact_boundary" {
				u.Compactions++
				u.Known, u.Used = false, 0
			}
		case bytes.Contains(line, []byte(`"usage"`)) && bytes.Contains(line, []byte(`"assistant"`)):
			var v struct {
				Type        string `json:"type"`
				IsSidechain bool   `json:"isSidechain"`
				Message     struct {
					Model string `json:"model"`
					Usage struct {
						Input       int64 `json:"input_tokens"`
						CacheCreate int64 `json:"cache_creation_input_tokens"`
						CacheRead   int64 `json:"cache_read_input_tokens"`
						Output      int64 `json:"output_tokens"`
					} `json:"usage"`
				} `json:"message"`
			}
			if json.Unmarshal(line, &v) != nil || v.Type != "assistant" || v.IsSidechain {
				continue
			}
			us := v.Message.Usage
			u.Used = us.Input + us.CacheCreate + us.CacheRead + us.Output
			u.Model, u.Known = v.Message.Model, true
		}
	}
	return u, sc.Err()
}

func (s *Server) contextStatus(ctx context.Context, _ *sdk.CallToolRequest, in contextIn) (*sdk.CallToolResult, any, error) {
	p, err := s.transcript(in.Session)
	if err != nil {
		return toolError("%v", err), nil, nil
	}
	f, err := os.Open(p)
	if err != nil {
		return toolError("%v", err), nil, nil
	}
	defer f.Close()
	u, err := readUsage(f)
	if err != nil {
		return toolError("read %s: %v", p, err), nil, nil
	}
	u.Session = strings.TrimSuffix(filepath.Base(p), ".jsonl")
	u.Window = int64(in.Window)
	if u.Window <= 0 {
		u.Window = 200_000
		if strings.Contains(u.Model, "[1m]") {
			u.Window = 1_000_000
		}
	}
	if !u.Known {
		return plain(fmt.Sprintf("session %s: no model turn with usage since the last compaction (%d compactions); the window is unknown until the next answer", u.Session, u.Compactions)), nil, nil
	}
	pct := float64(u.Used) * 100 / float64(u.Window)
	return plain(fmt.Sprintf("session %s: %.0f%% of the window used (%d of %d tokens, model %s, %d compactions so far; from the transcript's usage after the last compaction)",
		u.Session, pct, u.Used, u.Window, u.Model, u.Compactions)), nil, nil
}

// receiptSummary summarises the receipts stored for commit (default
// HEAD).
func (s *Server) receiptSummary(ctx context.Context, rev string) (string, error) {
	if rev == "" {
		rev = "HEAD"
	}
	dir := s.cfg.Store.Location().WorkTree
	if dir == "" {
		dir = s.cfg.Store.Location().CommonDir
	}
	commit, err := receipt.ResolveRev(ctx, dir, rev)
	if err != nil {
		return "", err
	}
	stored, err := receipt.Find(ctx, s.cfg.Store, commit)
	if err != nil {
		return "", err
	}
	if len(stored) == 0 {
		return "", fmt.Errorf("no receipt for %.12s: `git lossless receipt %s` builds one", commit, rev)
	}
	var b strings.Builder
	for _, st := range stored {
		r := st.Parsed
		if r == nil {
			fmt.Fprintf(&b, "%s: unreadable receipt: %v\n", st.Writer, st.Err)
			continue
		}
		fmt.Fprintf(&b, "commit %.12s, receipt by %s issued %s\n", r.Commit, st.Writer, r.Issued.Format("2006-01-02 15:04"))
		c := r.Coverage
		fmt.Fprintf(&b, "paths: %d changed; %d written by an agent, %d seen, %d changed after, %d unseen, %d excluded\n",
			len(r.Paths), c.Written, c.Seen, c.ChangedAfter, c.Unseen, c.Excluded)
		for _, p := range r.Paths {
			fmt.Fprintf(&b, "  %s %-13s %s\n", p.Change, p.Status, p.Path)
		}
		fmt.Fprintf(&b, "contexts: %d; reads: %d; events: %d; tokens: %d of files, %d of spans\n", len(r.Contexts), len(r.Reads), c.Events, r.FileTokens(), r.SpanTokens())
		for i, cx := range r.Contexts {
			agent := cx.Agent
			if agent == "" {
				agent = "main"
			}
			fmt.Fprintf(&b, "  %s session %s agent %s: %d events, %d spans\n", note.ContextID(i), cx.Session, agent, cx.Events, len(cx.Spans))
		}
	}
	return b.String(), nil
}
