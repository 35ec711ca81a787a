package claudecode_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/git-lossless/git-lossless/gitstore"
)

// hookProc is one `git-lossless hook EVENT` process with its payload.
type hookProc struct {
	event   string
	payload map[string]any
	// wantDeny: the guard must deny (true) or allow (false); nil for
	// events that decide nothing.
	wantDeny *bool
	cmd      *exec.Cmd
	out, err bytes.Buffer
}

// runAtOnce starts every process, and only when all of them are running
// writes their payloads: they all read, decide and write at the same
// time, as Claude Code's parallel tool calls make them do.
func runAtOnce(t *testing.T, bin, dir string, env []string, procs []*hookProc) {
	t.Helper()
	stdins := make([]interface{ Write([]byte) (int, error) }, len(procs))
	closers := make([]func() error, len(procs))
	for i, p := range procs {
		p.cmd = exec.Command(bin, "hook", p.event)
		p.cmd.Dir = dir
		p.cmd.Env = env
		p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.err
		w, err := p.cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdins[i], closers[i] = w, w.Close
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for i, p := range procs {
		b, err := json.Marshal(p.payload)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			stdins[i].Write(b)
			closers[i]()
		}()
	}
	wg.Wait()
	for _, p := range procs {
		err := p.cmd.Wait()
		if err != nil || p.err.Len() > 0 {
			t.Errorf("hook %s %v: %v, stderr %q", p.event, p.payload["tool_use_id"], err, p.err.String())
			continue
		}
		if p.wantDeny != nil {
			denied := strings.Contains(p.out.String(), `"permissionDecision":"deny"`)
			if denied != *p.wantDeny {
				t.Errorf("pre-tool-use %v (agent %q): denied=%v, want %v; stdout %q", p.payload["tool_use_id"], p.payload["agent_id"], denied, *p.wantDeny, p.out.String())
			}
		} else if p.out.Len() > 0 {
			t.Errorf("hook %s printed %q", p.event, p.out.String())
		}
	}
}

