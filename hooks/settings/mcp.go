package settings

// Registration of git-lossless's MCP server (`git lossless mcp`) in the
// "mcpServers" object of a harness's JSON config: Claude Code's
// .claude.json and .mcp.json (what `claude mcp add` writes), Gemini CLI's
// settings.json. Which file, and the entry's exact shape, are the
// harness's adapter's (hooks/claudecode names Claude Code's); the splice
// is here, and keeps every other byte as for the hooks (see hooks.go), so
// that a harness's own state and a team's other servers are untouched.
// Only an entry that runs git-lossless's server is ever replaced or
// removed: a server someone else registered under our name is theirs.

import (
	"bytes"
	"encoding/json"
	"strings"
)

// MCPServerName is the name git-lossless's server is registered under
// (Claude Code shows its tools as mcp__git-lossless__<tool>).
const MCPServerName = "git-lossless"

// MCPServer is one stdio server entry of an "mcpServers" object; the
// field order is Claude Code's CLI's (a harness without a "type" leaves
// it empty).
type MCPServer struct {
	Type    string            `json:"type,omitempty"`
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
}

// IsOurMCPServer reports whether an mcpServers entry runs git-lossless's
// server: a program named git-lossless or git-lossless-mcp (any
// directory, .exe on Windows) or bin, with first argument mcp; or `git
// lossless mcp`. Only such an entry is ever replaced or removed: a server
// someone else registered under our name is theirs.
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
	return IsOurMCPCommand(append([]string{e.Command}, args...), bin)
}

