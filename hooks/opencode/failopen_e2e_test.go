package opencode_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-lossless/git-lossless/internal/testkit/opencodetest"
)

// TestOpencodeFailOpen: with the hook program gone, opencode carries on
// (the edit the guard would deny goes ahead) and the plugin says so on
// stderr: our failure never blocks the agent.
func TestOpencodeFailOpen(t *testing.T) {
	if testing.Short() {
		t.Skip("drives the real opencode CLI")
	}
	oc, deps := opencodetest.EnsureOpencode(t), opencodetest.EnsurePluginDeps(t)
	bin, hook := buildWithHookProgram(t)
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	gitOut(t, dir, "init", "-q")
	other := filepath.Join(dir, "other.txt")
	if err := os.WriteFile(other, []byte("other content\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const sc = "SCENARIO:oc-failopen"
	m := opencodetest.NewModel(t, opencodetest.Script{sc: {
		opencodetest.Edit(other, "other content", "other EDITED"),
		opencodetest.Say("DONE failopen"),
	}})
	r := opencodetest.NewRunner(t, oc, m)
	r.PluginDeps = deps
	inst := exec.Command(bin, "install", "opencode", "--scope", "project", "--apply", "--no-mcp")
	inst.Dir, inst.Env = dir, append(os.Environ(), "HOME="+r.Home)
	if out, err := inst.CombinedOutput(); err != nil {
		t.Fatalf("install: %v\n%s", err, out)
	}
	if err := os.Remove(hook); err != nil {
		t.Fatal(err)
	}
	res, err := r.Run(context.Background(), dir, sc+" edit")
	if err != nil {
		t.Fatalf("run: %v\n%s", err, m.Log())
	}
	if !strings.Contains(res.Text, "DONE failopen") {
		t.Fatalf("text %q\n%s", res.Text, m.Log())
	}
	fileIs(t, other, "other EDITED\n")
	if lines := grepLines(res.Stderr, "git-lossless: opencode plugin: pre-tool-use"); !strings.Contains(lines, "(ignored)") {
		t.Fatalf("no stderr line for the missing hook program:\n%s", grepLines(res.Stderr, "git-lossless"))
	}
}
