package claudecode

import (
	"context"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/hooks"
	"github.com/git-lossless/git-lossless/hooks/settings"
)

// readFacts reads the facts of one context of a Claude Code session.
func readFacts(ctx context.Context, st *gitstore.Store, session, agent string) (*hooks.SessionFacts, error) {
	h := New()
	return hooks.ReadSessionFacts(ctx, st, hooks.FactsOptions{Writer: hooks.Writer(h, session), Session: session, Agent: agent, Dialect: h.Dialect()})
}

// manifest is the SessionStart text of a Claude Code session whose MCP
// server is registered (its tools named as Claude Code names them).
func manifest(ctx context.Context, st *gitstore.Store, session, agent, source string, budget int) (string, error) {
	return hooks.ManifestWith(ctx, st, hooks.ManifestOptions{Harness: New(), Session: session, Agent: agent, Source: source, Budget: budget,
		MCPTool: func(tool string) string { return MCPToolName(settings.MCPServerName, tool) }})
}

// readCursor reads the cursor of the Claude Code transcript at path.
func readCursor(ctx context.Context, st *gitstore.Store, path string) *hooks.Cursor {
	return hooks.ReadCursor(ctx, st, New(), path)
}
