package gemini

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/git-lossless/git-lossless/hooks/transcript"
)

// sampleOptions are the options each sample chat is read with: the
// project directory, and for the subagent's chat its parent's session.
func sampleOptions(path string) ChatOptions {
	opt := ChatOptions{Cwd: sampleCwd}
	if path == chatChild {
		opt.SessionID = "cc106cda-29a0-4431-b783-fe844bfef7e2"
	}
	return opt
}

func TestChatSamples(t *testing.T) {
	sessions := map[string]string{
		chatRun1:     "bc53530f-3b83-48a7-aa7c-3e22ac0b6e48",
		chatCompress: "08c76717-9950-4f87-8b0d-6c2ff32d49ed",
		chatParent:   "cc106cda-29a0-4431-b783-fe844bfef7e2",
		chatChild:    "cc106cda-29a0-4431-b783-fe844bfef7e2",
		chatNearMiss: "bf202774-e8d2-4f16-992e-d94e1ca27e99",
		chatMask:     "79fc6120-6331-44a9-84d5-6511409b2c03",
	}
	for path, want := range sampleItems {
		t.Run(path[strings.LastIndex(path, "/")+1:], func(t *testing.T) {
			items := readItems(t, readFile(t, path), sampleOptions(path))
			got := renderAll(items)
			if !slices.Equal(got, want) {
				t.Errorf("items differ:\n%s", diffLines(want, got))
			}
			for _, it := range items {
				m := it.Meta()
				if m.SessionID != sessions[path] {
					t.Errorf("%s: session %q, want %q", render(it), m.SessionID, sessions[path])
				}
				wantAgent := ""
				if path == chatChild {
					wantAgent = "6fdbd512-609c-493b-aadc-22b51e047dc6"
				}
				if m.Agent != wantAgent || m.Sidechain != (wantAgent != "") {
					t.Errorf("%s: agent %q sidechain %v, want %q", render(it), m.Agent, m.Sidechain, wantAgent)
				}
				if m.TS.IsZero() || m.UUID == "" || m.Cwd != sampleCwd {
					t.Errorf("%s: meta %+v", render(it), *m)
				}
				if sp := transcript.SpanJSON(it); sp != nil && !json.Valid(sp) {
					t.Errorf("%s: span JSON not valid: %s", render(it), sp)
				}
			}
		})
	}
}

func diffLines(want, got []string) string {
	var b strings.Builder
	for i := 0; i < max(len(want), len(got)); i++ {
		w, g := "", ""
		if i < len(want) {
			w = want[i]
		}
		if i < len(got) {
			g = got[i]
		}
		if w != g {
			fmt.Fprintf(&b, "%d:\n  want %s\n  got  %s\n", i, w, g)
		}
	}
	return b.String()
}

