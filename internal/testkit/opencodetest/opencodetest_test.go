package opencodetest_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/internal/testkit/hooklog"
	"github.com/git-lossless/git-lossless/internal/testkit/opencodetest"
)

const denyReason = "OPENCODETEST-DENY: other.txt was never read"

// newRepo makes a git repository holding hello.txt and other.txt.
func newRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("git", "init", "-q")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	for name, body := range map[string]string{"hello.txt": "hello world\n", "other.txt": "other content\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func fileIs(t *testing.T, path, want string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != want {
		t.Errorf("%s = %q, want %q", filepath.Base(path), b, want)
	}
}

// setup installs opencode and the plugin SDK and makes a repository.
func setup(t *testing.T) (bin, deps, dir string) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the real opencode CLI")
	}
	t.Parallel()
	return opencodetest.EnsureOpencode(t), opencodetest.EnsurePluginDeps(t), newRepo(t)
}

func run(t *testing.T, r *opencodetest.Runner, dir, prompt string) opencodetest.Result {
	t.Helper()
	res, err := r.Run(context.Background(), dir, prompt)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, e := range res.Events {
		types = append(types, e.Type())
	}
	t.Logf("opencode run %q: %s, session %s, text %q, events %v", prompt, res.Duration.Round(time.Millisecond), res.SessionID, res.Text, types)
	return res
}

