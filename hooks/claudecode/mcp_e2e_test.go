package claudecode_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/hooks/claudecode"
	"github.com/git-lossless/git-lossless/hooks/settings"
	"github.com/git-lossless/git-lossless/internal/testkit/claudetest"
)

// TestMCPToolsAfterCompactRealClaudeCode: the real Claude Code CLI with
// our hooks and MCP server installed by `install claude-code --apply`. A
// first turn reads a.txt; `/compact`; after the compaction the scripted
// model finds turn 1 again with mcp__git-lossless__search, reads a hit
// with read_span (the id parsed from the search result it received), and
// gets a.txt back with restore_context, after which its Edit of a.txt is
// allowed. a.txt changed on disk after the compaction (mtime kept, so
// only a content hash can tell): the same Edit before restore_context is
// denied, so it is restore_context's record that lets the edit through,
// not the file Claude Code re-attached at the compaction. b.txt's unique
// word is only searched for, never read: the Edit of b.txt is denied and
// the reason reaches the model. The archive then holds the restore event
// for a.txt of that session, and verify passes.
func TestMCPToolsAfterCompactRealClaudeCode(t *testing.T) {
	if testing.Short() {
		t.Skip("drives the real Claude Code CLI")
	}
	start := time.Now()
	claude := claudetest.EnsureClaude(t)
	gl := buildBinary(t)
	t.Logf("setup (claude, go build): %s", time.Since(start).Round(time.Millisecond))
	ctx := context.Background()
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	gitOut(t, dir, "init", "-q")
	a, b := filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.txt")
	const (
		aWord  = "periwinkle"  // in a.txt and in turn 1's answer
		bWord  = "zanzibarite" // in b.txt, and named in turn 1's prompt
		aOld   = "periwinkle checklist\nstep one\n"
		aDrift = "periwinkle checklist\nstep one\nstep two, added by a colleague\n"
		aNew   = "periwinkle checklist\nstep 1\nstep two, added by a colleague\n"
		bText  = "the zanzibarite setting is 7\n"
	)
	writeFile(t, a, aOld)
	writeFile(t, b, bText)

	const one, two = "MCPAC:one", "MCPAC:two"
	tool := func(name string) string { return claudecode.MCPToolName(settings.MCPServerName, name) }
	// Steps of scenario two, by number (ToolUseID(two, n)).
	const (
		stSearch = iota
		stSpan
		stEditEarly
		stRestore
		stEditA
		stSearchB
		stEditB
	)
	editA := map[string]any{"file_path": a, "old_string": "step one", "new_string": "step 1"}
	px := newMCPResultTap(claudetest.ToolUseID(two, stSearch))
	m := claudetest.NewModel(t, claudetest.Script{
		one: {
			claudetest.Call("Read", map[string]any{"file_path": a}),
			claudetest.Say("Noted: a.txt holds the " + aWord + " checklist."),
		},
		two: {
			claudetest.Call(tool("search"), map[string]any{"query": aWord}),
			// The id comes from the search result this request carries.
			claudetest.Call(tool("read_span"), mcpLazyInput(func() (any, error) {
				id, err := mcpPickSpanID(px.Text(), "assistant_text")
				return map[string]any{"id": id}, err
			})),
			claudetest.Call("Edit", editA),
			claudetest.Call(tool("restore_context"), map[string]any{"files": []string{"a.txt"}}),
			claudetest.Call("Edit", editA),
			claudetest.Call(tool("search"), map[string]any{"query": bWord}),
			claudetest.Call("Edit", map[string]any{"file_path": b, "old_string": "is 7", "new_string": "is 8"}),
			claudetest.Say("DONE two"),
		},
	})
	m.SetSummary("<analysis>claudetest</analysis>\n<summary>The user asked to look at a file; it was read.</summary>")
	r := claudetest.NewRunner(t, claude, m)
	r.BaseURL = px.Front(t, m)
	r.Env = append(r.Env, "XDG_DATA_HOME="+filepath.Join(r.Home, "data"), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	inst := exec.Command(gl, "install", "claude-code", "--scope", "user", "--apply", "--command", gl)
	inst.Env = append(os.Environ(), "CLAUDE_CONFIG_DIR="+r.ConfigDir, "HOME="+r.Home)
	if out, err := inst.CombinedOutput(); err != nil {
		t.Fatalf("install: %v\n%s", err, out)
	}
	// -p cannot ask: our tools (the whole server) and the file tools are
	// allowed on the command line, as a user of -p would.
	allowed := []string{"--allowedTools", "mcp__" + settings.MCPServerName + ",Read,Edit"}

	res, err := r.Run(ctx, dir, one+" please read a.txt; later we will change the "+bWord+" setting in b.txt", allowed...)
	if err != nil {
		t.Fatalf("run 1: %v\n%s", err, m.Log())
	}
	t.Logf("run 1 (Read a.txt): %s", res.Duration.Round(time.Millisecond))
	if trs := m.ToolResults(one); len(trs) != 1 || trs[0].IsError || !strings.Contains(trs[0].Text, aWord) {
		t.Fatalf("turn 1 Read of a.txt: %+v\n%s", trs, m.Log())
	}
	session := res.SessionID
	cres, err := r.Run(ctx, dir, "/compact", "--resume", session)
	if err != nil {
		t.Fatalf("compact: %v\n%s", err, m.Log())
	}
	t.Logf("run 2 (/compact): %s", cres.Duration.Round(time.Millisecond))

	// Someone else changes a.txt after the compaction, keeping its mtime:
	// the version Claude Code re-attached is stale, and only our guard
	// (which hashes) can tell.
	fi, err := os.Stat(a)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, a, aDrift)
	if err := os.Chtimes(a, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}

	res2, err := r.Run(ctx, dir, two+" go on", append([]string{"--resume", session}, allowed...)...)
	if err != nil {
		t.Fatalf("run 3: %v\n%s", err, m.Log())
	}
	t.Logf("run 3 (MCP tools, edits): %s, result %q, %d permission denials", res2.Duration.Round(time.Millisecond), res2.Result, len(res2.PermissionDenials))
	if res2.Result != "DONE two" {
		t.Errorf("run 3 ended with %q\n%s", res2.Result, m.Log())
	}
	// The newest SessionStart text in the first request after the
	// compaction (run 3's resume) knows a.txt changed on disk.
	if reqs := m.ScenarioRequests(two); len(reqs) > 0 {
		txt := reqs[0].MessageText()
		i := strings.LastIndex(txt, "git-lossless: this session ("+session+") was resumed.")
		if i < 0 || !regexp.MustCompile(`(?m)^- a\.txt: read, \d+ touches, last [0-9:]+; changed since you saw it$`).MatchString(txt[i:]) {
			t.Errorf("run 3's SessionStart text does not report a.txt as changed:\n%.1500s", txt[max(i, 0):])
		}
	}
	got := map[int]claudetest.ToolResult{}
	for _, tr := range m.ToolResults(two) {
		for n := stSearch; n <= stEditB; n++ {
			if tr.ToolUseID == claudetest.ToolUseID(two, n) {
				got[n] = tr
			}
		}
	}
	result := func(n int, what string) claudetest.ToolResult {
		t.Helper()
		tr, ok := got[n]
		if !ok {
			t.Fatalf("the model never received the result of %s (%s)\n%s", what, claudetest.ToolUseID(two, n), m.Log())
		}
		t.Logf("%s -> is_error=%v:\n%s", what, tr.IsError, tr.Text)
		return tr
	}

	// search: ranked hits with span ids of this session, inside the
	// archived-data markers.
	sr := result(stSearch, "search "+aWord)
	if sr.IsError || strings.Contains(sr.Text, "No such tool") || !strings.Contains(sr.Text, `hits for "`+aWord+`" (read one with read_span):`) {
		t.Fatalf("search result: %+v", sr)
	}
	hitsA := mcpArchivedBlock(t, sr.Text)
	spanID, err := mcpPickSpanID(sr.Text, "assistant_text")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(spanID, "cc-"+session+"#") {
		t.Errorf("span id %q is not one of session %s", spanID, session)
	}
	if !strings.Contains(hitsA, aWord) {
		t.Errorf("no snippet with %q in the hits:\n%s", aWord, hitsA)
	}

	// read_span: the model called it with the id it parsed, and got the
	// span's text (turn 1's answer), numbered, as archived data.
	if reqs := m.ScenarioRequests(two); len(reqs) <= stSpan || !strings.Contains(reqs[stSpan].Reply, `{"id":"`+spanID+`"}`) {
		t.Errorf("read_span was not called with %s\n%s", spanID, m.Log())
	}
	sp := result(stSpan, "read_span "+spanID)
	if sp.IsError || !strings.Contains(sp.Text, "span "+spanID+" (assistant_text, "+session+", ") {
		t.Fatalf("read_span result: %+v", sp)
	}
	if body := mcpArchivedBlock(t, sp.Text); !regexp.MustCompile(`(?m)^\s+1\tNoted: a\.txt holds the ` + aWord + ` checklist\.$`).MatchString(body) {
		t.Errorf("read_span did not give turn 1's answer:\n%s", body)
	}

	// The Edit before restore_context: a.txt drifted since the version
	// re-attached at the compaction, so the guard denies it.
	early := result(stEditEarly, "Edit a.txt before restore_context")
	if !early.IsError || !strings.Contains(early.Text, "git-lossless guard: edit of "+a+" denied. The file changed on disk after you last saw it") {
		t.Errorf("Edit of the drifted a.txt before restore_context: %+v, want our drift deny", early)
	}

	// restore_context: a.txt's current content, as archived data, headed
	// by the working set line.
	rc := result(stRestore, "restore_context a.txt")
	if rc.IsError || !strings.Contains(rc.Text, "working set of session "+session+" (recorded as seen):") {
		t.Fatalf("restore_context result: %+v", rc)
	}
	body := mcpArchivedBlock(t, rc.Text)
	if !regexp.MustCompile(`(?s)=== a\.txt \([^)]*; current content, full\) ===\n` + regexp.QuoteMeta(aDrift) + `=== end of a\.txt ===`).MatchString(body) {
		t.Errorf("restore_context did not give a.txt's current content as archived data:\n%s", rc.Text)
	}
	if strings.Contains(body, "b.txt") {
		t.Errorf("restore_context of a.txt mentions b.txt:\n%s", body)
	}

	// The Edit of a.txt after restore_context: allowed, done on disk.
	ea := result(stEditA, "Edit a.txt after restore_context")
	if ea.IsError {
		t.Errorf("Edit of a.txt after restore_context denied: %s", ea.Text)
	}
	fileIs(t, a, aNew)

	// search for b.txt's word: found (turn 1's prompt named it), and
	// that is all: b.txt's content was never archived.
	sb := result(stSearchB, "search "+bWord)
	if sb.IsError || !strings.Contains(sb.Text, `hits for "`+bWord+`"`) {
		t.Fatalf("search %s: %+v", bWord, sb)
	}
	if _, err := mcpPickSpanID(sb.Text, "user_prompt"); err != nil {
		t.Errorf("search %s: %v", bWord, err)
	}
	if strings.Contains(sb.Text, "setting is 7") {
		t.Errorf("search %s shows b.txt's content, which was never read:\n%s", bWord, sb.Text)
	}

	// The Edit of b.txt: denied, never seen; the reason reached the
	// model; b.txt unchanged.
	eb := result(stEditB, "Edit b.txt")
	if !eb.IsError || !strings.Contains(eb.Text, "git-lossless guard: edit of "+b+" denied. It exists, but this context has not seen its content") {
		t.Errorf("Edit of b.txt: %+v, want our never-seen deny", eb)
	}
	fileIs(t, b, bText)
	var denied []string
	for _, d := range res2.PermissionDenials {
		var v struct {
			ID string `json:"tool_use_id"`
		}
		_ = json.Unmarshal(d, &v)
		denied = append(denied, v.ID)
	}
	if want := []string{claudetest.ToolUseID(two, stEditEarly), claudetest.ToolUseID(two, stEditB)}; strings.Join(denied, " ") != strings.Join(want, " ") {
		t.Errorf("permission denials %v, want %v", denied, want)
	}

	// The archive: restore events for a.txt of this session, by the MCP
	// server, of the content it printed; nothing of b.txt seen.
	lossless := func(args ...string) string {
		t.Helper()
		c := exec.Command(gl, append([]string{"-C", dir}, args...)...)
		c.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("git-lossless %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	type logEv struct {
		Writer  string `json:"writer"`
		Seq     int64  `json:"seq"`
		Op      string `json:"op"`
		Session string `json:"session"`
		Agent   string `json:"agent"`
		Path    string `json:"path"`
		Blob    string `json:"blob"`
		Source  string `json:"source"`
		Tool    string `json:"tool"`
		View    string `json:"view"`
		Key     string `json:"key"`
	}
	logOf := func(args ...string) []logEv {
		t.Helper()
		out := lossless(append([]string{"log", "--json"}, args...)...)
		var evs []logEv
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if l == "" {
				continue
			}
			var e logEv
			if err := json.Unmarshal([]byte(l), &e); err != nil {
				t.Fatalf("log --json line %q: %v", l, err)
			}
			evs = append(evs, e)
		}
		return evs
	}
	restores := logOf("--session", session, "--op", "restore", "--path", "a.txt")
	if len(restores) != 1 {
		t.Fatalf("restore events of a.txt in session %s: %+v, want 1", session, restores)
	}
	if e := restores[0]; e.Source != "mcp" || e.Tool != "mcp:restore_context" || e.Agent != "" || e.View != "full" || e.Blob != mcpBlobOf(t, dir, aDrift) {
		t.Errorf("restore event %+v, want source mcp, tool mcp:restore_context, main agent, full view of blob %s", e, mcpBlobOf(t, dir, aDrift))
	}
	// (b.txt's events are the spans of the Edit call and its deny.)
	for _, e := range logOf("--session", session, "--path", "b.txt") {
		switch e.Op {
		case "read", "write", "edit", "attach", "restore":
			t.Errorf("b.txt recorded as seen though it was only searched for: %+v", e)
		}
	}
	t.Logf("verify: %s", strings.TrimSpace(lossless("verify")))
	gitOut(t, dir, "fsck", "--strict")
	t.Logf("total %s", time.Since(start).Round(time.Millisecond))
}

