package codex

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/git-lossless/git-lossless/hooks/transcript"
)

// cxDesc describes an item in one line: its kind, key and content.
func cxDesc(it transcript.Item) string {
	switch x := it.(type) {
	case *transcript.TextSpan:
		return fmt.Sprintf("%s %d %s %q", x.Kind, x.Block, x.Key, x.Text())
	case *transcript.ToolUse:
		return fmt.Sprintf("tool_use %s %s %s %s", x.SpanKey, x.ID, x.Name, x.Input)
	case *transcript.ToolResult:
		return fmt.Sprintf("tool_result %s %s %s %q", x.SpanKey, x.ToolUseID, x.Tool, x.Text())
	case *transcript.CompactBoundary:
		return "compact " + x.Key
	case *transcript.CompactSummary:
		t := x.Text()
		if i := strings.Index(t, "MOCK-SUMMARY"); i >= 0 {
			t = "..." + t[i:]
		}
		return fmt.Sprintf("compact_summary %s %q", x.Key, t)
	}
	return fmt.Sprintf("%T", it)
}

const (
	cxRun1     = "01a246c5-fd28-7dc3-8b0d-fc6cd99122b1"
	cxCompact  = "01a24690-9b22-7de3-b3cb-a40f8fef8279"
	cxParent   = "01a24690-6f67-7492-ad77-f37bac8654a0"
	cxChild    = "01a24690-781e-7140-a0f1-da522c19eabb"
	cxSamples  = "testdata/codex-0.169.0"
	cxProject  = "/home/dev/project"
	cxFrameOut = "Chunk ID: %s\\nWall time: 0.0000 seconds\\nProcess exited with code 0\\nOriginal token count: 3\\nOutput:\\nhello world\\n"
)

// cxRollout returns the sample rollout of a thread.
func cxRollout(t testing.TB, thread string) string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(cxSamples, "*", "rollout-*-"+thread+".jsonl"))
	if err != nil || len(m) != 1 {
		t.Fatalf("sample rollout of %s: %v %v", thread, m, err)
	}
	return m[0]
}

// cxReadAll reads a whole rollout, checking offsets as it goes.
func cxReadAll(t testing.TB, r *Reader, start int64) []*Line {
	t.Helper()
	var out []*Line
	last := start
	for {
		l, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if l.Start != last || l.End <= l.Start || l.End != r.Offset() {
			t.Fatalf("offsets %d-%d after %d (reader at %d)", l.Start, l.End, last, r.Offset())
		}
		last = l.End
		out = append(out, l)
	}
	return out
}

func cxItems(lines []*Line) []transcript.Item {
	var out []transcript.Item
	for _, l := range lines {
		out = append(out, l.Items...)
	}
	return out
}