func TestReadEditDeny(t *testing.T) {
	const sc = "SCENARIO:opencode-read-edit-deny"
	bin, deps, dir := setup(t)
	hello, other := filepath.Join(dir, "hello.txt"), filepath.Join(dir, "other.txt")
	logDir := filepath.Join(t.TempDir(), "payloads")
	opencodetest.WritePlugin(t, dir, opencodetest.Plugin{LogDir: logDir,
		DenyTools: []string{"edit", "write"}, DenyContains: "other.txt", DenyReason: denyReason})
	m := opencodetest.NewModel(t, opencodetest.Script{sc: {
		opencodetest.Read(hello),
		opencodetest.Edit(hello, "hello world", "hello opencode"),
		opencodetest.Edit(other, "other content", "other EDITED"),
		opencodetest.Say("DONE read-edit-deny"),
	}})
	r := opencodetest.NewRunner(t, bin, m)
	r.PluginDeps = deps

	res := run(t, r, dir, sc+" read hello.txt, change it, then change other.txt")
	if !strings.Contains(res.Text, "DONE read-edit-deny") {
		t.Errorf("text %q", res.Text)
	}
	fileIs(t, hello, "hello opencode\n")
	fileIs(t, other, "other content\n")
	trs := m.ToolResults(sc)
	if len(trs) != 3 {
		t.Fatalf("tool results %+v", trs)
	}
	if !strings.Contains(trs[0].Text, "1: hello world") || trs[1].Text != "Edit applied successfully." {
		t.Errorf("tool results %+v", trs[:2])
	}
	if trs[2].Text != denyReason {
		t.Errorf("denied edit result %q, want the plugin's message", trs[2].Text)
	}
	ps := hooklog.ReadDir(t, logDir)
	before := hooklog.Filter(ps, "tool.execute.before", nil)
	after := hooklog.Filter(ps, "tool.execute.after", nil)
	if len(before) != 3 || len(after) != 2 {
		t.Errorf("%d tool.execute.before, %d tool.execute.after; want 3, 2", len(before), len(after))
	}
	for i, p := range before {
		in, _ := p["input"].(map[string]any)
		if in["sessionID"] != res.SessionID || in["callID"] != opencodetest.CallID(sc, i) {
			t.Errorf("tool.execute.before %d input %v", i, in)
		}
	}
	if len(hooklog.Filter(ps, "event:session.idle", nil)) != 1 {
		t.Errorf("no session.idle event")
	}
	k := m.Kinds()
	if k["scenario"] != 4 || k["unmatched"]+k["capped"]+k["other"] != 0 {
		t.Errorf("requests by kind %v\n%s", k, m.Log())
	}
	// The plugin SDK was not installed at run time: node_modules is still
	// the kit's symlink into the cache.
	if fi, err := os.Lstat(filepath.Join(dir, ".opencode", "node_modules")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf(".opencode/node_modules is no longer the seeded symlink: %v %v", fi, err)
	}

	// The session as `opencode export` prints it: the denied edit is a
	// tool part with status error and the plugin's message.
	out, err := r.Export(context.Background(), dir, res.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	var export struct {
		Info     struct{ ID string }
		Messages []struct {
			Parts []struct {
				Type   string
				Tool   string
				CallID string
				State  struct{ Status, Error string }
			}
		}
	}
	if err := json.Unmarshal(out, &export); err != nil {
		t.Fatal(err)
	}
	var states []string
	for _, msg := range export.Messages {
		for _, p := range msg.Parts {
			if p.Type == "tool" {
				states = append(states, p.Tool+":"+p.State.Status+":"+p.State.Error)
			}
		}
	}
	if export.Info.ID != res.SessionID || strings.Join(states, " | ") != "read:completed: | edit:completed: | edit:error:"+denyReason {
		t.Errorf("export of %s: session %s, tool parts %q", res.SessionID, export.Info.ID, states)
	}
}

// TestCompact drives an auto compaction: a model limit of 8000 context
// and 1000 output, and 9000 prompt tokens reported once. The plugin's
// experimental.session.compacting context lands in the summarisation
// request; session.compacted fires; a system transform keyed on it puts
// the plugin's context into every later request of the session.
func TestCompact(t *testing.T) {
	const sc = "SCENARIO:opencode-compact"
	const compacting, restored = "OPENCODETEST-COMPACTING-CONTEXT", "OPENCODETEST-RESTORED working set: hello.txt"
	bin, deps, dir := setup(t)
	hello := filepath.Join(dir, "hello.txt")
	logDir := filepath.Join(t.TempDir(), "payloads")
	opencodetest.WritePlugin(t, dir, opencodetest.Plugin{LogDir: logDir, CompactingContext: compacting, SystemAfterCompact: restored})
	m := opencodetest.NewModel(t, opencodetest.Script{sc: {
		opencodetest.Read(hello),
		opencodetest.Edit(hello, "hello world", "hello again"),
		opencodetest.Say("DONE compact"),
	}})
	m.SetPromptTokens(func(q opencodetest.Request) int {
		// The answer calling read: opencode runs it, then finds the step
		// over the limit and compacts before the edit.
		if q.HasTools() && len(q.ToolResults()) == 0 && !strings.Contains(q.Text(), opencodetest.DefaultSummary) {
			return 9000
		}
		return 100
	})
	r := opencodetest.NewRunner(t, bin, m)
	r.PluginDeps = deps
	r.Context, r.Output = 8000, 1000

	res := run(t, r, dir, sc+" read and change hello.txt")
	if !strings.Contains(res.Text, "DONE compact") {
		t.Errorf("text %q", res.Text)
	}
	fileIs(t, hello, "hello again\n")
	reqs := m.Requests()
	compactAt := -1
	for i, q := range reqs {
		if q.Kind == "compact" {
			if compactAt >= 0 {
				t.Fatalf("two compaction requests\n%s", m.Log())
			}
			compactAt = i
		}
	}
	if compactAt < 0 {
		t.Fatalf("no compaction request\n%s", m.Log())
	}
	if !strings.Contains(reqs[compactAt].Text(), compacting) {
		t.Errorf("the compaction request lacks the compacting context")
	}
	for i, q := range reqs {
		if q.Kind != "scenario" {
			continue
		}
		if has := strings.Contains(q.System(), restored); has != (i > compactAt) {
			t.Errorf("request #%d (step %d) holds the restored context in its system prompt: %v", q.Seq, q.Step, has)
		}
		if i > compactAt && strings.Contains(q.Text(), sc+" read and change") {
			t.Errorf("request #%d after compaction still holds the prompt", q.Seq)
		}
	}
	ps := hooklog.ReadDir(t, logDir)
	got := strings.Join(hooklog.Events(hooklog.Filter(ps, "", func(p hooklog.Payload) bool {
		switch p.Event() {
		case "tool.execute.before", "experimental.session.compacting", "experimental.compaction.autocontinue", "event:session.compacted", "event:session.idle":
			return true
		}
		return false
	}), nil), " ")
	want := "tool.execute.before experimental.session.compacting experimental.compaction.autocontinue event:session.compacted tool.execute.before event:session.idle"
	if got != want {
		t.Errorf("hooks\n got %s\nwant %s", got, want)
	}
	// The continuation: the summary as an assistant message between two
	// user messages opencode writes; the script goes on at the edit.
	after := reqs[compactAt+1]
	msgs := after.Messages("user", "assistant")
	if after.Kind != "scenario" || after.Step != 1 || len(msgs) < 3 || msgs[0] != "What did we do so far?" ||
		!strings.HasPrefix(msgs[1], opencodetest.DefaultSummary) || !strings.HasPrefix(msgs[2], "Continue if you have next steps") {
		t.Errorf("continuation request #%d kind %s step %d messages %q", after.Seq, after.Kind, after.Step, msgs)
	}
}

// TestSubagent runs a task subagent: it gets a child session (parentID
// the parent's), its tool hooks carry the child's sessionID, and the
// parent's task result names the child.
func TestSubagent(t *testing.T) {
	const sc, sub = "SCENARIO:opencode-subagent", "SUBTASK:opencode-child"
	bin, deps, dir := setup(t)
	hello := filepath.Join(dir, "hello.txt")
	logDir := filepath.Join(t.TempDir(), "payloads")
	opencodetest.WritePlugin(t, dir, opencodetest.Plugin{LogDir: logDir})
	m := opencodetest.NewModel(t, opencodetest.Script{
		sc:  {opencodetest.Task(sub + " read hello.txt"), opencodetest.Say("DONE parent")},
		sub: {opencodetest.Read(hello), opencodetest.Say("child done")},
	})
	r := opencodetest.NewRunner(t, bin, m)
	r.PluginDeps = deps

	res := run(t, r, dir, sc+" delegate")
	if !strings.Contains(res.Text, "DONE parent") {
		t.Errorf("text %q", res.Text)
	}
	ps := hooklog.ReadDir(t, logDir)
	var child string
	for _, p := range hooklog.Filter(ps, "event:session.created", nil) {
		in, _ := p["input"].(map[string]any)
		ev, _ := in["event"].(map[string]any)
		props, _ := ev["properties"].(map[string]any)
		info, _ := props["info"].(map[string]any)
		if info["parentID"] == res.SessionID {
			child, _ = info["id"].(string)
		}
	}
	if child == "" || child == res.SessionID {
		t.Fatalf("no child session created under %s", res.SessionID)
	}
	reads := hooklog.Filter(ps, "tool.execute.after", func(p hooklog.Payload) bool {
		in, _ := p["input"].(map[string]any)
		return in["callID"] == opencodetest.CallID(sub, 0)
	})
	if len(reads) != 1 {
		t.Fatalf("%d tool.execute.after for the child's read", len(reads))
	}
	if in, _ := reads[0]["input"].(map[string]any); in["sessionID"] != child {
		t.Errorf("child's read hook sessionID %v, want %s", in["sessionID"], child)
	}
	trs := m.ToolResults(sc)
	if len(trs) != 1 || !strings.Contains(trs[0].Text, `<task id="`+child+`"`) || !strings.Contains(trs[0].Text, "child done") {
		t.Errorf("task result %+v", trs)
	}
}