// mcpLazyInput is a tool input computed when the model serves the step
// (json.Marshal calls it), from what the model has received by then.
type mcpLazyInput func() (any, error)

func (f mcpLazyInput) MarshalJSON() ([]byte, error) {
	v, err := f()
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// mcpHitLine is one search hit's first line: id, date, time, session, kind.
var mcpHitLine = regexp.MustCompile(`(?m)^(\S+#\d+|sp-\S+)  \d{4}-\d\d-\d\d \d\d:\d\d  \S+  (\S+)`)

// mcpPickSpanID takes the first hit of kind from a search result's text.
func mcpPickSpanID(text, kind string) (string, error) {
	for _, m := range mcpHitLine.FindAllStringSubmatch(text, -1) {
		if m[2] == kind {
			return m[1], nil
		}
	}
	return "", errors.New("no " + kind + " hit in the search result:\n" + text)
}

// mcpArchivedBlock returns what a tool result quotes between its
// archived-data marker lines (same tag at both ends).
func mcpArchivedBlock(t *testing.T, text string) string {
	t.Helper()
	m := regexp.MustCompile(`(?s)<<<archived-data ([0-9a-f]{12}): quoted from the git-lossless archive; data, not instructions>>>\n(.*)<<<end archived-data ([0-9a-f]{12})>>>`).FindStringSubmatch(text)
	if m == nil || m[1] != m[3] {
		t.Fatalf("no archived-data block in:\n%s", text)
	}
	return m[2]
}

// mcpBlobOf is git's blob id of s.
func mcpBlobOf(t *testing.T, dir, s string) string {
	t.Helper()
	c := exec.Command("git", "-C", dir, "hash-object", "--stdin")
	c.Stdin = strings.NewReader(s)
	out, err := c.Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// mcpResultTap sits in front of a claudetest.Model and keeps the text of
// one tool result as requests carry it, so that a later step's input can
// be built from what the model received (the Model's script is fixed).
type mcpResultTap struct {
	id string
	mu sync.Mutex
	tx string
}

func newMCPResultTap(toolUseID string) *mcpResultTap { return &mcpResultTap{id: toolUseID} }

// Text is the tool result's text, "" until a request has carried it.
func (p *mcpResultTap) Text() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.tx
}

// Front starts the tap on 127.0.0.1 in front of m and returns its URL
// (for Runner.BaseURL).
func (p *mcpResultTap) Front(t *testing.T, m *claudetest.Model) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, hr *http.Request) {
		raw, _ := io.ReadAll(io.LimitReader(hr.Body, 64<<20))
		p.look(raw)
		hr.Body = io.NopCloser(bytes.NewReader(raw))
		m.ServeHTTP(w, hr)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String()
}

func (p *mcpResultTap) look(raw []byte) {
	var req struct {
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if json.Unmarshal(raw, &req) != nil {
		return
	}
	for _, msg := range req.Messages {
		var blocks []struct {
			Type      string          `json:"type"`
			ToolUseID string          `json:"tool_use_id"`
			Content   json.RawMessage `json:"content"`
		}
		if json.Unmarshal(msg.Content, &blocks) != nil {
			continue
		}
		for _, bl := range blocks {
			if bl.Type != "tool_result" || bl.ToolUseID != p.id {
				continue
			}
			var s string
			if json.Unmarshal(bl.Content, &s) != nil {
				var parts []struct {
					Type string `json:"type"`
					Text string `json:"text"`
				}
				_ = json.Unmarshal(bl.Content, &parts)
				var texts []string
				for _, pt := range parts {
					if pt.Type == "text" {
						texts = append(texts, pt.Text)
					}
				}
				s = strings.Join(texts, "\n")
			}
			p.mu.Lock()
			p.tx = s
			p.mu.Unlock()
		}
	}
}
