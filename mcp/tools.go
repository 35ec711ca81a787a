package mcp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/git-lossless/git-lossless/anchor"
	"github.com/git-lossless/git-lossless/blame"
	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/hooks"
	"github.com/git-lossless/git-lossless/recall"
)

// Tool inputs. Descriptions are short on purpose: the whole tools/list
// is counted against a budget of 1,600 tokens.

type searchIn struct {
	Query   string `json:"query" jsonschema:"words, a stem, a path fragment"`
	Limit   int    `json:"limit,omitempty" jsonschema:"hits, default 10"`
	Session string `json:"session,omitempty"`
	Harness string `json:"harness,omitempty" jsonschema:"one agent harness's hits: claude-code, codex, gemini, opencode"`
	Kind    string `json:"kind,omitempty" jsonschema:"user_prompt, assistant_text, tool_use, tool_result, compact_summary, proxy or file"`
	Cursor  string `json:"cursor,omitempty"`
}

type readSpanIn struct {
	ID       string `json:"id" jsonschema:"span id from search or digests"`
	Lines    string `json:"lines,omitempty" jsonschema:"A-B"`
	MaxChars int    `json:"max_chars,omitempty"`
	Cursor   string `json:"cursor,omitempty"`
}

type digestsIn struct {
	Session string `json:"session,omitempty"`
	Harness string `json:"harness,omitempty" jsonschema:"one agent harness's groups: claude-code, codex, gemini, opencode"`
	Since   string `json:"since,omitempty" jsonschema:"age: 30m, 24h, 7d"`
	Limit   int    `json:"limit,omitempty"`
	Cursor  string `json:"cursor,omitempty"`
}

type readFileIn struct {
	Path    string `json:"path"`
	Lines   string `json:"lines,omitempty" jsonschema:"A-B"`
	Session string `json:"session,omitempty" jsonschema:"your session id (default: the latest)"`
	Agent   string `json:"agent,omitempty" jsonschema:"your subagent id, if you are one"`
}

type restoreIn struct {
	Session string   `json:"session,omitempty" jsonschema:"default: the latest"`
	Agent   string   `json:"agent,omitempty"`
	Files   []string `json:"files,omitempty" jsonschema:"default: the working set"`
	Budget  int      `json:"budget,omitempty" jsonschema:"characters, default 8000"`
}

type fileHistoryIn struct {
	Path    string `json:"path"`
	Session string `json:"session,omitempty"`
	Harness string `json:"harness,omitempty" jsonschema:"one agent harness's versions"`
	Limit   int    `json:"limit,omitempty"`
}

type sealIn struct {
	Full bool `json:"full,omitempty" jsonschema:"also hash every archived blob"`
}

type contextIn struct {
	Session string `json:"session,omitempty"`
	Window  int    `json:"window,omitempty" jsonschema:"tokens, default 200000"`
}

type whoIn struct {
	Paths []string `json:"paths,omitempty" jsonschema:"default: every file seen"`
	Limit int      `json:"limit,omitempty" jsonschema:"files, default 30"`
}

type blameIn struct {
	Path string `json:"path" jsonschema:"file, relative to the repository"`
	Line int    `json:"line,omitempty" jsonschema:"explain this line: request, files seen, call, receipt"`
	From int    `json:"from,omitempty" jsonschema:"without line: first line to list, default 1"`
	To   int    `json:"to,omitempty" jsonschema:"without line: last line, default from+49"`
}

type handoffIn struct {
	Session string `json:"session,omitempty" jsonschema:"default: the newest, any harness"`
}

type receiptIn struct {
	Commit string `json:"commit,omitempty" jsonschema:"default HEAD"`
}

