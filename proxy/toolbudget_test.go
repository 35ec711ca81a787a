package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/internal/testkit/stubbackend"
)

// toolDefs returns OpenAI tool definitions, named and sized by sizes
// (bytes of description each), in that order.
func toolDefs(names []string, sizes []int) []any {
	var out []any
	for i, n := range names {
		var d strings.Builder
		for d.Len() < sizes[i] {
			fmt.Fprintf(&d, "%s does step %d. ", n, d.Len())
		}
		out = append(out, map[string]any{"type": "function", "function": map[string]any{
			"name":        n,
			"description": d.String()[:sizes[i]],
			"parameters": map[string]any{"type": "object", "properties": map[string]any{
				"path": map[string]any{"type": "string", "description": "file to work on"},
			}, "required": []string{"path"}},
		}})
	}
	return out
}

// withTools adds tools to an OpenAI request body and returns the body
// and the tools member's bytes as they are in it.
func withTools(t *testing.T, body []byte, tools []any) ([]byte, []byte) {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	m["tools"] = tools
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out, memberOf(t, out, "tools")
}

// memberOf returns a top-level member's raw bytes.
func memberOf(t *testing.T, body []byte, key string) []byte {
	t.Helper()
	ms, ok := scanObject(body)
	if !ok {
		t.Fatalf("not a JSON object: %.200s", body)
	}
	return findMember(body, ms, key)
}

func toolBudgetEvents(p *Proxy) []Event {
	var out []Event
	for _, e := range p.events.since(0) {
		if e.Kind == EventToolBudget {
			out = append(out, e)
		}
	}
	return out
}

// The eight tools of the tests, largest description first from the
// fifth: the five largest, in order, are the ones the advice names.
var (
	budgetToolNames = []string{"read_file", "write_file", "grep", "list_dir", "run_shell", "web_fetch", "edit_file", "search_symbols"}
	budgetToolShare = []int{1, 1, 1, 1, 9, 7, 5, 4} // weights; the largest five: run_shell, web_fetch, edit_file, search_symbols, then read_file
	budgetTopFive   = []string{"run_shell", "web_fetch", "edit_file", "search_symbols", "read_file"}
)

// budgetTools returns the tools sized so that the stub counts them as
// about tokens tokens in all.
func budgetTools(tokens int) []any {
	sum := 0
	for _, w := range budgetToolShare {
		sum += w
	}
	sizes := make([]int, len(budgetToolShare))
	frame, _ := json.Marshal(toolDefs(budgetToolNames, sizes))
	for i, w := range budgetToolShare {
		sizes[i] = (tokens*4 - len(frame)) * w / sum
	}
	// The first of the equal ones is made a little larger so that the
	// order of the largest is fixed.
	sizes[0] += 40
	return toolDefs(budgetToolNames, sizes)
}

