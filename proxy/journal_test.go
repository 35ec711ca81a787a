package proxy

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"filippo.io/age"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/internal/testkit/stubbackend"
	"github.com/git-lossless/git-lossless/recall"
)

// journalStack is a proxy with full capture in front of a stub backend
// with a window large enough that nothing is ever compacted.
func journalStack(t *testing.T, store *gitstore.Store, dir string, capture string) *stack {
	t.Helper()
	return newStack(t, &stubbackend.Server{Kind: stubbackend.LlamaCpp, Window: 1 << 20}, func(c *Config) {
		if store != nil {
			c.Archive, c.Store, c.Writer = nil, store, "proxy-journal"
			c.LogPath = filepath.Join(dir, "lossless", "proxy", LogFile)
		}
		if capture != "" {
			if err := c.Set("capture", capture); err != nil {
				t.Fatal(err)
			}
		}
	})
}

func (s *stack) flushJournal() {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.p.FlushJournal(ctx); err != nil {
		s.t.Fatal(err)
	}
}

// twentyTurns plays a 20-turn session (tool calls every third turn) and
// returns the messages of its last request, as sent.
func twentyTurns(t *testing.T, s *stack, marker string) []json.RawMessage {
	t.Helper()
	c := stubbackend.NewConversation("stub-model", "You are a coding agent.")
	var last []byte
	for i := 1; i <= 20; i++ {
		c.User(fmt.Sprintf("turn %d: %s %s-%d", i, stubbackend.DemoTurn(i), marker, i))
		if i%3 == 0 {
			c.ToolCall(fmt.Sprintf("call_%d", i), "read_file", `{"path":"f.go"}`, fmt.Sprintf("package f // %s result %d", marker, i))
		}
		last = c.Body(false)
		if code, b := s.post("/v1/chat/completions", last, SessionHeader, "journal-20"); code != 200 {
			t.Fatalf("turn %d: %d %s", i, code, b)
		}
		c.Assistant(fmt.Sprintf("answer %d", i))
	}
	if isCompacted(s.lastChat().Body) {
		t.Fatal("a request was compacted: the test is about messages never compacted")
	}
	var v struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(last, &v); err != nil {
		t.Fatal(err)
	}
	return v.Messages
}

// journalEvents returns the journal spans of the writer.
func journalEvents(t *testing.T, store *gitstore.Store) []gitstore.Event {
	t.Helper()
	evs, err := store.Events(context.Background(), gitstore.Query{Op: "span", Source: "proxy"})
	if err != nil {
		t.Fatal(err)
	}
	var out []gitstore.Event
	for _, e := range evs {
		if string(e.Extra["kind"]) == `"journal"` {
			out = append(out, e)
		}
	}
	return out
}

// gitJournalLines counts the journal event lines of a writer with the git
// CLI alone: every batch commit's events.jsonl.
func gitJournalLines(t *testing.T, dir, writer string) int {
	t.Helper()
	if exec.Command("git", "--git-dir", dir, "rev-parse", "-q", "--verify", "refs/lossless/"+writer).Run() != nil {
		return 0 // no such ref: nothing written
	}
	out, err := exec.Command("git", "--git-dir", dir, "rev-list", "refs/lossless/"+writer).Output()
	if err != nil {
		t.Fatalf("git rev-list: %v", err)
	}
	n := 0
	for _, c := range strings.Fields(string(out)) {
		b, err := exec.Command("git", "--git-dir", dir, "show", c+":events.jsonl").Output()
		if err != nil {
			t.Fatalf("git show %s:events.jsonl: %v", c, err)
		}
		n += bytes.Count(b, []byte(`"kind":"journal"`))
	}
	return n
}