func (s *Server) addTools() {
	sdk.AddTool(s.sdk, &sdk.Tool{Name: "search", Description: "Search archived conversation spans and file paths (ranked; stems, fragments, typos). Returns span ids for read_span.",
		Annotations: readOnly("Search the archive")}, s.search)
	sdk.AddTool(s.sdk, &sdk.Tool{Name: "read_span", Description: "Read an archived span by id, whole or a line range.",
		Annotations: readOnly("Read a span")}, s.readSpan)
	sdk.AddTool(s.sdk, &sdk.Tool{Name: "digests", Description: "One line per session and span group: when, who, kind, size, first words.",
		Annotations: readOnly("Skim the archive")}, s.digests)
	sdk.AddTool(s.sdk, &sdk.Tool{Name: "read_file", Description: "A file's current content, whole or lines A-B, recorded as seen by your context so you may edit it.",
		Annotations: recording("Read a file")}, s.readFile)
	sdk.AddTool(s.sdk, &sdk.Tool{Name: "restore_context", Description: "After a compaction: your working set's current content, annotated and budgeted, recorded as seen.",
		Annotations: recording("Restore the working set")}, s.restoreContext)
	sdk.AddTool(s.sdk, &sdk.Tool{Name: "file_history", Description: "The versions of a file each context saw, and whether each matches the disk now.",
		Annotations: readOnly("File history")}, s.fileHistory)
	sdk.AddTool(s.sdk, &sdk.Tool{Name: "seal_status", Description: "Verify every writer's seal chain: OK or the first break.",
		Annotations: readOnly("Seal status")}, s.sealStatus)
	sdk.AddTool(s.sdk, &sdk.Tool{Name: "context_status", Description: "How full your context window is, from the transcript since the last compaction.",
		Annotations: readOnly("Context window")}, s.contextStatus)
	sdk.AddTool(s.sdk, &sdk.Tool{Name: "receipt", Description: "A commit's receipt, summarised: what the model contexts saw for it.",
		Annotations: readOnly("Commit receipt")}, s.receipt)
	sdk.AddTool(s.sdk, &sdk.Tool{Name: "who", Description: "Which agent contexts (any harness) hold each file's current or a stale version, and its last writer. Not counted as seeing it.",
		Annotations: readOnly("Who holds a file")}, s.who)
	sdk.AddTool(s.sdk, &sdk.Tool{Name: "blame", Description: "Who wrote each line (agent context or person) and, for one line, why: the request, the files that context had seen, the call, the receipt.",
		Annotations: readOnly("Line provenance")}, s.blame)
	sdk.AddTool(s.sdk, &sdk.Tool{Name: "handoff", Description: "Pick up a session's work: its goal, pinned facts, latest decisions, files touched, open errors, span ids for the rest.",
		Annotations: readOnly("Session hand-off")}, s.handoff)
}

// handoff is `git lossless handoff` for a model: a session of any
// harness (or the proxy's) summed up from the archive, for the agent
// that takes its work over. The archived text is quoted as data.
func (s *Server) handoff(ctx context.Context, _ *sdk.CallToolRequest, in handoffIn) (*sdk.CallToolResult, any, error) {
	idx, err := s.index(ctx)
	if err != nil {
		return toolError("%v", err), nil, nil
	}
	h, err := idx.Handoff(ctx, recall.HandoffQuery{Session: in.Session})
	if errors.Is(err, recall.ErrNoSession) {
		return toolError("%v (digests lists the sessions)", err), nil, nil
	}
	if err != nil {
		return toolError("handoff: %v", err), nil, nil
	}
	var b strings.Builder
	if err := h.WriteText(&b); err != nil {
		return toolError("handoff: %v", err), nil, nil
	}
	return s.data(fmt.Sprintf("hand-off of session %s (read any span id with read_span):", h.Session), b.String(), ""), nil, nil
}

