package settings_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/hooks/claudecode"
	"github.com/git-lossless/git-lossless/hooks/settings"
)

const mcpBin = "/opt/lossless/bin/git-lossless"

// mcpEntryOf returns mcpServers["git-lossless"] of a config, compacted
// with its key order kept (nil when absent).
func mcpEntryOf(t *testing.T, doc []byte) []byte {
	t.Helper()
	var top struct {
		Servers map[string]json.RawMessage `json:"mcpServers"`
	}
	if err := json.Unmarshal(doc, &top); err != nil {
		t.Fatalf("config %q: %v", doc, err)
	}
	raw, ok := top.Servers[settings.MCPServerName]
	if !ok {
		return nil
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func mcpJSONEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		t.Fatalf("%q: %v", a, err)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		t.Fatalf("%q: %v", b, err)
	}
	return reflect.DeepEqual(va, vb)
}

func mcpWrite(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mcpRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestMCPMergeKeepsEverythingElse: our entry is spliced in, every other
// byte kept; install twice changes nothing the second time; uninstall
// gives the file back byte for byte.
func TestMCPMergeKeepsEverythingElse(t *testing.T) {
	for name, in := range map[string]string{
		"no file":         "",
		"empty object":    "{}\n",
		"claude.json":     "{\n  \"numStartups\": 3,\n  \"projects\": {\n    \"/p\": {\n      \"mcpServers\": {}\n    }\n  },\n  \"userID\": \"abc\"\n}",
		"other servers":   "{\n  \"mcpServers\": {\n    \"db\": {\n      \"type\": \"stdio\",\n      \"command\": \"db-mcp\",\n      \"args\": [],\n      \"env\": {\"DB\": \"x\"}\n    }\n  },\n  \"x\": [1, 2]\n}\n",
		"tabs":            "{\n\t\"zzz\": 1,\n\t\"mcpServers\": {\"foo\": {\"command\": \"x\"}}\n}",
		"crlf":            "{\r\n  \"a\": true\r\n}\r\n",
		"one line":        `{"a":1,"mcpServers":{"b":{"command":"c"}}}`,
		"unicode escapes": "{\n  \"name\": \"caf\\u00e9 <&>\"\n}\n",
	} {
		t.Run(name, func(t *testing.T) {
			out, ch, err := settings.MergeMCPServer("f.json", []byte(in), claudecode.MCPServerEntry(mcpBin))
			if err != nil {
				t.Fatal(err)
			}
			if len(ch) != 1 || ch[0].Action != "added" || ch[0].Event != "mcpServers.git-lossless" || ch[0].Command != mcpBin+" mcp" {
				t.Errorf("changes %+v", ch)
			}
			want := `{"type":"stdio","command":"` + mcpBin + `","args":["mcp"],"env":{}}`
			if got := mcpEntryOf(t, out); string(got) != want {
				t.Errorf("entry %s, want %s", got, want)
			}
			if in != "" {
				var before, after map[string]any
				json.Unmarshal([]byte(in), &before)
				json.Unmarshal(out, &after)
				if servers, ok := after["mcpServers"].(map[string]any); ok {
					delete(servers, settings.MCPServerName)
					if len(servers) == 0 && before["mcpServers"] == nil {
						delete(after, "mcpServers")
					}
				}
				if !reflect.DeepEqual(before, after) {
					t.Errorf("other content changed:\n%s\n=>\n%s", in, out)
				}
				if strings.Contains(in, "\r\n") && bytes.Count(out, []byte("\n")) != bytes.Count(out, []byte("\r\n")) {
					t.Errorf("line endings mixed:\n%q", out)
				}
			}
			again, ch, err := settings.MergeMCPServer("f.json", out, claudecode.MCPServerEntry(mcpBin))
			if err != nil || !bytes.Equal(again, out) || len(ch) != 1 || ch[0].Action != "unchanged" {
				t.Errorf("second merge: %v %+v\n%s", err, ch, again)
			}
			back, ch, err := settings.RemoveMCPServer("f.json", out, "")
			if err != nil || len(ch) != 1 || ch[0].Action != "removed" || ch[0].Command != mcpBin+" mcp" {
				t.Fatalf("remove: %v %+v", err, ch)
			}
			if in != "" && string(back) != in {
				t.Errorf("install then uninstall:\n%q\nwant\n%q", back, in)
			}
			if none, ch, err := settings.RemoveMCPServer("f.json", back, ""); err != nil || len(ch) != 0 || !bytes.Equal(none, back) {
				t.Errorf("remove with nothing of ours: %v %+v", err, ch)
			}
		})
	}
}

func TestMCPMergeReplacesOursRefusesOthers(t *testing.T) {
	old := "{\n  \"mcpServers\": {\n    \"git-lossless\": {\n      \"command\": \"/old/bin/git-lossless\",\n      \"args\": [\"mcp\", \"--no-mask\"]\n    },\n    \"z\": {\"command\": \"z\"}\n  }\n}\n"
	out, ch, err := settings.MergeMCPServer("f.json", []byte(old), claudecode.MCPServerEntry(mcpBin))
	if err != nil || len(ch) != 1 || ch[0].Action != "replaced" {
		t.Fatalf("replace: %v %+v", err, ch)
	}
	if !strings.Contains(string(out), "    \"git-lossless\": {\n      \"type\": \"stdio\",\n      \"command\": \""+mcpBin+"\",\n      \"args\": [\n        \"mcp\"\n      ],\n      \"env\": {}\n    },\n    \"z\"") {
		t.Errorf("replaced in place, indented like the file:\n%s", out)
	}
	// `git lossless mcp` and a .exe are ours too.
	for _, e := range []string{`{"command":"git","args":["lossless","mcp"]}`, `{"command":"C:\\bin\\git-lossless.exe","args":["mcp"]}`} {
		if !settings.IsOurMCPServer(json.RawMessage(e), "") {
			t.Errorf("%s not recognised", e)
		}
	}
	foreign := `{"mcpServers": {"git-lossless": {"type": "http", "url": "https://example.invalid/mcp"}, "other": {"command": "git-lossless", "args": ["mcp"]}}}`
	if _, _, err := settings.MergeMCPServer("f.json", []byte(foreign), claudecode.MCPServerEntry(mcpBin)); err == nil || !strings.Contains(err.Error(), "not git-lossless's server") {
		t.Errorf("foreign entry: %v", err)
	}
	if out, ch, err := settings.RemoveMCPServer("f.json", []byte(foreign), mcpBin); err != nil || len(ch) != 0 || string(out) != foreign {
		t.Errorf("uninstall touched a foreign entry: %v %+v %s", err, ch, out)
	}
	for in, msg := range map[string]string{
		"{\n  \"mcpServers\": {,\n}":           "f.json:2:18: invalid JSON",
		`[]`:                                   "the MCP config is an array, expected an object",
		`{"mcpServers": []}`:                   `"mcpServers" is an array`,
		`{"mcpServers": {}, "mcpServers": {}}`: `duplicate key "mcpServers"`,
		`{"mcpServers": {"git-lossless": {}, "git-lossless": {}}}`: "duplicate key mcpServers.git-lossless",
	} {
		merge := func(path string, doc []byte, bin string) ([]byte, []settings.Change, error) {
			return settings.MergeMCPServer(path, doc, claudecode.MCPServerEntry(bin))
		}
		for _, f := range []func(string, []byte, string) ([]byte, []settings.Change, error){merge, settings.RemoveMCPServer} {
			_, _, err := f("f.json", []byte(in), mcpBin)
			var se *settings.Error
			if !errors.As(err, &se) || !strings.Contains(err.Error(), msg) {
				t.Errorf("%s: %v, want a Error with %q", in, err, msg)
			}
		}
	}
}

// TestMCPPlanApply: backup, 0600, atomic replace; a file install created
// and uninstall emptied is removed; a malformed file is left alone.
func TestMCPPlanApply(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "proj", ".mcp.json")
	p, err := settings.PlanMCPInstall(path, claudecode.MCPServerEntry(mcpBin))
	if err != nil || p.Exists || !p.Changed() || !strings.HasPrefix(p.Diff(), "--- /dev/null\n+++ "+path+" (new)\n") {
		t.Fatalf("plan: %v %+v\n%s", err, p, p.Diff())
	}
	if b, err := p.Apply(time.Now()); err != nil || b != "" {
		t.Fatalf("apply: %q %v", b, err)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", st.Mode().Perm())
	}
	u, err := settings.PlanMCPUninstall(path, "")
	if err != nil || !u.RemoveFile || !strings.Contains(u.Diff(), "+++ /dev/null\n") {
		t.Fatalf("uninstall plan: %v %+v\n%s", err, u, u.Diff())
	}
	backup, err := u.Apply(time.Now())
	if err != nil || backup == "" {
		t.Fatal(backup, err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("emptied .mcp.json not removed: %v", err)
	}
	if !mcpJSONEqual(t, mcpRead(t, backup), []byte(`{"mcpServers":{"git-lossless":{"type":"stdio","command":"`+mcpBin+`","args":["mcp"],"env":{}}}}`)) {
		t.Errorf("backup %s", mcpRead(t, backup))
	}
	// A file with other content keeps it; its backup holds the old bytes.
	mcpWrite(t, path, `{"keep": 1}`)
	p, _ = settings.PlanMCPInstall(path, claudecode.MCPServerEntry(mcpBin))
	if backup, err = p.Apply(time.Now()); err != nil || string(mcpRead(t, backup)) != `{"keep": 1}` {
		t.Fatalf("backup %q %v", backup, err)
	}
	u, _ = settings.PlanMCPUninstall(path, "")
	if u.RemoveFile {
		t.Error("a file with other content would be removed")
	}
	if _, err := u.Apply(time.Now()); err != nil || string(mcpRead(t, path)) != `{"keep": 1}` {
		t.Errorf("uninstall left %s (%v)", mcpRead(t, path), err)
	}
	// Malformed: refused, untouched.
	mcpWrite(t, path, `{bad`)
	if _, err := settings.PlanMCPInstall(path, claudecode.MCPServerEntry(mcpBin)); err == nil {
		t.Error("malformed config accepted")
	}
	if string(mcpRead(t, path)) != `{bad` {
		t.Error("malformed config changed")
	}
}

// TestMCPEntryOtherKey: a harness that keeps its servers under another
// key (opencode's "mcp") and in another shape gets the same splice: added
// beside the others with every other byte kept, unchanged when there,
// someone else's entry under our name refused, removed on uninstall.
func TestMCPEntryOtherKey(t *testing.T) {
	entry := json.RawMessage(`{"type":"local","command":["/bin/git-lossless","mcp"],"enabled":true}`)
	ours := func(e json.RawMessage) bool { return strings.Contains(string(e), `"/bin/git-lossless"`) }
	doc := []byte("{\n  \"theme\": \"dark\", // not JSON\n}\n")
	if _, _, err := settings.MergeMCPEntry("opencode.json", doc, "mcp", "/bin/git-lossless", entry, ours); err == nil {
		t.Fatal("a file that is not JSON was changed")
	}
	doc = []byte("{\n  \"theme\": \"dark\",\n  \"mcp\": {\n    \"other\": {\"type\": \"remote\", \"url\": \"https://x\"}\n  }\n}\n")
	out, ch, err := settings.MergeMCPEntry("opencode.json", doc, "mcp", "/bin/git-lossless", entry, ours)
	if err != nil || len(ch) != 1 || ch[0].Action != "added" || ch[0].Event != "mcp."+settings.MCPServerName {
		t.Fatalf("merge: %v %+v", err, ch)
	}
	if !strings.HasPrefix(string(out), "{\n  \"theme\": \"dark\",\n  \"mcp\": {\n    \"other\": {\"type\": \"remote\", \"url\": \"https://x\"},") {
		t.Fatalf("other bytes changed:\n%s", out)
	}
	var v struct {
		MCP map[string]json.RawMessage `json:"mcp"`
	}
	if err := json.Unmarshal(out, &v); err != nil || !compactEqual(v.MCP[settings.MCPServerName], entry) || len(v.MCP) != 2 {
		t.Fatalf("merged:\n%s (%v)", out, err)
	}
	again, ch, err := settings.MergeMCPEntry("opencode.json", out, "mcp", "/bin/git-lossless", entry, ours)
	if err != nil || string(again) != string(out) || ch[0].Action != "unchanged" {
		t.Fatalf("second merge: %v %+v", err, ch)
	}
	theirs := []byte(`{"mcp": {"git-lossless": {"type": "local", "command": ["/usr/bin/other"]}}}`)
	if _, _, err := settings.MergeMCPEntry("opencode.json", theirs, "mcp", "/bin/git-lossless", entry, ours); err == nil {
		t.Fatal("someone else's entry under our name was replaced")
	}
	back, ch, err := settings.RemoveMCPEntry("opencode.json", out, "mcp", ours)
	if err != nil || len(ch) != 1 || string(back) != string(doc) {
		t.Fatalf("remove: %v %+v\n%s", err, ch, back)
	}
}

func compactEqual(a, b []byte) bool {
	var x, y bytes.Buffer
	return json.Compact(&x, a) == nil && json.Compact(&y, b) == nil && bytes.Equal(x.Bytes(), y.Bytes())
}
