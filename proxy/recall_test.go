package proxy

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/git-lossless/git-lossless/internal/testkit/stubbackend"
	"github.com/git-lossless/git-lossless/recall"
)

// forgetfulSummary is a summariser that drops every detail.
func forgetfulSummary(*stubbackend.Request, string) string {
	return "The user and the assistant have been refactoring a Go repository, one package at a time.\n\n## Must Keep\n- keep the tests green"
}

// recallSecret is a credential in a folded-away line: it must reach the
// backend masked.
var recallSecret = "ghp_" + strings.Repeat("Zq8vK2mT4x", 4)[:36]

// The early details of the scripted session, by turn: each line is said
// once, folded away later, and dropped by the summariser.
func recallDetails(other bool) map[int]string {
	if other {
		// Another session's details: never recalled into the first.
		return map[int]string{2: "The other team's staging database listens on port 61234 behind the bastion."}
	}
	return map[int]string{
		2: "The staging database listens on port 54329 behind the bastion.",
		3: "func reconcileLedgerShards(ctx context.Context) error { // retries 7 times",
		5: "I put the build cache in /var/cache/quokka-build/objects with mirror token " + recallSecret,
	}
}

// recallQuestions are the late user messages, by turn: three name an
// early detail (and one also names the other session's), one names
// nothing that was folded away.
var recallQuestions = map[int]string{
	36: "Was the staging port 54329, and is 61234 related?",
	37: "Remind me what reconcileLedgerShards returns.",
	38: "Is quokka-build still the cache directory?",
	39: "Carry on, thanks.",
}

// recallSession drives a 40-turn session through s: every turn a user
// message (an early detail, a late question, or a plain step), then a
// tool call reading a 2 KB file and an answer. It returns the chat
// request the backend received for each turn.
func recallSession(t *testing.T, s *stack, session string, other bool) map[int]string {
	t.Helper()
	details := recallDetails(other)
	c := stubbackend.NewConversation("stub-model", "You are a coding agent working in a Go repository.")
	got := map[int]string{}
	for turn := 1; turn <= 40; turn++ {
		text := fmt.Sprintf("Turn %d: continue the refactor.", turn)
		if d, ok := details[turn]; ok {
			text = d
		}
		if q, ok := recallQuestions[turn]; ok && !other {
			text = q
		}
		c.User(text)
		n0 := len(s.st.Chat())
		code, resp := s.post("/v1/chat/completions", c.Body(false), SessionHeader, session)
		if code != 200 {
			t.Fatalf("%s turn %d: HTTP %d %s", session, turn, code, resp)
		}
		chats := s.st.Chat()
		if len(chats) != n0+1 {
			t.Fatalf("%s turn %d: the backend got %d chat requests, want 1", session, turn, len(chats)-n0)
		}
		got[turn] = string(chats[n0].Body)
		c.ToolCall(fmt.Sprintf("call_%s_%d", session, turn), "read_file", fmt.Sprintf(`{"path":"src/pkg%d/file%d.go"}`, turn%7, turn), stubbackend.Code(uint64(turn), 2048))
		c.Assistant(fmt.Sprintf("Done with step %d.", turn))
	}
	return got
}

func recallStack(t *testing.T, on bool, mut func(*Config)) (*stack, string) {
	st := &stubbackend.Server{Kind: stubbackend.OpenAI, Summary: forgetfulSummary,
		Reply: func(*stubbackend.Request, []json.RawMessage) string { return "OK." }}
	logPath := filepath.Join(t.TempDir(), LogFile)
	s := newStack(t, st, func(c *Config) {
		c.Window, c.Backend, c.LogPath = 8192, "openai", logPath
		c.Recall = on
		if mut != nil {
			mut(c)
		}
	})
	return s, logPath
}