// Every message of a 20-turn session is archived exactly once, as the
// client sent it, and a proxy started again over the same archive (which
// has forgotten the session) stores nothing new for the same history.
func TestJournalTwentyTurnsOnce(t *testing.T) {
	dir, store := bareRepo(t, "")
	s := journalStack(t, store, dir, CaptureJournal)
	msgs := twentyTurns(t, s, "journal-marker")
	s.flushJournal()
	evs := journalEvents(t, store)
	if len(evs) != len(msgs) {
		t.Fatalf("%d journal spans for %d messages", len(evs), len(msgs))
	}
	if n := gitJournalLines(t, dir, "proxy-journal"); n != len(msgs) {
		t.Fatalf("git sees %d journal events, want %d", n, len(msgs))
	}
	ctx := context.Background()
	seen := map[int]bool{}
	for _, e := range evs {
		id := SpanIDOf(&e)
		if !ValidSpanID(id) || e.Key != id || e.Session != "journal-20" {
			t.Fatalf("journal event %s", e.Raw)
		}
		if bytes.Contains(e.Raw, []byte("journal-marker")) {
			t.Fatalf("message text in the event line: %s", e.Raw)
		}
		_, sp, err := ReadSpan(ctx, store, id, nil)
		if err != nil {
			t.Fatal(err)
		}
		if sp.Kind != KindJournal || len(sp.Messages) != 1 || sp.Summary != "" {
			t.Fatalf("span %+v", sp)
		}
		i := sp.Messages[0].Index
		if seen[i] || i < 0 || i >= len(msgs) {
			t.Fatalf("message %d archived twice or out of range", i)
		}
		seen[i] = true
		if !bytes.Equal(sp.Messages[0].Message, msgs[i]) {
			t.Fatalf("message %d archived as %s, sent as %s", i, sp.Messages[0].Message, msgs[i])
		}
		if id != journalSpanID(sha256.New, "journal-20", i, msgs[i]) {
			t.Fatalf("message %d: id %s is not the plain journal id", i, id)
		}
	}
	st := s.p.Stats().Journal
	if st.Capture != CaptureJournal || st.Messages != len(msgs) || st.Failed != 0 || st.Dropped != 0 || st.Queued != 0 {
		t.Fatalf("journal stats %+v", st)
	}
	rpt, err := Savings(ctx, store, filepath.Join(dir, "lossless", "proxy", LogFile), time.Time{}, time.Now().Add(time.Minute))
	if err != nil || rpt.Journaled != len(msgs) || rpt.Spans != 0 || rpt.Requests != 20 {
		t.Fatalf("savings %+v %v", rpt, err)
	}

	// A second proxy on the same writer: the same history again is all
	// duplicates, skipped by the store's key dedupe.
	s.p.Close()
	s2 := journalStack(t, store, dir, CaptureJournal)
	body, _ := json.Marshal(map[string]any{"model": "stub-model", "messages": msgs})
	if code, b := s2.post("/v1/chat/completions", body, SessionHeader, "journal-20"); code != 200 {
		t.Fatalf("%d %s", code, b)
	}
	s2.flushJournal()
	if st := s2.p.Stats().Journal; st.Messages != 0 || st.Duplicates != len(msgs) {
		t.Fatalf("second run stored again: %+v", st)
	}
	if n := len(journalEvents(t, store)); n != len(msgs) {
		t.Fatalf("%d journal spans after the second run, want %d", n, len(msgs))
	}
}

// Without the setting nothing is journaled: only what compaction folds
// is archived, and the stats say capture is off.
func TestJournalOffByDefault(t *testing.T) {
	if c := DefaultConfig(); c.Capture != CaptureOff {
		t.Fatalf("default capture %q", c.Capture)
	}
	dir, store := bareRepo(t, "")
	s := journalStack(t, store, dir, "")
	twentyTurns(t, s, "off-marker")
	s.flushJournal()
	if evs := journalEvents(t, store); len(evs) != 0 {
		t.Fatalf("%d journal spans with capture off", len(evs))
	}
	if n := gitJournalLines(t, dir, "proxy-journal"); n != 0 {
		t.Fatalf("git sees %d journal events with capture off", n)
	}
	if st := s.p.Stats().Journal; st.Capture != CaptureOff || st.Messages != 0 {
		t.Fatalf("journal stats %+v", st)
	}
	var c Config
	if err := c.Set("capture", "everything"); err == nil {
		t.Fatal("capture accepted an unknown mode")
	}
}

