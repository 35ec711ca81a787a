package codex

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/git-lossless/git-lossless/hooks/transcript"
)

const cxMetaLine = `{"timestamp":"2026-01-02T03:04:05.000Z","ordinal":0,"type":"session_meta","payload":{"id":"11111111-2222-3333-4444-555555555555","timestamp":"2026-01-02T03:04:05Z","cwd":"/repo","cli_version":"0.169.0","source":"cli","base_instructions":{"text":"long"}}}`

// cxLines reads a rollout made of lines ('\n' appended to each).
func cxLines(t *testing.T, lines ...string) ([]*Line, *Reader) {
	t.Helper()
	data := strings.Join(lines, "\n") + "\n"
	r := NewReader(strings.NewReader(data), 0, nil)
	return cxReadAll(t, r, 0), r
}

func cxItem(t *testing.T, lines []*Line, i int) []string {
	t.Helper()
	var out []string
	for _, it := range lines[i].Items {
		out = append(out, strings.ReplaceAll(cxDesc(it), "11111111-2222-3333-4444-555555555555", "T"))
	}
	return out
}

// TestRolloutLineKinds feeds one line of each shape the reader handles
// and checks what it yields.
func TestRolloutLineKinds(t *testing.T) {
	lines, r := cxLines(t,
		cxMetaLine,
		// 1: user message without provenance: harness blocks are told by their tag.
		`{"timestamp":"2026-01-02T03:04:06Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>\n<cwd>/repo</cwd></environment_context>"},{"type":"input_text","text":"fix the bug"},{"type":"input_image","image_url":"data:"},{"type":"input_text","text":""}]}}`,
		// 2: user message with provenance: only the user's block.
		`{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"# AGENTS.md instructions for /repo"},{"type":"input_text","text":"and test it"}],"internal_chat_message_metadata_passthrough":{"content_item_metadata":[{"provenance":{"type":"harness"}},{"provenance":{"type":"user"}}]}}}`,
		// 3: reasoning with two summaries and a reasoning text.
		`{"type":"response_item","payload":{"type":"reasoning","summary":[{"type":"summary_text","text":"**Plan**"},{"type":"summary_text","text":"read first"}],"content":[{"type":"reasoning_text","text":"raw thought"}],"encrypted_content":"xyz"}}`,
		// 4: encrypted reasoning only.
		`{"type":"response_item","payload":{"type":"reasoning","summary":[],"encrypted_content":"xyz"}}`,
		// 5: turn_context moves the cwd.
		`{"type":"turn_context","payload":{"turn_id":"t","cwd":"/repo/sub","approval_policy":"never"}}`,
		// 6: a shell call through shell (argv), with a workdir.
		`{"type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[\"bash\",\"-lc\",\"sed -n '1,5p' a.go\"],\"workdir\":\"/repo/sub\"}","call_id":"c6"}}`,
		// 7: its output, as an object with success false.
		`{"type":"response_item","payload":{"type":"function_call_output","call_id":"c6","output":{"content":"Exit code: 1\nWall time: 0.1 seconds\nOutput:\nno such file\n","success":false}}}`,
		// 8: a local shell call.
		`{"type":"response_item","payload":{"type":"local_shell_call","call_id":"c8","status":"completed","action":{"type":"exec","command":["cat","my file.txt"],"working_directory":"/tmp"}}}`,
		// 9: an exec_command that is an apply_patch heredoc.
		`{"type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"cd src && apply_patch <<'EOF'\\n*** Begin Patch\\n*** Delete File: x\\n*** End Patch\\nEOF\"}","call_id":"c9"}}`,
		// 10: apply_patch as a function tool.
		`{"type":"response_item","payload":{"type":"function_call","name":"apply_patch","arguments":"{\"input\":\"*** Begin Patch\\n*** Delete File: y\\n*** End Patch\"}","call_id":"c10"}}`,
		// 11: arguments that are not JSON stay a string.
		`{"type":"response_item","payload":{"type":"function_call","name":"odd","arguments":"not json","call_id":"c11"}}`,
		// 12: an output whose call was never read, as content items.
		`{"type":"response_item","payload":{"type":"custom_tool_call_output","call_id":"zz","output":[{"type":"input_text","text":"a"},{"type":"input_image","image_url":"data:"},{"type":"input_text","text":"b"}]}}`,
		// 13: a compaction without a summary (remote, encrypted).
		`{"type":"compacted","payload":{"message":"","replacement_history":[]}}`,
		// 14: payload before type: read whole all the same.
		`{"payload":{"role":"assistant","type":"message","content":[{"type":"output_text","text":"first"},{"type":"output_text","text":"second"}]},"type":"response_item"}`,
		// 15: not JSON.
		`{"type":"response_item","payload":{"type":"message",`,
		// 16: unknown type.
		`{"type":"brand_new","payload":{}}`,
		// 17: a second session_meta does not rename the thread.
		`{"type":"session_meta","payload":{"id":"99999999-2222-3333-4444-555555555555","cwd":"/elsewhere"}}`,
		// 18: developer message.
		`{"type":"response_item","payload":{"type":"message","role":"developer","content":[{"type":"input_text","text":"rules"}]}}`,
		// 19: blank line.
		``,
		// 20: a call without call_id.
		`{"type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"{}"}}`,
		// 21: an event other than a FileChange.
		`{"type":"event_msg","payload":{"type":"item_completed","item":{"type":"CommandExecution","aggregated_output":"x"}}}`,
	)
	want := map[int][]string{
		1:  {`user 1 span:T:` + itoa(lines[1].Start) + ` "fix the bug"`},
		2:  {`user 1 span:T:` + itoa(lines[2].Start) + ` "and test it"`},
		3:  {`thinking 0 span:T:` + itoa(lines[3].Start) + `:0 "**Plan**"`, `thinking 1 span:T:` + itoa(lines[3].Start) + `:1 "read first"`, `thinking 2 span:T:` + itoa(lines[3].Start) + `:2 "raw thought"`},
		6:  {`tool_use span:T:` + itoa(lines[6].Start) + ` c6 shell {"command":["bash","-lc","sed -n '1,5p' a.go"],"workdir":"/repo/sub"}`},
		7:  {`tool_result span:T:` + itoa(lines[7].Start) + ` c6 shell "Exit code: 1\nWall time: 0.1 seconds\nOutput:\nno such file\n"`},
		8:  {`tool_use span:T:` + itoa(lines[8].Start) + ` c8 local_shell {"type":"exec","command":["cat","my file.txt"],"working_directory":"/tmp"}`},
		9:  {`tool_use span:T:` + itoa(lines[9].Start) + ` c9 exec_command {"cmd":"cd src && apply_patch <<'EOF'\n*** Begin Patch\n*** Delete File: x\n*** End Patch\nEOF"}`},
		10: {`tool_use span:T:` + itoa(lines[10].Start) + ` c10 apply_patch {"input":"*** Begin Patch\n*** Delete File: y\n*** End Patch"}`},
		11: {`tool_use span:T:` + itoa(lines[11].Start) + ` c11 odd "not json"`},
		12: {`tool_result span:T:` + itoa(lines[12].Start) + ` zz  "a\nb"`},
		13: {`compact compact:T:` + itoa(lines[13].Start)},
		14: {`assistant 0 span:T:` + itoa(lines[14].Start) + `:0 "first"`, `assistant 1 span:T:` + itoa(lines[14].Start) + `:1 "second"`},
	}
	for i, l := range lines {
		if got := cxItem(t, lines, i); strings.Join(got, "\n") != strings.Join(want[i], "\n") {
			t.Errorf("line %d: %q, want %q", i, got, want[i])
		}
		for _, it := range l.Items {
			if s := transcript.SpanJSON(it); s != nil && !json.Valid(s) {
				t.Errorf("line %d: span %s", i, s)
			}
		}
	}
	if lines[15].Skipped || !lines[15].Invalid || lines[15].Type != "" {
		t.Errorf("invalid line %+v", lines[15])
	}
	for _, i := range []int{4, 5, 16, 18, 19, 20, 21} {
		if !lines[i].Skipped || lines[i].Invalid || len(lines[i].Items) != 0 {
			t.Errorf("line %d not skipped: %+v", i, lines[i])
		}
	}
	if lines[16].Type != "brand_new" || lines[5].Type != "turn_context" || lines[21].Payload != "item_completed" {
		t.Errorf("types %q %q %q", lines[16].Type, lines[5].Type, lines[21].Payload)
	}
	if lines[1].TS.IsZero() || !lines[2].TS.IsZero() || lines[1].Ordinal != -1 || lines[0].Ordinal != 0 {
		t.Errorf("ts/ordinal %v %v %d", lines[1].TS, lines[2].TS, lines[1].Ordinal)
	}
	if lines[1].Cwd != "/repo" || lines[6].Cwd != "/repo/sub" || lines[17].Cwd != "/repo/sub" {
		t.Errorf("cwd %q %q", lines[1].Cwd, lines[6].Cwd)
	}
	if m, _ := r.Meta(); m.ID != "11111111-2222-3333-4444-555555555555" || lines[17].Meta == nil || lines[17].Meta.ID[0] != '9' {
		t.Errorf("meta renamed: %+v", m)
	}
	c := lines[6].Call
	if c.Kind != CallShell || c.Command != "sed -n '1,5p' a.go" || c.Workdir != "/repo/sub" {
		t.Errorf("shell call %+v", c)
	}
	c = lines[7].Call
	if !lines[7].Items[0].(*transcript.ToolResult).IsError || c.Command != "sed -n '1,5p' a.go" || c.Output.ExitCode != 1 || c.Output.Output != "no such file\n" {
		t.Errorf("shell output %+v", c)
	}
	if c := lines[8].Call; c.Kind != CallShell || c.Command != "cat 'my file.txt'" || c.Workdir != "/tmp" {
		t.Errorf("local shell %+v", c)
	}
	if c := lines[9].Call; c.Kind != CallPatch || c.Patch != "*** Begin Patch\n*** Delete File: x\n*** End Patch" || c.Workdir != "src" || !strings.HasPrefix(c.Command, "cd src") {
		t.Errorf("heredoc patch %+v", c)
	}
	if c := lines[10].Call; c.Kind != CallPatch || c.Patch != "*** Begin Patch\n*** Delete File: y\n*** End Patch" {
		t.Errorf("function patch %+v", c)
	}
	if c := lines[12].Call; c.Known || c.Name != "" || c.Kind != CallOther || c.Output.Output != "a\nb" {
		t.Errorf("orphan output %+v", c)
	}
	// What is still waiting: the calls without output, shell and patch
	// calls with their input.
	p := r.Pending()
	if len(p) != 4 || p[0].ID != "c8" || p[1].ID != "c9" || p[2].ID != "c10" || p[3].ID != "c11" || len(p[0].Input) == 0 || len(p[3].Input) != 0 {
		t.Errorf("pending %+v", p)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
