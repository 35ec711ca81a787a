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

// parseMCPConfig scans an MCP config, refusing what a harness would
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
			return nil, errorAt(path, doc, m.keyStart, `duplicate key "mcpServers": which one is used is ambiguous; merge them by hand`)
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
			return nil, errorAt(path, doc, m.keyStart, "duplicate key mcpServers.%s: which one is used is ambiguous; remove one by hand", MCPServerName)
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

// MergeMCPServer returns the MCP config with our server registered as
// entry (the harness's shape of `<entry.Command> mcp`) and what changed:
// the entry added, or an entry of ours with another program replaced in
// place, or nothing when it is there as install writes it (the input
// comes back unchanged). Every other byte is kept. An entry under our
// name that runs something else is refused (a *Error): it is someone's
// server, and a harness allows one per name.
func MergeMCPServer(path string, doc []byte, server MCPServer) ([]byte, []Change, error) {
	c, err := parseMCPConfig(path, doc)
	if err != nil {
		return nil, nil, err
	}
	bin := server.Command
	entry := marshal(server)
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
			return nil, nil, errorAt(path, doc, m.keyStart, "mcpServers.%s runs `%s`, which is not git-lossless's server; remove or rename that entry (Claude Code: `claude mcp remove %s`), then run again",
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
