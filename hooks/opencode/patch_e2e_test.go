package opencode_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/internal/testkit/opencodetest"
)

// TestOpencodeApplyPatch: for a GPT model opencode 1.18.33 offers
// apply_patch instead of edit and write. The guard reads its patch: an
// update of a file read is allowed (and the file after it archived), an
// update of a file never read is denied, adding a new file is allowed.
func TestOpencodeApplyPatch(t *testing.T) {
	if testing.Short() {
		t.Skip("drives the real opencode CLI")
	}
	oc, deps := opencodetest.EnsureOpencode(t), opencodetest.EnsurePluginDeps(t)
	bin, _ := buildWithHookProgram(t)
	ctx := context.Background()
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	gitOut(t, dir, "init", "-q")
	hello, other, added := filepath.Join(dir, "hello.txt"), filepath.Join(dir, "other.txt"), filepath.Join(dir, "added.txt")
	for p, s := range map[string]string{hello: "hello world\n", other: "other content\n"} {
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	patch := func(body string) opencodetest.Step {
		return opencodetest.Call("apply_patch", map[string]any{"patchText": "*** Begin Patch\n" + body + "*** End Patch"})
	}
	const sc = "SCENARIO:oc-patch"
	m := opencodetest.NewModel(t, opencodetest.Script{sc: {
		opencodetest.Read(hello),
		patch("*** Update File: hello.txt\n@@\n-hello world\n+hello patch\n"),
		patch("*** Update File: other.txt\n@@\n-other content\n+other EDITED\n"),
		patch("*** Add File: added.txt\n+new file\n"),
		opencodetest.Say("DONE patch"),
	}})
	r := opencodetest.NewRunner(t, oc, m)
	r.PluginDeps = deps
	// A GPT model id: opencode then offers apply_patch.
	const gpt = "gpt-5"
	cfg := r.Config()
	models := cfg["provider"].(map[string]any)[opencodetest.ProviderID].(map[string]any)["models"].(map[string]any)
	models[gpt] = models[opencodetest.ModelID]
	cfg["model"] = opencodetest.ProviderID + "/" + gpt
	cj, _ := json.Marshal(cfg)
	r.Env = append(r.Env, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "OPENCODE_CONFIG_CONTENT="+string(cj))

	inst := exec.Command(bin, "install", "opencode", "--scope", "project", "--apply", "--no-mcp")
	inst.Dir, inst.Env = dir, append(os.Environ(), "HOME="+r.Home)
	if out, err := inst.CombinedOutput(); err != nil {
		t.Fatalf("install: %v\n%s", err, out)
	}
	res, err := r.Run(ctx, dir, sc+" patch")
	if err != nil {
		t.Fatalf("run: %v\n%s", err, m.Log())
	}
	if strings.Contains(res.Stderr, "git-lossless:") {
		t.Errorf("the plugin or hook complained:\n%s", grepLines(res.Stderr, "git-lossless"))
	}
	reqs := m.Requests()
	if names := reqs[len(reqs)-1].ToolNames(); !strings.Contains(strings.Join(names, " "), "apply_patch") {
		t.Fatalf("opencode offered no apply_patch: %v", names)
	}
	results := map[string]string{}
	for _, tr := range m.ToolResults(sc) {
		results[tr.CallID] = tr.Text
	}
	fileIs(t, hello, "hello patch\n")
	fileIs(t, other, "other content\n")
	fileIs(t, added, "new file\n")
	if txt := results[opencodetest.CallID(sc, 2)]; !strings.Contains(txt, "git-lossless guard") {
		t.Fatalf("patch of a file never read: %q, want our deny", txt)
	}
	for _, txt := range []string{results[opencodetest.CallID(sc, 1)], results[opencodetest.CallID(sc, 3)]} {
		if strings.Contains(txt, "git-lossless") {
			t.Fatalf("an allowed patch was denied: %q", txt)
		}
	}
	st, err := gitstore.OpenDir(dir, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	evs, err := st.Events(ctx, gitstore.Query{Session: res.SessionID, Op: "edit"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range evs {
		got[e.Path] = e.Blob
	}
	if got["hello.txt"] != gitstore.BlobID([]byte("hello patch\n")) || got["added.txt"] != gitstore.BlobID([]byte("new file\n")) || len(got) != 2 {
		t.Fatalf("patch edits archived: %v", got)
	}
}
