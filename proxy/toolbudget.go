package proxy

// The tool budget (issue 22): the system prompt and the tool definitions
// go with every request of a session, ahead of any conversation, and
// compaction never touches them (it rewrites the messages array only).
// When they alone take more than ToolShare of the budget, compaction has
// little room left to work in and the session will compact on nearly
// every turn; no summary can fix that, only fewer or smaller tools or a
// larger window can. The proxy says so once per session: a tool_budget
// event, a log line, a counter in /lossless/stats and an advice box on
// the dashboard naming the floor and the largest tool schemas.

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/git-lossless/git-lossless/internal/jsonscan"
)

// EventToolBudget is the kind of the event noted when a session's fixed
// floor exceeds ToolShare of its budget.
const EventToolBudget = "tool_budget"

// toolBudgetTop is how many of the largest tool schemas the advice names.
const toolBudgetTop = 5

// ToolBudget is a session's fixed floor: what every one of its requests
// carries before any conversation, as the tool_budget event and the
// session's usage report it.
type ToolBudget struct {
	// Floor is the tokens of the system prompt, the tool definitions and
	// the other request members outside messages (tool_choice,
	// response_format): exact when the backend could count them, else
	// the calibrated estimate (CountSource).
	Floor       int    `json:"floor_tokens"`
	CountSource string `json:"count_source"`
	// System and Tools split the floor, by the calibrated estimate.
	System int `json:"system_tokens"`
	Tools  int `json:"tool_tokens"`
	// ToolCount is the number of tool definitions (tools and the legacy
	// functions array).
	ToolCount int `json:"tool_count"`
	// Largest are the largest tool schemas, largest first (at most 5).
	Largest []ToolCost `json:"largest_tools"`
	// Budget and Window are the request's; Share is the setting
	// (tool-share) the floor exceeded, and Percent the floor's share of
	// the budget.
	Budget  int     `json:"budget"`
	Window  int     `json:"window"`
	Share   float64 `json:"share"`
	Percent float64 `json:"pct_of_budget"`
}

// ToolCost is one tool definition's size.
type ToolCost struct {
	Name   string `json:"name"`
	Tokens int    `json:"tokens"`
}

// floorKey is what a session's floor was last checked for: the same
// request shape against the same budget gives the same answer, so the
// check costs nothing on the turns after the first.
type floorKey struct {
	fixed, first, budget int
}

// checkToolBudget compares the request's fixed floor with ToolShare of
// its budget and, the first time a session's floor exceeds it, notes a
// tool_budget event, logs it and counts it. It never changes the request.
func (p *Proxy) checkToolBudget(ctx context.Context, x *exchange) {
	if x.window <= 0 || x.budget <= 0 || p.cfg.ToolShare <= 0 {
		return
	}
	r := x.req
	key := floorKey{fixed: r.fixedChars, budget: x.budget}
	if len(r.msgs) > 0 {
		key.first = len(r.msgs[0].raw)
	}
	s := x.sess
	s.mu.Lock()
	done := s.toolBudget != nil || s.floorSeen == key
	s.floorSeen = key
	s.mu.Unlock()
	if done {
		return
	}
	limit := p.cfg.ToolShare * float64(x.budget)
	sysChars, lead := r.leadingSystem()
	margin := p.cfg.Margin
	floor, src := x.ms.estimate(r.fixedChars+sysChars, margin), sourceEstimate
	if float64(floor)*2 < limit {
		return // clearly under: not worth a count
	}
	if x.exact {
		if n, ok := p.up.countFloorExact(ctx, x.kind, r, lead, x.auth); ok {
			floor, src = n, sourceExact
		}
	}
	if float64(floor) <= limit {
		return
	}
	tb := &ToolBudget{
		Floor: floor, CountSource: src, Budget: x.budget, Window: x.window, Share: p.cfg.ToolShare,
		Percent: float64(int(1000*float64(floor)/float64(x.budget)+0.5)) / 10,
	}
	if r.d == anthropic || r.d == responses {
		tb.System = x.ms.estimate(contentChars(r.system), margin)
	} else if sysChars > 0 {
		tb.System = x.ms.estimate(sysChars, margin)
	}
	costs := r.toolCosts(x.ms, margin)
	tb.ToolCount = len(costs)
	for _, c := range costs {
		tb.Tools += c.Tokens
	}
	sort.SliceStable(costs, func(i, j int) bool { return costs[i].Tokens > costs[j].Tokens })
	tb.Largest = costs[:min(len(costs), toolBudgetTop)]

	s.mu.Lock()
	first := s.toolBudget == nil
	if first {
		s.toolBudget = tb
	}
	s.mu.Unlock()
	if !first {
		return // a concurrent request of the session noted it
	}
	p.stats.add(func(st *statCounters) { st.toolBudget++ })
	detail := tb.describe()
	p.note(Event{Kind: EventToolBudget, Session: s.key, Model: r.model, Window: x.window, Source: src,
		Detail: detail, ToolBudget: tb})
	p.cfg.Logf("warning: tool budget: session %s (%s): %s", s.key, r.model, detail)
}