// A request whose tools array is 60% of the window logs one tool_budget
// event naming the fixed floor (counted exactly, as llama.cpp counts it)
// and the five largest tool schemas; the session's next request logs no
// second one; a session whose tools are under the share logs none; the
// forwarded requests are the client's bytes; /lossless/stats counts it.
func TestToolBudgetEvent(t *testing.T) {
	const window = 8192
	st := &stubbackend.Server{Kind: stubbackend.LlamaCpp, Window: window}
	var logs syncLines
	s := newStack(t, st, func(c *Config) { c.Logf = logs.add })

	c := stubbackend.NewConversation("stub-model", "You are a coding agent. Use the tools.")
	c.User("Read src/main.go and tell me what it does.")
	body, tools := withTools(t, c.Body(false), budgetTools(window*60/100))
	if n := stubbackend.Tokens(string(tools)); n < window*60/100 || n > window*62/100 {
		t.Fatalf("test setup: the tools array counts %d tokens, not 60%% of %d", n, window)
	}
	if code, b := s.post("/v1/chat/completions", body); code != 200 {
		t.Fatalf("HTTP %d: %s", code, b)
	}
	if got := s.lastChat().Body; !bytes.Equal(got, body) {
		t.Fatal("a request under the budget was not forwarded as the client's bytes")
	}
	evs := toolBudgetEvents(s.p)
	if len(evs) != 1 {
		t.Fatalf("%d tool_budget events after one request, want 1: %+v", len(evs), evs)
	}
	e := evs[0]
	u, _ := s.p.Usage("")
	if e.Session != u.Session || e.Model != "stub-model" || e.Window != window || e.ToolBudget == nil {
		t.Fatalf("event %+v, session %s", e, u.Session)
	}
	tb := e.ToolBudget
	// The floor, exactly as the backend counts the system prompt with the
	// tools: the stub templates the messages and appends the tools.
	lead := []json.RawMessage{json.RawMessage(`{"role":"system","content":"You are a coding agent. Use the tools."}`)}
	if want := stubbackend.Tokens(stubbackend.Template("", lead) + string(tools)); tb.Floor != want || tb.CountSource != sourceExact {
		t.Errorf("floor %d (%s), the backend counts %d (exact)", tb.Floor, tb.CountSource, want)
	}
	budget := s.p.budgetFor(window, 512)
	if tb.Budget != budget || tb.Window != window || tb.Share != 0.5 || float64(tb.Floor) <= 0.5*float64(budget) {
		t.Errorf("budget %d window %d share %v floor %d; want budget %d, window %d, share 0.5, floor over half the budget", tb.Budget, tb.Window, tb.Share, tb.Floor, budget, window)
	}
	if want := float64(int(1000*float64(tb.Floor)/float64(budget)+0.5)) / 10; tb.Percent != want {
		t.Errorf("pct_of_budget %v, want %v", tb.Percent, want)
	}
	if tb.ToolCount != len(budgetToolNames) || tb.System <= 0 || tb.Tools <= tb.System {
		t.Errorf("tool_count %d (want %d), system %d, tools %d tokens", tb.ToolCount, len(budgetToolNames), tb.System, tb.Tools)
	}
	var names []string
	sum := 0
	for i, tc := range tb.Largest {
		names = append(names, tc.Name)
		if i > 0 && tc.Tokens > tb.Largest[i-1].Tokens {
			t.Errorf("largest tools out of order: %+v", tb.Largest)
		}
		sum += tc.Tokens
	}
	if strings.Join(names, " ") != strings.Join(budgetTopFive, " ") {
		t.Errorf("largest tools %v, want %v", names, budgetTopFive)
	}
	if sum >= tb.Tools {
		t.Errorf("the five largest tools take %d of %d tokens: the other three are missing", sum, tb.Tools)
	}
	if !strings.Contains(e.Detail, "run_shell") || !strings.Contains(e.Detail, strconv.Itoa(tb.Floor)+" tokens") {
		t.Errorf("event detail %q lacks the floor or the largest tool", e.Detail)
	}
	logged := strings.Count(logs.String(), "warning: tool budget: session "+u.Session)
	if logged != 1 {
		t.Errorf("the tool budget is logged %d times, want once:\n%s", logged, logs.String())
	}

	// The session's next turn: no second event, no second log line.
	c.Assistant("It starts the server.")
	c.User("Now read src/server.go.")
	body2, _ := withTools(t, c.Body(false), budgetTools(window*60/100))
	if code, b := s.post("/v1/chat/completions", body2); code != 200 {
		t.Fatalf("HTTP %d: %s", code, b)
	}
	if n := len(toolBudgetEvents(s.p)); n != 1 {
		t.Errorf("%d tool_budget events after the session's second request, want 1", n)
	}
	if n := strings.Count(logs.String(), "warning: tool budget:"); n != 1 {
		t.Errorf("the tool budget is logged %d times after two requests of one session", n)
	}

	// Another session, its tools a tenth of the window: none.
	c2 := stubbackend.NewConversation("stub-model", "You are a different agent.")
	c2.User("List the files.")
	body3, _ := withTools(t, c2.Body(false), budgetTools(window/10))
	if code, b := s.post("/v1/chat/completions", body3); code != 200 {
		t.Fatalf("HTTP %d: %s", code, b)
	}
	u2, _ := s.p.Usage("")
	if u2.Session == u.Session {
		t.Fatal("test setup: the second conversation is the same session")
	}
	if n := len(toolBudgetEvents(s.p)); n != 1 {
		t.Errorf("%d tool_budget events after a session under the share, want 1", n)
	}

	// /lossless/stats counts the session and carries its advice.
	code, b := s.get("/lossless/stats")
	if code != 200 {
		t.Fatalf("stats: HTTP %d", code)
	}
	var stats struct {
		ToolBudgetSessions int `json:"tool_budget_sessions"`
		Sessions           []struct {
			Session    string      `json:"session"`
			ToolBudget *ToolBudget `json:"tool_budget"`
		} `json:"sessions"`
	}
	if err := json.Unmarshal(b, &stats); err != nil {
		t.Fatal(err)
	}
	if stats.ToolBudgetSessions != 1 || !bytes.Contains(b, []byte(`"tool_budget_sessions": 1`)) {
		t.Errorf("stats tool_budget_sessions = %d, want 1:\n%s", stats.ToolBudgetSessions, b)
	}
	over := 0
	for _, ss := range stats.Sessions {
		if ss.ToolBudget != nil {
			over++
			if ss.Session != u.Session || ss.ToolBudget.Floor != tb.Floor {
				t.Errorf("stats session %s advises floor %d; want session %s, floor %d", ss.Session, ss.ToolBudget.Floor, u.Session, tb.Floor)
			}
		}
	}
	if over != 1 || len(stats.Sessions) != 2 {
		t.Errorf("%d of %d sessions carry tool_budget, want 1 of 2", over, len(stats.Sessions))
	}
	// And the events route carries the event.
	_, eb := s.get("/lossless/events")
	if !bytes.Contains(eb, []byte(`"kind": "tool_budget"`)) || !bytes.Contains(eb, []byte(`"largest_tools"`)) {
		t.Errorf("/lossless/events lacks the tool_budget event:\n%s", eb)
	}
}

