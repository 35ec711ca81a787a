package claudecode

// Claude Code's side of the MCP server's registration: the entry `claude
// mcp add --scope user|project git-lossless -- PROGRAM mcp` writes, where
// it writes it, which registration Claude Code starts in a directory, and
// the names it shows the server's tools under. The splice of the entry
// into the file is package settings'.
//
// What Claude Code 2.1.328 writes (seen: the real CLI run in a sandbox
// with HOME and CLAUDE_CONFIG_DIR of its own), for
// `claude mcp add --scope user git-lossless -- /path/git-lossless mcp`:
//
//	"mcpServers": {
//	  "git-lossless": {
//	    "type": "stdio",
//	    "command": "/path/git-lossless",
//	    "args": [
//	      "mcp"
//	    ],
//	    "env": {}
//	  }
//	}
//
// as a top-level member of $CLAUDE_CONFIG_DIR/.claude.json, or of
// ~/.claude.json when CLAUDE_CONFIG_DIR is unset (the user scope), and of
// .mcp.json (the project scope; the CLI writes it in the directory it runs
// in, and Claude Code reads the nearest one walking up from its working
// directory, so we write it at the top of the repository, beside
// .claude/). The CLI re-encodes the whole file with two-space indentation;
// we splice the member in and keep every other byte (package settings),
// so that Claude Code's own state in .claude.json and a team's other
// servers in .mcp.json are untouched. A project-scope server is used only
// once approved (the CLI's `mcp list` says "Pending approval"): Claude
// Code asks on the next interactive start (trusting the folder), or the
// user's settings list it in enabledMcpjsonServers
// (enableAllProjectMcpServers approves every one); see mcpApproval.
// Where one name is registered in several scopes, local (.claude.json's
// projects[<dir>].mcpServers) wins over an approved project entry, which
// wins over the user entry.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/git-lossless/git-lossless/hooks/settings"
)

// MCPToolName is the name Claude Code gives tool of server: mcp__, the
// server name with every character outside A-Z a-z 0-9 _ - turned into _,
// two underscores, the tool's name ("git-lossless" keeps its hyphen:
// mcp__git-lossless__search).
func MCPToolName(server, tool string) string {
	b := []byte(server)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	return "mcp__" + string(b) + "__" + tool
}

// MCPServerEntry is the entry install writes: bin (the server's program,
// settings.HookBinary.MCPCommand: git-lossless-mcp beside git-lossless,
// else git-lossless itself) with the argument mcp, and the empty env the
// CLI writes too.
func MCPServerEntry(bin string) settings.MCPServer {
	return settings.MCPServer{Type: "stdio", Command: bin, Args: []string{"mcp"}, Env: map[string]string{}}
}

// MCPRegistration is one registration of our server name that Claude
// Code reads for a directory.
type MCPRegistration struct {
	// Scope is "local" (.claude.json's projects[<dir>].mcpServers),
	// "project" (.mcp.json) or "user" (.claude.json's mcpServers).
	Scope string
	Path  string // the file holding it
	// Entry is the entry as written; Server the same decoded (zero when
	// it is not an object of that shape).
	Entry  json.RawMessage
	Server settings.MCPServer
	// Ours is settings.IsOurMCPServer(Entry).
	Ours bool
	// Approval is for project entries: "approved", "rejected" or
	// "pending" (Claude Code asks on the next interactive start, and
	// uses the server only once approved); "" for the other scopes.
	Approval string
}

// Usable reports whether Claude Code starts this registration (a project
// entry only once approved).
func (r MCPRegistration) Usable() bool { return r.Scope != "project" || r.Approval == "approved" }

// MCPLookup says where to look for registrations.
type MCPLookup struct {
	// Dir is the directory Claude Code runs in.
	Dir string
	// UserConfig is the user's .claude.json ("" = no user scope, e.g. no
	// HOME); UserSettings the user's settings.json, for project approvals.
	UserConfig, UserSettings string
	// Programs are other paths of git-lossless (the running program, the
	// hooks' program) whose `PATH mcp` entries are ours whatever the
	// file's name (see settings.IsOurMCPServer).
	Programs []string
}

// MCPLookupFor derives the lookup of dir from the environment as Claude
// Code would (CLAUDE_CONFIG_DIR, HOME); without either the user scope is
// left out rather than guessed.
func MCPLookupFor(dir string, getenv func(string) string) MCPLookup {
	if getenv == nil {
		getenv = os.Getenv
	}
	l := MCPLookup{Dir: dir}
	if getenv("CLAUDE_CONFIG_DIR") == "" && getenv("HOME") == "" {
		return l
	}
	l.UserConfig, _ = MCPConfigPath(settings.ScopeUser, dir, getenv)
	l.UserSettings, _ = SettingsPath(settings.ScopeUser, dir, getenv)
	return l
}