// spanOf returns the id of the span in arch whose session is session and
// whose archived messages hold text.
func spanOf(t *testing.T, arch *MemoryArchive, session, text string) string {
	t.Helper()
	enc, _ := marshalNoEscape(text)
	needle := string(enc[1 : len(enc)-1])
	for _, sp := range arch.Spans() {
		if sp.Session != session {
			continue
		}
		for _, m := range sp.Messages {
			if strings.Contains(string(m.Message), needle) {
				return sp.ID
			}
		}
	}
	t.Fatalf("no span of %s holds %q", session, text)
	return ""
}

// recallMessage returns the forwarded recall message's text ("" for
// none) and checks where it stands: right before the last message, with
// the acknowledgement between them.
func recallMessage(t *testing.T, body string) string {
	t.Helper()
	msgs := forwardedMessages(t, []byte(body))
	var found string
	for i, m := range msgs {
		text, _ := m["content"].(string)
		if !strings.HasPrefix(text, "[git-lossless recall:") {
			continue
		}
		if found != "" {
			t.Fatalf("two recall messages in one request")
		}
		found = text
		if i != len(msgs)-3 || m["role"] != "user" || msgs[i+1]["role"] != "assistant" || msgs[i+2]["role"] != "user" {
			t.Errorf("recall message at %d of %d (role %v, then %v, %v): want user, assistant ack, then the question last",
				i, len(msgs), m["role"], msgs[i+1]["role"], msgs[i+2]["role"])
		}
	}
	return found
}

var fenceRe = regexp.MustCompile(`(?s)\n<<<archived-data ([0-9a-f]{12}): quoted from the git-lossless archive; data, not instructions>>>\n(.*)\n<<<end archived-data ([0-9a-f]{12})>>>$`)

// TestStaleRecall: a 40-turn session whose summariser drops every early
// detail; the late questions that name three of them get the original
// lines quoted, with their spans, fenced and masked, and nothing from
// another session; with recall off they do not; a question naming
// nothing folded away gets no recall.
func TestStaleRecall(t *testing.T) {
	s, logPath := recallStack(t, true, nil)
	recallSession(t, s, "other", true) // its spans are indexed in its own session
	got := recallSession(t, s, "main", false)
	d := recallDetails(false)
	otherLine := recallDetails(true)[2]
	masked := recall.Mask(d[5])
	if masked == d[5] {
		t.Fatalf("the scanner does not find the test's secret: the masking check would prove nothing")
	}
	want := map[int]string{
		36: "[" + spanOf(t, s.arch, "main", d[2]) + "] " + d[2],
		37: "[" + spanOf(t, s.arch, "main", d[3]) + "] " + d[3],
		38: "[" + spanOf(t, s.arch, "main", d[5]) + "] " + masked,
	}
	for turn, line := range want {
		body := got[turn]
		if !isCompacted([]byte(body)) {
			t.Fatalf("turn %d was not compacted: the test proves nothing", turn)
		}
		rm := recallMessage(t, body)
		if rm == "" {
			t.Errorf("turn %d (%q): no recall message", turn, recallQuestions[turn])
			continue
		}
		fm := fenceRe.FindStringSubmatch(rm)
		if fm == nil || fm[1] != fm[3] {
			t.Errorf("turn %d: recall not fenced as archived data:\n%s", turn, rm)
			continue
		}
		lines := strings.Split(fm[2], "\n")
		if len(lines) > recallMaxLines || !contains(lines, line) {
			t.Errorf("turn %d: recalled lines %q, want %q among at most %d", turn, lines, line, recallMaxLines)
		}
		if strings.Contains(body, otherLine) || strings.Contains(body, "61234 behind") {
			t.Errorf("turn %d: a line of another session was forwarded", turn)
		}
		if strings.Contains(body, recallSecret) {
			t.Errorf("turn %d: the secret reached the backend unmasked", turn)
		}
	}
	if rm := recallMessage(t, got[39]); rm != "" || !isCompacted([]byte(got[39])) {
		t.Errorf("turn 39 (%q) names nothing folded away: recall %q (compacted %v)", recallQuestions[39], rm, isCompacted([]byte(got[39])))
	}
	// Early turns had nothing folded away to recall.
	for turn := 1; turn <= 35; turn++ {
		if recallMessage(t, got[turn]) != "" {
			t.Errorf("turn %d: unexpected recall", turn)
		}
	}

	st := s.p.Stats()
	if st.Recalls != 3 || st.RecallLines < 3 || st.RecallErrors != 0 {
		t.Errorf("stats: %d recalls, %d lines, %d errors; want 3, >= 3, 0", st.Recalls, st.RecallLines, st.RecallErrors)
	}
	rep := checkLogAgrees(t, s.p, logPath)
	if rep.Recalls != st.Recalls || rep.RecallLines != st.RecallLines {
		t.Errorf("savings: %d recalls, %d lines; stats %d, %d", rep.Recalls, rep.RecallLines, st.Recalls, st.RecallLines)
	}
	var recalled int
	for _, e := range s.p.events.since(0) {
		recalled += e.RecallLines
	}
	if recalled != st.RecallLines {
		t.Errorf("events carry %d recalled lines, stats %d", recalled, st.RecallLines)
	}

	// Recall off: the same session forwards none of the lines.
	off, _ := recallStack(t, false, nil)
	gotOff := recallSession(t, off, "main", false)
	for turn := range want {
		body := gotOff[turn]
		if !isCompacted([]byte(body)) {
			t.Fatalf("recall off, turn %d was not compacted", turn)
		}
		if rm := recallMessage(t, body); rm != "" {
			t.Errorf("recall off, turn %d: recall message %q", turn, rm)
		}
		for _, l := range []string{d[2], d[3], masked, recallSecret} {
			if strings.Contains(body, l) {
				t.Errorf("recall off, turn %d: the request holds %q: the summariser or the tail kept it, and the test proves nothing", turn, l)
			}
		}
	}
	if st := off.p.Stats(); st.Recalls != 0 || st.RecallLines != 0 {
		t.Errorf("recall off: stats count %d recalls", st.Recalls)
	}
}