// blame is `git lossless blame` for a model: with line, the context at
// the moment that line was written (--why); else the origin of each line
// of a range of the working tree's file.
func (s *Server) blame(ctx context.Context, _ *sdk.CallToolRequest, in blameIn) (*sdk.CallToolResult, any, error) {
	abs, rel, err := s.absInRepo(ctx, in.Path)
	if err != nil {
		return toolError("%v", err), nil, nil
	}
	// Blame prints the file's lines: a deny-listed file (or a link to
	// one) is refused as read_file refuses it, committed or not.
	if glob, _, denied := s.cfg.Store.Deny().Check(abs); denied {
		return toolError("%s is on the deny list (%s): its content is kept out of the archive and out of this tool", rel, glob), nil, nil
	}
	opt := blame.Options{HarnessOf: s.cfg.HarnessOf, Identities: s.cfg.Identities}
	var b strings.Builder
	if in.Line > 0 {
		w, err := blame.WhyLine(ctx, s.cfg.Store, "", rel, in.Line, blame.WhyOptions{Options: opt})
		if err != nil && !errors.Is(err, blame.ErrNoOrigin) {
			return toolError("blame: %v", err), nil, nil
		}
		writeWhy(&b, rel, w)
		return s.data("why this line is what it is:", b.String(), ""), nil, nil
	}
	from, to := max(in.From, 1), in.To
	if to < from {
		to = from + 49
	}
	opt.Start, opt.End = from, to
	lines, err := blame.File(ctx, s.cfg.Store, "", rel, opt)
	if err != nil {
		return toolError("blame: %v", err), nil, nil
	}
	for _, l := range lines {
		fmt.Fprintf(&b, "%d %s %s| %s\n", l.N, shortID(l.Commit), originText(l.Origin), l.Text)
	}
	return s.data(fmt.Sprintf("who wrote lines %d-%d of %s (commit, origin):", from, to, rel), b.String(), ""), nil, nil
}

func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// originText names a line's origin for a model.
func originText(o *blame.Origin) string {
	if o == nil {
		return "person"
	}
	c := hooks.Change{Harness: o.Harness, Writer: o.Writer, Session: o.Session, Agent: o.Agent}
	s := c.Describe()
	if o.Model != "" {
		s += " model " + o.Model
	}
	return s + " " + o.TS.UTC().Format(time.RFC3339)
}

func writeWhy(b *strings.Builder, rel string, w *blame.Why) {
	l := w.Line
	fmt.Fprintf(b, "%s:%d %s\ncommit %s %q\n", rel, l.N, l.Text, shortID(l.Commit), l.Summary)
	o := l.Origin
	if o == nil {
		b.WriteString("no archived agent write made this line: a person, or an unrecorded agent\n")
		return
	}
	fmt.Fprintf(b, "written by %s, %s call %s (%s)\n", originText(o), o.Op, o.Call, o.Tool)
	switch {
	case w.Request != "":
		fmt.Fprintf(b, "request: %s\n", w.Request)
	case w.RequestLocked:
		b.WriteString("request: encrypted\n")
	}
	if w.Call != nil && len(w.Call.Input) > 0 {
		fmt.Fprintf(b, "call input: %s\n", w.Call.Input)
	}
	fmt.Fprintf(b, "files that context had seen before the write (%d):\n", len(w.Seen))
	for _, s := range w.Seen {
		state := s.State()
		if state == "denied" {
			state = "deny-listed"
		}
		fmt.Fprintf(b, "  %s %s (%s %s, blob %.12s)\n", state, s.Path, s.Op, s.TS.UTC().Format(time.RFC3339), orNone(s.Blob))
	}
	for _, r := range w.Receipts {
		fmt.Fprintf(b, "receipt %s: lists this context %v, carried %v\n", r.Writer, r.Names, r.Carried)
	}
}

