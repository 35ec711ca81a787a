package cctranscript

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/hooks/transcript"
)

const (
	trSampleSession = "9e33e208-2b1c-4064-b54f-efdf0f79781b"
	trSampleAgent   = "ab8f45f825081b44d"
)

// trSampleDir holds the real transcripts Claude Code 2.1.328 wrote.
var trSampleDir = filepath.Join("..", "..", "..", "testdata", "claude-code-2.1.328", "transcripts", "-home-dev-project")

func trSampleMain() string { return filepath.Join(trSampleDir, trSampleSession+".jsonl") }
func trSampleSub() string {
	return filepath.Join(trSampleDir, trSampleSession, "subagents", "agent-"+trSampleAgent+".jsonl")
}

// trParseAll parses a whole transcript, checking offsets as it goes.
func trParseAll(t testing.TB, r io.Reader) ([]*transcript.Line, *Parser) {
	t.Helper()
	p := NewParser(r, 0)
	var out []*transcript.Line
	var last int64
	for {
		tl, err := p.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if tl.Start != last || tl.End <= tl.Start || tl.End != p.Offset() {
			t.Fatalf("offsets %d-%d after %d (parser at %d)", tl.Start, tl.End, last, p.Offset())
		}
		last = tl.End
		out = append(out, tl)
	}
	return out, p
}

func trParseFile(t testing.TB, path string) ([]*transcript.Line, *Parser) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return trParseAll(t, f)
}

func trItems[T any](lines []*transcript.Line) []T {
	var out []T
	for _, l := range lines {
		for _, it := range l.Items {
			if x, ok := it.(T); ok {
				out = append(out, x)
			}
		}
	}
	return out
}

type trWant struct {
	op, path, view, key, tool, agent, content string
	hasContent                                bool
}