// describe is the advice in one line, for the log and the event.
func (tb *ToolBudget) describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "the system prompt and %d tool definitions take %d tokens (%s) of every request, %.1f%% of the budget %d (window %d, tool-share %g)",
		tb.ToolCount, tb.Floor, tb.CountSource, tb.Percent, tb.Budget, tb.Window, tb.Share)
	if len(tb.Largest) > 0 {
		b.WriteString("; largest tool schemas:")
		for i, c := range tb.Largest {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, " %s %d", c.Name, c.Tokens)
		}
	}
	b.WriteString("; compaction cannot shrink them: drop unneeded tools, shorten their schemas, or use a larger window")
	return b.String()
}

// leadingSystem returns the system and developer messages that open an
// OpenAI request (the system prompt every request repeats) as a JSON
// array, and their estimate basis. Anthropic's system is a top-level
// member, counted in fixedChars already.
func (r *request) leadingSystem() (chars int, array []byte) {
	array = []byte{'['}
	if r.d == openAI {
		for i := range r.msgs {
			m := &r.msgs[i]
			if !m.classify(r.d) || !m.isSystem() {
				break
			}
			if len(array) > 1 {
				array = append(array, ',')
			}
			array = append(array, m.raw...)
			chars += m.chars + msgOverheadChars
		}
	}
	return chars, append(array, ']')
}

// toolCosts lists the request's tool definitions (tools, and the legacy
// functions array) with their estimated tokens, in request order.
func (r *request) toolCosts(ms *modelState, margin float64) []ToolCost {
	var out []ToolCost
	for _, key := range []string{"tools", "functions"} {
		arr := findMember(r.body, r.members, key)
		if len(arr) == 0 || arr[0] != '[' {
			continue
		}
		jsonscan.Elems(arr, func(el []byte) bool {
			out = append(out, ToolCost{Name: toolName(el, len(out)), Tokens: ms.estimate(len(el), margin)})
			return true
		})
	}
	return out
}

// toolName is a tool definition's name: "name" (Anthropic, legacy
// functions, some OpenAI-compatible clients) or "function"."name"
// (OpenAI), else its type, else its position.
func toolName(el []byte, i int) string {
	ms, ok := scanObject(el)
	if ok {
		if n := stringValue(findMember(el, ms, "name")); n != "" {
			return n
		}
		if f := findMember(el, ms, "function"); len(f) > 0 {
			if fm, ok := scanObject(f); ok {
				if n := stringValue(findMember(f, fm, "name")); n != "" {
					return n
				}
			}
		}
		if t := stringValue(findMember(el, ms, "type")); t != "" {
			return t
		}
	}
	return fmt.Sprintf("#%d", i+1)
}

// countFloorExact asks the backend's tokenizer for a request's fixed
// floor: its tools (and Anthropic's system) with only the leading system
// messages (lead, a JSON array). Unlike countExact, a failure does not
// mark the counter down: some chat templates refuse a chat without a
// user turn, which says nothing about counting whole requests.
func (u *upstream) countFloorExact(ctx context.Context, kind string, r *request, lead []byte, auth http.Header) (int, bool) {
	if !u.canCountExact(kind, r.d) {
		return 0, false
	}
	var n int
	var err error
	switch {
	case kind == kindLlamaCpp && r.d == openAI:
		n, err = u.countLlama(ctx, r, lead, auth)
	case kind == kindVLLM && r.d == openAI:
		n, _, err = u.countVLLM(ctx, r, lead, auth)
	case (kind == kindLlamaCpp || kind == kindAnthropic) && r.d == anthropic:
		n, err = u.countAnthropic(ctx, r, lead, auth)
	default:
		return 0, false
	}
	if err != nil || n <= 0 {
		return 0, false
	}
	return n, true
}
