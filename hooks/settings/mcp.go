package settings

// Registration of git-lossless's MCP server (`git lossless mcp`) with
// Claude Code, the way `claude mcp add --scope user|project` stores it.
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
// we splice the member in and keep every other byte, as for settings.json
// (see hooks.go), so that Claude Code's own state in .claude.json and a
// team's other servers in .mcp.json are untouched. A project-scope server
// is used only once approved (the CLI's `mcp list` says "Pending
// approval"): Claude Code asks on the next interactive start (trusting
// the folder), or the user's settings list it in enabledMcpjsonServers
// (enableAllProjectMcpServers approves every one); see mcpApproval.
// Where one name is registered in several scopes,
// local (.claude.json's projects[<dir>].mcpServers) wins over an approved
// project entry, which wins over the user entry.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// MCPServerName is the name git-lossless's server is registered under;
// Claude Code shows its tools as mcp__git-lossless__<tool>.
const MCPServerName = "git-lossless"

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

// MCPServer is one stdio server entry as Claude Code stores it; the field
// order is the CLI's.
type MCPServer struct {
	Type    string            `json:"type,omitempty"`
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
}

// MCPServerEntry is the entry install writes: bin (the program the hooks
// run, see ResolveBinary) with the argument mcp, and the empty env the CLI
// writes too.
func MCPServerEntry(bin string) MCPServer {
	return MCPServer{Type: "stdio", Command: bin, Args: []string{"mcp"}, Env: map[string]string{}}
}

func mcpEntryJSON(bin string) []byte { return marshal(MCPServerEntry(bin)) }