// IsOurMCPCommand is IsOurMCPServer for a command line as words (the
// program first): the rule every harness's entry is judged by.
func IsOurMCPCommand(words []string, bin string) bool {
	if len(words) < 2 {
		return false
	}
	prog, args := words[0], words[1:]
	base := strings.TrimSuffix(prog[strings.LastIndexAny(prog, `/\`)+1:], ".exe") // a Windows path too, wherever it is read
	switch {
	case (base == "git-lossless" || base == MCPProgramName || bin != "" && prog == bin) && args[0] == "mcp":
		return true
	case base == "git" && len(args) > 1 && args[0] == "lossless" && args[1] == "mcp":
		return true
	}
	return false
}

// mcpConfig is a parsed MCP config file (.claude.json or .mcp.json): the
// document with its layout (see document) and where mcpServers and our
// entry are.
type mcpConfig struct {
	*document
	key          string // the servers object's key: "mcpServers" (opencode: "mcp")
	serversAt    int    // index in top of "mcpServers", -1 when absent
	servers      []objMember
	serversClose int // the '}' of mcpServers
	oursAt       int // index in servers of MCPServerName, -1 when absent
}

// parseMCPConfig scans an MCP config, refusing what a harness would
// refuse too (invalid JSON, a top level or mcpServers that is not an
// object) and what is ambiguous (duplicate keys).
func parseMCPConfig(path string, doc []byte) (*mcpConfig, error) {
	return parseMCPConfigKey(path, doc, "mcpServers")
}

// parseMCPConfigKey is parseMCPConfig for servers kept under key.
func parseMCPConfigKey(path string, doc []byte, key string) (*mcpConfig, error) {
	s, err := parseObjectFile(path, doc, "the MCP config is")
	if err != nil {
		return nil, err
	}
	c := &mcpConfig{document: s, key: key, serversAt: -1, oursAt: -1}
	if s.empty {
		return c, nil
	}
	for i, m := range s.top {
		if m.key != key {
			continue
		}
		if c.serversAt >= 0 {
			return nil, errorAt(path, doc, m.keyStart, `duplicate key %q: which one is used is ambiguous; merge them by hand`, key)
		}
		c.serversAt = i
	}
	if c.serversAt < 0 {
		return c, nil
	}
	v := s.top[c.serversAt].val
	if doc[v.start] != '{' {
		return nil, errorAt(path, doc, v.start, `%q is %s, expected an object of server names`, key, JSONKind(doc[v.start]))
	}
	if c.servers, c.serversClose, err = scanObject(doc, v.start); err != nil {
		return nil, &Error{Path: path, Msg: err.Error()}
	}
	for i, m := range c.servers {
		if m.key != MCPServerName {
			continue
		}
		if c.oursAt >= 0 {
			return nil, errorAt(path, doc, m.keyStart, "duplicate key %s.%s: which one is used is ambiguous; remove one by hand", key, MCPServerName)
		}
		c.oursAt = i
	}
	return c, nil
}

func (c *mcpConfig) change(action, bin string) Change {
	ch := Change{Event: c.key + "." + MCPServerName, Action: action}
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

// MergeMCPServer returns the MCP config with our server registered as
// entry (the harness's shape of `<entry.Command> mcp`) and what changed:
// the entry added, or an entry of ours with another program replaced in
// place, or nothing when it is there as install writes it (the input
// comes back unchanged). Every other byte is kept. An entry under our
// name that runs something else is refused (a *Error): it is someone's
// server, and a harness allows one per name.
func MergeMCPServer(path string, doc []byte, server MCPServer) ([]byte, []Change, error) {
	bin := server.Command
	return MergeMCPEntry(path, doc, "mcpServers", bin, marshal(server), func(e json.RawMessage) bool { return IsOurMCPServer(e, bin) })
}

// MergeMCPEntry is MergeMCPServer for a harness whose servers object has
// another key (opencode's "mcp") or whose entries another shape: entry is
// ours as install writes it, isOurs recognises an entry of ours (any
// version), bin names the program in the changes.
func MergeMCPEntry(path string, doc []byte, key, bin string, entry json.RawMessage, isOurs func(json.RawMessage) bool) ([]byte, []Change, error) {
	c, err := parseMCPConfigKey(path, doc, key)
	if err != nil {
		return nil, nil, err
	}
	servers := func() []byte { // a mcpServers object holding only ours
		return append(append([]byte{'{'}, c.member(MCPServerName, nil, entry)...), '}')
	}
	added := []Change{c.change("added", bin)}
	switch {
	case c.empty:
		return bytes.Join([][]byte{[]byte("{" + c.nl + c.unit + jsonQuote(key) + c.sep), c.indent(servers(), c.unit), []byte(c.nl + "}" + c.nl)}, nil), added, nil
	case c.serversAt < 0:
		top := c.newSplicer(c.topOpen, c.topClose, memberSpans(c.top))
		top.add(c.member(key, nil, top.format(servers())))
		return c.spliceTop(top), added, nil
	}
	sm := c.top[c.serversAt]
	sp := c.newSplicer(sm.val.start, c.serversClose, memberSpans(c.servers))
	action := "added"
	if c.oursAt < 0 {
		sp.add(c.member(MCPServerName, nil, sp.format(entry)))
	} else {
		m := c.servers[c.oursAt]
		if !isOurs(c.text(m.val)) {
			return nil, nil, errorAt(path, doc, m.keyStart, "%s.%s runs `%s`, which is not git-lossless's server; remove or rename that entry (Claude Code: `claude mcp remove %s`), then run again",
				key, MCPServerName, c.entryCommand(), MCPServerName)
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
	return RemoveMCPEntry(path, doc, "mcpServers", func(e json.RawMessage) bool { return IsOurMCPServer(e, bin) })
}

// RemoveMCPEntry is RemoveMCPServer for servers kept under key, entries
// of ours recognised by isOurs (see MergeMCPEntry).
func RemoveMCPEntry(path string, doc []byte, key string, isOurs func(json.RawMessage) bool) ([]byte, []Change, error) {
	c, err := parseMCPConfigKey(path, doc, key)
	if err != nil {
		return nil, nil, err
	}
	if c.empty || c.oursAt < 0 || !isOurs(c.text(c.servers[c.oursAt].val)) {
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
// registered as server (see MergeMCPServer).
func PlanMCPInstall(path string, server MCPServer) (*Plan, error) {
	return planFile(path, server.Command, func(path string, doc []byte, _ string) ([]byte, []Change, error) {
		return MergeMCPServer(path, doc, server)
	})
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

// PlanMCPEntryInstall reads an MCP config and computes it with our entry
// under key (see MergeMCPEntry).
func PlanMCPEntryInstall(path, key, bin string, entry json.RawMessage, isOurs func(json.RawMessage) bool) (*Plan, error) {
	return planFile(path, bin, func(path string, doc []byte, _ string) ([]byte, []Change, error) {
		return MergeMCPEntry(path, doc, key, bin, entry, isOurs)
	})
}

// PlanMCPEntryUninstall reads an MCP config and computes it without our
// entry under key; a file left holding an empty object is removed (see
// PlanMCPUninstall).
func PlanMCPEntryUninstall(path, key string, isOurs func(json.RawMessage) bool) (*Plan, error) {
	p, err := planFile(path, "", func(path string, doc []byte, _ string) ([]byte, []Change, error) {
		return RemoveMCPEntry(path, doc, key, isOurs)
	})
	if err != nil {
		return nil, err
	}
	if p.Changed() && emptyObject(p.After) {
		p.RemoveFile = true
	}
	return p, nil
}

func jsonQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
