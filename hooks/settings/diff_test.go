package settings_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/hooks/claudecode"
	"github.com/git-lossless/git-lossless/hooks/settings"
	"github.com/git-lossless/git-lossless/internal/testkit"
)

// TestDiffAppliesWithGitApply: the dry run's diff is a patch real tools
// accept. For installs and uninstalls of hooks and of the MCP server, over
// files of every layout (CRLF, one line, no final newline, a file to
// create, a file to remove), the diff of each plan goes through `git apply
// --check` against a copy of the file as it was, then `git apply`, which
// must leave the copy byte for byte as the plan would write it; and
// through `patch --dry-run` where patch is installed.
func TestDiffAppliesWithGitApply(t *testing.T) {
	git := testkit.NeedTool(t, "git")
	patch, _ := exec.LookPath("patch")
	const bin = "/opt/lossless/bin/git-lossless"
	foreign := "{\n  \"permissions\": {\"allow\": [\"Bash(ls:*)\"]},\n  \"hooks\": {\n    \"Stop\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"say done\"}]}]\n  },\n  \"zzz\": [true, null]\n}\n"
	ours := func(t *testing.T, path, body string) string {
		t.Helper()
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		p, err := planInstall(path, bin)
		if err != nil {
			t.Fatal(err)
		}
		return string(p.After)
	}
	type plan func(path, bin string) (*settings.Plan, error)
	mcpInstall := func(path, bin string) (*settings.Plan, error) {
		return settings.PlanMCPInstall(path, claudecode.MCPServerEntry(bin))
	}
	cases := []struct {
		name, file, body string
		installed        bool // body is first replaced by body with our hooks
		plan             plan
	}{
		{"install into foreign", "settings.json", foreign, false, planInstall},
		{"install crlf", "settings.json", strings.ReplaceAll(foreign, "\n", "\r\n"), false, planInstall},
		{"install one line", "settings.json", `{"model": "opus", "hooks": {}}`, false, planInstall},
		{"install no final newline", "settings.json", strings.TrimSuffix(foreign, "\n"), false, planInstall},
		{"install creates the file", "settings.json", "", false, planInstall},
		{"uninstall leaves foreign", "settings.json", foreign, true, settings.PlanUninstall},
		{"uninstall crlf", "settings.json", strings.ReplaceAll(foreign, "\n", "\r\n"), true, settings.PlanUninstall},
		{"mcp install into claude.json", ".claude.json", "{\n  \"numStartups\": 3,\n  \"userID\": \"abc\"\n}\n", false, mcpInstall},
		{"mcp install creates .mcp.json", ".mcp.json", "", false, mcpInstall},
		{"mcp uninstall removes .mcp.json", ".mcp.json", `{"mcpServers": {"git-lossless": {"type": "stdio", "command": "` + bin + `", "args": ["mcp"], "env": {}}}}` + "\n", false, settings.PlanMCPUninstall},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, c.file)
			body := c.body
			if c.installed {
				body = ours(t, path, body)
			}
			if body != "" {
				if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			p, err := c.plan(path, bin)
			if err != nil {
				t.Fatal(err)
			}
			if !p.Changed() {
				t.Fatal("the plan changes nothing")
			}
			diff := p.Diff()
			// The labels name the file for a person ("PATH (current)",
			// "PATH (new)"); git apply reads a label as a path, so it gets
			// the same hunks under a/NAME and b/NAME.
			lines := strings.SplitAfterN(diff, "\n", 3)
			if len(lines) < 3 {
				t.Fatalf("diff:\n%s", diff)
			}
			from, to := "--- "+p.Path+" (current)\n", "+++ "+p.Path+" (new)\n"
			if !p.Exists {
				from = "--- /dev/null\n"
			}
			if p.RemoveFile {
				to = "+++ /dev/null\n"
			}
			if lines[0] != from || lines[1] != to {
				t.Fatalf("header %q %q, want %q %q", lines[0], lines[1], from, to)
			}
			if p.Exists {
				lines[0] = "--- a/" + c.file + "\n"
			}
			if !p.RemoveFile {
				lines[1] = "+++ b/" + c.file + "\n"
			}
			gitDiff := strings.Join(lines, "")

			work := t.TempDir()
			copyPath := filepath.Join(work, c.file)
			if p.Exists {
				if err := os.WriteFile(copyPath, p.Before, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			run := func(prog string, stdin string, args ...string) {
				t.Helper()
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				cmd := exec.CommandContext(ctx, prog, args...)
				cmd.Dir = work
				cmd.Stdin = strings.NewReader(stdin)
				cmd.Env = append(os.Environ(), "GIT_CEILING_DIRECTORIES="+filepath.Dir(work), "GIT_DIR=", "GIT_WORK_TREE=")
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("%s %s: %v\n%s\npatch:\n%s", filepath.Base(prog), strings.Join(args, " "), err, out, stdin)
				}
			}
			if patch != "" && p.Exists && !p.RemoveFile {
				run(patch, diff, "--dry-run", "--batch", copyPath) // the labels as printed
			}
			run(git, gitDiff, "apply", "--check", "-")
			run(git, gitDiff, "apply", "-")
			got, err := os.ReadFile(copyPath)
			switch {
			case p.RemoveFile:
				if !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("git apply left %s: %v", c.file, err)
				}
			case err != nil:
				t.Fatal(err)
			case !bytes.Equal(got, p.After):
				t.Errorf("git apply wrote\n%q\nthe plan writes\n%q", got, p.After)
			}
		})
	}
}

// planInstall plans Claude Code's hooks, the richest shape the editor
// splices (hooks/claudecode.HookSpecs).
func planInstall(path, bin string) (*settings.Plan, error) {
	return settings.PlanInstall(path, bin, claudecode.HookSpecs())
}