// TestHooksConcurrentProcesses runs many hook processes of one session at
// once — reads and guards of the main agent and two subagents, sweeping
// their transcripts as they go — and checks every decision, that no event
// is lost or doubled, and that the archive verifies and git accepts it.
// The writers serialise through the ref lock across processes, which a
// test inside one process (one Store, one mutex) never exercises.
func TestHooksConcurrentProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs dozens of processes")
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	dir, _ = filepath.EvalSymlinks(dir)
	gitOut(t, dir, "init", "-q")
	home := t.TempDir()
	env := append(os.Environ(), "HOME="+home, "XDG_DATA_HOME="+filepath.Join(home, "data"), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "LOSSLESS_GUARD=")
	const session = "c0ffee00-1111-4222-8333-444455556666"
	tpath := filepath.Join(t.TempDir(), session+".jsonl")
	contexts := []string{"", "a1111111111111111", "a2222222222222222"}
	transcriptOf := func(agent string) string {
		if agent == "" {
			return tpath
		}
		return filepath.Join(strings.TrimSuffix(tpath, ".jsonl"), "subagents", "agent-"+agent+".jsonl")
	}
	const n = 9
	files := make([]string, n)
	owner := make([]string, n) // the context that reads file i
	lines := map[string]*strings.Builder{}
	for _, c := range contexts {
		lines[c] = &strings.Builder{}
	}
	for i := range files {
		files[i] = filepath.Join(dir, fmt.Sprintf("f%d.go", i))
		writeFile(t, files[i], fmt.Sprintf("package f%d\n", i))
		owner[i] = contexts[i%len(contexts)]
		// The call's tool_use line, already in the transcript when its
		// hooks run (the post-tool-use sweeps pick these up concurrently).
		side := "false"
		agentField := ""
		if owner[i] != "" {
			side, agentField = "true", `"agentId":"`+owner[i]+`",`
		}
		fmt.Fprintf(lines[owner[i]], `{"parentUuid":null,"isSidechain":%s,%s"type":"assistant","message":{"role":"assistant","content":[{"type":"tool_use","id":"toolu_read_%d","name":"Read","input":{"file_path":%q}}]},"uuid":"u-%d","timestamp":"2026-12-02T10:00:00.000Z","cwd":%q,"sessionId":%q,"version":"2.1.328"}`+"\n",
			side, agentField, i, files[i], i, dir, session)
	}
	for _, c := range contexts {
		p := transcriptOf(c)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, p, lines[c].String())
	}
	payload := func(event, tool, id, agent, file string) map[string]any {
		p := map[string]any{"session_id": session, "transcript_path": tpath, "cwd": dir, "hook_event_name": event,
			"tool_name": tool, "tool_use_id": id, "tool_input": map[string]any{"file_path": file, "old_string": "package", "new_string": "package"}}
		if agent != "" {
			p["agent_id"], p["agent_type"] = agent, "general-purpose"
		}
		return p
	}
	yes, no := true, false
	other := func(i int) string { return contexts[(i+1)%len(contexts)] }

	// Phase 1: every read at once, and guards of contexts that never read
	// the file (deny, whatever the reads do meanwhile).
	var procs []*hookProc
	for i, f := range files {
		content := fmt.Sprintf("package f%d\n", i)
		rp := payload("PostToolUse", "Read", fmt.Sprintf("toolu_read_%d", i), owner[i], f)
		rp["tool_response"] = map[string]any{"type": "text", "file": map[string]any{"filePath": f, "content": content, "numLines": 2, "startLine": 1, "totalLines": 2}}
		procs = append(procs,
			&hookProc{event: "post-tool-use", payload: rp},
			&hookProc{event: "pre-tool-use", payload: payload("PreToolUse", "Edit", fmt.Sprintf("toolu_deny1_%d", i), other(i), f), wantDeny: &yes})
	}
	runAtOnce(t, bin, dir, env, procs)

	// Phase 2: each context's edit of its own file (allow) and another's
	// (deny), while new files are written by all three contexts.
	procs = procs[:0]
	for i, f := range files {
		w := filepath.Join(dir, fmt.Sprintf("new%d.go", i))
		writeFile(t, w, "package new\n")
		wp := payload("PostToolUse", "Write", fmt.Sprintf("toolu_write_%d", i), owner[i], w)
		wp["tool_input"] = map[string]any{"file_path": w, "content": "package new\n"}
		procs = append(procs,
			&hookProc{event: "pre-tool-use", payload: payload("PreToolUse", "Edit", fmt.Sprintf("toolu_allow_%d", i), owner[i], f), wantDeny: &no},
			&hookProc{event: "pre-tool-use", payload: payload("PreToolUse", "Edit", fmt.Sprintf("toolu_deny2_%d", i), other(i), f), wantDeny: &yes},
			&hookProc{event: "post-tool-use", payload: wp})
	}
	runAtOnce(t, bin, dir, env, procs)
	if t.Failed() {
		t.FailNow()
	}

	// Nothing lost, nothing doubled.
	st, err := gitstore.OpenDir(dir, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	evs, err := st.Events(context.Background(), gitstore.Query{Session: session})
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, e := range evs {
		k := string(e.Op) + " " + e.Key
		if e.Op == "deny" {
			var id string
			json.Unmarshal(e.Extra["tool_use_id"], &id)
			k = "deny " + id
		}
		count[k]++
		if e.Op == "read" || e.Op == "write" {
			i := -1
			fmt.Sscanf(e.Key[strings.LastIndexByte(e.Key, '_')+1:], "%d", &i)
			if i < 0 || i >= n || e.Agent != owner[i] || e.Sidechain != (owner[i] != "") {
				t.Errorf("%s %s recorded in context %q, want %q", e.Op, e.Key, e.Agent, owner[i])
			}
		}
	}
	for i := range files {
		for _, k := range []string{"read toolu_read_%d", "write toolu_write_%d", "deny toolu_deny1_%d", "deny toolu_deny2_%d"} {
			if c := count[fmt.Sprintf(k, i)]; c != 1 {
				t.Errorf("%s: %d events, want 1", fmt.Sprintf(k, i), c)
			}
		}
		if c := count[fmt.Sprintf("deny toolu_allow_%d", i)]; c != 0 {
			t.Errorf("allowed edit %d recorded as denied", i)
		}
	}
	// The transcripts' tool_use lines were swept once each, as spans.
	spans := 0
	for _, e := range evs {
		if e.Op == "span" {
			spans++
		}
	}
	if spans != n {
		t.Errorf("%d spans archived from the transcripts, want %d", spans, n)
	}
	vf := exec.Command(bin, "verify")
	vf.Dir, vf.Env = dir, env
	if out, err := vf.CombinedOutput(); err != nil {
		t.Fatalf("verify: %v\n%s", err, out)
	}
	gitOut(t, dir, "fsck", "--strict")
}
