package proxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/internal/testkit/stubbackend"
)

// codexConversation builds Codex-shaped Responses input: developer and
// user context messages, then per turn a reasoning item (with
// encrypted_content), a function_call of exec_command and its output (a
// large file), every third turn a custom_tool_call apply_patch and its
// output, two parallel calls on turn 5, and the assistant's message.
type codexConversation struct {
	items []json.RawMessage
}

func (c *codexConversation) add(v map[string]any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	c.items = append(c.items, b)
}

func (c *codexConversation) user(text string) {
	c.add(map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": text}}})
}

func (c *codexConversation) turn(i int) {
	c.add(map[string]any{"type": "reasoning", "id": fmt.Sprintf("rs_%d", i),
		"summary":           []any{map[string]any{"type": "summary_text", "text": fmt.Sprintf("thinking about module %d", i)}},
		"encrypted_content": fmt.Sprintf("gAAAAB-ENCRYPTED-%d-%s", i, strings.Repeat("Q", 200))})
	calls := []string{fmt.Sprintf("call_%d", i)}
	if i == 5 {
		calls = append(calls, "call_5b") // parallel calls, outputs after both
	}
	for _, id := range calls {
		c.add(map[string]any{"type": "function_call", "id": "fc_" + id, "call_id": id, "name": "exec_command",
			"arguments": fmt.Sprintf(`{"cmd":"cat module%s.go"}`, id)})
	}
	for _, id := range calls {
		c.add(map[string]any{"type": "function_call_output", "call_id": id,
			"output": fmt.Sprintf("FILE-OF-%s\n%s", id, stubbackend.Code(uint64(i), 3000))})
	}
	if i%3 == 0 {
		id := fmt.Sprintf("patch_%d", i)
		c.add(map[string]any{"type": "custom_tool_call", "id": "ctc_" + id, "call_id": id, "name": "apply_patch",
			"input": fmt.Sprintf("*** Begin Patch\n*** Update File: module%d.go\n@@\n-a\n+b\n*** End Patch\n", i)})
		c.add(map[string]any{"type": "custom_tool_call_output", "call_id": id, "output": "Success. Updated the following files:\nM module.go\n"})
	}
	if i%6 == 0 {
		c.add(map[string]any{"type": "message", "role": "assistant", "content": []any{map[string]any{"type": "output_text", "text": fmt.Sprintf("Reviewed modules up to %d.", i)}}})
	}
}

func (c *codexConversation) body(stream bool) []byte {
	b, err := json.Marshal(map[string]any{
		"model": "gpt-5.5", "instructions": "You are Codex, a coding agent.", "input": c.items,
		"tools":  []any{map[string]any{"type": "function", "name": "exec_command", "parameters": map[string]any{"type": "object"}}},
		"stream": stream, "store": false, "prompt_cache_key": "thread-0001",
	})
	if err != nil {
		panic(err)
	}
	return b
}

// responsesItems decodes a forwarded request's input items.
func responsesItems(t *testing.T, body []byte) []map[string]any {
	t.Helper()
	var v struct {
		Input []map[string]any `json:"input"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("forwarded body: %v", err)
	}
	return v.Input
}

// checkResponsesUnits fails when a forwarded request separates a call
// from its output, or a reasoning item from the item that followed it
// in the client's conversation (next: reasoning id -> the id or call id
// of its successor).
func checkResponsesUnits(t *testing.T, n int, items []map[string]any, next map[string]string) {
	t.Helper()
	calls, outputs := map[string]bool{}, map[string]bool{}
	for i, it := range items {
		typ, _ := it["type"].(string)
		id, _ := it["call_id"].(string)
		switch {
		case strings.HasSuffix(typ, "_call_output"):
			if !calls[id] {
				t.Errorf("request %d: output of %s without its call before it", n, id)
			}
			outputs[id] = true
		case strings.HasSuffix(typ, "_call"):
			calls[id] = true
		case typ == "reasoning":
			rid, _ := it["id"].(string)
			if i+1 >= len(items) {
				t.Errorf("request %d: reasoning %s is the last item", n, rid)
				continue
			}
			succ := items[i+1]
			got, _ := succ["call_id"].(string)
			if got == "" {
				got, _ = succ["role"].(string)
			}
			if want := next[rid]; got != want {
				t.Errorf("request %d: reasoning %s is followed by %q, want %q", n, rid, got, want)
			}
		}
	}
	for id := range calls {
		if !outputs[id] {
			t.Errorf("request %d: call %s without its output", n, id)
		}
	}
}

// TestResponsesRouteCompacts: a Codex-shaped conversation over the window
// on POST /v1/responses is compacted like the chat route's: every
// forwarded request fits, keeps calls with their outputs and reasoning
// with its turn, changes nothing but input, and every folded item is in
// the git archive, byte for byte (read back with git cat-file); the
// summary is asked on the same route; a streamed answer reaches the
// client byte for byte.
//
// It runs at several windows, so that the tail starts at many different
// items of the conversation.
func TestResponsesRouteCompacts(t *testing.T) {
	for window := 7000; window <= 13000; window += 500 {
		t.Run(fmt.Sprint(window), func(t *testing.T) { responsesRouteCompacts(t, window) })
	}
}

func responsesRouteCompacts(t *testing.T, window int) {
	dir, store := bareRepo(t, "")
	st := &stubbackend.Server{Kind: stubbackend.VLLM, Window: window}
	s := newStack(t, st, func(c *Config) {
		c.Archive, c.Store, c.Writer = nil, store, "proxy-responses"
		c.LogPath = filepath.Join(dir, "lossless", "proxy", LogFile)
		c.Window = window
	})
	conv := &codexConversation{}
	conv.add(map[string]any{"type": "message", "role": "developer", "content": []any{map[string]any{"type": "input_text", "text": "<permissions>workspace-write</permissions>"}}})
	conv.user("<environment_context><cwd>/home/dev/project</cwd></environment_context>")
	next := map[string]string{}
	var sent [][]byte
	// Codex's agentic loop: a user's request every sixth turn, and in
	// between the client resends the conversation after every tool
	// output, so most requests end with an output, not a user message.
	for i := 1; i <= 14; i++ {
		if i%6 == 1 {
			conv.user(fmt.Sprintf("Review modules %d to %d please.", i, i+5))
		}
		stream := i >= 12
		body := conv.body(stream)
		sent = append(sent, body)
		code, resp := s.post("/v1/responses", body)
		if code != 200 {
			t.Fatalf("turn %d: HTTP %d %s", i, code, resp)
		}
		if stream {
			// Byte for byte what the backend streamed: the stub's events
			// with the proxy's own nothing added.
			if !bytes.HasPrefix(resp, []byte("event: response.created\n")) || !bytes.Contains(resp, []byte("event: response.completed\n")) {
				t.Errorf("turn %d: streamed answer not relayed as sent:\n%s", i, resp)
			}
		}
		conv.turn(i)
		next[fmt.Sprintf("rs_%d", i)] = fmt.Sprintf("call_%d", i)
	}
	chats := st.Chat()
	if len(chats) != 14 {
		t.Fatalf("%d requests upstream, want 14", len(chats))
	}
	compacted := 0
	for n, r := range chats {
		if r.Path != "/v1/responses" || r.Status != 200 {
			t.Errorf("request %d: %s HTTP %d", n+1, r.Path, r.Status)
		}
		checkResponsesUnits(t, n+1, responsesItems(t, r.Body), next)
		if bytes.Equal(r.Body, sent[n]) {
			continue
		}
		compacted++
		if !isCompacted(r.Body) {
			t.Errorf("request %d changed but carries no summary", n+1)
		}
		// Every member but input is the client's.
		var a, b map[string]json.RawMessage
		json.Unmarshal(sent[n], &a)
		json.Unmarshal(r.Body, &b)
		for k, v := range a {
			if k != "input" && !bytes.Equal(v, b[k]) {
				t.Errorf("request %d: member %s changed", n+1, k)
			}
		}
		items := responsesItems(t, r.Body)
		if items[0]["role"] != "developer" {
			t.Errorf("request %d: the developer message moved: first item %v", n+1, items[0])
		}
	}
	stats := s.p.Stats()
	if compacted == 0 || stats.Compacted != compacted || stats.Spans == 0 {
		t.Fatalf("compacted %d requests, stats %+v", compacted, stats)
	}
	for _, r := range st.Summaries() {
		if r.Path != "/v1/responses" || !bytes.Contains(r.Body, []byte(`"instructions"`)) || !bytes.Contains(r.Body, []byte(`"max_output_tokens"`)) {
			t.Errorf("summary request %s: %s", r.Path, clip(string(r.Body), 300))
		}
	}
	if len(st.Summaries()) == 0 {
		t.Error("no summary was asked")
	}

	// Every item of the last request that the forwarded one lacks is in
	// a span, and the archive is readable with plain git.
	last := responsesItems(t, chats[len(chats)-1].Body)
	have := map[string]bool{}
	for _, it := range last {
		b, _ := json.Marshal(it)
		have[string(b)] = true
	}
	var orig struct {
		Input []json.RawMessage `json:"input"`
	}
	json.Unmarshal(sent[len(sent)-1], &orig)
	objects := allObjects(t, dir)
	missing := 0
	for _, raw := range orig.Input {
		var v any
		json.Unmarshal(raw, &v)
		canon, _ := json.Marshal(v)
		if have[string(canon)] {
			continue
		}
		missing++
		// The span stores the item as JSON inside the span document:
		// look for its call id or text marker in git's objects.
		var it map[string]any
		json.Unmarshal(raw, &it)
		key := ""
		switch {
		case it["type"] == "function_call_output":
			key = "FILE-OF-" + it["call_id"].(string)
		case it["type"] == "reasoning":
			key = "gAAAAB-ENCRYPTED-" + strings.TrimPrefix(it["id"].(string), "rs_") + "-"
		case it["call_id"] != nil:
			key = it["call_id"].(string)
		default:
			continue
		}
		if !bytes.Contains(objects, []byte(key)) {
			t.Errorf("folded item %s is in no git object", key)
		}
	}
	if missing == 0 {
		t.Error("the last request lost nothing: the test did not fold")
	}
	fsck := exec.Command("git", "--git-dir", dir, "fsck", "--strict")
	if out, err := fsck.CombinedOutput(); err != nil {
		t.Errorf("git fsck --strict: %v\n%s", err, out)
	}
	evs, err := store.Events(context.Background(), gitstore.Query{Op: "span", Source: "proxy"})
	if err != nil || len(evs) != stats.Spans {
		t.Errorf("span events %d (stats %d): %v", len(evs), stats.Spans, err)
	}
	for _, e := range evs {
		_, sp, err := ReadSpan(context.Background(), store, SpanIDOf(&e), nil)
		if err != nil || sp.Route != "responses" {
			t.Errorf("span %s: route %q %v", SpanIDOf(&e), sp.Route, err)
		}
	}
}

// allObjects is every object of the repository at dir, as git prints
// them (git cat-file --batch-all-objects --batch).
func allObjects(t *testing.T, dir string) []byte {
	t.Helper()
	cmd := exec.Command("git", "--git-dir", dir, "cat-file", "--batch-all-objects", "--batch")
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("git cat-file: %v", err)
	}
	return out.Bytes()
}

// A request naming previous_response_id goes upstream as the client's
// bytes, however large, and is counted; input given as a string and a
// malformed input go upstream untouched too.
func TestResponsesStatefulAndOddInputs(t *testing.T) {
	st := &stubbackend.Server{Kind: stubbackend.VLLM, Window: 1 << 20}
	s := newStack(t, st, func(c *Config) { c.Window = 4000 })
	big := strings.Repeat("lorem ipsum dolor sit amet ", 2000)
	bodies := [][]byte{
		[]byte(`{"model":"m","previous_response_id":"resp_1","input":[{"type":"message","role":"user","content":"` + big + `"},{"type":"message","role":"user","content":"and now?"}]}`),
		[]byte(`{"model":"m","input":"` + big + `"}`),
		[]byte(`{"model":"m","input":[{"type":"message","role":"user","content":"` + big + `"},{"type":"message","role":"user","content":"x"},{"no_type":1}]}`),
	}
	for i, b := range bodies {
		if code, resp := s.post("/v1/responses", b); code != 200 {
			t.Fatalf("body %d: HTTP %d %s", i, code, resp)
		}
		got := st.Chat()[i].Body
		if !bytes.Equal(got, b) {
			t.Errorf("body %d: not forwarded as the client's bytes", i)
		}
	}
	stats := s.p.Stats()
	if stats.Stateful != 1 || stats.Compacted != 0 {
		t.Errorf("stats: stateful %d compacted %d, want 1 and 0", stats.Stateful, stats.Compacted)
	}
	if stats.FailOpen["unparsable"] != 2 {
		t.Errorf("fail-open %v, want the string and the malformed input counted as unparsable", stats.FailOpen)
	}
}

// The usage in a Responses stream's response.completed is read: the
// session's used tokens are what the backend reported.
func TestResponsesUsageScanned(t *testing.T) {
	u := &usageScan{sse: true}
	w := bufio.NewWriter(u)
	fmt.Fprint(w, "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"r\"}}\n\n")
	fmt.Fprint(w, "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"r\",\"usage\":{\"input_tokens\":1234,\"output_tokens\":56}}}\n\n")
	w.Flush()
	u.finish()
	if !u.found || u.prompt != 1234 || u.output != 56 {
		t.Fatalf("usage scan: found %v prompt %d output %d", u.found, u.prompt, u.output)
	}
}

// The units of a Responses conversation: a unit ends only where every
// call it opened is answered and its last item is not reasoning.
func TestResponsesGroups(t *testing.T) {
	items := []string{
		`{"type":"message","role":"developer","content":"d"}`,                                    // 0
		`{"role":"user","content":"short form"}`,                                                 // 1
		`{"type":"reasoning","id":"rs_1","summary":[]}`,                                          // 2
		`{"type":"reasoning","id":"rs_2","summary":[]}`,                                          // 3
		`{"type":"function_call","call_id":"a","name":"x","arguments":"{}"}`,                     // 4
		`{"type":"function_call","call_id":"b","name":"x","arguments":"{}"}`,                     // 5
		`{"type":"function_call_output","call_id":"b","output":"B"}`,                             // 6
		`{"type":"function_call_output","call_id":"a","output":"A"}`,                             // 7
		`{"type":"custom_tool_call","call_id":"p","name":"apply_patch","input":"*"}`,             // 8
		`{"type":"custom_tool_call_output","call_id":"p","output":"ok"}`,                         // 9
		`{"type":"web_search_call","id":"ws_1","status":"completed"}`,                            // 10
		`{"type":"item_reference","id":"msg_9"}`,                                                 // 11
		`{"type":"reasoning","id":"rs_3","summary":[]}`,                                          // 12
		`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]}`, // 13
		`{"type":"local_shell_call","call_id":"s","action":{"type":"exec","command":["ls"]}}`,    // 14
		`{"type":"reasoning","id":"rs_4","summary":[]}`,                                          // 15
	}
	msgs := make([]message, len(items))
	for i, raw := range items {
		msgs[i] = message{raw: []byte(raw)}
		if !msgs[i].classify(responses) {
			t.Fatalf("item %d does not classify", i)
		}
	}
	got := fmt.Sprint(responsesGroups(msgs))
	// The dangling local_shell_call and the trailing reasoning make one
	// last unit.
	want := "[{0 1} {1 2} {2 8} {8 10} {10 11} {11 12} {12 14} {14 16}]"
	if got != want {
		t.Errorf("groups %s, want %s", got, want)
	}
	if !msgs[0].isSystem() || msgs[1].role != "user" || !isUserTurn(&msgs[1]) || !msgs[7].results || !msgs[4].calls || msgs[10].calls {
		t.Errorf("classification: %+v", msgs[:11])
	}
	var bad message
	for _, raw := range []string{`{"id":"x"}`, `{"type":"message"}`, `[]`} {
		bad = message{raw: []byte(raw)}
		if bad.classify(responses) {
			t.Errorf("%s classified", raw)
		}
	}
}
