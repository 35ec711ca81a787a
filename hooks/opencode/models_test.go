package opencode

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/hooks"
)

func ocRepo(t *testing.T) (string, *gitstore.Store) {
	t.Helper()
	repo, _ := filepath.EvalSymlinks(t.TempDir())
	if out, err := exec.Command("git", "-C", repo, "init", "-q").CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	st, err := gitstore.OpenDir(repo, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return repo, st
}

// TestModelsExport imports the sample `opencode export` of a real
// 1.18.33 run, whose assistant messages name providerID "mock" and
// modelID "mock-model": the tool calls and the assistant's text carry
// "mock/mock-model" (as the plugin's log writes it), and hooks.Models
// finds it for the edit's call and for a time after the first call,
// nothing before it or for an unknown context.
func TestModelsExport(t *testing.T) {
	const (
		model   = "mock/mock-model"
		session = "ses_db96a9c01ffeiCN1a7cT0GTKVI"
	)
	sample, err := os.ReadFile("/work/shared/samples/opencode-1.18.33/run1-read-edit-deny/session_export.json")
	if err != nil {
		t.Skipf("sample: %v", err)
	}
	repo, st := ocRepo(t)
	ex := filepath.Join(t.TempDir(), "ses.json")
	write(t, ex, strings.ReplaceAll(string(sample), "/home/dev/project", repo))
	ctx := context.Background()
	if _, err := hooks.Import(ctx, New(), []string{ex}, hooks.ImportOptions{Workers: 1}); err != nil {
		t.Fatal(err)
	}
	idx, err := hooks.Models(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	w := Prefix + session
	ms := func(n int64) time.Time { return time.UnixMilli(n) }
	cases := []struct {
		name                string
		writer, agent, call string
		ts                  time.Time
		want                string
	}{
		{"edit call_3", w, "", "call_3", time.Time{}, model},
		{"denied edit call_4", w, "", "call_4", time.Time{}, model},
		{"after the read", w, "", "", ms(1796480530400), model},
		{"before the first call", w, "", "", ms(1796480529000), ""},
		{"unknown call", w, "", "call_9", time.Time{}, ""},
		{"unknown agent", w, "ses_child", "", ms(1796480530400), ""},
		{"unknown writer", Prefix + "ses_nobody", "", "call_3", ms(1796480530400), ""},
	}
	for _, c := range cases {
		if got := idx.At(c.writer, session, c.agent, c.ts, c.call); got != c.want {
			t.Errorf("%s: At = %q, want %q", c.name, got, c.want)
		}
	}
	evs, err := st.Events(ctx, gitstore.Query{Session: session})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range evs {
		var kind string
		_ = json.Unmarshal(e.Extra["kind"], &kind)
		_, has := e.Extra["model"]
		if want := kind == "assistant" || kind == "tool_use"; has != want {
			t.Errorf("%s span %s: model %s", kind, e.Key, e.Extra["model"])
		}
		if has {
			n++
		}
	}
	if n != 4 { // three calls, one text
		t.Errorf("%d spans with a model", n)
	}
}

// TestPluginLogsModel runs the plugin under node with the events opencode
// sends: an assistant message's model (message.updated), then its tool
// call and its text. The session log's tool and assistant lines name the
// model (the user's does not), so does the post-tool-use payload; swept,
// hooks.Models finds it for the call.
func TestPluginLogsModel(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no node")
	}
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	payload := filepath.Join(dir, "payload.json")
	hook := filepath.Join(dir, "hook.sh")
	write(t, hook, "#!/bin/sh\ncat > "+payload+"\necho '{}'\n")
	if err := os.Chmod(hook, 0o700); err != nil {
		t.Fatal(err)
	}
	plugin := filepath.Join(dir, "plugin.mjs")
	if err := os.WriteFile(plugin, PluginSource(hook), 0o600); err != nil {
		t.Fatal(err)
	}
	repo, st := ocRepo(t)
	driver := filepath.Join(dir, "driver.mjs")
	write(t, driver, `import { GitLossless } from `+jsQ("file://"+plugin)+`
const h = await GitLossless({ directory: `+jsQ(repo)+`, worktree: `+jsQ(repo)+` })
const ev = (type, properties) => h.event({ event: { type, properties } })
await h["chat.message"]({ sessionID: "ses_1" }, { message: { id: "msg_u", role: "user", sessionID: "ses_1" }, parts: [{ id: "prt_u", type: "text", text: "edit it" }] })
await ev("message.updated", { info: { id: "msg_u", role: "user", sessionID: "ses_1", model: { providerID: "anthropic", modelID: "claude-x" } } })
await ev("message.updated", { info: { id: "msg_1", role: "assistant", sessionID: "ses_1", providerID: "anthropic", modelID: "claude-x", time: { created: 1 } } })
await h["tool.execute.after"]({ tool: "edit", sessionID: "ses_1", callID: "call_1", args: { filePath: `+jsQ(filepath.Join(repo, "a.txt"))+`, oldString: "a", newString: "b" } }, { output: "Edit applied successfully." })
await ev("message.part.updated", { part: { id: "prt_1", type: "text", messageID: "msg_1", sessionID: "ses_1", text: "done", time: { end: 2 } } })
`)
	write(t, filepath.Join(repo, "a.txt"), "b\n")
	cmd := exec.Command(node, driver)
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+state)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	logFile := filepath.Join(state, "git-lossless", "opencode", "ses_1.jsonl")
	b, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var ll LogLine
		if err := json.Unmarshal([]byte(l), &ll); err != nil {
			t.Fatalf("log line %s: %v", l, err)
		}
		got = append(got, ll.Type+"="+ll.Model)
	}
	if s := strings.Join(got, " "); s != "user= tool=anthropic/claude-x assistant=anthropic/claude-x" {
		t.Fatalf("log lines %s\n%s", s, b)
	}
	var p Payload
	pb, err := os.ReadFile(payload)
	if err != nil || json.Unmarshal(pb, &p) != nil || p.Model != "anthropic/claude-x" || p.CallID != "call_1" {
		t.Fatalf("post-tool-use payload %+v (%v)", p, err)
	}
	// The hook, given that payload, records the edit with its model.
	var out, errb bytes.Buffer
	if code := hooks.Run(context.Background(), New(), "post-tool-use", hooks.Env{Stdin: bytes.NewReader(pb), Stdout: &out, Stderr: &errb,
		Getenv: func(string) string { return "" }}); code != 0 || errb.Len() > 0 {
		t.Fatalf("post-tool-use: exit %d, stderr %s", code, errb.String())
	}
	edits := 0
	for _, e := range swEventsOf(t, st) {
		if e.Op == "edit" && e.Key == "call_1" {
			edits++
			if string(e.Extra["model"]) != `"anthropic/claude-x"` {
				t.Errorf("edit: model %s", e.Extra["model"])
			}
		}
	}
	if edits != 1 {
		t.Fatalf("%d edits recorded", edits)
	}
	ctx := context.Background()
	if _, err := hooks.SweepTranscript(ctx, st, New(), logFile, hooks.SweepOptions{}); err != nil {
		t.Fatal(err)
	}
	idx, err := hooks.Models(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := idx.At(Prefix+"ses_1", "ses_1", "", time.Time{}, "call_1"); got != "anthropic/claude-x" {
		t.Errorf("At(call_1) = %q", got)
	}
}

func swEventsOf(t *testing.T, st *gitstore.Store) []gitstore.Event {
	t.Helper()
	evs, err := st.Events(context.Background(), gitstore.Query{})
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func jsQ(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