// who is `git lossless who` for a model: presence of other contexts
// beside it. It records nothing: knowing who holds a file is not seeing
// its content, so it never counts as evidence for the guard.
func (s *Server) who(ctx context.Context, _ *sdk.CallToolRequest, in whoIn) (*sdk.CallToolResult, any, error) {
	opt := hooks.PresenceOptions{HarnessOf: s.cfg.HarnessOf}
	for _, p := range in.Paths {
		abs, _, err := s.absInRepo(ctx, p)
		if err != nil {
			return toolError("%v", err), nil, nil
		}
		opt.Paths = append(opt.Paths, abs)
	}
	fps, err := hooks.Presence(ctx, s.cfg.Store, opt)
	if err != nil {
		return toolError("who: %v", err), nil, nil
	}
	if in.Limit <= 0 {
		in.Limit = 30
	}
	var b strings.Builder
	if len(fps) > in.Limit {
		fmt.Fprintf(&b, "(the first %d of %d files; name paths for others)\n", in.Limit, len(fps))
		fps = fps[:in.Limit]
	}
	for _, fp := range fps {
		state := fmt.Sprintf("on disk %.12s", fp.DiskBlob)
		switch {
		case fp.Denied:
			state = "deny-listed"
		case !fp.Exists:
			state = "deleted"
		}
		fmt.Fprintf(&b, "%s (%s)\n", fp.Path, state)
		if lw := fp.LastWriter; lw != nil {
			fmt.Fprintf(&b, "  last %s by %s at %s%s\n", lw.Op, lw.Describe(), lw.TS.UTC().Format(time.RFC3339), map[bool]string{true: " (the disk version)", false: ""}[lw.Current])
		}
		for _, h := range fp.Holders {
			c := hooks.Change{Harness: h.Harness, Writer: h.Writer, Session: h.Session, Agent: h.Agent}
			fmt.Fprintf(&b, "  %s: %s (%s at %s, blob %.12s)\n", h.State, c.Describe(), h.Op, h.TS.UTC().Format(time.RFC3339), orNone(h.Blob))
		}
		if len(fp.Holders) == 0 {
			b.WriteString("  no context has seen it\n")
		}
	}
	if len(fps) == 0 {
		b.WriteString("no archived file\n")
	}
	return s.data("who holds these files (current: the disk version; stale: an older one; partial: lines only):", b.String(), ""), nil, nil
}

func (s *Server) search(ctx context.Context, _ *sdk.CallToolRequest, in searchIn) (*sdk.CallToolResult, any, error) {
	if strings.TrimSpace(in.Query) == "" {
		return toolError("query is empty"), nil, nil
	}
	if in.Limit <= 0 {
		in.Limit = 10
	}
	in.Limit = min(in.Limit, 50)
	idx, err := s.index(ctx)
	if err != nil {
		return toolError("%v", err), nil, nil
	}
	res, err := idx.Search(ctx, recall.Query{Text: in.Query, Limit: in.Limit, Session: in.Session, Harness: in.Harness, Kind: in.Kind, Cursor: in.Cursor})
	if err != nil {
		return toolError("%v", err), nil, nil
	}
	var b strings.Builder
	for _, h := range res.Hits {
		what := h.Kind
		if h.Tool != "" {
			what += " " + h.Tool
		}
		if h.Path != "" {
			what += " " + h.Path
		}
		lock := ""
		if h.Locked {
			lock = " [locked: encrypted]"
		}
		// The harness goes last: clients read id, time, session and kind by
		// position.
		fmt.Fprintf(&b, "%s  %s  %s  %s%s  %s\n    %s\n", h.ID, h.TS.UTC().Format("2006-01-02 15:04"), h.Session, what, lock, harnessOrNone(h.Harness), h.Snippet)
	}
	if len(res.Hits) == 0 {
		b.WriteString("no hits\n")
	}
	title := fmt.Sprintf("%d of %d hits for %q (read one with read_span):", len(res.Hits), res.Total, in.Query)
	return s.data(title, b.String(), res.Next), nil, nil
}

func (s *Server) readSpan(ctx context.Context, _ *sdk.CallToolRequest, in readSpanIn) (*sdk.CallToolResult, any, error) {
	if in.ID == "" {
		return toolError("id is empty: take one from search or digests"), nil, nil
	}
	off, err := parseCursor(in.Cursor)
	if err != nil {
		return toolError("%v", err), nil, nil
	}
	idx, err := s.index(ctx)
	if err != nil {
		return toolError("%v", err), nil, nil
	}
	sp, err := idx.Span(ctx, in.ID)
	if err != nil {
		return toolError("%v", err), nil, nil
	}
	if sp.Locked {
		return plain(fmt.Sprintf("span %s is encrypted and this server has no identity to open it (git config lossless.identity).", in.ID)), nil, nil
	}
	from, to, err := lineRange(in.Lines, len(sp.Lines))
	if err != nil {
		return toolError("%v", err), nil, nil
	}
	text, next := page(numbered(sp.Lines, from, to), off, in.MaxChars)
	title := fmt.Sprintf("span %s (%s, %s, %s, %s), lines %d-%d of %d:", in.ID, sp.Kind, sp.Session, harnessOrNone(sp.Harness), sp.TS.UTC().Format(time.RFC3339), from, to, len(sp.Lines))
	return s.data(title, text, next), nil, nil
}