// tool-share is honoured: with 0.9 the same 60% request logs nothing.
func TestToolBudgetShareSetting(t *testing.T) {
	const window = 8192
	st := &stubbackend.Server{Kind: stubbackend.LlamaCpp, Window: window}
	s := newStack(t, st, func(c *Config) {
		if err := c.Set("tool-share", "0.9"); err != nil {
			t.Fatal(err)
		}
	})
	c := stubbackend.NewConversation("stub-model", "You are a coding agent.")
	c.User("Read src/main.go.")
	body, _ := withTools(t, c.Body(false), budgetTools(window*60/100))
	if code, b := s.post("/v1/chat/completions", body); code != 200 {
		t.Fatalf("HTTP %d: %s", code, b)
	}
	if n := len(toolBudgetEvents(s.p)); n != 0 {
		t.Errorf("%d tool_budget events with tool-share 0.9 for a floor of about 70%% of the budget", n)
	}
	if n := s.p.Stats().ToolBudgetSessions; n != 0 {
		t.Errorf("tool_budget_sessions %d", n)
	}
	for _, v := range []string{"0", "-0.1", "1.5", "half"} {
		var cfg Config
		if err := cfg.Set("tool-share", v); err == nil {
			t.Errorf("tool-share %q accepted", v)
		}
	}
	cfg, err := Load(Sources{Git: func(k string) string {
		return map[string]string{"lossless.proxy.tool-share": "0.25"}[k]
	}})
	if err != nil || cfg.ToolShare != 0.25 {
		t.Errorf("git config lossless.proxy.tool-share 0.25: %v, %v", cfg.ToolShare, err)
	}
	if d := DefaultConfig().ToolShare; d != 0.5 {
		t.Errorf("default tool-share %v, want 0.5", d)
	}
}