// IsOurMCPServer reports whether an mcpServers entry runs git-lossless's
// server: a program named git-lossless (any directory, .exe on Windows)
// or bin, with first argument mcp; or `git lossless mcp`. Only such an
// entry is ever replaced or removed: a server someone else registered
// under our name is theirs.
func IsOurMCPServer(entry json.RawMessage, bin string) bool {
	var e struct {
		Command string `json:"command"`
		Args    []any  `json:"args"`
	}
	if json.Unmarshal(entry, &e) != nil || e.Command == "" {
		return false
	}
	args := make([]string, 0, len(e.Args))
	for _, a := range e.Args {
		s, ok := a.(string)
		if !ok {
			return false
		}
		args = append(args, s)
	}
	base := e.Command[strings.LastIndexAny(e.Command, `/\`)+1:] // a Windows path too, wherever it is read
	switch {
	case (base == "git-lossless" || base == "git-lossless.exe" || bin != "" && e.Command == bin) && len(args) > 0 && args[0] == "mcp":
		return true
	case (base == "git" || base == "git.exe") && len(args) > 1 && args[0] == "lossless" && args[1] == "mcp":
		return true
	}
	return false
}

// mcpConfig is a parsed MCP config file (.claude.json or .mcp.json): the
// document with its layout (see document) and where mcpServers and our
// entry are.
type mcpConfig struct {
	*document
	serversAt    int // index in top of "mcpServers", -1 when absent
	servers      []objMember
	serversClose int // the '}' of mcpServers
	oursAt       int // index in servers of MCPServerName, -1 when absent
}

// parseMCPConfig scans an MCP config, refusing what Claude Code would
// refuse too (invalid JSON, a top level or mcpServers that is not an
// object) and what is ambiguous (duplicate keys).
func parseMCPConfig(path string, doc []byte) (*mcpConfig, error) {
	s, err := parseObjectFile(path, doc, "the MCP config is")
	if err != nil {
		return nil, err
	}
	c := &mcpConfig{document: s, serversAt: -1, oursAt: -1}
	if s.empty {
		return c, nil
	}
	for i, m := range s.top {
		if m.key != "mcpServers" {
			continue
		}
		if c.serversAt >= 0 {
			return nil, errorAt(path, doc, m.keyStart, `duplicate key "mcpServers": which one Claude Code uses is ambiguous; merge them by hand`)
		}
		c.serversAt = i
	}
	if c.serversAt < 0 {
		return c, nil
	}
	v := s.top[c.serversAt].val
	if doc[v.start] != '{' {
		return nil, errorAt(path, doc, v.start, `"mcpServers" is %s, expected an object of server names`, JSONKind(doc[v.start]))
	}
	if c.servers, c.serversClose, err = scanObject(doc, v.start); err != nil {
		return nil, &Error{Path: path, Msg: err.Error()}
	}
	for i, m := range c.servers {
		if m.key != MCPServerName {
			continue
		}
		if c.oursAt >= 0 {
			return nil, errorAt(path, doc, m.keyStart, "duplicate key mcpServers.%s: which one Claude Code uses is ambiguous; remove one by hand", MCPServerName)
		}
		c.oursAt = i
	}
	return c, nil
}

func (c *mcpConfig) change(action, bin string) Change {
	ch := Change{Event: "mcpServers." + MCPServerName, Action: action}
	if bin != "" {
		ch.Command = Quote(bin) + " mcp"
	}
	return ch
}

// entryCommand is the command line an existing entry runs, for messages.
func (c *mcpConfig) entryCommand() string {
	var e struct {
		Command string   `json:"command"`
		Args    []string `json:"args"`
	}
	_ = json.Unmarshal(c.text(c.servers[c.oursAt].val), &e)
	words := []string{Quote(e.Command)}
	for _, a := range e.Args {
		words = append(words, Quote(a))
	}
	return strings.Join(words, " ")
}

// MergeMCPServer returns the MCP config with our server registered (bin
// mcp) and what changed: the entry added, or an entry of ours with
// another program replaced in place, or nothing when it is there as
// install writes it (the input comes back unchanged). Every other byte
// is kept. An entry under our name that runs something else is refused
// (a *Error): it is someone's server, and Claude Code allows one
// per name.
func MergeMCPServer(path string, doc []byte, bin string) ([]byte, []Change, error) {
	c, err := parseMCPConfig(path, doc)
	if err != nil {
		return nil, nil, err
	}
	entry := mcpEntryJSON(bin)
	servers := func() []byte { // a mcpServers object holding only ours
		return append(append([]byte{'{'}, c.member(MCPServerName, nil, entry)...), '}')
	}
	added := []Change{c.change("added", bin)}
	switch {
	case c.empty:
		return bytes.Join([][]byte{[]byte("{" + c.nl + c.unit + `"mcpServers"` + c.sep), c.indent(servers(), c.unit), []byte(c.nl + "}" + c.nl)}, nil), added, nil
	case c.serversAt < 0:
		top := c.newSplicer(c.topOpen, c.topClose, memberSpans(c.top))
		top.add(c.member("mcpServers", nil, top.format(servers())))
		return c.spliceTop(top), added, nil
	}
	sm := c.top[c.serversAt]
	sp := c.newSplicer(sm.val.start, c.serversClose, memberSpans(c.servers))
	action := "added"
	if c.oursAt < 0 {
		sp.add(c.member(MCPServerName, nil, sp.format(entry)))
	} else {
		m := c.servers[c.oursAt]
		if !IsOurMCPServer(c.text(m.val), bin) {
			return nil, nil, errorAt(path, doc, m.keyStart, "mcpServers.%s runs `%s`, which is not git-lossless's server; remove or rename that entry (`claude mcp remove %s`), then run again",
				MCPServerName, c.entryCommand(), MCPServerName)
		}
		if jsonEqual(c.text(m.val), entry) {
			return doc, []Change{c.change("unchanged", bin)}, nil
		}
		action = "replaced"
		sp.items[c.oursAt].text = c.member("", c.doc[m.keyStart:m.keyEnd], sp.formatAt(c.oursAt, entry))
	}
	top := c.newSplicer(c.topOpen, c.topClose, memberSpans(c.top))
	top.items[c.serversAt].text = c.member("", c.doc[sm.keyStart:sm.keyEnd], sp.bytes())
	return c.spliceTop(top), []Change{c.change(action, bin)}, nil
}

// RemoveMCPServer returns the MCP config without our server: the entry
// dropped, and the mcpServers key too when it held nothing else; every
// other byte kept. An entry under our name that runs something else is
// left alone. Nothing of ours gives the input back unchanged.
func RemoveMCPServer(path string, doc []byte, bin string) ([]byte, []Change, error) {
	c, err := parseMCPConfig(path, doc)
	if err != nil {
		return nil, nil, err
	}
	if c.empty || c.oursAt < 0 || !IsOurMCPServer(c.text(c.servers[c.oursAt].val), bin) {
		return doc, nil, nil
	}
	removed := c.change("removed", "")
	removed.Command = c.entryCommand()
	sm := c.top[c.serversAt]
	sp := c.newSplicer(sm.val.start, c.serversClose, memberSpans(c.servers))
	sp.items[c.oursAt].gone = true
	top := c.newSplicer(c.topOpen, c.topClose, memberSpans(c.top))
	if sp.live() == 0 {
		top.items[c.serversAt].gone = true
	} else {
		top.items[c.serversAt].text = c.member("", c.doc[sm.keyStart:sm.keyEnd], sp.bytes())
	}
	return c.spliceTop(top), []Change{removed}, nil
}

func (c *mcpConfig) spliceTop(top *splicer) []byte {
	return bytes.Join([][]byte{c.doc[:c.topOpen], top.bytes(), c.doc[c.topClose+1:]}, nil)
}

// PlanMCPInstall reads an MCP config and computes it with our server
// registered (see MergeMCPServer).
func PlanMCPInstall(path, bin string) (*Plan, error) {
	return planFile(path, bin, MergeMCPServer)
}

// PlanMCPUninstall reads an MCP config and computes it without our
// server (see RemoveMCPServer). A file left holding an empty object (one
// install created) is removed instead, after its backup, so install then
// uninstall leaves no trace.
func PlanMCPUninstall(path, bin string) (*Plan, error) {
	p, err := planFile(path, bin, RemoveMCPServer)
	if err != nil {
		return nil, err
	}
	if p.Changed() && emptyObject(p.After) {
		p.RemoveFile = true
	}
	return p, nil
}

func emptyObject(doc []byte) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(doc, &m) == nil && m != nil && len(m) == 0
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
	Server MCPServer
	// Ours is IsOurMCPServer(Entry).
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
	// file's name (see IsOurMCPServer).
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
	l.UserConfig, _ = MCPConfigPath(ScopeUser, dir, getenv)
	l.UserSettings, _ = Path(ScopeUser, dir, getenv)
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
		r := MCPRegistration{Scope: scope, Path: path, Entry: raw, Ours: IsOurMCPServer(raw, "")}
		for _, p := range l.Programs {
			r.Ours = r.Ours || p != "" && IsOurMCPServer(raw, p)
		}
		_ = json.Unmarshal(raw, &r.Server)
		return r
	}
	projectKeys := []string{dir}
	if top != dir {
		projectKeys = append(projectKeys, top)
	}
	for _, k := range projectKeys {
		if raw, ok := user.Projects[k].MCPServers[MCPServerName]; ok {
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
			} else if raw, ok := f.MCPServers[MCPServerName]; ok {
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
	if raw, ok := user.MCPServers[MCPServerName]; ok {
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
	type settings struct {
		Enabled  []string `json:"enabledMcpjsonServers"`
		Disabled []string `json:"disabledMcpjsonServers"`
		All      bool     `json:"enableAllProjectMcpServers"`
	}
	read := func(p string) settings {
		var s settings
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
	approved := us.All || slices.Contains(us.Enabled, MCPServerName) || trusted
	for _, p := range []string{filepath.Join(top, ".claude", "settings.json"), filepath.Join(top, ".claude", "settings.local.json")} {
		ps := read(p)
		disabled = append(disabled, ps.Disabled...)
	}
	switch {
	case slices.Contains(disabled, MCPServerName):
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