func (s *Server) digests(ctx context.Context, _ *sdk.CallToolRequest, in digestsIn) (*sdk.CallToolResult, any, error) {
	var since time.Time
	if in.Since != "" {
		d, err := parseAge(in.Since)
		if err != nil {
			return toolError("%v", err), nil, nil
		}
		since = s.cfg.Now().Add(-d)
	}
	off, err := parseCursor(in.Cursor)
	if err != nil {
		return toolError("%v", err), nil, nil
	}
	if in.Limit <= 0 {
		in.Limit = 30
	}
	idx, err := s.index(ctx)
	if err != nil {
		return toolError("%v", err), nil, nil
	}
	ds, err := idx.Digests(ctx, recall.DigestQuery{Session: in.Session, Since: since, Harness: in.Harness})
	if err != nil {
		return toolError("%v", err), nil, nil
	}
	var b strings.Builder
	end := min(len(ds), off+in.Limit)
	for _, d := range ds[min(off, len(ds)):end] {
		b.WriteString(digestLine(d))
		b.WriteByte('\n')
	}
	next := ""
	if end < len(ds) {
		next = fmt.Sprint(end)
	}
	return s.data(fmt.Sprintf("%d digests:", len(ds)), b.String(), next), nil, nil
}

func (s *Server) readFile(ctx context.Context, _ *sdk.CallToolRequest, in readFileIn) (*sdk.CallToolResult, any, error) {
	abs, rel, err := s.absInRepo(ctx, in.Path)
	if err != nil {
		return toolError("%v", err), nil, nil
	}
	if glob, _, denied := s.cfg.Store.Deny().Check(abs); denied {
		return toolError("%s is on the deny list (%s): its content is kept out of the archive and out of this tool", rel, glob), nil, nil
	}
	data, err := s.readWorkFile(ctx, abs, rel)
	if err != nil {
		return toolError("%v", err), nil, nil
	}
	lines := strings.SplitAfter(string(data), "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	for i := range lines {
		lines[i] = strings.TrimSuffix(lines[i], "\n")
	}
	from, to, err := lineRange(in.Lines, len(lines))
	if err != nil {
		return toolError("%v", err), nil, nil
	}
	session := in.Session
	if session == "" {
		session = s.latestSession(ctx)
	}
	if session != "" {
		if err := s.validSession(session); err != nil {
			return toolError("%v", err), nil, nil
		}
	}
	view := "full"
	if in.Lines != "" && (from != 1 || to != len(lines)) {
		view = fmt.Sprintf("lines:%d-%d", from, to)
	}
	rec := gitstore.Record{Event: gitstore.Event{TS: s.cfg.Now(), Op: gitstore.OpRead, Source: "mcp", Session: session, Agent: in.Agent, View: view, Tool: "mcp:read_file"},
		Content: data, HasContent: true}
	rec.SetPath(rel)
	var writer string
	if session != "" {
		// Evidence of the session's context: its harness's writer, and
		// its harness's name.
		writer, rec.Harness = hooks.Writer(s.cfg.Harness, session), s.cfg.Harness.Name()
	} else {
		// Per clone by construction, as every derived name (gitstore
		// FORMAT.md section 2).
		w, err := s.cfg.Store.OwnWriterName(ctx, gitstore.FamilyMCP, "")
		if err != nil {
			return toolError("record the read: %v", err), nil, nil
		}
		writer = w
	}
	if _, err := s.cfg.Store.Append(ctx, writer, []gitstore.Record{rec}); err != nil {
		return toolError("record the read: %v", err), nil, nil
	}
	s.archiveMoved()
	title := fmt.Sprintf("%s, lines %d-%d of %d, blob %s (recorded as seen by session %s):", rel, from, to, len(lines), gitstore.BlobID(data), orNone(session))
	return s.data(title, numbered(lines, from, to), ""), nil, nil
}