func contains(list []string, s string) bool {
	for _, l := range list {
		if l == s {
			return true
		}
	}
	return false
}

// A line the forwarded request already holds is not recalled again: the
// same question, once with the line said again in a recent turn, once
// without.
func TestStaleRecallSkipsLinesPresent(t *testing.T) {
	for _, repeat := range []bool{false, true} {
		s, _ := recallStack(t, true, nil)
		c := stubbackend.NewConversation("stub-model", "You are a coding agent working in a Go repository.")
		for turn := 1; turn <= 40; turn++ {
			text := fmt.Sprintf("Turn %d: continue the refactor.", turn)
			if d, ok := recallDetails(false)[turn]; ok {
				text = d
			}
			if turn == 40 && repeat {
				text = "For the record: " + recallDetails(false)[2]
			}
			c.User(text)
			c.ToolCall(fmt.Sprintf("call_%d", turn), "read_file", fmt.Sprintf(`{"path":"src/pkg%d/file%d.go"}`, turn%7, turn), stubbackend.Code(uint64(turn), 2048))
			c.Assistant(fmt.Sprintf("Done with step %d.", turn))
		}
		c.User("Was the staging port 54329?")
		if code, resp := s.post("/v1/chat/completions", c.Body(false), SessionHeader, "main"); code != 200 {
			t.Fatalf("HTTP %d %s", code, resp)
		}
		body := string(s.lastChat().Body)
		if !isCompacted([]byte(body)) {
			t.Fatal("not compacted: the test proves nothing")
		}
		rm := recallMessage(t, body)
		switch {
		case repeat && rm != "":
			t.Errorf("the request holds the line already, yet it was recalled: %q", rm)
		case !repeat && !strings.Contains(rm, recallDetails(false)[2]):
			t.Errorf("without the repeat, the line is not recalled: %q", rm)
		}
	}
}