// Recall finds a message the proxy never compacted, by a word only that
// message holds, and reads it back as a journal span.
func TestJournalRecallFindsUncompacted(t *testing.T) {
	dir, store := bareRepo(t, "")
	s := journalStack(t, store, dir, CaptureJournal)
	twentyTurns(t, s, "filler")
	c := stubbackend.NewConversation("stub-model", "sys")
	c.User("the flaky test lives in quokkafixture_test.go, under the zebracorn package")
	if code, b := s.post("/v1/chat/completions", c.Body(false), SessionHeader, "recall-me"); code != 200 {
		t.Fatalf("%d %s", code, b)
	}
	s.flushJournal()
	if st := s.p.Stats(); st.Compacted != 0 || st.Spans != 0 {
		t.Fatalf("something was compacted: %+v", st)
	}
	ctx := context.Background()
	ix, err := recall.Open(ctx, store, recall.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := ix.Search(ctx, recall.Query{Text: "zebracorn", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Hits) != 1 {
		t.Fatalf("hits %+v", res.Hits)
	}
	h := res.Hits[0]
	if h.Session != "recall-me" || h.Kind != recall.KindProxy || !ValidSpanID(h.ID) || !strings.Contains(h.Snippet, "zebracorn") {
		t.Fatalf("hit %+v", h)
	}
	// The overview groups the journal by session: one digest each.
	ds, err := ix.Digests(ctx, recall.DigestQuery{})
	if err != nil {
		t.Fatal(err)
	}
	bySession := map[string]int{}
	want := 0
	for _, e := range journalEvents(t, store) {
		if e.Session == "journal-20" {
			want++
		}
	}
	for _, d := range ds {
		bySession[d.Session]++
		if d.Session == "journal-20" && d.Spans != want {
			t.Errorf("the 20-turn session's digest holds %d spans", d.Spans)
		}
	}
	if len(ds) != 2 || bySession["journal-20"] != 1 || bySession["recall-me"] != 1 {
		t.Fatalf("digests by session %v", bySession)
	}
	sp, err := ix.Span(ctx, h.ID)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(sp.Lines, "\n")
	if !strings.Contains(text, "quokkafixture_test.go") || !strings.Contains(text, "journaled as sent") {
		t.Fatalf("span text:\n%s", text)
	}
}

// With encryption on, the journal is age ciphertext: no object of the
// repository holds any message in the clear (git cat-file over every
// object), the ids are keyed (not the plain hash of the message), and
// the identity reads them back, through ReadSpan and recall.
func TestJournalEncrypted(t *testing.T) {
	t.Setenv("LOSSLESS_IDENTITY_FILE", filepath.Join(t.TempDir(), "id", "identity.age"))
	id, _ := age.GenerateX25519Identity()
	dir, store := bareRepo(t, "[lossless]\n\tencrypt = true\n\trecipient = "+id.Recipient().String()+"\n")
	s := journalStack(t, store, dir, CaptureJournal)
	marker := "CLEARTEXT-JOURNAL-7d1e"
	msgs := twentyTurns(t, s, marker)
	s.flushJournal()
	evs := journalEvents(t, store)
	if len(evs) != len(msgs) {
		t.Fatalf("%d journal spans for %d messages", len(evs), len(msgs))
	}
	ctx := context.Background()
	found := 0
	for _, e := range evs {
		if !gitstore.IsEncrypted(&e) {
			t.Fatalf("journal span in the clear: %s", e.Raw)
		}
		_, sp, err := ReadSpan(ctx, store, SpanIDOf(&e), []age.Identity{id})
		if err != nil {
			t.Fatal(err)
		}
		i := sp.Messages[0].Index
		if !bytes.Equal(sp.Messages[0].Message, msgs[i]) {
			t.Fatalf("message %d decrypted as %s", i, sp.Messages[0].Message)
		}
		if SpanIDOf(&e) == journalSpanID(sha256.New, "journal-20", i, msgs[i]) {
			t.Fatalf("message %d: the id is the plain hash of the message", i)
		}
		if bytes.Contains(sp.Messages[0].Message, []byte(marker)) {
			found++
		}
	}
	if found < 20 {
		t.Fatalf("the marker is in %d decrypted messages, want at least 20", found)
	}
	cmd := exec.Command("git", "--git-dir", dir, "cat-file", "--batch-all-objects", "--batch")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	all, err := bufioReadAll(out)
	if werr := cmd.Wait(); err != nil || werr != nil {
		t.Fatalf("git cat-file: %v %v", err, werr)
	}
	if len(all) < 1000 || !bytes.Contains(all, []byte("events.jsonl")) {
		t.Fatalf("git cat-file printed %d bytes: the scan is broken", len(all))
	}
	if bytes.Contains(all, []byte(marker)) || bytes.Contains(all, []byte("answer 7")) {
		t.Fatal("a journaled message is in the clear in an object")
	}
	ix, err := recall.Open(ctx, store, recall.Options{Identities: []age.Identity{id}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := ix.Search(ctx, recall.Query{Text: marker + "-13", Limit: 5})
	if err != nil || len(res.Hits) == 0 || res.Hits[0].Locked {
		t.Fatalf("recall with the identity: %+v %v", res, err)
	}
}

func bufioReadAll(r interface{ Read([]byte) (int, error) }) ([]byte, error) {
	var b bytes.Buffer
	_, err := b.ReadFrom(bufio.NewReader(r))
	return b.Bytes(), err
}

// blockingArchive holds every journal write until released, and can fail.
type blockingArchive struct {
	MemoryArchive
	release chan struct{}
	entered chan struct{}
	mu      sync.Mutex
	fail    error
}

func (a *blockingArchive) WriteJournal(ctx context.Context, spans []*Span) (int, error) {
	select {
	case a.entered <- struct{}{}:
	default:
	}
	<-a.release
	a.mu.Lock()
	err := a.fail
	a.mu.Unlock()
	if err != nil {
		return 0, err
	}
	return a.MemoryArchive.WriteJournal(ctx, spans)
}

// The journal is off the request path: requests are answered while its
// writer is stuck; a write that fails is counted, never seen by a client,
// and the messages it lost are archived by the session's next turn.
func TestJournalFailsOpen(t *testing.T) {
	arch := &blockingArchive{release: make(chan struct{}), entered: make(chan struct{}, 1)}
	s := newStack(t, &stubbackend.Server{Kind: stubbackend.LlamaCpp, Window: 1 << 20}, func(c *Config) {
		c.Archive, c.Capture = arch, CaptureJournal
	})
	c := stubbackend.NewConversation("stub-model", "sys")
	turn := func(i int) {
		c.User(fmt.Sprintf("question %d", i))
		if code, b := s.post("/v1/chat/completions", c.Body(false), SessionHeader, "stuck"); code != 200 {
			t.Fatalf("turn %d: %d %s", i, code, b)
		}
		c.Assistant(fmt.Sprintf("answer %d", i))
	}
	arch.mu.Lock()
	arch.fail = errors.New("disk on fire")
	arch.mu.Unlock()
	turn(1)
	<-arch.entered // the writer holds turn 1 and is stuck
	for i := 2; i <= 5; i++ {
		turn(i) // answered while the writer is stuck
	}
	if st := s.p.Stats().Journal; st.Queued == 0 || st.Messages != 0 {
		t.Fatalf("while stuck: %+v", st)
	}
	close(arch.release)
	s.flushJournal()
	st := s.p.Stats().Journal
	if st.Failed != 10 || st.Messages != 0 || !strings.Contains(st.LastError, "disk on fire") {
		t.Fatalf("after the failures: %+v", st)
	}
	arch.mu.Lock()
	arch.fail = nil
	arch.mu.Unlock()
	turn(6)
	s.flushJournal()
	st = s.p.Stats().Journal
	if st.Messages != 12 { // sys + 6 questions + 5 answers
		t.Fatalf("after recovery: %+v", st)
	}
	idx := map[int]int{}
	for _, sp := range arch.Spans() {
		idx[sp.Messages[0].Index]++
	}
	for i := 0; i < 12; i++ {
		if idx[i] != 1 {
			t.Fatalf("message %d archived %d times", i, idx[i])
		}
	}
}

// A message resent with its cache_control marker moved keeps its id, so
// the archive skips it.
func TestJournalIDIgnoresCacheControl(t *testing.T) {
	a := []byte(`{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]}`)
	b := []byte(`{"role":"user","content":[{"type":"text","text":"hi"}]}`)
	if journalSpanID(sha256.New, "s", 3, a) != journalSpanID(sha256.New, "s", 3, b) {
		t.Fatal("cache_control changed the id")
	}
	for _, m := range []string{
		`{"role":"user","cache_control":{"type":"ephemeral"},"content":[{"type":"text","text":"hi"}]}`,
		`{"cache_control": {"type":"ephemeral"} , "role":"user","content":[{"type":"text","text":"hi"}]}`,
		`{"role":"user","content":[{"type":"text","text":"hi"}],"cache_control":null}`,
	} {
		if got := string(withoutCacheControl([]byte(m))); strings.ReplaceAll(got, " ", "") != string(b) {
			t.Errorf("%s -> %s", m, got)
		}
	}
	quoted := []byte(`{"role":"user","content":"say \"cache_control\": {} please"}`)
	if !bytes.Equal(withoutCacheControl(quoted), quoted) {
		t.Errorf("a quoted key was cut: %s", withoutCacheControl(quoted))
	}
	if journalSpanID(sha256.New, "s", 3, b) == journalSpanID(sha256.New, "s", 4, b) ||
		journalSpanID(sha256.New, "s", 3, b) == journalSpanID(sha256.New, "t", 3, b) {
		t.Fatal("the id does not depend on the index and the session")
	}
}

// The journal id of a fixed message, as README.md and gitstore/FORMAT.md
// state it, computed again from the bytes with sha256sum.
func TestJournalIDVector(t *testing.T) {
	msg := `{"role":"user","content":"hello"}`
	id := journalSpanID(sha256.New, "s-1", 3, []byte(msg))
	if id != journalIDVector {
		t.Fatalf("journal id %s, documented %s", id, journalIDVector)
	}
	in := "git-lossless journal v1\x00s-1\x00\x00\x00\x00\x00\x00\x00\x00\x03\x00" + msg
	cmd := exec.Command("sha256sum")
	cmd.Stdin = strings.NewReader(in)
	out, err := cmd.Output()
	if err != nil {
		t.Skipf("sha256sum: %v", err)
	}
	sum, err := hexDecode(strings.Fields(string(out))[0])
	if err != nil {
		t.Fatal(err)
	}
	if got := "sp-" + spanEnc().EncodeToString(sum[:10]); got != id {
		t.Fatalf("sha256sum gives %s, the code %s", got, id)
	}
	for _, doc := range []string{"../docs/proxy.md", "../gitstore/FORMAT.md"} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(b, []byte(journalIDVector)) {
			t.Errorf("%s does not state the journal id vector %s", doc, journalIDVector)
		}
	}
}

// journalIDVector is the documented id of {"role":"user","content":"hello"}
// at index 3 of session s-1, without encryption.
const journalIDVector = "sp-em5hd74qky3nmxkx"

func hexDecode(s string) ([]byte, error) { return hex.DecodeString(s) }

// A Claude Code-style Anthropic session (top-level system, tool_use and
// tool_result blocks, the cache marker moved every turn): the system is
// journaled once as message -1, and every message once, though its bytes
// change when its marker moves away.
func TestJournalAnthropicCacheMarkers(t *testing.T) {
	dir, store := bareRepo(t, "")
	s := newStack(t, &stubbackend.Server{Kind: stubbackend.Anthropic, Window: 1 << 20}, func(c *Config) {
		c.Archive, c.Store, c.Writer, c.Capture = nil, store, "proxy-journal", CaptureJournal
		c.LogPath = filepath.Join(dir, "lossless", "proxy", LogFile)
	})
	system := `[{"type":"text","text":"You are Claude Code. anthropic-system-marker"}]`
	var msgs []any
	for i := 0; i < 6; i++ {
		id := fmt.Sprintf("toolu_%02d", i)
		msgs = append(msgs,
			map[string]any{"role": "user", "content": fmt.Sprintf("step %d: read the next file", i)},
			map[string]any{"role": "assistant", "content": []any{
				map[string]any{"type": "tool_use", "id": id, "name": "Read", "input": map[string]any{"file_path": fmt.Sprintf("f%d.go", i)}},
			}},
			map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "tool_result", "tool_use_id": id, "content": fmt.Sprintf("package f%d", i), "cache_control": map[string]any{"type": "ephemeral"}},
			}},
		)
		if i > 0 { // the marker moves to the newest tool result
			delete(msgs[len(msgs)-4].(map[string]any)["content"].([]any)[0].(map[string]any), "cache_control")
		}
		body, _ := json.Marshal(map[string]any{"model": "stub-model", "max_tokens": 1024, "system": json.RawMessage(system), "messages": msgs})
		if code, b := s.post("/v1/messages", body, "X-Api-Key", "sk-ant-test", "Anthropic-Version", "2023-06-01", SessionHeader, "cc"); code != 200 {
			t.Fatalf("step %d: %d %s", i, code, b)
		}
	}
	s.flushJournal()
	evs := journalEvents(t, store)
	if len(evs) != len(msgs)+1 {
		t.Fatalf("%d journal spans for %d messages and a system", len(evs), len(msgs))
	}
	ctx := context.Background()
	seen := map[int]bool{}
	for _, e := range evs {
		_, sp, err := ReadSpan(ctx, store, SpanIDOf(&e), nil)
		if err != nil {
			t.Fatal(err)
		}
		m := sp.Messages[0]
		if seen[m.Index] || sp.Route != "anthropic" {
			t.Fatalf("message %d twice, or route %q", m.Index, sp.Route)
		}
		seen[m.Index] = true
		if m.Index == -1 && string(m.Message) != `{"role":"system","content":`+system+`}` {
			t.Fatalf("system journaled as %s", m.Message)
		}
	}
	if !seen[-1] {
		t.Fatal("the top-level system was not journaled")
	}
	// Five markers moved away: five messages were queued again and found
	// stored.
	if st := s.p.Stats().Journal; st.Messages != len(msgs)+1 || st.Duplicates != 5 {
		t.Fatalf("journal stats %+v", st)
	}
}