func (s *Server) restoreContext(ctx context.Context, _ *sdk.CallToolRequest, in restoreIn) (*sdk.CallToolResult, any, error) {
	session := in.Session
	if session == "" {
		session = s.latestSession(ctx)
	}
	if session == "" {
		return toolError("no session found for this repository: pass session"), nil, nil
	}
	if err := s.validSession(session); err != nil {
		return toolError("%v", err), nil, nil
	}
	var files []string
	for _, f := range in.Files {
		abs, rel, err := s.absInRepo(ctx, f)
		if err != nil {
			return toolError("%v", err), nil, nil
		}
		// What read_file would refuse to read, restore must not read
		// either (a FIFO blocks, a huge file fills the memory); a missing
		// file is restore's to report.
		if fi, err := os.Stat(abs); err == nil && (!fi.Mode().IsRegular() || fi.Size() > MaxReadFileBytes) {
			if !fi.Mode().IsRegular() {
				return toolError("%s is not a regular file (%s)", rel, fi.Mode().Type()), nil, nil
			}
			return toolError("%s is %d bytes, over the cap of %d bytes", rel, fi.Size(), MaxReadFileBytes), nil, nil
		}
		files = append(files, abs)
	}
	budget := in.Budget
	if budget <= 0 {
		budget = hooks.RestoreBudget
	}
	out, err := hooks.Restore(ctx, s.cfg.Store, hooks.RestoreOptions{Harness: s.cfg.Harness, Session: session, Agent: in.Agent, Files: files, Budget: min(budget, maxMaxChars), Now: s.cfg.Now(),
		Source: "mcp", Tool: "mcp:restore_context"})
	if err != nil {
		return toolError("restore: %v", err), nil, nil
	}
	s.archiveMoved()
	if out == "" {
		return plain(fmt.Sprintf("nothing archived for session %s", session)), nil, nil
	}
	return s.data(fmt.Sprintf("working set of session %s (recorded as seen):", session), out, ""), nil, nil
}

func (s *Server) fileHistory(ctx context.Context, _ *sdk.CallToolRequest, in fileHistoryIn) (*sdk.CallToolResult, any, error) {
	if in.Path == "" {
		return toolError("path is empty"), nil, nil
	}
	idx, err := s.index(ctx)
	if err != nil {
		return toolError("%v", err), nil, nil
	}
	vs, err := idx.FileHistory(ctx, in.Path, in.Session)
	if err != nil {
		return toolError("%v", err), nil, nil
	}
	if in.Harness != "" {
		vs = slices.DeleteFunc(vs, func(v recall.FileVersion) bool { return v.Harness != in.Harness })
	}
	if in.Limit <= 0 {
		in.Limit = 30
	}
	var b strings.Builder
	if len(vs) > in.Limit {
		fmt.Fprintf(&b, "(the newest %d of %d)\n", in.Limit, len(vs))
		vs = vs[len(vs)-in.Limit:]
	}
	for _, v := range vs {
		fmt.Fprintf(&b, "%s#%d  %s  %s %s  session %s%s  %s  %s  blob %.12s  %s\n", v.Writer, v.Seq, v.TS.UTC().Format("2006-01-02 15:04:05"),
			v.Op, v.View, orNone(v.Session), agentSuffix(v.Agent), harnessOrNone(v.Harness), v.Tool, v.Blob, v.State)
	}
	if len(vs) == 0 {
		b.WriteString("no archived version\n")
	}
	return s.data(fmt.Sprintf("versions of %s seen:", in.Path), b.String(), ""), nil, nil
}