// readSplit reads data in pieces ending at the given offsets (the last
// piece to the end), each with a new reader started at the previous one's
// Offset and its State passed through JSON, as a hook's sweep stores it.
func readSplit(t testing.TB, data []byte, cuts []int, opt ChatOptions) []transcript.Item {
	t.Helper()
	var out []transcript.Item
	off := int64(0)
	var st *ChatState
	for _, cut := range append(cuts, len(data)) {
		cut = min(cut, len(data))
		if int64(cut) < off {
			continue
		}
		c := NewChatReader(strings.NewReader(string(data[off:cut])), off, st, opt)
		for {
			tl, err := c.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if tl.End > int64(cut) || tl.Start < off {
				t.Fatalf("line %d-%d outside the piece %d-%d", tl.Start, tl.End, off, cut)
			}
			out = append(out, tl.Items...)
		}
		off = c.Offset()
		b, err := json.Marshal(c.State())
		if err != nil {
			t.Fatal(err)
		}
		st = new(ChatState)
		if err := json.Unmarshal(b, st); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestChatIncremental reads every sample chat from every line boundary,
// and from byte offsets inside lines (a line still being written), with
// the state saved before: the items are the one-pass items, each once.
func TestChatIncremental(t *testing.T) {
	for path := range sampleItems {
		data := readFile(t, path)
		opt := sampleOptions(path)
		want := renderAll(readItems(t, data, opt))
		var ends []int
		for i, c := range data {
			if c == '\n' {
				ends = append(ends, i+1)
			}
		}
		for _, e := range ends {
			if got := renderAll(readSplit(t, data, []int{e}, opt)); !slices.Equal(got, want) {
				t.Fatalf("%s split after byte %d:\n%s", path, e, diffLines(want, got))
			}
		}
		if got := renderAll(readSplit(t, data, ends, opt)); !slices.Equal(got, want) {
			t.Fatalf("%s read a line at a time:\n%s", path, diffLines(want, got))
		}
		for cut := 1; cut < len(data); cut += 263 {
			if got := renderAll(readSplit(t, data, []int{cut, cut + 2000}, opt)); !slices.Equal(got, want) {
				t.Fatalf("%s split inside lines at %d and %d:\n%s", path, cut, cut+2000, diffLines(want, got))
			}
		}
	}
}

// itemKey is the dedupe key of an item.
func itemKey(it transcript.Item) string {
	switch x := it.(type) {
	case *transcript.TextSpan:
		return x.Key
	case *transcript.ToolUse:
		return x.SpanKey
	case *transcript.ToolResult:
		return x.SpanKey
	case *transcript.FileSeen:
		return x.Key
	case *transcript.CompactBoundary:
		return x.Key
	case *transcript.CompactSummary:
		return x.Key
	}
	return ""
}

// TestChatKeys: every item has a key, no two items of a session share
// one, and a second read (an import after the hooks swept) gives the
// same keys.
func TestChatKeys(t *testing.T) {
	bySession := map[string]map[string]string{}
	for path := range sampleItems {
		data := readFile(t, path)
		first := readItems(t, data, sampleOptions(path))
		again := readItems(t, data, sampleOptions(path))
		for i, it := range first {
			k := itemKey(it)
			if k == "" {
				t.Errorf("%s: no key", render(it))
			}
			if k != itemKey(again[i]) {
				t.Errorf("key %q read again as %q", k, itemKey(again[i]))
			}
			s := it.Meta().SessionID
			if bySession[s] == nil {
				bySession[s] = map[string]string{}
			}
			if prev, dup := bySession[s][k]; dup {
				t.Errorf("key %q of %s already used by %s", k, render(it), prev)
			}
			bySession[s][k] = render(it)
		}
	}
}

// chat builds a chat file line by line in the CLI's format.
type chat struct{ lines []string }

func (c *chat) add(v any) *chat {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	c.lines = append(c.lines, string(b))
	return c
}

func (c *chat) bytes() []byte { return []byte(strings.Join(c.lines, "\n") + "\n") }

type obj = map[string]any

const ts = "2026-12-05T14:18:25.942Z"

func headerLine(session string) obj {
	return obj{"sessionId": session, "projectHash": "434cb8866f219a7f302e031373c3057b4cf518377badf721548d69ec61349911",
		"startTime": ts, "lastUpdated": ts, "kind": "main"}
}

var sessionContext = obj{"id": "ctx", "timestamp": ts, "type": "user", "content": []any{obj{"text": "<session_context>\nenv\n</session_context>"}}}

func userText(id, text string) obj {
	return obj{"id": id, "timestamp": ts, "type": "user", "content": []any{obj{"text": text}}}
}

func modelText(id, text string) obj {
	return obj{"id": id, "timestamp": ts, "type": "gemini", "content": text, "thoughts": []any{}, "model": "gemini-2.5-flash"}
}

// toolCall is a toolCalls entry as the CLI records a completed call.
func toolCall(id, name string, args obj, output string, display any) obj {
	return obj{"id": id, "name": name, "args": args, "status": "success", "timestamp": ts, "resultDisplay": display,
		"result": []any{obj{"functionResponse": obj{"id": id, "name": name, "response": obj{"output": output}}}}}
}

func modelCalls(id string, calls ...obj) obj {
	m := modelText(id, "")
	m["toolCalls"] = calls
	return m
}

func response(id, callID, name, output string) obj {
	return obj{"id": id, "timestamp": ts, "type": "user", "content": []any{obj{"functionResponse": obj{"id": callID, "name": name, "response": obj{"output": output}}}}}
}

func set(msgs ...obj) obj { return obj{"$set": obj{"messages": msgs, "lastUpdated": ts}} }

func readArgs(path string) obj { return obj{"file_path": path} }

// A session: read a.txt and b.txt, then a history rewrite (a cancelled
// turn rolled back: b.txt's read is gone), then the model edits.
func TestChatRollbackIsBoundary(t *testing.T) {
	var c chat
	c.add(headerLine("s1")).add(set(sessionContext)).add(userText("u1", "read a"))
	c.add(modelCalls("m1", toolCall("ca", "read_file", readArgs("a.txt"), "A\n", ""))).add(response("r1", "ca", "read_file", "A\n"))
	c.add(userText("u2", "read b"))
	c.add(modelCalls("m2", toolCall("cb", "read_file", readArgs("/p/b.txt"), "B\n", ""))).add(response("r2", "cb", "read_file", "B\n"))
	// The rollback: the list ends before u2.
	c.add(set(sessionContext, userText("u1", "read a"), modelCalls("m1", toolCall("ca", "read_file", readArgs("a.txt"), "A\n", "")), response("r1", "ca", "read_file", "A\n")))
	got := renderAll(readItems(t, c.bytes(), ChatOptions{Cwd: "/p"}))
	boundary := slices.IndexFunc(got, func(s string) bool { return strings.HasPrefix(s, "boundary compact:rewrite:") })
	if boundary < 0 || !strings.HasSuffix(got[boundary], " rewrite") {
		t.Fatalf("no rewrite boundary:\n%s", strings.Join(got, "\n"))
	}
	after := got[boundary+1:]
	// a.txt is still in the context: its evidence again, in the new
	// epoch (a key of its own); b.txt's is not, and no span repeats.
	if len(after) != 1 || !strings.HasPrefix(after[0], "seen seen:m1:ca@rewrite:") || !strings.Contains(after[0], " /p/a.txt full ") {
		t.Fatalf("after the boundary:\n%s", strings.Join(after, "\n"))
	}
}

// The CLI lists the same context again (a resume) with its own copies of
// results ("<id>_response"): nothing new, no boundary.
func TestChatResumeAddsNothing(t *testing.T) {
	var c chat
	c.add(headerLine("s1")).add(set(sessionContext)).add(userText("u1", "read a"))
	c.add(modelCalls("m1", toolCall("ca", "read_file", readArgs("/p/a.txt"), "A\n", ""))).add(response("r1", "ca", "read_file", "A\n"))
	c.add(modelText("m2", "done"))
	before := len(readItems(t, c.bytes(), ChatOptions{}))
	c.add(headerLine("s1")).add(set(sessionContext)) // a fresh chat in the same file
	c.add(obj{"$set": obj{"sessionId": "s1"}})
	c.add(set(sessionContext,
		obj{"id": "m1", "timestamp": ts, "type": "gemini", "content": []any{obj{"functionCall": obj{"id": "ca", "name": "read_file", "args": readArgs("/p/a.txt")}}}},
		response("m1_response", "ca", "read_file", "A\n"), response("r1", "ca", "read_file", "A\n"),
		obj{"id": "m2", "timestamp": ts, "type": "gemini", "content": []any{obj{"text": "done"}}}))
	c.add(userText("u2", "again"))
	got := renderAll(readItems(t, c.bytes(), ChatOptions{}))
	if len(got) != before+1 || !strings.HasPrefix(got[before], "user span:u2:c0 ") {
		t.Fatalf("the resume yielded more than the new prompt:\n%s", strings.Join(got[before:], "\n"))
	}
}

// A user who says the same thing twice is heard twice; the CLI's copy of
// a turn (masking re-records the history, then lists it) is not.
func TestChatRepeatedPromptVersusCopy(t *testing.T) {
	var c chat
	c.add(headerLine("s1")).add(set(sessionContext)).add(userText("u1", "yes"))
	c.add(modelText("m1", "ok"))
	c.add(userText("u2", "yes")) // said again
	c.add(modelText("m2", "ok again"))
	c.add(userText("u1copy", "yes")) // the CLI's copy, listed below
	c.add(obj{"id": "m1copy", "timestamp": ts, "type": "gemini", "content": []any{obj{"text": "ok"}}})
	c.add(set(sessionContext, userText("u1copy", "yes"), obj{"id": "m1copy", "timestamp": ts, "type": "gemini", "content": []any{obj{"text": "ok"}}}, userText("u2", "yes")))
	got := renderAll(readItems(t, c.bytes(), ChatOptions{}))
	want := []string{
		`user span:ctx:c0 "<session_context>\nenv\n</session_context>"`,
		`user span:u1:c0 "yes"`,
		`assistant span:m1:c0 "ok"`,
		`user span:u2:c0 "yes"`,
		`assistant span:m2:c0 "ok again"`,
	}
	if !slices.Equal(got, want) {
		t.Fatalf("items:\n%s", diffLines(want, got))
	}
}

// A repeated prompt held as a possible copy is yielded when the model
// answers it, and also when a reader is handed the state in between.
func TestChatHeldPromptReleased(t *testing.T) {
	var c chat
	c.add(headerLine("s1")).add(set(sessionContext)).add(userText("u1", "continue")).add(modelText("m1", "one"))
	c.add(userText("u2", "continue")).add(obj{"$set": obj{"lastUpdated": ts}}).add(modelText("m2", "two"))
	data := c.bytes()
	want := renderAll(readItems(t, data, ChatOptions{}))
	if !slices.Contains(want, `user span:u2:c0 "continue"`) {
		t.Fatalf("the repeated prompt is lost:\n%s", strings.Join(want, "\n"))
	}
	cut := strings.LastIndex(string(data), `{"$set":{"lastUpdated"`)
	if got := renderAll(readSplit(t, data, []int{cut}, ChatOptions{})); !slices.Equal(got, want) {
		t.Fatalf("split while held:\n%s", diffLines(want, got))
	}
}

func TestChatRewind(t *testing.T) {
	var c chat
	c.add(headerLine("s1")).add(set(sessionContext)).add(userText("u1", "read a"))
	c.add(modelCalls("m1", toolCall("ca", "read_file", readArgs("/p/a.txt"), "A\n", ""))).add(response("r1", "ca", "read_file", "A\n"))
	c.add(userText("u2", "more")).add(obj{"$rewindTo": "u2"})
	c.add(userText("u3", "read a again"))
	c.add(modelCalls("m3", toolCall("ca2", "read_file", readArgs("/p/a.txt"), "A\n", "")))
	got := renderAll(readItems(t, c.bytes(), ChatOptions{}))
	want := []string{
		`user span:ctx:c0 "<session_context>\nenv\n</session_context>"`,
		`user span:u1:c0 "read a"`,
		`use span:m1:call:ca read_file /p/a.txt`,
		`result span:m1:result:ca read_file err=false path=/p/a.txt "A\n"`,
		`seen seen:m1:ca read read_file /p/a.txt full "A\n"`,
		`user span:u2:c0 "more"`,
		`boundary compact:rewind:u2 rewind`,
		`user span:u3:c0 "read a again"`,
		`use span:m3:call:ca2 read_file /p/a.txt`,
		`result span:m3:result:ca2 read_file err=false path=/p/a.txt "A\n"`,
		`seen seen:m3:ca2 read read_file /p/a.txt full "A\n"`,
	}
	if !slices.Equal(got, want) {
		t.Fatalf("items:\n%s", diffLines(want, got))
	}
}

// Near misses of read evidence in a chat: a range, a truncated read, a
// read whose lines were shortened, a denied replace, paths the reader
// cannot place.
func TestChatNearMisses(t *testing.T) {
	big := truncatedHeader(1, 2000, 2501) + strings.Repeat("l\n", 1999) + "l"
	var c chat
	c.add(headerLine("s1")).add(set(sessionContext))
	c.add(modelCalls("m1",
		toolCall("c1", "read_file", obj{"file_path": "r.txt", "start_line": 3, "end_line": 5}, truncatedHeader(3, 5, 11)+"r3\nr4\nr5", "Read lines 3-5 of 11 from r.txt"),
		toolCall("c2", "read_file", obj{"file_path": "big.txt"}, big, "Read lines 1-2000 of 2501 from big.txt"),
		toolCall("c3", "read_file", obj{"file_path": "long.txt"}, truncatedHeader(1, 3, 3)+strings.Repeat("x", 2000)+"... [truncated]\nshort\n", "Read all 3 lines from long.txt (some lines were shortened)"),
		toolCall("c4", "read_file", obj{"file_path": "r.txt", "start_line": 3, "end_line": 6}, truncatedHeader(3, 5, 11)+"r3\nr4\nr5", "Read lines 3-5 of 11 from r.txt"),
		toolCall("c5", "read_file", obj{"file_path": "@r.txt"}, "r1\n", ""),
		toolCall("c6", "read_file", obj{"file_path": "hooked.txt"}, "H\n\n\n<hook_context>restored: a &lt; b</hook_context>", ""),
	))
	denied := toolCall("c7", "replace", obj{"file_path": "/p/o.txt", "old_string": "a", "new_string": "b"}, "", "Tool execution blocked: no")
	denied["status"] = "error"
	denied["result"] = []any{obj{"functionResponse": obj{"id": "c7", "name": "replace", "response": obj{"error": "Tool execution blocked: no"}}}}
	c.add(modelCalls("m2", denied))
	c.add(response("r2", "c7", "replace", "ignored: answered"))
	got := renderAll(readItems(t, c.bytes(), ChatOptions{Cwd: "/p"}))
	var seen []string
	for _, g := range got {
		if strings.HasPrefix(g, "seen ") {
			seen = append(seen, g)
		}
	}
	want := []string{
		`seen seen:m1:c1 read read_file /p/r.txt lines:3-5 "r3\nr4\nr5"`,
		`seen seen:m1:c2 read read_file /p/big.txt lines:1-2000 "l\nl\nl\nl\nl\nl\nl\nl\nl\nl\nl\nl\nl\nl\nl\n"+3969`,
		`seen seen:m1:c6 read read_file /p/hooked.txt full "H\n"`,
	}
	if !slices.Equal(seen, want) {
		t.Fatalf("evidence:\n%s\nall items:\n%s", diffLines(want, seen), strings.Join(got, "\n"))
	}
	if !slices.Contains(got, `result span:m2:result:c7 replace err=true path=/p/o.txt "Tool execution blocked: no"`) {
		t.Errorf("the denied replace is not an error result:\n%s", strings.Join(got, "\n"))
	}
	if !slices.Contains(got, `use span:m1:call:c5 read_file `) {
		t.Errorf("an @-path got a file:\n%s", strings.Join(got, "\n"))
	}
}

// A read_many_files result (older CLIs offer it to the model) splits into
// one read per file when the split is exact.
func TestChatReadManyFiles(t *testing.T) {
	display := obj{"files": []string{"a.txt", "img.png", "b.txt"}, "targetDir": "/p"}
	// Each file: "--- path ---\n\n" + text + "\n\n"; joined by "\n"; then
	// "\n--- End of content ---". img.png has no text part.
	out := "--- /p/a.txt ---\n\nalpha\n\n\n" + "\n" + "--- /p/b.txt ---\n\nbeta\n\n\n" + "\n" + "\n--- End of content ---"
	var c chat
	c.add(headerLine("s1")).add(modelCalls("m1", toolCall("c1", "read_many_files", obj{"include": []string{"*.txt", "img.png"}}, out, display)))
	got := renderAll(readItems(t, c.bytes(), ChatOptions{}))
	want := []string{
		`use span:m1:call:c1 read_many_files `,
		`result span:m1:result:c1 read_many_files err=false path= "--- /p/a.txt ---\n\nalpha\n\n\n\n---"+46`,
		`seen seen:m1:c1:0 read read_many_files /p/a.txt full "alpha\n"`,
		`seen seen:m1:c1:1 read read_many_files /p/b.txt full "beta\n"`,
	}
	if !slices.Equal(got, want) {
		t.Fatalf("items:\n%s", diffLines(want, got))
	}
}

func TestChatInvalidLines(t *testing.T) {
	data := []byte("{\"sessionId\":\"s\",\"projectHash\":\"h\"}\nnot json\n{\"id\":1}\n\n{\"$set\":[]}\n[1]\n{\"id\":\"u\",\"type\":\"user\",\"content\":\"plain\"}\n")
	c := NewChatReader(strings.NewReader(string(data)), 0, nil, ChatOptions{})
	var items []transcript.Item
	for {
		tl, err := c.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		items = append(items, tl.Items...)
	}
	st := c.Stats()
	if st.Lines != 7 || st.Invalid != 2 || st.Skipped != 4 || st.Items != 1 || st.Bytes != int64(len(data)) {
		t.Errorf("stats %+v", st)
	}
	if got := renderAll(items); !slices.Equal(got, []string{`user span:u:c0 "plain"`}) {
		t.Errorf("items %q", got)
	}
	if items[0].Meta().SessionID != "s" {
		t.Errorf("session %q", items[0].Meta().SessionID)
	}
}
