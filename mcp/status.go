package mcp

import (
	"context"
	"errors"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/git-lossless/git-lossless/hooks"
	"github.com/git-lossless/git-lossless/receipt"
	"github.com/git-lossless/git-lossless/receipt/note"
)

// latestSession is the session of the most recently written transcript
// of the server's harness for this repository ("" when there is none):
// the caller's, in the usual case of one session per repository at a
// time.
func (s *Server) latestSession(ctx context.Context) string {
	f, err := s.session(ctx, "")
	if err != nil {
		return ""
	}
	return f.Session
}

// session finds the server's harness's session (the latest when session
// is "") of this repository's work tree, with its main transcript.
func (s *Server) session(ctx context.Context, session string) (hooks.SessionFound, error) {
	if s.cfg.Harness == nil {
		return hooks.SessionFound{}, errors.New("this server serves no harness's sessions")
	}
	wt := s.cfg.Store.Location().WorkTree
	if wt == "" {
		return hooks.SessionFound{}, errors.New("no work tree: cannot find the sessions' transcripts")
	}
	f, err := s.cfg.Harness.Sessions(ctx, wt, session, s.cfg.Getenv)
	if err == nil && f.Session == "" {
		err = fmt.Errorf("no %s session found for this repository", s.cfg.Harness.Name())
	}
	return f, err
}

func (s *Server) contextStatus(ctx context.Context, _ *sdk.CallToolRequest, in contextIn) (*sdk.CallToolResult, any, error) {
	f, err := s.session(ctx, in.Session)
	if err != nil {
		return toolError("%v", err), nil, nil
	}
	u, err := s.cfg.Harness.ContextUsage(f.Transcript)
	if err != nil {
		return toolError("read %s: %v", f.Transcript, err), nil, nil
	}
	window := int64(in.Window)
	if window <= 0 {
		window = 200_000
		if strings.Contains(u.Model, "[1m]") {
			window = 1_000_000
		}
	}
	if !u.Known {
		return plain(fmt.Sprintf("session %s: no model turn with usage since the last compaction (%d compactions); the window is unknown until the next answer", u.Session, u.Compactions)), nil, nil
	}
	pct := float64(u.Used) * 100 / float64(window)
	return plain(fmt.Sprintf("session %s: %.0f%% of the window used (%d of %d tokens, model %s, %d compactions so far; from the transcript's usage after the last compaction)",
		u.Session, pct, u.Used, window, u.Model, u.Compactions)), nil, nil
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
			fmt.Fprintf(&b, "  %s session %s agent %s %s: %d events, %d spans\n", note.ContextID(i), cx.Session, agent, harnessOrNone(cx.Harness), cx.Events, len(cx.Spans))
		}
	}
	return b.String(), nil
}
