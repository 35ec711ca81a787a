package codex

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/hooks"
	"github.com/git-lossless/git-lossless/hooks/settings"
	"github.com/git-lossless/git-lossless/internal/testkit/codextest"
)

// foreignConfig is a config.toml with what a user has: comments, a
// multi-line string holding a line that looks like our table, a foreign
// hook's trust, another MCP server, and no final newline.
const foreignConfig = `# my codex config
model = "gpt-5.5"
instructions = """
[mcp_servers.git-lossless]
not a table: inside a string
"""

[hooks.state."/elsewhere/hooks.json:stop:0:0"]
trusted_hash = "sha256:0000"

[mcp_servers.other]
command = "other-server"
args = ["--x"]`

func runInstall(t *testing.T, opt hooks.InstallOptions) hooks.Install {
	t.Helper()
	inst, err := New().Install(context.Background(), opt)
	if err != nil {
		t.Fatal(err)
	}
	for _, tg := range inst.Targets {
		if _, err := tg.Plan.Apply(time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	return inst
}

// TestInstallTrustRoundTrip: install writes hooks.json and, in
// config.toml, one trust table per handler of ours whose key and hash are
// what codextest computes (checked there against codex app-server), our
// MCP server; everything else in config.toml keeps its bytes; a second
// install changes nothing; uninstall restores both files byte for byte.
func TestInstallTrustRoundTrip(t *testing.T) {
	home := t.TempDir()
	home, _ = filepath.EvalSymlinks(home)
	cfg := filepath.Join(home, "config.toml")
	if err := os.WriteFile(cfg, []byte(foreignConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	getenv := func(k string) string {
		if k == "CODEX_HOME" {
			return home
		}
		return ""
	}
	bin := settings.HookBinary{Path: "/opt/bin/git-lossless", Hook: "/opt/bin/git-lossless"}
	opt := hooks.InstallOptions{Scope: "user", Dir: home, Getenv: getenv, Bin: bin}
	runInstall(t, opt)
	got, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(got), foreignConfig+"\n") {
		t.Fatalf("foreign config changed:\n%s", got)
	}
	entries, err := codextest.HookTrust(filepath.Join(home, "hooks.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(HookSpecs()) {
		t.Fatalf("%d trust entries for %d hooks", len(entries), len(HookSpecs()))
	}
	for _, e := range entries {
		if !strings.Contains(string(got), trustHeader(e.Key)+"\n"+tomlMarker+"\ntrusted_hash = \""+e.Hash+"\"\n") {
			t.Errorf("no trust table for %s %s in\n%s", e.Key, e.Hash, got)
		}
	}
	if !strings.Contains(string(got), "[mcp_servers.git-lossless]\n"+tomlMarker+"\ncommand = \"/opt/bin/git-lossless\"\nargs = [\"mcp\", \"--harness\", \"codex\"]\n") {
		t.Errorf("no MCP table in\n%s", got)
	}
	if f, _ := New().MCPTools(home, getenv); f == nil || f("read_file") != "mcp__git_lossless.read_file" {
		t.Error("MCPTools does not see the registration")
	}
	again, err := New().Install(context.Background(), opt)
	if err != nil {
		t.Fatal(err)
	}
	for _, tg := range again.Targets {
		if tg.Plan.Changed() {
			t.Errorf("second install changes %s:\n%s", tg.Plan.Path, tg.Plan.Diff())
		}
	}
	opt.Uninstall = true
	runInstall(t, opt)
	got, _ = os.ReadFile(cfg)
	if string(got) != foreignConfig+"\n" {
		t.Fatalf("after uninstall:\n%q\nwant\n%q", got, foreignConfig+"\n")
	}
	if _, err := os.Stat(filepath.Join(home, "hooks.json")); err == nil {
		b, _ := os.ReadFile(filepath.Join(home, "hooks.json"))
		if strings.Contains(string(b), "git-lossless") {
			t.Fatalf("hooks.json after uninstall: %s", b)
		}
	}
}

// TestInstallRefusesUnsureTOML: a config.toml whose hooks are set in a
// form our tables would collide with, or with another server under our
// name, is refused with nothing written.
func TestInstallRefusesUnsureTOML(t *testing.T) {
	for name, doc := range map[string]string{
		"hooks table":    "[hooks.state]\n\"x:stop:0:0\".trusted_hash = \"sha256:0\"\n",
		"dotted at root": "hooks.state.\"x\".trusted_hash = \"sha256:0\"\n",
		"foreign server": "[mcp_servers.git-lossless]\ncommand = \"npx\"\n",
		"open string":    "x = \"\"\"\nnever closed\n",
	} {
		t.Run(name, func(t *testing.T) {
			home := t.TempDir()
			cfg := filepath.Join(home, "config.toml")
			os.WriteFile(cfg, []byte(doc), 0o600)
			_, err := New().Install(context.Background(), hooks.InstallOptions{Scope: "user", Dir: home,
				Getenv: func(k string) string { return map[string]string{"CODEX_HOME": home}[k] },
				Bin:    settings.HookBinary{Path: "/opt/bin/git-lossless", Hook: "/opt/bin/git-lossless"}})
			if err == nil {
				t.Fatal("install accepted it")
			}
		})
	}
}

// TestDoctorTrust: after install the doctor's Codex checks are OK; a
// changed trust hash, or a hook command edited after install (Codex
// calls it modified and skips it), is a FAIL that says so; without
// Codex's home and hooks there is nothing to say.
func TestDoctorTrust(t *testing.T) {
	home := t.TempDir()
	getenv := func(k string) string { return map[string]string{"CODEX_HOME": home}[k] }
	dopt := hooks.DoctorOptions{Dir: home, Getenv: getenv}
	status := func() map[string]string {
		m := map[string]string{}
		for _, c := range New().DoctorChecks(context.Background(), dopt) {
			if m[c.Check] != "FAIL" {
				m[c.Check] = c.Status
			}
		}
		return m
	}
	if got := status(); len(got) != 1 || got["codex hooks"] != "WARN" {
		t.Fatalf("before install: %v", got)
	}
	if got := New().DoctorChecks(context.Background(), hooks.DoctorOptions{Dir: home, Getenv: func(k string) string {
		return map[string]string{"CODEX_HOME": filepath.Join(home, "none")}[k]
	}}); len(got) != 0 {
		t.Fatalf("no codex home: %v", got)
	}
	runInstall(t, hooks.InstallOptions{Scope: "user", Dir: home, Getenv: getenv, Bin: settings.HookBinary{Path: "/opt/bin/git-lossless", Hook: "/opt/bin/git-lossless"}})
	if got := status(); got["codex hooks"] != "OK" || got["codex hook trust"] != "OK" || got["codex mcp"] != "OK" {
		t.Fatalf("after install: %v", got)
	}
	hj := filepath.Join(home, "hooks.json")
	b, _ := os.ReadFile(hj)
	os.WriteFile(hj, []byte(strings.Replace(string(b), `"timeout": 10`, `"timeout": 11`, 1)), 0o600)
	if got := status(); got["codex hook trust"] != "FAIL" {
		t.Fatalf("after a hook changed: %v", got)
	}
}