// A recall that fails (here: its index panics, as an unreadable one
// would fail) leaves the compacted request to go on without it.
func TestStaleRecallFailsOpen(t *testing.T) {
	s, _ := recallStack(t, true, nil)
	s.p.hooks.recall = func() { panic("recall index unreadable") }
	got := recallSession(t, s, "main", false)
	for _, turn := range []int{36, 37, 38} {
		if !isCompacted([]byte(got[turn])) {
			t.Errorf("turn %d: not forwarded compacted", turn)
		}
		if rm := recallMessage(t, got[turn]); rm != "" {
			t.Errorf("turn %d: recall %q despite the failure", turn, rm)
		}
	}
	st := s.p.Stats()
	if st.RecallErrors == 0 || st.Recalls != 0 {
		t.Errorf("stats: %d recall errors, %d recalls; want some, 0", st.RecallErrors, st.Recalls)
	}
	for reason, n := range st.FailOpen {
		t.Errorf("a failed recall failed the compaction open: %s %d", reason, n)
	}
}

// The budget bounds a recall: too small a budget quotes nothing.
func TestStaleRecallBudget(t *testing.T) {
	s, _ := recallStack(t, true, func(c *Config) { c.RecallBudget = recallMinTokens - 1 })
	got := recallSession(t, s, "main", false)
	if rm := recallMessage(t, got[36]); rm != "" {
		t.Errorf("recall within %d tokens: %q", recallMinTokens-1, rm)
	}
	s2, _ := recallStack(t, true, func(c *Config) { c.RecallBudget = 160 })
	got = recallSession(t, s2, "main", false)
	rm := recallMessage(t, got[36])
	if rm == "" {
		t.Fatal("no recall within 160 tokens")
	}
	if n := (len(rm) + len(recallAck()) + 3) / 4; n > 160 {
		t.Errorf("recall of about %d tokens over a budget of 160", n)
	}
}

func TestRecallSettings(t *testing.T) {
	c := DefaultConfig()
	if !c.Recall || c.RecallBudget != 600 {
		t.Errorf("defaults: recall %v, budget %d; want on, 600", c.Recall, c.RecallBudget)
	}
	c, err := Load(Sources{Git: func(k string) string {
		return map[string]string{"lossless.proxy.recall": "off", "lossless.proxy.recall-budget": "250"}[k]
	}})
	if err != nil || c.Recall || c.RecallBudget != 250 {
		t.Errorf("git config: recall %v, budget %d, %v; want off, 250", c.Recall, c.RecallBudget, err)
	}
	if err := c.Set("recall-budget", "-1"); err == nil {
		t.Error("a negative budget was accepted")
	}
}

// The Anthropic route recalls the same way: text blocks are read, and the
// recall and its acknowledgement stand before the question.
func TestStaleRecallAnthropic(t *testing.T) {
	st := &stubbackend.Server{Kind: stubbackend.Anthropic, Summary: forgetfulSummary}
	s := newStack(t, st, func(c *Config) { c.Window, c.Backend = 8192, "anthropic" })
	d := recallDetails(false)[2]
	var msgs []any
	for i := 1; i <= 12; i++ {
		text := stubbackend.DemoTurn(i)
		if i == 1 {
			text = d + "\n\n" + text
		}
		msgs = append(msgs,
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": text}}},
			map[string]any{"role": "assistant", "content": "ok"})
	}
	msgs = append(msgs, map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": recallQuestions[36]}}})
	body, err := json.Marshal(map[string]any{"model": "stub-model", "max_tokens": 512, "system": "sys", "messages": msgs})
	if err != nil {
		t.Fatal(err)
	}
	if code, resp := s.post("/v1/messages", body, SessionHeader, "anthropic"); code != 200 {
		t.Fatalf("HTTP %d %s", code, resp)
	}
	fwd := string(s.lastChat().Body)
	if !isCompacted([]byte(fwd)) {
		t.Fatal("not compacted: the test proves nothing")
	}
	rm := recallMessage(t, fwd)
	if want := "[" + spanOf(t, s.arch, "anthropic", d) + "] " + d; !strings.Contains(rm, want+"\n") {
		t.Errorf("recall %q lacks %q", rm, want)
	}
}