func trCheckSeen(t *testing.T, got []*transcript.FileSeen, want []trWant) {
	t.Helper()
	if len(got) != len(want) {
		for _, g := range got {
			t.Logf("got %s %s %s %s %q", g.Op, g.Path, g.View, g.Key, g.Content)
		}
		t.Fatalf("%d file evidence items, want %d", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if string(g.Op) != w.op || g.Path != w.path || g.Key != w.key || g.Tool != w.tool || g.Agent != w.agent ||
			g.HasContent != w.hasContent || (w.hasContent && (g.View != w.view || string(g.Content) != w.content)) {
			t.Errorf("evidence %d:\n got %s %s view=%s key=%s tool=%s agent=%s has=%v %q\nwant %s %s view=%s key=%s tool=%s agent=%s has=%v %q",
				i, g.Op, g.Path, g.View, g.Key, g.Tool, g.Agent, g.HasContent, g.Content,
				w.op, w.path, w.view, w.key, w.tool, w.agent, w.hasContent, w.content)
		}
		if g.Sidechain != (w.agent != "") {
			t.Errorf("evidence %d: sidechain %v", i, g.Sidechain)
		}
		if g.TS.IsZero() || g.UUID == "" || g.SessionID != trSampleSession {
			t.Errorf("evidence %d: meta %+v", i, g.LineMeta)
		}
	}
}

func TestTranscriptSampleMain(t *testing.T) {
	lines, p := trParseFile(t, trSampleMain())
	st := p.Stats()
	if st.Lines != 103 || st.Invalid != 0 || p.Offset() != 334411 || len(p.Pending()) != 0 {
		t.Fatalf("stats %+v offset %d pending %v", st, p.Offset(), p.Pending())
	}
	const d = "/home/dev/project/"
	const mainGo1 = "package main\n\nfunc main() { println(1) }\n"
	trCheckSeen(t, trItems[*transcript.FileSeen](lines), []trWant{
		{"read", d + "hello.txt", "full", "toolu_main_0_1", "Read", "", "hello world\n", true},
		{"read", d + "main.go", "lines:2-2", "toolu_main_1_3", "Read", "", "", true},
		{"edit", d + "hello.txt", "full", "toolu_main_2_5", "Edit", "", "hello there\n", true},
		{"write", d + "notes.md", "full", "toolu_main_3_7", "Write", "", "# notes\n", true},
		{"edit", d + "main.go", "full", "toolu_main_5_13", "Edit", "", mainGo1, true},
		{"attach", d + "main.go", "full", "attach:392294db-24db-4461-a523-d7fa63458da3", "", "", mainGo1, true},
		{"attach", d + "notes.md", "full", "attach:5e0b1c1a-279a-4bca-b051-c6171c20df88", "", "", "# notes\n", true},
		{"attach", d + "hello.txt", "full", "attach:8e7a35ff-8069-4e81-ad0e-32165abb8610", "", "", "hello there\n", true},
		// After --resume the scripted model reused the id toolu_main_0_1.
		{"edit", d + "hello.txt", "full", "toolu_main_0_1", "Edit", "", "hello again\n", true},
	})

	cbs := trItems[*transcript.CompactBoundary](lines)
	if len(cbs) != 1 || cbs[0].Key != "compact:0ee68323-9c18-4592-b0b0-9f76c577885b" || cbs[0].Trigger != "manual" ||
		!cbs[0].TS.Equal(time.Date(2026, 12, 2, 16, 24, 7, 860e6, time.UTC)) || cbs[0].Agent != "" {
		t.Fatalf("compact boundaries %+v", cbs)
	}
	sums := trItems[*transcript.CompactSummary](lines)
	if len(sums) != 1 || sums[0].Key != "span:c8bb0807-ae4b-4f70-8bd1-22f5809b89e9" ||
		!strings.Contains(sums[0].Text(), "CG_OK") || !strings.HasPrefix(sums[0].Text(), "This session is being continued") {
		t.Fatalf("compact summaries %+v", sums)
	}
	// The boundary comes before the attachments it re-establishes.
	var order []string
	for _, l := range lines {
		for _, it := range l.Items {
			switch x := it.(type) {
			case *transcript.CompactBoundary:
				order = append(order, "compact")
			case *transcript.FileSeen:
				order = append(order, string(x.Op))
			}
		}
	}
	if got := strings.Join(order, ","); got != "read,read,edit,write,edit,compact,attach,attach,attach,edit" {
		t.Fatalf("order %s", got)
	}

	spans := trItems[*transcript.TextSpan](lines)
	var texts []string
	for _, s := range spans {
		texts = append(texts, s.Kind+":"+s.Text())
	}
	if len(spans) != 9 || texts[0] != "user:please edit" || !strings.HasPrefix(spans[0].Key, "span:77696ee7-01f6-4eba-a895-15da976de01b") {
		t.Fatalf("text spans %q", texts)
	}
	for _, want := range []string{"assistant:CG_OK done", "assistant:CG_OK after", "user:edit again"} {
		if !strings.Contains(strings.Join(texts, "\x00")+"\x00", want+"\x00") {
			t.Errorf("no span %q in %q", want, texts)
		}
	}
	uses := trItems[*transcript.ToolUse](lines)
	results := trItems[*transcript.ToolResult](lines)
	if len(uses) != 7 || len(results) != 7 {
		t.Fatalf("%d tool uses, %d results", len(uses), len(results))
	}
	if u := uses[1]; u.ID != "toolu_main_1_3" || u.Name != "Read" || u.Path != "/home/dev/project/main.go" ||
		string(u.Input) != `{"file_path":"/home/dev/project/main.go","offset":2,"limit":1}` || u.SpanKey != "span:c6bfcfdc-12e4-43c9-af87-0901d27011e1" {
		t.Fatalf("tool use %+v", u)
	}
	r := results[0]
	if r.ToolUseID != "toolu_main_0_1" || r.Tool != "Read" || r.IsError || r.Text() != "1\thello world\n2\t" ||
		!bytes.Contains(r.ToolUseResult, []byte(`"content":"hello world\n"`)) {
		t.Fatalf("tool result %+v", r)
	}
	// The Agent result's content is an array of text blocks.
	if r := results[4]; r.Tool != "Agent" || !strings.HasPrefix(r.Text(), "Async agent launched") {
		t.Fatalf("agent result %+v", r)
	}
	for _, it := range append(append([]transcript.Item{}, trAsItems(uses)...), trAsItems(results)...) {
		if !json.Valid(transcript.SpanJSON(it)) {
			t.Fatalf("invalid span %s", transcript.SpanJSON(it))
		}
	}
}

func trAsItems[T transcript.Item](xs []T) []transcript.Item {
	out := make([]transcript.Item, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

func TestTranscriptSampleSubagent(t *testing.T) {
	lines, p := trParseFile(t, trSampleSub())
	if p.Stats().Lines != 20 || p.Stats().Invalid != 0 {
		t.Fatalf("stats %+v", p.Stats())
	}
	// The subagent's tool_result has no toolUseResult: the content is
	// recovered from the numbered text and the call's input.
	results := trItems[*transcript.ToolResult](lines)
	if len(results) != 1 || results[0].ToolUseResult != nil || results[0].Text() != "1\tpackage main\n2\t\n3\tfunc main() {}\n4\t" {
		t.Fatalf("results %+v", results)
	}
	trCheckSeen(t, trItems[*transcript.FileSeen](lines), []trWant{
		{"read", "/home/dev/project/main.go", "full", "toolu_sub_0_11", "Read", trSampleAgent, "package main\n\nfunc main() {}\n", true},
	})
	spans := trItems[*transcript.TextSpan](lines)
	if len(spans) != 2 || spans[0].Text() != "SUBTASK read main.go" || spans[1].Text() != "sub done" ||
		spans[1].Agent != trSampleAgent || !spans[1].Sidechain {
		t.Fatalf("spans %+v", spans)
	}
}

func TestTranscriptStripLineNumbers(t *testing.T) {
	for _, c := range []struct {
		in          string
		out         string
		first, last int
		ok          bool
	}{
		{"1\thello world\n2\t", "hello world\n", 1, 2, true},
		{"2\t", "", 2, 2, true},
		{"1\tpackage main\n2\t\n3\tfunc main() {}\n4\t", "package main\n\nfunc main() {}\n", 1, 4, true},
		{"     1→hello world\n     2→", "hello world\n", 1, 2, true},
		{"    10→a\n    11→b", "a\nb", 10, 11, true},
		{"1234567→x\n1234568→y", "x\ny", 1234567, 1234568, true},
		// A reminder appended after a blank line is not file content.
		{"     1→a\n     2→b\n\n<system-reminder>\nWhenever you read a file...\n</system-reminder>\n", "a\nb", 1, 2, true},
		{"1\ta\n2\tb\n\n<system-reminder>x</system-reminder>", "a\nb", 1, 2, true},
		// Tabs and arrows inside lines are content.
		{"1\t\tindented\n2\tx→y\n3\t1\tz", "\tindented\nx→y\n1\tz", 1, 3, true},
		{"1\ta\r\n2\tb", "a\r\nb", 1, 2, true},
		// Numbering must be consecutive and in one style.
		{"1\ta\n3\tb", "a", 1, 1, true},
		{"1\ta\n     2→b", "a", 1, 1, true},
		{" 1\ta", "", 0, 0, false},
		{"", "", 0, 0, false},
		{"<system-reminder>Warning: the file exists but the contents are empty.</system-reminder>", "", 0, 0, false},
		{"File does not exist.", "", 0, 0, false},
		{"1234567890\tx", "", 0, 0, false},
		{"→x", "", 0, 0, false},
	} {
		out, first, last, ok := StripLineNumbers(c.in)
		if out != c.out || first != c.first || last != c.last || ok != c.ok {
			t.Errorf("StripLineNumbers(%q) = %q %d %d %v, want %q %d %d %v", c.in, out, first, last, ok, c.out, c.first, c.last, c.ok)
		}
	}
}

// trEnv wraps a payload into a transcript line envelope.
func trLine(typ, uuid, extra string) string {
	return `{"parentUuid":null,"isSidechain":false,"type":"` + typ + `",` + extra + `,"uuid":"` + uuid +
		`","timestamp":"2026-12-02T16:24:00.000Z","cwd":"/p","sessionId":"s1","version":"2.1.328"}`
}

func trToolUse(uuid, id, name, input string) string {
	return trLine("assistant", uuid, `"message":{"role":"assistant","content":[{"type":"tool_use","id":"`+id+`","name":"`+name+`","input":`+input+`}]}`)
}

func trToolResult(uuid, id, content, tur string) string {
	extra := `"message":{"role":"user","content":[{"tool_use_id":"` + id + `","type":"tool_result","content":` + content + `}]}`
	if tur != "" {
		extra += `,"toolUseResult":` + tur
	}
	return trLine("user", uuid, extra)
}

func trParseString(t *testing.T, s string) []*transcript.Line {
	t.Helper()
	lines, _ := trParseAll(t, strings.NewReader(s))
	return lines
}

func TestTranscriptOldRenderStyle(t *testing.T) {
	s := trToolUse("u1", "t1", "Read", `{"file_path":"/p/a.txt"}`) + "\n" +
		trToolResult("u2", "t1", `"     1→first\n     2→second\n     3→"`, "") + "\n" +
		trToolUse("u3", "t2", "Read", `{"file_path":"/p/b.txt","offset":10,"limit":2}`) + "\n" +
		trToolResult("u4", "t2", `"    10→ten\n    11→eleven"`, "") + "\n" +
		trToolUse("u5", "t3", "Read", `{"file_path":"rel/c.txt"}`) + "\n" +
		trToolResult("u6", "t3", `[{"type":"text","text":"1\tsee\n2\t"}]`, "") + "\n"
	seen := trItems[*transcript.FileSeen](trParseString(t, s))
	if len(seen) != 3 {
		t.Fatalf("%d evidence items", len(seen))
	}
	if g := seen[0]; g.Path != "/p/a.txt" || string(g.Content) != "first\nsecond\n" || g.View != "full" || g.Key != "t1" {
		t.Errorf("old style full read: %+v %q", g, g.Content)
	}
	if g := seen[1]; string(g.Content) != "ten\neleven" || g.View != "lines:10-11" {
		t.Errorf("old style partial read: %q %s", g.Content, g.View)
	}
	if g := seen[2]; g.Path != "/p/rel/c.txt" || string(g.Content) != "see\n" || g.View != "full" {
		t.Errorf("relative path, block content: %+v %q", g, g.Content)
	}
}

func TestTranscriptResultShapes(t *testing.T) {
	orig := "alpha\nbeta\nbeta\ngamma\n"
	var b strings.Builder
	add := func(lines ...string) {
		for _, l := range lines {
			b.WriteString(l + "\n")
		}
	}
	// Edit, replace_all, verified against structuredPatch.
	add(trToolUse("a1", "e1", "Edit", `{"file_path":"/p/f","old_string":"beta","new_string":"BETA","replace_all":true}`),
		trToolResult("r1", "e1", `"ok"`, `{"filePath":"/p/f","oldString":"beta","newString":"BETA","originalFile":`+trQ(orig)+
			`,"structuredPatch":[{"oldStart":1,"oldLines":4,"newStart":1,"newLines":4,"lines":[" alpha","-beta","-beta","+BETA","+BETA"," gamma"]}],"replaceAll":true}`))
	// Edit whose patch disagrees: no content rather than a wrong one.
	add(trToolUse("a2", "e2", "Edit", `{"file_path":"/p/f","old_string":"alpha","new_string":"ALPHA"}`),
		trToolResult("r2", "e2", `"ok"`, `{"filePath":"/p/f","oldString":"alpha","newString":"ALPHA","originalFile":`+trQ(orig)+
			`,"structuredPatch":[{"oldStart":1,"oldLines":1,"newStart":1,"newLines":1,"lines":["-alpha","+something else"]}]}`))
	// Edit deleting a line: the newline after it goes too.
	add(trToolUse("a3", "e3", "Edit", `{"file_path":"/p/f","old_string":"gamma","new_string":""}`),
		trToolResult("r3", "e3", `"ok"`, `{"filePath":"/p/f","oldString":"gamma","newString":"","originalFile":`+trQ(orig)+`}`))
	// Edit in a subagent (no toolUseResult): recorded without content.
	add(trToolUse("a4", "e4", "Edit", `{"file_path":"/p/f","old_string":"x","new_string":"y"}`),
		trToolResult("r4", "e4", `"The file /p/f has been updated successfully."`, ""))
	// MultiEdit, in order.
	add(trToolUse("a5", "m1", "MultiEdit", `{"file_path":"/p/f","edits":[{"old_string":"alpha","new_string":"one"},{"old_string":"one\nbeta","new_string":"two"}]}`),
		trToolResult("r5", "m1", `"ok"`, `{"filePath":"/p/f","originalFile":`+trQ(orig)+`,"structuredPatch":[]}`))
	// Write: content from the input when the result has none.
	add(trToolUse("a6", "w1", "Write", `{"file_path":"/p/new.md","content":"# new\n"}`),
		trToolResult("r6", "w1", `"File created successfully at: /p/new.md"`, ""))
	// Failed call, file_unchanged, image: no evidence.
	add(trToolUse("a7", "x1", "Read", `{"file_path":"/p/f"}`),
		trToolResult("r7", "x1", `"<tool_use_error>File does not exist.</tool_use_error>"`, `"Error: File does not exist."`))
	b.WriteString(strings.Replace(trToolResult("r7b", "x1", `"x"`, ""), `"type":"tool_result"`, `"type":"tool_result","is_error":true`, 1) + "\n")
	add(trToolUse("a8", "x2", "Read", `{"file_path":"/p/f"}`),
		trToolResult("r8", "x2", `"File unchanged since last read."`, `{"type":"file_unchanged","file":{"filePath":"/p/f"}}`))
	add(trToolUse("a9", "x3", "Read", `{"file_path":"/p/i.png"}`),
		trToolResult("r9", "x3", `[{"type":"image","source":{"type":"base64","data":"AAAA"}}]`, `{"type":"image","file":{"base64":"AAAA","type":"image/png"}}`))
	// toolUseResult as a string with a numbered result: recovered.
	add(trToolUse("a10", "s1", "Read", `{"file_path":"/p/s"}`),
		trToolResult("r10", "s1", `"1\tfrom text\n2\t"`, `"some string"`))
	// An offset past the end shows nothing.
	add(trToolUse("a11", "o1", "Read", `{"file_path":"/p/f","offset":50}`),
		trToolResult("r11", "o1", `"<system-reminder>Warning: the file exists but is shorter than the provided offset (50).</system-reminder>"`,
			`{"type":"text","file":{"filePath":"/p/f","content":"","numLines":0,"startLine":50,"totalLines":5}}`))
	// A result whose call was never seen: tool inferred from the shape.
	add(trToolResult("r12", "lost", `"1\tz"`, `{"type":"text","file":{"filePath":"/p/z","content":"z","numLines":1,"startLine":1,"totalLines":1}}`))
	// An Edit with an empty old_string creates the file.
	add(trToolUse("a13", "c1", "Edit", `{"file_path":"/p/created","old_string":"","new_string":"fresh\n"}`),
		trToolResult("r13", "c1", `"ok"`, ""))
	// Long default read of 2000 numbered lines: may be truncated, so partial.
	var long strings.Builder
	for i := 1; i <= 2000; i++ {
		if i > 1 {
			long.WriteByte('\n')
		}
		fmt.Fprintf(&long, "%d\tl%d", i, i)
	}
	add(trToolUse("a14", "l1", "Read", `{"file_path":"/p/long"}`), trToolResult("r14", "l1", trQ(long.String()), ""))

	trCheckSeenLoose(t, trItems[*transcript.FileSeen](trParseString(t, b.String())), []trWant{
		{"edit", "/p/f", "full", "e1", "Edit", "", "alpha\nBETA\nBETA\ngamma\n", true},
		{"edit", "/p/f", "", "e2", "Edit", "", "", false},
		{"edit", "/p/f", "full", "e3", "Edit", "", "alpha\nbeta\nbeta\n", true},
		{"edit", "/p/f", "", "e4", "Edit", "", "", false},
		{"edit", "/p/f", "full", "m1", "MultiEdit", "", "two\nbeta\ngamma\n", true},
		{"write", "/p/new.md", "full", "w1", "Write", "", "# new\n", true},
		{"read", "/p/s", "full", "s1", "Read", "", "from text\n", true},
		{"read", "/p/z", "full", "lost", "Read", "", "z", true},
		{"edit", "/p/created", "full", "c1", "Edit", "", "fresh\n", true},
		{"read", "/p/long", "lines:1-2000", "l1", "Read", "", trUnnumber(long.String()), true},
	})
}

func trUnnumber(s string) string {
	out, _, _, _ := StripLineNumbers(s)
	return out
}

func trQ(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// trCheckSeenLoose compares evidence without the sample's session checks.
func trCheckSeenLoose(t *testing.T, got []*transcript.FileSeen, want []trWant) {
	t.Helper()
	if len(got) != len(want) {
		for _, g := range got {
			t.Logf("got %s %s %s %s has=%v %q", g.Op, g.Path, g.View, g.Key, g.HasContent, g.Content)
		}
		t.Fatalf("%d evidence items, want %d", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if string(g.Op) != w.op || g.Path != w.path || g.Key != w.key || g.Tool != w.tool || g.HasContent != w.hasContent ||
			(w.hasContent && (g.View != w.view || string(g.Content) != w.content)) {
			t.Errorf("evidence %d: got %s %s %s %s %s has=%v %q, want %+v", i, g.Op, g.Path, g.View, g.Key, g.Tool, g.HasContent, g.Content, w)
		}
	}
}

func TestTranscriptPendingAcrossParsers(t *testing.T) {
	use := trToolUse("u1", "t1", "Read", `{"file_path":"/p/a","offset":3,"limit":2}`) + "\n"
	res := trToolResult("u2", "t1", `"3\tc\n4\td"`, "") + "\n"
	p1 := NewParser(strings.NewReader(use), 0)
	if _, err := p1.Next(); err != nil {
		t.Fatal(err)
	}
	pend := p1.Pending()
	if len(pend) != 1 || pend[0].ID != "t1" || pend[0].Path != "/p/a" {
		t.Fatalf("pending %+v", pend)
	}
	// Through JSON, as the sweep cursor keeps them.
	b, err := json.Marshal(pend)
	if err != nil {
		t.Fatal(err)
	}
	var back []transcript.PendingToolUse
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	p2 := NewParser(strings.NewReader(res), int64(len(use)))
	p2.SetPending(back)
	tl, err := p2.Next()
	if err != nil {
		t.Fatal(err)
	}
	seen := trItems[*transcript.FileSeen]([]*transcript.Line{tl})
	if len(seen) != 1 || string(seen[0].Content) != "c\nd" || seen[0].View != "lines:3-4" || tl.Start != int64(len(use)) {
		t.Fatalf("evidence %+v", seen)
	}
	if len(p2.Pending()) != 0 {
		t.Fatalf("still pending: %+v", p2.Pending())
	}
	// Without the pending call, a numbered result proves nothing.
	p3 := NewParser(strings.NewReader(res), 0)
	tl, _ = p3.Next()
	if len(trItems[*transcript.FileSeen]([]*transcript.Line{tl})) != 0 {
		t.Fatal("evidence from a result whose call is unknown")
	}
	// The memory of calls is bounded.
	var many strings.Builder
	for i := range transcript.MaxPendingToolUses + 10 {
		many.WriteString(trToolUse(fmt.Sprint("u", i), fmt.Sprint("id", i), "Read", `{"file_path":"/p/a"}`) + "\n")
	}
	_, p4 := trParseAll(t, strings.NewReader(many.String()))
	if pend := p4.Pending(); len(pend) != transcript.MaxPendingToolUses || pend[0].ID != "id10" {
		t.Fatalf("%d pending, first %s", len(pend), pend[0].ID)
	}
}

func TestTranscriptPartialLineNotConsumed(t *testing.T) {
	l1 := trLine("user", "u1", `"message":{"role":"user","content":"one"}`) + "\n"
	l2 := trLine("user", "u2", `"message":{"role":"user","content":"two"}`)
	half := l2[:len(l2)/2]
	lines, p := trParseAll(t, strings.NewReader(l1+half))
	if len(lines) != 1 || p.Offset() != int64(len(l1)) {
		t.Fatalf("%d lines, offset %d", len(lines), p.Offset())
	}
	// The line without its newline is not taken even when it is complete
	// JSON: it may still be being written.
	lines, p = trParseAll(t, strings.NewReader(l1+l2))
	if len(lines) != 1 || p.Offset() != int64(len(l1)) {
		t.Fatalf("%d lines, offset %d", len(lines), p.Offset())
	}
	// Completed, it is read from the offset.
	p2 := NewParser(strings.NewReader(l2+"\n"), p.Offset())
	tl, err := p2.Next()
	if err != nil || len(tl.Items) != 1 || tl.Items[0].(*transcript.TextSpan).Text() != "two" || tl.End != int64(len(l1+l2)+1) {
		t.Fatalf("%+v %v", tl, err)
	}
	// CRLF line endings and blank lines.
	lines, p = trParseAll(t, strings.NewReader("\n"+strings.TrimSuffix(l1, "\n")+"\r\n\r\n"))
	if len(lines) != 3 || len(lines[1].Items) != 1 || !lines[0].Skipped || p.Stats().Invalid != 0 {
		t.Fatalf("%+v", p.Stats())
	}
}

func TestTranscriptHostileInput(t *testing.T) {
	var b bytes.Buffer
	b.Grow(96 << 20)
	w := func(s string) { b.WriteString(s); b.WriteByte('\n') }
	w("not json at all")
	w("{")
	w(`{"type":"user","message":{"role":"user","content":"unterminated}`)
	w("{\"type\":\"user\",\"uuid\":\"x1\",\"message\":{\"role\":\"user\",\"content\":\"ok \xff\xfe invalid utf-8\"}}")
	w("\xff\xfe\xfd")
	w(`{"type":"user","uuid":"x2","message":{"role":"user","content":"bad escape \x"}}`)
	w(`{"type":"user","uuid":"x3","message":{"role":"user","content":"lone surrogate \ud800 and pair \ud83d\ude00"}}`)
	w(`{"type":"brand-new-type","payload":{"deep":[1,2,3]}}`)
	w(`{"type":"attachment","attachment":{"type":"file","content":null},"uuid":"x4"}`)
	w(`{"type":"assistant","uuid":"x5","message":null}`)
	w(`{"type":"assistant","uuid":"x6","message":{"content":[null,1,"s",{"type":"tool_use"},{"type":"tool_use","id":"t","name":"Read","input":"notobject"}]}}`)
	w(`{"type":"user","uuid":"x7","message":{"content":[{"type":"tool_result","tool_use_id":"t","content":null}]},"toolUseResult":"Error: string result"}`)
	w(`{"type":"system","subtype":"compact_boundary","uuid":"x8","compactMetadata":"weird"}`)
	w(`{"type":"user","uuid":"x9","message":{"content":"x"}} trailing`)
	w(`{"type":"user","uuid":"x10","message":{"content":"ok"},"n":1e400,"m":-0.5e-3}`)
	w(`{"type":"user","uuid":"x11","message":{"content":"x"},"n":01}`)
	w(strings.Repeat("[", 200000) + strings.Repeat("]", 200000))
	w(`{"type":"user","a":` + strings.Repeat(`{"a":`, 20000) + "1" + strings.Repeat("}", 20000) + "}")
	w(`{"type":"user","uuid":"x12","message":{"content":"\u0000\u001f control escapes"}}`)
	w("{\"type\":\"user\",\"uuid\":\"x13\",\"message\":{\"content\":\"raw\tcontrol\x01bytes\"}}")
	w(`{"type":"user","uuid":"x14","toolUseResult":{"file":{"content":5}},"message":{"content":[{"type":"tool_result","tool_use_id":"zz","content":"1\tq"}]}}`)
	// A 30 MB line: a user message, and a 30 MB line of garbage.
	big := strings.Repeat("0123456789abcdef", 30<<20/16)
	w(`{"type":"user","uuid":"big1","message":{"role":"user","content":"` + big + `"}}`)
	w(`{"type":"user","uuid":"big2","message":{"role":"user","content":"` + big)
	w(`{"type":"api-request-shape","shape":"` + big + `"}`)
	w(trLine("user", "last", `"message":{"role":"user","content":"still parsing"}`))

	start := time.Now()
	lines, p := trParseAll(t, bytes.NewReader(b.Bytes()))
	if d := time.Since(start); d > time.Minute {
		t.Fatalf("took %v", d)
	}
	st := p.Stats()
	if st.Lines != len(lines) || p.Offset() != int64(b.Len()) {
		t.Fatalf("stats %+v, offset %d of %d", st, p.Offset(), b.Len())
	}
	byUUID := map[string]*transcript.Line{}
	for _, l := range lines {
		if l.UUID != "" {
			byUUID[l.UUID] = l
		}
		if l.Invalid && len(l.Items) > 0 {
			t.Fatalf("invalid line with items: %+v", l)
		}
		for _, it := range l.Items {
			if s := transcript.SpanJSON(it); s != nil && !json.Valid(s) {
				t.Fatalf("invalid span JSON %q", s)
			}
		}
	}
	for _, u := range []string{"x1", "x3", "x10", "x12", "x13", "big1", "last"} {
		l := byUUID[u]
		if l == nil || len(l.Items) != 1 {
			t.Errorf("line %s: %+v", u, l)
		}
	}
	if s := byUUID["x1"].Items[0].(*transcript.TextSpan).Text(); s != "ok \xff\xfe invalid utf-8" {
		t.Errorf("invalid UTF-8 text: %q", s)
	}
	if s := byUUID["x3"].Items[0].(*transcript.TextSpan).Text(); s != "lone surrogate \uFFFD and pair 😀" {
		t.Errorf("surrogates: %q", s)
	}
	if s := byUUID["big1"].Items[0].(*transcript.TextSpan).Text(); len(s) != len(big) {
		t.Errorf("big line text: %d bytes", len(s))
	}
	for _, u := range []string{"x2", "x9", "x11"} {
		if l := byUUID[u]; l != nil {
			t.Errorf("invalid line %s parsed: %+v", u, l)
		}
	}
	if st.Invalid < 10 {
		t.Errorf("only %d invalid lines counted: %+v", st.Invalid, st)
	}
	// x6: one usable tool_use; its input is not an object.
	if uses := trItems[*transcript.ToolUse]([]*transcript.Line{byUUID["x6"]}); len(uses) != 1 || string(uses[0].Input) != `"notobject"` {
		t.Errorf("x6: %+v", byUUID["x6"])
	}
	// x7: a string toolUseResult is kept raw; the call is known (x6) but
	// the content is null: no evidence.
	if rs := trItems[*transcript.ToolResult]([]*transcript.Line{byUUID["x7"]}); len(rs) != 1 || string(rs[0].ToolUseResult) != `"Error: string result"` || rs[0].Tool != "Read" {
		t.Errorf("x7: %+v", rs)
	}
	if len(trItems[*transcript.FileSeen](lines)) != 0 {
		t.Errorf("evidence from hostile lines: %+v", trItems[*transcript.FileSeen](lines))
	}
}

func TestTranscriptSkipsUnknownAndBigTypesCheaply(t *testing.T) {
	// A skipped line is recognised from its first member: its (broken)
	// rest is never looked at.
	line := []byte(`{"type":"api-request-shape","shape":` + strings.Repeat("x", 1<<20))
	p := NewParser(nil, 0)
	tl := p.ParseLine(line)
	if !tl.Skipped || tl.Invalid || tl.Type != "api-request-shape" {
		t.Fatalf("%+v", tl)
	}
	att := []byte(`{"parentUuid":"p","isSidechain":false,"attachment":{"type":"prompt_snapshot","systemPrompt":"` + strings.Repeat("y", 1<<20))
	if tl := p.ParseLine(att); !tl.Skipped || tl.Invalid {
		t.Fatalf("%+v", tl)
	}
	allocs := testing.AllocsPerRun(20, func() { p.ParseLine(att) })
	if allocs > 6 {
		t.Fatalf("%v allocations to skip a prompt_snapshot", allocs)
	}
}