// The Anthropic route: the floor is the top-level system and the tools
// (named by "name"), counted by the backend's count_tokens when it is
// known to be Anthropic's, else estimated from their bytes.
func TestToolBudgetAnthropic(t *testing.T) {
	const window = 16384
	system := `[{"type":"text","text":"You are Claude Code."}]`
	var tools []any
	for i, n := range []string{"Bash", "Read", "Edit", "Grep", "Glob", "Task"} {
		tools = append(tools, map[string]any{"name": n, "description": strings.Repeat("x", 2000*(i+1)),
			"input_schema": map[string]any{"type": "object"}})
	}
	body, _ := json.Marshal(map[string]any{"model": "stub-model", "max_tokens": 2048, "system": json.RawMessage(system),
		"tools": tools, "messages": []any{map[string]any{"role": "user", "content": "hello"}}})
	toolBytes := memberOf(t, body, "tools")
	for _, backend := range []string{"anthropic", "auto"} {
		t.Run(backend, func(t *testing.T) {
			st := &stubbackend.Server{Kind: stubbackend.Anthropic, Window: window}
			s := newStack(t, st, func(c *Config) { c.Window, c.Backend = window, backend })
			if code, b := s.post("/v1/messages", body, "X-Api-Key", "sk-ant-test"); code != 200 {
				t.Fatalf("HTTP %d: %s", code, b)
			}
			evs := toolBudgetEvents(s.p)
			if len(evs) != 1 {
				t.Fatalf("%d tool_budget events, want 1", len(evs))
			}
			tb := evs[0].ToolBudget
			// The stub counts the system's text templated, and the
			// tools' bytes; the estimate is bytes / 3.5 before any
			// calibration.
			want, src := stubbackend.Tokens(stubbackend.Template("You are Claude Code.", nil))+stubbackend.Tokens(string(toolBytes)), sourceExact
			if backend == "auto" {
				want, src = int(math.Ceil(float64(len(system)+len(toolBytes))/charsPerToken)), sourceEstimate
			}
			if tb.Floor != want || tb.CountSource != src {
				t.Errorf("floor %d (%s), want %d (%s)", tb.Floor, tb.CountSource, want, src)
			}
			var names []string
			for _, tc := range tb.Largest {
				names = append(names, tc.Name)
			}
			if strings.Join(names, " ") != "Task Glob Grep Edit Read" || tb.ToolCount != 6 || tb.System <= 0 {
				t.Errorf("largest %v, tool_count %d, system %d", names, tb.ToolCount, tb.System)
			}
		})
	}
}

// Compaction never touches tool definitions: a conversation that
// outgrows the budget beside a large tools array is compacted, and every
// request the backend received carries the client's tools array byte
// for byte. The session is noted once across all its turns.
func TestToolBudgetCompactionKeepsTools(t *testing.T) {
	const window = 16384
	st := &stubbackend.Server{Kind: stubbackend.LlamaCpp, Window: window}
	s := newStack(t, st, nil)
	c := stubbackend.NewConversation("stub-model", "You are a careful code reviewer.")
	var tools []byte
	compacted := 0
	for i := 1; i <= 12; i++ {
		c.User(stubbackend.DemoTurn(i))
		var body []byte
		body, tools = withTools(t, c.Body(false), budgetTools(window*55/100))
		code, b := s.post("/v1/chat/completions", body)
		if code != 200 {
			t.Fatalf("turn %d: HTTP %d: %s", i, code, b)
		}
		fwd := s.lastChat().Body
		if isCompacted(fwd) {
			compacted++
		}
		if got := memberOf(t, fwd, "tools"); !bytes.Equal(got, tools) {
			t.Fatalf("turn %d: the forwarded tools array differs from the client's (%d bytes, client's %d)", i, len(got), len(tools))
		}
		c.Assistant(fmt.Sprintf("Reviewed module %d.", i))
	}
	stats := s.p.Stats()
	if compacted == 0 || stats.Compacted != compacted {
		t.Fatalf("%d forwarded requests compacted, stats say %d: the test must compact", compacted, stats.Compacted)
	}
	if len(stats.FailOpen) != 0 {
		t.Errorf("fail-open: %v", stats.FailOpen)
	}
	chats := 0
	for _, r := range st.Chat() {
		chats++
		if got := memberOf(t, r.Body, "tools"); !bytes.Equal(got, tools) {
			t.Errorf("a forwarded request's tools array differs from the client's")
		}
	}
	if chats != 12 {
		t.Errorf("the backend received %d chat requests, want 12", chats)
	}
	if n := len(toolBudgetEvents(s.p)); n != 1 || stats.ToolBudgetSessions != 1 {
		t.Errorf("%d tool_budget events, %d sessions counted, over 12 turns of one session; want 1", n, stats.ToolBudgetSessions)
	}
}