// FindMCPRegistrations lists the registrations of our server name Claude
// Code reads in l.Dir, in its order of precedence: local, project (the
// nearest .mcp.json walking up from Dir holding the name), user. Files
// that are missing are skipped; files that cannot be read or parsed are
// errors (with whatever else was found).
func FindMCPRegistrations(l MCPLookup) ([]MCPRegistration, error) {
	var out []MCPRegistration
	var errs []error
	dir, err := filepath.Abs(l.Dir)
	if err != nil {
		return nil, err
	}
	top, _ := projectTop(dir)

	var user struct {
		MCPServers map[string]json.RawMessage `json:"mcpServers"`
		Projects   map[string]mcpProjectState `json:"projects"`
	}
	if l.UserConfig != "" {
		if b, err := os.ReadFile(l.UserConfig); err == nil {
			if err := json.Unmarshal(b, &user); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", l.UserConfig, err))
			}
		} else if !os.IsNotExist(err) {
			errs = append(errs, err)
		}
	}
	reg := func(scope, path string, raw json.RawMessage) MCPRegistration {
		r := MCPRegistration{Scope: scope, Path: path, Entry: raw, Ours: settings.IsOurMCPServer(raw, "")}
		for _, p := range l.Programs {
			r.Ours = r.Ours || p != "" && settings.IsOurMCPServer(raw, p)
		}
		_ = json.Unmarshal(raw, &r.Server)
		return r
	}
	projectKeys := []string{dir}
	if top != dir {
		projectKeys = append(projectKeys, top)
	}
	for _, k := range projectKeys {
		if raw, ok := user.Projects[k].MCPServers[settings.MCPServerName]; ok {
			out = append(out, reg("local", l.UserConfig, raw))
			break
		}
	}
	for d := dir; ; d = filepath.Dir(d) {
		p := filepath.Join(d, ".mcp.json")
		b, err := os.ReadFile(p)
		if err == nil {
			var f struct {
				MCPServers map[string]json.RawMessage `json:"mcpServers"`
			}
			if err := json.Unmarshal(b, &f); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", p, err))
			} else if raw, ok := f.MCPServers[settings.MCPServerName]; ok {
				r := reg("project", p, raw)
				r.Approval = mcpApproval(l.UserSettings, top, projectKeys, user.Projects)
				out = append(out, r)
				break
			}
		} else if !os.IsNotExist(err) {
			errs = append(errs, err)
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	if raw, ok := user.MCPServers[settings.MCPServerName]; ok {
		out = append(out, reg("user", l.UserConfig, raw))
	}
	if len(errs) > 0 {
		return out, fmt.Errorf("read MCP configs: %w", joinErrs(errs))
	}
	return out, nil
}

// mcpProjectState is what .claude.json keeps of a project directory.
type mcpProjectState struct {
	MCPServers map[string]json.RawMessage `json:"mcpServers"`
	Disabled   []string                   `json:"disabledMcpjsonServers"`
	Trusted    bool                       `json:"hasTrustDialogAccepted"`
}

// mcpApproval decides whether Claude Code starts our .mcp.json server,
// as 2.1.328's `claude mcp list` does (seen): approved by the user's
// settings (enabledMcpjsonServers naming it, or
// enableAllProjectMcpServers), or when the project's directory is
// trusted in .claude.json (hasTrustDialogAccepted: the interactive
// start that asks about the folder asks about its servers too); the
// project's own settings files approve nothing in a folder not trusted
// (a cloned repository cannot approve its own servers). Listed in
// disabledMcpjsonServers anywhere: rejected. Else pending.
func mcpApproval(userSettings, top string, keys []string, projects map[string]mcpProjectState) string {
	type approvals struct {
		Enabled  []string `json:"enabledMcpjsonServers"`
		Disabled []string `json:"disabledMcpjsonServers"`
		All      bool     `json:"enableAllProjectMcpServers"`
	}
	read := func(p string) approvals {
		var s approvals
		if p != "" {
			if b, err := os.ReadFile(p); err == nil {
				_ = json.Unmarshal(b, &s)
			}
		}
		return s
	}
	trusted := false
	var disabled []string
	for _, k := range keys {
		if pr, ok := projects[k]; ok {
			trusted = trusted || pr.Trusted
			disabled = append(disabled, pr.Disabled...)
		}
	}
	us := read(userSettings)
	disabled = append(disabled, us.Disabled...)
	approved := us.All || slices.Contains(us.Enabled, settings.MCPServerName) || trusted
	for _, p := range []string{filepath.Join(top, ".claude", "settings.json"), filepath.Join(top, ".claude", "settings.local.json")} {
		ps := read(p)
		disabled = append(disabled, ps.Disabled...)
	}
	switch {
	case slices.Contains(disabled, settings.MCPServerName):
		return "rejected"
	case approved:
		return "approved"
	}
	return "pending"
}

// EffectiveMCPServer is the registration Claude Code starts in l.Dir:
// the first usable one in precedence order (ok false when none).
func EffectiveMCPServer(regs []MCPRegistration) (MCPRegistration, bool) {
	for _, r := range regs {
		if r.Usable() {
			return r, true
		}
	}
	return MCPRegistration{}, false
}

func joinErrs(errs []error) error {
	if len(errs) == 1 {
		return errs[0]
	}
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return fmt.Errorf("%s", strings.Join(msgs, "; "))
}
