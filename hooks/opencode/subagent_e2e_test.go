package opencode_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/internal/testkit/opencodetest"
)

// TestOpencodeSubagentUserScope installs the plugin for the user
// (~/.config/opencode/plugin, as `install opencode` defaults to) and for
// the project (two copies loaded, one hooks), and runs
// a task: the child session's read is evidence of the child's context
// only (agent = the child session, writer oc-<parent>), so the parent's
// edit of that file is denied. Uninstall then removes what install wrote.
func TestOpencodeSubagentUserScope(t *testing.T) {
	if testing.Short() {
		t.Skip("drives the real opencode CLI")
	}
	oc, deps := opencodetest.EnsureOpencode(t), opencodetest.EnsurePluginDeps(t)
	bin, _ := buildWithHookProgram(t)
	ctx := context.Background()
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	gitOut(t, dir, "init", "-q")
	shared := filepath.Join(dir, "shared.txt")
	if err := os.WriteFile(shared, []byte("seen by the child only\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const sc, sub = "SCENARIO:oc-parent", "SUBTASK:oc-child"
	m := opencodetest.NewModel(t, opencodetest.Script{
		sc: {
			opencodetest.Task(sub + " read shared.txt"),
			opencodetest.Edit(shared, "child only", "parent too"),
			opencodetest.Say("DONE parent"),
		},
		sub: {opencodetest.Read(shared), opencodetest.Say("child done")},
	})
	r := opencodetest.NewRunner(t, oc, m)
	r.PluginDeps = deps
	r.Env = append(r.Env, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	env := append(os.Environ(), "HOME="+r.Home, "XDG_CONFIG_HOME="+filepath.Join(r.Home, ".config"))
	gl := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git-lossless %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	gl("install", "opencode", "--apply")
	// The project too: opencode then loads two copies of the plugin, and
	// only one may hook (one denial, not two).
	gl("install", "opencode", "--scope", "project", "--apply", "--no-mcp")
	plugin := filepath.Join(r.ConfigDir(), "plugin", "git-lossless.js")
	if _, err := os.Stat(plugin); err != nil {
		t.Fatalf("user install wrote no plugin: %v", err)
	}

	res, err := r.Run(ctx, dir, sc+" delegate")
	if err != nil {
		t.Fatalf("run: %v\n%s", err, m.Log())
	}
	if strings.Contains(res.Stderr, "git-lossless:") {
		t.Errorf("the plugin or hook complained:\n%s", grepLines(res.Stderr, "git-lossless"))
	}
	parent := res.SessionID
	var child string
	for _, tr := range m.ToolResults(sc) {
		if mm := regexp.MustCompile(`<task id="([^"]+)"`).FindStringSubmatch(tr.Text); mm != nil {
			child = mm[1]
		}
	}
	if child == "" || child == parent {
		t.Fatalf("no child session in the task result\n%s", m.Log())
	}
	st, err := gitstore.OpenDir(dir, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	evs, err := st.Events(ctx, gitstore.Query{Session: parent, Path: "shared.txt"})
	if err != nil {
		t.Fatal(err)
	}
	var read, deny bool
	denials := 0
	for _, e := range evs {
		switch {
		case e.Op == "read" && e.Source == "hook":
			read = e.Agent == child && e.Sidechain && e.Writer == "oc-"+parent && e.Key == opencodetest.CallID(sub, 0)
		case e.Op == "deny":
			deny = e.Agent == "" && e.Writer == "oc-"+parent
			denials++
		}
	}
	if !read || !deny || denials != 1 {
		t.Fatalf("shared.txt events (want the child's read and the parent's denial):\n%+v", evs)
	}
	fileIs(t, shared, "seen by the child only\n")
	for _, tr := range m.ToolResults(sc) {
		if tr.CallID == opencodetest.CallID(sc, 1) && !strings.Contains(tr.Text, "git-lossless guard") {
			t.Fatalf("parent's edit result %q, want our deny", tr.Text)
		}
	}
	// The child's session log sits beside the parent's, and its spans were
	// swept as the child's.
	logDir := filepath.Join(r.Home, ".local", "state", "git-lossless", "opencode")
	if _, err := os.Stat(filepath.Join(logDir, parent, child+".jsonl")); err != nil {
		t.Fatalf("child session log: %v", err)
	}
	// One copy of the plugin hooked: the prompt is logged once.
	if b, err := os.ReadFile(filepath.Join(logDir, parent+".jsonl")); err != nil || strings.Count(string(b), `"type":"user"`) != 1 {
		t.Fatalf("parent log (want the prompt once): %v\n%s", err, b)
	}
	spans, err := st.Events(ctx, gitstore.Query{Session: parent, Op: "span", Agent: child})
	if err != nil || len(spans) == 0 {
		t.Fatalf("child spans %d %v", len(spans), err)
	}

	out := gl("uninstall", "opencode", "--apply")
	if _, err := os.Stat(plugin); !os.IsNotExist(err) {
		t.Fatalf("plugin still there after uninstall (%v):\n%s", err, out)
	}
	// opencode writes its "$schema" into the user's opencode.json: the
	// file stays, without our server.
	if b, err := os.ReadFile(filepath.Join(r.ConfigDir(), "opencode.json")); err == nil && strings.Contains(string(b), "git-lossless") {
		t.Fatalf("opencode.json still registers our server after uninstall:\n%s\n%s", b, out)
	}
}