func (s *Server) sealStatus(ctx context.Context, _ *sdk.CallToolRequest, in sealIn) (*sdk.CallToolResult, any, error) {
	// The one verify policy (anchor.Check): the same writers, heads and
	// alarms as `git lossless verify` and doctor.
	v, err := anchor.Check(ctx, s.cfg.Store, anchor.CheckOptions{SkipContent: !in.Full})
	if err != nil {
		return toolError("verify: %v", err), nil, nil
	}
	var b strings.Builder
	entries := int64(0)
	for _, rep := range v.Writers {
		entries += rep.Entries
		if !rep.OK() {
			fmt.Fprintf(&b, "BREAK %s: %s at entry %d: %s\n", rep.Writer, rep.Break.Kind, rep.Break.Seq, rep.Break.Detail)
		}
	}
	for _, f := range v.Findings {
		who := f.Writer
		if who == "" {
			who = f.Clone
		}
		fmt.Fprintf(&b, "ALARM %s %s (%s): %s\n", f.Kind, who, f.Remote, f.Detail)
	}
	what := "chains"
	if in.Full {
		what = "chains and content"
	}
	fmt.Fprintf(&b, "%s, %s checked (%d entries)\n", v.Summary(), what, entries)
	return plain(b.String()), nil, nil
}

func (s *Server) receipt(ctx context.Context, _ *sdk.CallToolRequest, in receiptIn) (*sdk.CallToolResult, any, error) {
	text, err := s.receiptSummary(ctx, in.Commit)
	if err != nil {
		return toolError("%v", err), nil, nil
	}
	return s.data("receipt:", text, ""), nil, nil
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// parseAge reads 30m, 24h, 7d, 2w.
func parseAge(s string) (time.Duration, error) {
	if n := len(s); n > 1 {
		unit := s[n-1]
		var k time.Duration
		switch unit {
		case 'd':
			k = 24 * time.Hour
		case 'w':
			k = 7 * 24 * time.Hour
		}
		if k != 0 {
			var v int
			if _, err := fmt.Sscanf(s[:n-1], "%d", &v); err == nil && v > 0 && fmt.Sprint(v) == s[:n-1] {
				return time.Duration(v) * k, nil
			}
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("since %q: want an age such as 30m, 24h, 7d, 2w", s)
	}
	return d, nil
}

// digestLine is one digest as a line: when, who, what, size, first words.
func digestLine(d recall.Digest) string {
	kinds := make([]string, 0, len(d.Kinds))
	for k, n := range d.Kinds {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(kinds)
	group := "start"
	if d.Group > 0 {
		group = fmt.Sprintf("after compaction %d", d.Group)
	}
	if d.Source == "proxy" {
		group = "proxy span"
	}
	lock := ""
	if d.Locked > 0 {
		lock = fmt.Sprintf(", %d locked", d.Locked)
	}
	return fmt.Sprintf("%s  %s..%s  session %s%s  %s  %s: %d spans (%s), %d bytes%s  %q",
		d.ID, d.First.UTC().Format("2006-01-02 15:04"), d.Last.UTC().Format("15:04"), orNone(d.Session), agentSuffix(d.Agent), harnessOrNone(d.Harness), group,
		d.Spans, strings.Join(kinds, ", "), d.Bytes, lock, d.Words)
}

// harnessOrNone names a hit's, digest's or version's agent harness:
// "harness claude-code", or "harness none" (a proxy span, an MCP read
// outside a session).
func harnessOrNone(h string) string {
	if h == "" {
		return "harness none"
	}
	return "harness " + h
}

func agentSuffix(a string) string {
	if a == "" {
		return ""
	}
	return " agent " + a
}

// validSession: a session id names a writer of the server's harness
// (hooks.Writer: cc-<session> for Claude Code): letters, digits, '.', '_',
// '-', as the harnesses' ids are.
func (s *Server) validSession(session string) error {
	if s.cfg.Harness == nil {
		return errors.New("this server serves no harness's sessions")
	}
	if err := gitstore.ValidWriter(hooks.Writer(s.cfg.Harness, session)); err != nil || strings.ContainsAny(session, "/\\") || strings.Contains(session, "..") {
		return fmt.Errorf("session %q is not a session id", session)
	}
	return nil
}
