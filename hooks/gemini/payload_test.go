package gemini

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/git-lossless/git-lossless/internal/jsonscan"
)

var hooksDir = filepath.Join(sampleDir, "hooks")

// samplePayload decodes one sample hook payload, for the event its file
// names.
func samplePayload(t *testing.T, run, file string, opt DecodeOptions) *Payload {
	t.Helper()
	ev := strings.TrimSuffix(file[strings.IndexByte(file, '-')+1:], ".json")
	opt.Event = ev
	f, err := os.Open(filepath.Join(hooksDir, run, file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := DecodePayload(f, opt)
	if err != nil {
		t.Fatalf("%s/%s: %v", run, file, err)
	}
	return p
}

// TestPayloadSamples decodes every hook payload of the sample runs and
// checks the members each event carries.
func TestPayloadSamples(t *testing.T) {
	runs, err := os.ReadDir(hooksDir)
	if err != nil {
		t.Fatal(err)
	}
	events := map[string]int{}
	for _, run := range runs {
		files, err := os.ReadDir(filepath.Join(hooksDir, run.Name()))
		if err != nil {
			t.Fatal(err)
		}
		session := ""
		for _, f := range files {
			p := samplePayload(t, run.Name(), f.Name(), DecodeOptions{})
			name := run.Name() + "/" + f.Name()
			events[p.Event]++
			if session == "" {
				session = p.SessionID
			}
			if p.SessionID != session || p.Cwd != sampleCwd || !strings.HasPrefix(p.TranscriptPath, "/home/dev/.gemini/tmp/ws/chats/session-") || p.Timestamp.IsZero() {
				t.Errorf("%s: common members %q %q %q %v", name, p.SessionID, p.Cwd, p.TranscriptPath, p.Timestamp)
			}
			ok := true
			switch p.Event {
			case SessionStart:
				ok = p.Source == "startup" || p.Source == "resume"
			case BeforeAgent:
				ok = p.Prompt != ""
			case AfterAgent:
				ok = p.Prompt != "" && p.PromptResponse != "" && !p.StopHookActive
			case PreCompress:
				ok = p.Trigger == "auto"
			case BeforeModel, BeforeToolSelection, AfterModel:
				ok = p.LLMRequest == nil && p.LLMResponse == nil
				q := samplePayload(t, run.Name(), f.Name(), DecodeOptions{LLM: true})
				ok = ok && q.LLMRequest != nil && (p.Event != AfterModel || q.LLMResponse != nil)
			case BeforeTool:
				ok = p.ToolName != "" && p.ToolInput != nil && p.ToolResponse == nil
			case AfterTool:
				ok = p.ToolName != "" && p.ToolInput != nil && p.ToolResponse != nil && p.ToolResponse.LLMContent != nil && !p.Failed()
			case SessionEnd:
				ok = p.Reason == "exit"
			default:
				ok = false
			}
			if !ok {
				t.Errorf("%s: %+v", name, p)
			}
		}
	}
	for _, ev := range Events() {
		if ev != Notification && events[ev] == 0 {
			t.Errorf("no sample payload of %s", ev)
		}
	}
}

// seenOf decodes a sample AfterTool payload and returns what it saw.
func seenIn(t *testing.T, run, file string) []Seen {
	t.Helper()
	s, err := samplePayload(t, run, file, DecodeOptions{}).Seen()
	if err != nil {
		t.Fatalf("%s/%s: %v", run, file, err)
	}
	return s
}

func TestPayloadSeen(t *testing.T) {
	big := func(a, b int) string {
		var s strings.Builder
		for i := a; i <= b; i++ {
			s.WriteString("line ")
			s.WriteString(strconv.Itoa(i))
			if i < b || b == 2500 {
				s.WriteString("\n")
			}
		}
		return s.String()
	}
	p := "/home/dev/project/"
	cases := []struct {
		run, file string
		want      []Seen
	}{
		{"run1-read-replace-deny", "008-AfterTool.json", []Seen{{Path: p + "hello.txt", Tool: "read_file", Op: "read", View: "full", Content: []byte("hello world\n"), HasContent: true}}},
		{"run1-read-replace-deny", "014-AfterTool.json", []Seen{{Path: p + "hello.txt", Tool: "replace", Op: "edit", View: "full", Content: []byte("hello gemini\n"), HasContent: true}}},
		{"run-subagent", "012-AfterTool.json", []Seen{{Path: p + "hello.txt", Tool: "read_file", Op: "read", View: "full", Content: []byte("hello world\n"), HasContent: true}}},
		{"run-subagent", "018-AfterTool.json", nil}, // complete_task
		{"run-subagent", "019-AfterTool.json", nil}, // invoke_agent
		// A 2500-line file read without a range: the first 2000 lines.
		{"run-nearmiss", "005-AfterTool.json", []Seen{{Path: p + "big.txt", Tool: "read_file", Op: "read", View: "lines:1-2000", Content: []byte(big(1, 2000)), HasContent: true}}},
		{"run-nearmiss", "008-AfterTool.json", []Seen{{Path: p + "range.txt", Tool: "read_file", Op: "read", View: "lines:3-5", Content: []byte("r3\nr4\nr5"), HasContent: true}}},
		// A 2500-character line: shortened, the read is not the file.
		{"run-nearmiss", "011-AfterTool.json", []Seen{{Path: p + "long.txt", Tool: "read_file", Op: "read", Why: "lines were shortened"}}},
		// CRLF shown as LF: the read is the text the model saw.
		{"run-nearmiss", "015-AfterTool.json", []Seen{{Path: p + "crlf.txt", Tool: "read_file", Op: "read", View: "full", Content: []byte("one\ntwo\n"), HasContent: true}}},
		{"run-nearmiss", "018-AfterTool.json", []Seen{{Path: p + "new.txt", Tool: "write_file", Op: "write", View: "full", Content: []byte("created\n"), HasContent: true}}},
		{"run-nearmiss", "021-AfterTool.json", []Seen{{Path: p + "range.txt", Tool: "replace", Op: "edit", View: "full", Content: []byte("r1\nr2\nr3\nR4\nr5\nr6\nr7\nr8\nr9\nr10\n"), HasContent: true}}},
		{"run-nearmiss", "026-AfterTool.json", []Seen{{Path: p + "img.png", Tool: "read_file", Op: "read", Why: "not text (an object)"}}},
		// From line 2490 to the end (the file's last "line" is empty).
		{"run-nearmiss", "029-AfterTool.json", []Seen{{Path: p + "big.txt", Tool: "read_file", Op: "read", View: "lines:2490-2501", Content: []byte(big(2490, 2500)), HasContent: true}}},
	}
	for _, c := range cases {
		got := seenIn(t, c.run, c.file)
		if !slices.EqualFunc(got, c.want, sameSeen) {
			t.Errorf("%s/%s:\n got %s\nwant %s", c.run, c.file, seenText(got), seenText(c.want))
		}
	}
	// Events other than AfterTool see nothing.
	if s := seenIn(t, "run1-read-replace-deny", "007-BeforeTool.json"); s != nil {
		t.Errorf("BeforeTool saw %s", seenText(s))
	}
}

func sameSeen(a, b Seen) bool {
	return a.Path == b.Path && a.Tool == b.Tool && a.Op == b.Op && a.View == b.View && a.HasContent == b.HasContent &&
		string(a.Content) == string(b.Content) && a.Why == b.Why
}

func seenText(s []Seen) string {
	var parts []string
	for _, x := range s {
		parts = append(parts, string(x.Op)+" "+x.Tool+" "+x.Path+" "+x.View+" "+short(string(x.Content), 20)+" why="+x.Why)
	}
	return "[" + strings.Join(parts, "; ") + "]"
}

func TestPayloadEditTarget(t *testing.T) {
	cases := []struct {
		run, file string
		path      string
		ok        bool
	}{
		{"run1-read-replace-deny", "013-BeforeTool.json", "/home/dev/project/hello.txt", true},
		{"run1-read-replace-deny", "019-BeforeTool.json", "/home/dev/project/other.txt", true},
		{"run-nearmiss", "017-BeforeTool.json", "/home/dev/project/new.txt", true},
		{"run1-read-replace-deny", "007-BeforeTool.json", "", false},
		{"run-subagent", "007-BeforeTool.json", "", false},
	}
	for _, c := range cases {
		path, ok, err := samplePayload(t, c.run, c.file, DecodeOptions{}).EditTarget()
		if err != nil || path != c.path || ok != c.ok {
			t.Errorf("%s/%s: %q %v %v", c.run, c.file, path, ok, err)
		}
	}
}

// The CLI reads an @-prefixed path without the @ when no such file
// exists: the guard must check the file the tool writes.
func TestPayloadEditTargetAtPath(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x.go"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "@scope"), 0o700); err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{
		"@x.go":        filepath.Join(dir, "x.go"),
		"@/x.go":       filepath.Join(dir, "x.go"),
		"x.go":         filepath.Join(dir, "x.go"),
		"@scope/y.go":  filepath.Join(dir, "@scope", "y.go"), // an @-directory that exists
		"@other/y.go":  filepath.Join(dir, "other", "y.go"),
		"sub/../x.go":  filepath.Join(dir, "x.go"),
		"x\x00.go":     filepath.Join(dir, "x.go"),
		dir + "/z.txt": filepath.Join(dir, "z.txt"),
	} {
		body := `{"session_id":"s","cwd":` + quote(dir) + `,"hook_event_name":"BeforeTool","tool_name":"write_file","tool_input":{"file_path":` + quote(in) + `,"content":""}}`
		p, err := ParsePayload([]byte(body), DecodeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got, ok, err := p.EditTarget()
		if err != nil || !ok || got != want {
			t.Errorf("%q: %q %v %v, want %q", in, got, ok, err, want)
		}
	}
}

func quote(s string) string { return string(jsonscan.Quote(s)) }

// Members of the wrong type are errors naming them; null is absent.
func TestPayloadStrictTypes(t *testing.T) {
	base := map[string]string{
		"session_id": `"s"`, "cwd": `"/w"`, "hook_event_name": `"AfterTool"`, "tool_name": `"read_file"`,
		"tool_input": `{"file_path":"a.txt"}`, "tool_response": `{"llmContent":"A\n","returnDisplay":""}`,
	}
	build := func(change map[string]string) string {
		var parts []string
		for _, k := range []string{"session_id", "cwd", "hook_event_name", "timestamp", "tool_name", "tool_input", "tool_response", "source", "stop_hook_active", "prompt", "details"} {
			v, ok := change[k]
			if !ok {
				v, ok = base[k]
			}
			if ok && v != "-" {
				parts = append(parts, quote(k)+":"+v)
			}
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	cases := []struct {
		change map[string]string
		want   string // the error; "" for none
	}{
		{nil, ""},
		{map[string]string{"session_id": `1`}, "session_id is a number, not a string"},
		{map[string]string{"session_id": "-"}, "session_id is missing"},
		{map[string]string{"session_id": `null`}, "session_id is null, not a string"},
		{map[string]string{"session_id": `""`}, "session_id is empty"},
		{map[string]string{"cwd": `"w"`}, `payload cwd "w" is not absolute`},
		{map[string]string{"cwd": `["/w"]`}, "cwd is an array, not a string"},
		{map[string]string{"timestamp": `"yesterday"`}, `payload timestamp "yesterday" is not an RFC 3339 time`},
		{map[string]string{"timestamp": `1733400000`}, "timestamp is a number, not a string"},
		{map[string]string{"tool_name": "-"}, "tool_name is missing"},
		{map[string]string{"tool_input": `[]`}, "tool_input is an array, not an object"},
		{map[string]string{"tool_input": `null`}, "tool_input is null, not an object"},
		{map[string]string{"tool_response": "-"}, "tool_response is missing"},
		{map[string]string{"tool_response": `"done"`}, "tool_response is a string, not an object"},
		{map[string]string{"tool_response": `{"llmContent":5}`}, "tool_response.llmContent is a number, not a string, a part or an array of parts"},
		{map[string]string{"tool_response": `{"llmContent":"x","returnDisplay":[]}`}, "tool_response.returnDisplay is an array, not a string or an object"},
		{map[string]string{"tool_response": `{"llmContent":"x","error":"bad"}`}, "tool_response.error is a string, not an object"},
		{map[string]string{"tool_response": `{"llmContent":"x","error":{"message":1}}`}, "tool_response.error.message is a number, not a string"},
		{map[string]string{"stop_hook_active": `"yes"`}, "stop_hook_active is a string, not a boolean"},
		{map[string]string{"source": `null`, "prompt": `null`, "details": `null`}, ""},
		{map[string]string{"hook_event_name": `"BeforeTool"`}, "payload is for BeforeTool, not AfterTool"},
	}
	for _, c := range cases {
		body := build(c.change)
		_, err := ParsePayload([]byte(body), DecodeOptions{Event: AfterTool})
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", body, got, c.want)
		}
		var fe *FieldError
		if strings.HasSuffix(c.want, "is missing") && !errors.As(err, &fe) {
			t.Errorf("%s: %v is not a FieldError", body, err)
		}
	}
	for _, bad := range []string{``, `[]`, `"x"`, `{"session_id":"s"} x`, `{"session_id":"s",}`, `{"session_id":"s\q"}`} {
		if _, err := ParsePayload([]byte(bad), DecodeOptions{}); err == nil {
			t.Errorf("%q decoded", bad)
		}
	}
	// Tool inputs are checked when read.
	for in, want := range map[string]string{
		`{"file_path":5}`:                    "tool_input.file_path is a number, not a string",
		`{}`:                                 "tool_input.file_path is missing",
		`{"file_path":"a","start_line":"3"}`: "tool_input.start_line is a string, not a number",
		`{"file_path":"a","end_line":2.5}`:   "tool_input.end_line is a number, not an integer",
	} {
		p, err := ParsePayload([]byte(build(map[string]string{"tool_input": in})), DecodeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Seen(); err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %s", in, err, want)
		}
	}
}

// The model events carry the whole history: skipped unless asked for,
// even when it is large.
func TestPayloadSkipsLLMRequest(t *testing.T) {
	huge := `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat(`x\"y`, 1<<20) + `"}]}`
	body := `{"session_id":"s","hook_event_name":"BeforeModel","llm_request":` + huge + `,"timestamp":"2026-12-05T14:18:29.036Z"}`
	p, err := ParsePayload([]byte(body), DecodeOptions{})
	if err != nil || p.LLMRequest != nil || p.Timestamp.IsZero() {
		t.Fatalf("%v %d", err, len(p.LLMRequest))
	}
	p, err = ParsePayload([]byte(body), DecodeOptions{LLM: true})
	if err != nil || string(p.LLMRequest) != huge {
		t.Fatalf("kept: %v %d", err, len(p.LLMRequest))
	}
	if _, err := ParsePayload([]byte(`{"session_id":"s","llm_request":[]}`), DecodeOptions{LLM: true}); err == nil {
		t.Error("an llm_request array was kept")
	}
}

func TestPayloadSubagentID(t *testing.T) {
	if got := samplePayload(t, "run-subagent", "019-AfterTool.json", DecodeOptions{}).SubagentID(); got != "6fdbd512-609c-493b-aadc-22b51e047dc6" {
		t.Errorf("subagent %q", got)
	}
	for _, f := range []string{"007-BeforeTool.json", "012-AfterTool.json"} {
		if got := samplePayload(t, "run-subagent", f, DecodeOptions{}).SubagentID(); got != "" {
			t.Errorf("%s: subagent %q", f, got)
		}
	}
	p, _ := ParsePayload([]byte(`{"session_id":"s","hook_event_name":"AfterTool","tool_name":"invoke_agent","tool_input":{},"tool_response":{"llmContent":"x","returnDisplay":{"recentActivity":[{"id":"../../etc#0-0"}]}}}`), DecodeOptions{})
	if got := p.SubagentID(); got != "" {
		t.Errorf("an id that leaves the chats directory: %q", got)
	}
}

func TestPayloadHookKey(t *testing.T) {
	a := samplePayload(t, "run1-read-replace-deny", "008-AfterTool.json", DecodeOptions{})
	b := samplePayload(t, "run1-read-replace-deny", "008-AfterTool.json", DecodeOptions{})
	c := samplePayload(t, "run-compress", "008-AfterTool.json", DecodeOptions{})
	if a.HookKey() != b.HookKey() || a.HookKey() == c.HookKey() || !strings.HasPrefix(a.HookKey(), "hook:2026-12-05T14:18:32.202Z:") {
		t.Errorf("keys %q %q %q", a.HookKey(), b.HookKey(), c.HookKey())
	}
}

func TestOutputs(t *testing.T) {
	if got := string(DenyOutput(`other.txt has not been read; run "git lossless restore"`)); got != `{"decision":"deny","reason":"other.txt has not been read; run \"git lossless restore\""}`+"\n" {
		t.Errorf("deny %s", got)
	}
	for _, ev := range Events() {
		out, err := ContextOutput(ev, "a<b")
		allowed := slices.Contains(ContextEvents(), ev)
		if allowed != (err == nil) {
			t.Errorf("%s: %v", ev, err)
		}
		if allowed && string(out) != `{"hookSpecificOutput":{"additionalContext":"a\u003cb","hookEventName":"`+ev+`"}}`+"\n" {
			t.Errorf("%s: %s", ev, out)
		}
	}
	if got := InjectedText("if a<b && c>d { x := <-ch }"); got != "if a&lt;b && c&gt;d { x := &lt;-ch }" {
		t.Errorf("injected %q", got)
	}
}

func TestPayloadFileArgs(t *testing.T) {
	a, ok, err := samplePayload(t, "run1-read-replace-deny", "013-BeforeTool.json", DecodeOptions{}).FileArgs()
	if err != nil || !ok || a.FilePath != "/home/dev/project/hello.txt" || a.OldString == nil || *a.OldString != "hello world" || *a.NewString != "hello gemini" || a.Content != nil {
		t.Errorf("replace: %+v %v %v", a, ok, err)
	}
	a, ok, err = samplePayload(t, "run-nearmiss", "007-BeforeTool.json", DecodeOptions{}).FileArgs()
	if err != nil || !ok || a.StartLine != 3 || a.EndLine != 5 || a.Legacy {
		t.Errorf("read range: %+v %v %v", a, ok, err)
	}
	a, ok, err = samplePayload(t, "run-nearmiss", "017-BeforeTool.json", DecodeOptions{}).FileArgs()
	if err != nil || !ok || a.Content == nil || *a.Content != "created\n" {
		t.Errorf("write: %+v %v %v", a, ok, err)
	}
	if _, ok, err := samplePayload(t, "run-subagent", "007-BeforeTool.json", DecodeOptions{}).FileArgs(); ok || err != nil {
		t.Errorf("invoke_agent: %v %v", ok, err)
	}
	for tool, cases := range map[string]map[string]string{
		"replace": {
			`{"file_path":"a","old_string":5,"new_string":"b"}`: "tool_input.old_string is a number, not a string",
			`{"file_path":"a","allow_multiple":"yes"}`:          "tool_input.allow_multiple is a string, not a boolean",
			`{"old_string":"a","new_string":"b"}`:               "tool_input.file_path is missing",
		},
		"write_file": {`{"file_path":"a","content":{"x":1}}`: "tool_input.content is an object, not a string"},
		"read_file":  {`{"file_path":"a","offset":"0"}`: "tool_input.offset is a string, not a number"},
		"read_many_files": {
			`{"include":"*.go"}`:        "tool_input.include is a string, not an array of strings",
			`{"include":["a",1]}`:       "tool_input.include[1] is a number, not a string",
			`{"paths":["a","b"]}`:       "",
			`{"include":[],"paths":[]}`: "",
		},
	} {
		for in, want := range cases {
			p, err := ParsePayload([]byte(`{"session_id":"s","cwd":"/w","hook_event_name":"AfterTool","tool_name":"`+tool+`","tool_input":`+in+`,"tool_response":{"llmContent":"x"}}`), DecodeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			a, _, err := p.FileArgs()
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != want {
				t.Errorf("%s %s: %q, want %q", tool, in, got, want)
			}
			if _, serr := p.Seen(); (serr == nil) != (want == "") {
				t.Errorf("%s %s: Seen %v", tool, in, serr)
			}
			if in == `{"paths":["a","b"]}` && !slices.Equal(a.Include, []string{"a", "b"}) {
				t.Errorf("paths %q", a.Include)
			}
		}
	}
}