// TestRolloutSamples reads every sample rollout and checks every item it
// yields, the session each item is filed under, and the calls.
func TestRolloutSamples(t *testing.T) {
	frame := func(chunk string) string { return fmt.Sprintf(cxFrameOut, chunk) }
	for _, tc := range []struct {
		thread, session, agent string
		items                  []string
		lines, skipped         int
	}{
		{thread: cxRun1, session: cxRun1, lines: 28, skipped: 18, items: []string{
			`user 0 span:T:40329 "Read hello.txt, change it, then change other.txt"`,
			`tool_use span:T:41623 call_1 exec_command {"cmd": "cat hello.txt"}`,
			`tool_result span:T:43489 call_1 exec_command "` + frame("8530d1") + `"`,
			`tool_use span:T:44760 call_2 apply_patch "*** Begin Patch\n*** Update File: hello.txt\n@@\n-hello world\n+hello codex\n*** End Patch\n"`,
			`tool_result span:T:46571 call_2 apply_patch "Exit code: 0\nWall time: 0.2 seconds\nOutput:\nSuccess. Updated the following files:\nM hello.txt\n"`,
			`tool_use span:T:47827 call_3 apply_patch "*** Begin Patch\n*** Update File: other.txt\n@@\n-other content\n+other EDITED\n*** End Patch\n"`,
			`tool_result span:T:49094 call_3 apply_patch "Command blocked by PreToolUse hook: DENIED-BY-HOOK: other.txt has not been read in the current context; read it first.. Command: *** Begin Patch\n*** Update File: other.txt\n@@\n-other content\n+other EDITED\n*** End Patch\n"`,
			`assistant 0 span:T:50881 "All done: read hello.txt, edited it, tried other.txt."`,
		}},
		{thread: cxCompact, session: cxCompact, lines: 31, skipped: 24, items: []string{
			`user 0 span:T:40923 "Read hello.txt"`,
			`tool_use span:T:42148 call_1 exec_command {"cmd": "cat hello.txt"}`,
			`tool_result span:T:44027 call_1 exec_command "` + frame("0acaff") + `"`,
			`assistant 0 span:T:46013 "MOCK-SUMMARY: user asked to read hello.txt; it was read."`,
			`compact compact:T:48027`,
			`compact_summary span:T:48027 "...MOCK-SUMMARY: user asked to read hello.txt; it was read."`,
			`assistant 0 span:T:71333 "Continuing after compaction: done."`,
		}},
		{thread: cxParent, session: cxParent, lines: 26, skipped: 19, items: []string{
			`user 0 span:T:40330 "Spawn a sub-agent to read hello.txt"`,
			`tool_use span:T:41598 call_1 spawn_agent {"message": "Read hello.txt and report"}`,
			`tool_result span:T:43599 call_1 spawn_agent "{\"agent_id\":\"01a24690-781e-7140-a0f1-da522c19eabb\",\"nickname\":\"Hubble\"}"`,
			`tool_use span:T:45017 call_2 wait_agent {"targets": ["01a24690-781e-7140-a0f1-da522c19eabb"], "timeout_ms": 20000}`,
			`tool_result span:T:46993 call_2 wait_agent "{\"status\":{\"01a24690-781e-7140-a0f1-da522c19eabb\":{\"completed\":\"child done: hello world\"}},\"timed_out\":false}"`,
			`assistant 0 span:T:49364 "parent done"`,
		}},
		{thread: cxChild, session: cxParent, agent: cxChild, lines: 19, skipped: 14, items: []string{
			`user 0 span:T:40417 "Read hello.txt and report"`,
			`tool_use span:T:41665 call_3 exec_command {"cmd": "cat hello.txt"}`,
			`tool_result span:T:43532 call_3 exec_command "` + frame("ae378f") + `"`,
			`assistant 0 span:T:45178 "child done: hello world"`,
		}},
	} {
		t.Run(tc.thread, func(t *testing.T) {
			f, err := os.Open(cxRollout(t, tc.thread))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			r := NewReader(f, 0, nil)
			lines := cxReadAll(t, r, 0)
			var got []string
			for _, it := range cxItems(lines) {
				got = append(got, strings.ReplaceAll(cxDesc(it), tc.thread, "T"))
				m := it.Meta()
				if m.SessionID != tc.session || m.Agent != tc.agent || m.Cwd != cxProject || m.TS.IsZero() || m.UUID != "" {
					t.Errorf("%s: meta %+v", cxDesc(it), *m)
				}
				if s := transcript.SpanJSON(it); s != nil && !json.Valid(s) {
					t.Errorf("span not JSON: %s", s)
				}
			}
			if !slices.Equal(got, tc.items) {
				t.Errorf("items:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.items, "\n"))
			}
			st := r.Stats()
			fi, _ := f.Stat()
			if st.Lines != tc.lines || st.Skipped != tc.skipped || st.Invalid != 0 || st.Items != len(tc.items) || st.Bytes != fi.Size() {
				t.Errorf("stats %+v", st)
			}
			if p := r.Pending(); len(p) != 0 {
				t.Errorf("pending %+v", p)
			}
			meta, ok := r.Meta()
			if !ok || meta.ID != tc.thread || meta.SessionID != tc.session || meta.Agent() != tc.agent || meta.CLIVersion != "0.169.0" || lines[0].Meta == nil {
				t.Errorf("meta %+v", meta)
			}
			for _, l := range lines {
				if l.Ordinal != int64(slices.Index(lines, l)) {
					t.Errorf("line at %d: ordinal %d", l.Start, l.Ordinal)
				}
			}
		})
	}
}

// TestRolloutCalls checks the calls the samples make: the shell read with
// its unwrapped output, the patch that applied, the one denied, and the
// FileChange event between them.
func TestRolloutCalls(t *testing.T) {
	f, err := os.Open(cxRollout(t, cxRun1))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var calls []*Call
	var changes []*FileChange
	for _, l := range cxReadAll(t, NewReader(f, 0, nil), 0) {
		if l.Call != nil {
			calls = append(calls, l.Call)
		}
		if l.FileChange != nil {
			changes = append(changes, l.FileChange)
			if l.Ordinal != 16 || len(l.Items) != 0 || l.Payload != "item_completed" {
				t.Errorf("FileChange line %+v", l)
			}
		}
	}
	if len(calls) != 6 {
		t.Fatalf("%d calls", len(calls))
	}
	read, readOut := calls[0], calls[1]
	if read.Use == nil || read.Kind != CallShell || read.Command != "cat hello.txt" || read.Name != ToolExecCommand || !read.Known {
		t.Errorf("read call %+v", read)
	}
	o := readOut.Output
	if readOut.Result == nil || readOut.Kind != CallShell || readOut.Command != "cat hello.txt" || !o.Framed || o.Output != "hello world\n" ||
		!o.Exited || o.ExitCode != 0 || o.ChunkID != "8530d1" || o.OriginalTokens != 3 || o.Truncated {
		t.Errorf("read output %+v", readOut)
	}
	patch := "*** Begin Patch\n*** Update File: hello.txt\n@@\n-hello world\n+hello codex\n*** End Patch\n"
	if calls[2].Kind != CallPatch || calls[2].Patch != patch || calls[2].PatchApplied() {
		t.Errorf("patch call %+v", calls[2])
	}
	if calls[3].Kind != CallPatch || calls[3].Patch != patch || !calls[3].PatchApplied() || calls[3].Output.WallTime != "0.2" {
		t.Errorf("patch output %+v", calls[3])
	}
	if calls[5].Kind != CallPatch || calls[5].PatchApplied() || calls[5].Output.Framed || !strings.HasPrefix(calls[5].Output.Output, "Command blocked by PreToolUse hook: DENIED-BY-HOOK") {
		t.Errorf("denied patch %+v", calls[5])
	}
	want := FileChange{CallID: "call_2", Status: "completed", Changes: []FileChangeEntry{{
		Path: cxProject + "/hello.txt", Kind: "update", UnifiedDiff: "@@ -1 +1 @@\n-hello world\n+hello codex\n",
	}}}
	if len(changes) != 1 || changes[0].CallID != want.CallID || changes[0].Status != want.Status || !slices.Equal(changes[0].Changes, want.Changes) {
		t.Errorf("file changes %+v", changes)
	}
	// Replaying the applied patch on the version read gives what Codex
	// wrote, which is what a sweep records; Codex's own diff agrees.
	p, err := ParsePatch(calls[3].Patch)
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.ApplyExact(cxProject, func(string) ([]byte, error) { return []byte(o.Output), nil })
	if err != nil || len(res) != 1 || res[0].Path != cxProject+"/hello.txt" || string(res[0].Content) != "hello codex\n" {
		t.Fatalf("replay: %+v %v", res, err)
	}
	if err := CheckUnifiedDiff([]byte(o.Output), res[0].Content, changes[0].Changes[0].UnifiedDiff); err != nil {
		t.Errorf("Codex's diff disagrees with the replay: %v", err)
	}
	if err := CheckUnifiedDiff([]byte("hello there\n"), res[0].Content, changes[0].Changes[0].UnifiedDiff); err == nil {
		t.Error("Codex's diff agrees with a replay on another version")
	}
}

// TestRolloutResume cuts each sample at every line start and in the
// middle of every line, reads up to the cut, then reads on from the
// reader's offset with a new reader (meta from ReadSessionMeta, pending
// calls carried over), as sweeps do: the items and their keys must be
// those of one whole read, each once.
func TestRolloutResume(t *testing.T) {
	for _, thread := range []string{cxRun1, cxCompact, cxParent, cxChild} {
		data, err := os.ReadFile(cxRollout(t, thread))
		if err != nil {
			t.Fatal(err)
		}
		var whole []string
		for _, it := range cxItems(cxReadAll(t, NewReader(bytes.NewReader(data), 0, nil), 0)) {
			whole = append(whole, cxDesc(it))
		}
		meta, err := ReadSessionMeta(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		var cuts []int
		for i := 0; i < len(data); {
			j := bytes.IndexByte(data[i:], '\n')
			cuts = append(cuts, i, i+(j+1)/2)
			i += j + 1
		}
		for _, cut := range cuts {
			r1 := NewReader(bytes.NewReader(data[:cut]), 0, nil)
			first := cxReadAll(t, r1, 0)
			off := r1.Offset()
			if off > int64(cut) || (off < int64(cut) && bytes.IndexByte(data[off:cut], '\n') >= 0) {
				t.Fatalf("%s cut %d: reader stopped at %d", thread, cut, off)
			}
			r2 := NewReader(bytes.NewReader(data[off:]), off, meta)
			r2.SetPending(r1.Pending())
			var got []string
			for _, it := range append(cxItems(first), cxItems(cxReadAll(t, r2, off))...) {
				got = append(got, cxDesc(it))
			}
			if !slices.Equal(got, whole) {
				t.Fatalf("%s cut at %d (offset %d):\n%s\nwant:\n%s", thread, cut, off, strings.Join(got, "\n"), strings.Join(whole, "\n"))
			}
		}
	}
}

// TestRolloutKeys checks that every span key of the samples is distinct,
// across files, and that a reader without the session meta keys nothing
// rather than guess.
func TestRolloutKeys(t *testing.T) {
	seen := map[string]string{}
	for _, thread := range []string{cxRun1, cxCompact, cxParent, cxChild} {
		data, err := os.ReadFile(cxRollout(t, thread))
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range cxItems(cxReadAll(t, NewReader(bytes.NewReader(data), 0, nil), 0)) {
			var key string
			switch x := it.(type) {
			case *transcript.TextSpan:
				key = x.Key
			case *transcript.ToolUse:
				key = x.SpanKey
			case *transcript.ToolResult:
				key = x.SpanKey
			case *transcript.CompactSummary:
				key = x.Key
			case *transcript.CompactBoundary:
				key = x.Key
			}
			if !strings.HasPrefix(key, "span:"+thread+":") && !strings.HasPrefix(key, "compact:"+thread+":") {
				t.Errorf("key %q", key)
			}
			if prev, dup := seen[key]; dup {
				t.Errorf("key %q twice: %s and %s", key, prev, cxDesc(it))
			}
			seen[key] = cxDesc(it)
		}
		// Started past the session_meta without it: no keys.
		off := int64(bytes.IndexByte(data, '\n') + 1)
		for _, it := range cxItems(cxReadAll(t, NewReader(bytes.NewReader(data[off:]), off, nil), off)) {
			if d := cxDesc(it); strings.Contains(d, "span:") || strings.Contains(d, "compact:") || it.Meta().SessionID != "" {
				t.Errorf("keyed without meta: %s", d)
			}
		}
	}
	if len(seen) != 25 {
		t.Errorf("%d keys", len(seen))
	}
}

func TestReadSessionMeta(t *testing.T) {
	f, err := os.Open(cxRollout(t, cxChild))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := ReadSessionMeta(f)
	if err != nil {
		t.Fatal(err)
	}
	if m.ID != cxChild || m.SessionID != cxParent || m.ParentThreadID != cxParent || !m.Subagent() || m.Agent() != cxChild ||
		m.Source != "subagent" || m.Depth != 1 || m.AgentNickname != "Hubble" || m.Cwd != cxProject || m.Originator != "codex_exec" ||
		m.ModelProvider != "mock" || m.GitBranch != "master" || m.GitCommit != "c663a3e95cad927c84837d300d16dedf35a542ff" ||
		m.Timestamp.Format("15:04:05.000") != "14:16:42.814" {
		t.Errorf("meta %+v", *m)
	}
	for _, bad := range []string{"", `{"type":"event_msg","payload":{}}` + "\n", `{"type":"session_meta","payload":{"id":"x"}}`, `{"type":"session_meta","payload":{}}` + "\n"} {
		if _, err := ReadSessionMeta(strings.NewReader(bad)); !errors.Is(err, ErrNoSessionMeta) {
			t.Errorf("%q: %v", bad, err)
		}
	}
	if id := ThreadIDFromPath(cxRollout(t, cxChild)); id != cxChild {
		t.Errorf("ThreadIDFromPath = %q", id)
	}
	for _, p := range []string{"rollout-x.jsonl", "/a/rollout-2026-12-05T14-16-42-01a24690-781e-7140-a0f1-da522c19eabb.json", "other-2026-12-05T14-16-42-01a24690-781e-7140-a0f1-da522c19eabb.jsonl"} {
		if id := ThreadIDFromPath(p); id != "" {
			t.Errorf("ThreadIDFromPath(%q) = %q", p, id)
		}
	}
}