var (
	adviceShownRe = regexp.MustCompile(`<section id="advice">`)
	adviceFloorRe = regexp.MustCompile(`<div class="advice" data-session="([^"]+)" data-floor="(\d+)">`)
	adviceToolRe  = regexp.MustCompile(`<li data-tool="([^"]+)" data-tokens="(\d+)">`)
)

// The dashboard in a real browser shows the advice: the session, its
// fixed floor and the five largest tool schemas with their tokens.
func TestToolBudgetDashboardInChromium(t *testing.T) {
	bin := chromiumPath(t)
	const window = 8192
	st := &stubbackend.Server{Kind: stubbackend.LlamaCpp, Window: window}
	up, err := st.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cfg := DefaultConfig()
	cfg.Listen, cfg.Upstream, cfg.Archive = "127.0.0.1:0", up, &MemoryArchive{}
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := Run(ctx, cfg)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	defer func() {
		cancel()
		if err := srv.Wait(); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	}()
	base := "http://" + srv.Addr

	c := stubbackend.NewConversation("stub-model", "You are a coding agent. Use the tools.")
	c.User("Read src/main.go and tell me what it does.")
	body, _ := withTools(t, c.Body(false), budgetTools(window*60/100))
	resp, err := http.Post(base+"/v1/chat/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("HTTP %d", resp.StatusCode)
	}
	ictx, icancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer icancel()
	if err := srv.Proxy.Idle(ictx); err != nil {
		t.Fatal(err)
	}
	u, ok := srv.Proxy.Usage("")
	if !ok || u.ToolBudget == nil {
		t.Fatalf("test setup: no tool budget on the session: %+v", u)
	}
	tb := u.ToolBudget

	dom := headless(t, bin, base+"/lossless/health", "--dump-dom")
	if renderedRe.Find(dom) == nil {
		t.Fatalf("the dashboard never rendered the proxy's data:\n%s", tail(dom, 3000))
	}
	if !adviceShownRe.Match(dom) {
		t.Fatalf("the advice box is hidden or missing:\n%s", tail(dom, 4000))
	}
	m := adviceFloorRe.FindSubmatch(dom)
	if m == nil || string(m[1]) != u.Session || string(m[2]) != strconv.Itoa(tb.Floor) {
		t.Fatalf("advice %q; want session %s, floor %d:\n%s", m, u.Session, tb.Floor, tail(dom, 4000))
	}
	if !bytes.Contains(dom, []byte("fixed floor "+dashK(tb.Floor)+" tokens")) {
		t.Errorf("the advice does not name the fixed floor (%s tokens):\n%s", dashK(tb.Floor), tail(dom, 4000))
	}
	items := adviceToolRe.FindAllSubmatch(dom, -1)
	if len(items) != len(budgetTopFive) {
		t.Fatalf("%d tools in the advice, want %d:\n%s", len(items), len(budgetTopFive), tail(dom, 4000))
	}
	for i, it := range items {
		if string(it[1]) != budgetTopFive[i] || string(it[2]) != strconv.Itoa(tb.Largest[i].Tokens) {
			t.Errorf("advice tool %d: %s %s tokens, want %s %d", i, it[1], it[2], budgetTopFive[i], tb.Largest[i].Tokens)
		}
	}
	if !bytes.Contains(dom, []byte(`<div class="v">1</div><div class="k">sessions over the tool budget</div>`)) {
		t.Errorf("the dashboard lacks the tool budget card:\n%s", tail(dom, 3000))
	}
}

// dashK formats tokens as the dashboard does (its k()), for the values the
// test needs.
func dashK(n int) string {
	switch {
	case n < 1000:
		return strconv.Itoa(n)
	case n%1024 == 0 && n < 1024000:
		return strconv.Itoa(n/1024) + "k"
	default:
		return strings.TrimSuffix(strconv.FormatFloat(float64(n)/1000, 'f', 1, 64), ".0") + "k"
	}
}
