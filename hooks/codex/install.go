package codex

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/hooks"
	"github.com/git-lossless/git-lossless/hooks/settings"
)

// HookSpecs are the hooks install writes into hooks.json, in Codex's
// event names, each running `<bin> hook codex <event>`. PreToolUse and
// PostToolUse take apply_patch and Bash (reads through the shell, and
// patches as a shell heredoc); the session-level events sweep the
// rollout. SessionEnd's timeout is Codex's ceiling (it clamps to 3 s).
func HookSpecs() []settings.HookSpec {
	return []settings.HookSpec{
		{Event: string(SessionStart), Arg: Name + " session-start", Timeout: 30},
		{Event: string(PreToolUse), Matcher: "apply_patch|Bash", Arg: Name + " pre-tool-use", Timeout: 10},
		{Event: string(PostToolUse), Matcher: "apply_patch|Bash", Arg: Name + " post-tool-use", Timeout: 10},
		{Event: string(PreCompact), Arg: Name + " pre-compact", Timeout: 30},
		{Event: string(PostCompact), Arg: Name + " post-compact", Timeout: 30},
		{Event: string(SubagentStop), Arg: Name + " subagent-stop", Timeout: 30},
		{Event: string(Stop), Arg: Name + " stop", Timeout: 30},
		{Event: string(SessionEnd), Arg: Name + " session-end", Timeout: 3},
	}
}

// HooksPath is where Codex reads hooks.json: $CODEX_HOME/hooks.json
// (user) or <repository>/.codex/hooks.json (project; Codex reads it
// only in a project the user trusts).
func HooksPath(scope settings.Scope, dir string, getenv func(string) string) (string, error) {
	switch scope {
	case settings.ScopeUser:
		home, err := Home(getenvOr(getenv))
		if err != nil {
			return "", err
		}
		return filepath.Join(absFrom(dir, home), "hooks.json"), nil
	case settings.ScopeProject:
		top, err := projectTop(dir)
		if err != nil {
			return "", err
		}
		return filepath.Join(top, ".codex", "hooks.json"), nil
	}
	return "", fmt.Errorf("unknown settings scope %q (use user or project)", scope)
}

// ConfigPath is the user's config.toml, where Codex keeps hook trust,
// project trust and MCP servers.
func ConfigPath(dir string, getenv func(string) string) (string, error) {
	home, err := Home(getenvOr(getenv))
	if err != nil {
		return "", err
	}
	return filepath.Join(absFrom(dir, home), "config.toml"), nil
}

func absFrom(dir, p string) string {
	if filepath.IsAbs(p) || dir == "" {
		return p
	}
	return filepath.Join(dir, p)
}

func projectTop(dir string) (string, error) {
	top := dir
	if loc, err := gitstore.FindRepository(dir); err == nil && loc.WorkTree != "" {
		top = loc.WorkTree
	}
	return filepath.Abs(top)
}

// TrustKeyPath is the hooks file at path as Codex names it in a trust
// key: an explicitly set CODEX_HOME and a project root are canonicalized
// (their symlinks resolved), the default ~/.codex is not; the file's own
// name is kept (a symlinked hooks.json is keyed by the link, which is
// what Codex reads). explicit is a file named on the command line: its
// absolute path.
func TrustKeyPath(scope settings.Scope, path string, getenv func(string) string, explicit bool) string {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	if explicit || (scope == settings.ScopeUser && getenvOr(getenv)("CODEX_HOME") == "") {
		return path
	}
	if d, err := filepath.EvalSymlinks(filepath.Dir(path)); err == nil {
		return filepath.Join(d, filepath.Base(path))
	}
	return path
}

// Install implements hooks.Harness: two targets. "hooks" is hooks.json
// (the generic settings editor: backup, diff, foreign hooks kept).
// "codex config" is the user's config.toml: one [hooks.state."<key>"]
// table per handler of ours with the trusted_hash Codex wants (without
// it Codex skips the hook silently), [mcp_servers.git-lossless] (unless
// NoMCP), and for project scope [projects."<repo>"] trust_level =
// "trusted" when the project has no trust entry yet. Only tables of ours
// are added, replaced or removed; the rest of the file keeps its bytes.
func (Harness) Install(ctx context.Context, opt hooks.InstallOptions) (hooks.Install, error) {
	sc := settings.Scope(opt.Scope)
	if sc == "" {
		sc = settings.ScopeUser
	}
	if sc != settings.ScopeUser && sc != settings.ScopeProject {
		return hooks.Install{}, fmt.Errorf("--scope %q: use user or project", opt.Scope)
	}
	var inst hooks.Install
	path, where := opt.HooksFile, ""
	if path == "" {
		var err error
		if path, err = HooksPath(sc, opt.Dir, opt.Getenv); err != nil {
			return inst, err
		}
		where = string(sc) + " hooks"
	}
	var plan *settings.Plan
	var err error
	if opt.Uninstall {
		plan, err = settings.PlanUninstall(path, opt.Bin.Hook)
	} else {
		plan, err = settings.PlanInstall(path, opt.Bin.Hook, HookSpecs())
	}
	if err != nil {
		return inst, refused(err, "nothing was written; fix the file (or move it aside) and run again")
	}
	unchanged := "git-lossless hooks are already installed in %s; nothing to change"
	if opt.Uninstall {
		unchanged = "no git-lossless hooks in %s; nothing to change"
	}
	inst.Targets = append(inst.Targets, hooks.InstallTarget{Label: "hooks", Where: where, Plan: plan, Unchanged: fmt.Sprintf(unchanged, plan.Path)})

	cfgPath, err := ConfigPath(opt.Dir, opt.Getenv)
	if err != nil {
		return inst, err
	}
	after := plan.After
	if after == nil && !plan.Changed() {
		after = plan.Before
	}
	project := ""
	if sc == settings.ScopeProject {
		if project, err = projectTop(opt.Dir); err != nil {
			return inst, err
		}
		if d, err := filepath.EvalSymlinks(project); err == nil {
			project = d
		}
	}
	cplan, notes, err := planConfig(cfgPath, configEdit{
		hooksPath: TrustKeyPath(sc, path, opt.Getenv, opt.HooksFile != ""), before: plan.Before, after: after, bin: opt.Bin,
		uninstall: opt.Uninstall, mcp: !opt.NoMCP, project: project,
	})
	if err != nil {
		var re *hooks.RefusedError
		if errors.As(err, &re) {
			return inst, err
		}
		return inst, fmt.Errorf("codex config %s: %w", cfgPath, err)
	}
	cu := "git-lossless's trust, project and MCP tables are already in %s; nothing to change"
	if opt.Uninstall {
		cu = "no git-lossless tables in %s; nothing to change"
	}
	inst.Targets = append(inst.Targets, hooks.InstallTarget{Label: "codex config", Where: "user config.toml", Plan: cplan,
		Unchanged: fmt.Sprintf(cu, cplan.Path), Removed: fmt.Sprintf("removed %s (it held only git-lossless's tables)", cplan.Path)})
	if !opt.Uninstall {
		inst.Done = append(inst.Done, "the hooks are trusted (config.toml [hooks.state] tables) and apply to Codex sessions started from now on; `git lossless doctor` checks them")
		if !opt.NoMCP {
			inst.Done = append(inst.Done, fmt.Sprintf("the MCP server %q (tools %s.*, found with tool_search) starts with Codex sessions started from now on", settings.MCPServerName, MCPNamespace))
		}
	}
	inst.Done = append(inst.Done, notes...)
	return inst, nil
}

func refused(err error, hint string) error {
	if errors.As(err, new(*settings.Error)) {
		return &hooks.RefusedError{Err: err, Hint: hint}
	}
	return err
}

// configEdit is what planConfig changes in config.toml.
type configEdit struct {
	hooksPath     string // the hooks file as trust keys name it
	before, after []byte // hooks.json before and after the hooks plan
	bin           settings.HookBinary
	uninstall     bool
	mcp           bool
	project       string // project scope: the repository, trusted if it has no entry
}

// TrustEntry is one hook's persisted trust: the table
// [hooks.state."<Key>"] with trusted_hash = "<Hash>".
type TrustEntry struct {
	Key  string // "<hooks.json path>:<event label>:<group>:<handler>"
	Hash string // "sha256:<hex>"
}

// hooksDoc is hooks.json as trust is computed from it.
type hooksDoc struct {
	Hooks map[string][]struct {
		Matcher *string `json:"matcher"`
		Hooks   []struct {
			Type          string `json:"type"`
			Command       string `json:"command"`
			Timeout       *int   `json:"timeout"`
			Async         bool   `json:"async"`
			StatusMessage string `json:"statusMessage"`
		} `json:"hooks"`
	} `json:"hooks"`
}

// OurTrust computes the trust entries of the handlers of ours (commands
// settings.IsOurHookCommand recognises) in a hooks.json document, keyed
// by path (see TrustKey).
func OurTrust(path string, doc []byte, bin string) ([]TrustEntry, error) {
	if len(bytes.TrimSpace(doc)) == 0 {
		return nil, nil
	}
	var f hooksDoc
	if err := json.Unmarshal(doc, &f); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	events := make([]string, 0, len(f.Hooks))
	for e := range f.Hooks {
		events = append(events, e)
	}
	sort.Strings(events)
	var out []TrustEntry
	for _, e := range events {
		for gi, g := range f.Hooks[e] {
			for hi, h := range g.Hooks {
				if h.Type != "command" || !settings.IsOurHookCommand(h.Command, bin) {
					continue
				}
				out = append(out, TrustEntry{
					Key:  fmt.Sprintf("%s:%s:%d:%d", path, EventLabel(e), gi, hi),
					Hash: HookHash(e, g.Matcher, h.Command, h.Timeout, h.Async, h.StatusMessage),
				})
			}
		}
	}
	return out, nil
}

// EventLabel is Codex's snake_case label of a hook event, as trust keys
// and hashes spell it (PreToolUse: pre_tool_use).
func EventLabel(event string) string {
	var b strings.Builder
	for i, r := range event {
		if r >= 'A' && r <= 'Z' {
			if i > 0 {
				b.WriteByte('_')
			}
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// HookHash is Codex 0.169.0's trusted_hash of one command handler:
// sha256 over the compact, key-sorted JSON of {"event_name": label,
// "matcher": m (only when set and the event takes matchers), "hooks":
// [{"type":"command","command","timeout" (600 when absent; SessionEnd
// and Interrupt 1, clamped to 1..3),"async","statusMessage" (if set)}]}
// (checked against `codex app-server` hooks/list by
// internal/testkit/codextest).
func HookHash(event string, matcher *string, command string, timeout *int, async bool, status string) string {
	t := 600
	if timeout != nil {
		t = *timeout
	}
	switch event {
	case "SessionEnd", "Interrupt":
		if timeout == nil {
			t = 1
		}
		t = min(max(t, 1), 3)
	default:
		t = max(t, 1)
	}
	handler := map[string]any{"type": "command", "command": command, "timeout": t, "async": async}
	if status != "" {
		handler["statusMessage"] = status
	}
	identity := map[string]any{"event_name": EventLabel(event), "hooks": []any{handler}}
	switch event {
	case "UserPromptSubmit", "Stop", "PreModelRequest", "Interrupt":
	default:
		if matcher != nil {
			identity["matcher"] = *matcher
		}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(identity) // maps marshal with sorted keys: the canonical form
	sum := sha256.Sum256(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// trustHeader is the table header of one trust entry.
func trustHeader(key string) string { return "[hooks.state." + tomlString(key) + "]" }

// planConfig computes config.toml with our tables (or without them).
func planConfig(path string, e configEdit) (*settings.Plan, []string, error) {
	file := path
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		if file, err = filepath.EvalSymlinks(path); err != nil {
			return nil, nil, fmt.Errorf("resolve %s: %w", path, err)
		}
	}
	p := &settings.Plan{Path: file}
	doc, err := os.ReadFile(file)
	switch {
	case err == nil:
		p.Exists, p.Before = true, doc
	case errors.Is(err, fs.ErrNotExist):
	default:
		return nil, nil, fmt.Errorf("read %s: %w", file, err)
	}
	step := func(why string) error {
		return &hooks.RefusedError{Err: fmt.Errorf("%s: %s", file, why),
			Hint: "nothing was written; fix the file by hand (or move it aside) and run again, or pass --no-mcp if only the MCP table is in the way"}
	}
	tables, err := tomlTables(doc)
	if err != nil {
		return nil, nil, step("cannot be split into tables with certainty (" + err.Error() + ")")
	}
	// Trust we write now (install) and keys of ours before (uninstall:
	// the tables Codex may have rewritten without our marker).
	want, err := OurTrust(e.hooksPath, e.after, e.bin.Hook)
	if err != nil || e.uninstall {
		want = nil
	}
	old, _ := OurTrust(e.hooksPath, e.before, e.bin.Hook)
	oursByHeader := map[string]bool{}
	for _, t := range append(old, want...) {
		oursByHeader[trustHeader(t.Key)] = true
	}
	mcpWanted := e.mcp && !e.uninstall
	projectHeader := ""
	if e.project != "" {
		projectHeader = "[projects." + tomlString(e.project) + "]"
	}
	var notes []string
	projectEntry := false
	for _, t := range tables {
		h := t.Header
		switch {
		case h == "[hooks]" || h == "[hooks.state]" || strings.HasPrefix(h, "[[hooks"):
			return nil, nil, step("it sets hooks in a " + h + " table; git-lossless writes [hooks.state.\"<key>\"] tables only")
		case t.Header == "" && rootSetsHooks(doc[t.Start:t.End]):
			return nil, nil, step("it sets hooks.* as dotted keys at the top; git-lossless writes [hooks.state.\"<key>\"] tables only")
		case (h == mcpTableHeader || h == `[mcp_servers."git-lossless"]`) && !t.Ours && e.mcp:
			if !ourMCPTable(doc[t.Start:t.End]) {
				return nil, nil, step("it registers another MCP server named git-lossless; rename it, or pass --no-mcp")
			}
		case strings.HasPrefix(h, "[mcp_servers.git-lossless.") && !t.Ours && e.mcp:
			return nil, nil, step("it has a " + h + " table; git-lossless writes its MCP server as one table (remove it, or pass --no-mcp)")
		case projectHeader != "" && h == projectHeader && !t.Ours:
			projectEntry = true
			if !bytes.Contains(doc[t.Start:t.End], []byte(`trust_level = "trusted"`)) && !e.uninstall {
				notes = append(notes, fmt.Sprintf("Codex reads %s/.codex/hooks.json only in a trusted project, and config.toml says otherwise for it: run `codex exec --trust` there, or set trust_level = \"trusted\" under %s in %s", e.project, projectHeader, file))
			}
		}
	}
	drop := func(t tomlTable) bool {
		h := t.Header
		isMCP := h == mcpTableHeader || h == `[mcp_servers."git-lossless"]`
		switch {
		case oursByHeader[h]:
			return true
		case isMCP && e.mcp && !e.uninstall:
			return t.Ours || ourMCPTable(doc[t.Start:t.End])
		case isMCP && e.mcp:
			return t.Ours
		case t.Ours && strings.HasPrefix(h, "[hooks.state.") && strings.Contains(h, e.hooksPath):
			return true
		case t.Ours && projectHeader != "" && h == projectHeader:
			return e.uninstall
		}
		return false
	}
	var add []string
	for _, t := range want {
		add = append(add, fmt.Sprintf("%s\n%s\ntrusted_hash = %s\n", trustHeader(t.Key), tomlMarker, tomlString(t.Hash)))
	}
	if mcpWanted {
		add = append(add, fmt.Sprintf("%s\n%s\ncommand = %s\nargs = [\"mcp\", \"--harness\", \"codex\"]\n", mcpTableHeader, tomlMarker, tomlString(e.bin.MCPCommand())))
	}
	if projectHeader != "" && !projectEntry && !e.uninstall && !hasOursProject(tables, projectHeader) {
		add = append(add, fmt.Sprintf("%s\n%s\ntrust_level = \"trusted\"\n", projectHeader, tomlMarker))
	}
	p.After = tomlEdit(doc, tables, drop, add)
	for _, t := range tables {
		if drop(t) {
			p.Changes = append(p.Changes, settings.Change{Event: "table", Command: t.Header, Action: "removed"})
		}
	}
	for _, a := range add {
		p.Changes = append(p.Changes, settings.Change{Event: "table", Command: strings.SplitN(a, "\n", 2)[0], Action: "added"})
	}
	if bytes.Equal(p.After, p.Before) {
		p.Changes = nil
	}
	if !p.Exists && len(bytes.TrimSpace(p.After)) == 0 {
		p.After = nil
	}
	if p.Exists && e.uninstall && len(bytes.TrimSpace(p.After)) == 0 && len(p.Before) > 0 {
		p.RemoveFile = true
	}
	return p, notes, nil
}

func hasOursProject(tables []tomlTable, header string) bool {
	for _, t := range tables {
		if t.Ours && t.Header == header {
			return true
		}
	}
	return false
}

// rootSetsHooks reports whether the lines before the first table set a
// dotted key under hooks (hooks.state... = ...), which our tables would
// collide with.
func rootSetsHooks(b []byte) bool {
	for _, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "hooks.") || strings.HasPrefix(l, "hooks =") || strings.HasPrefix(l, "hooks=") || strings.HasPrefix(l, `"hooks"`) {
			return true
		}
	}
	return false
}

// ourMCPTable reports whether a [mcp_servers.git-lossless] table runs
// git-lossless's server (a command named git-lossless or git-lossless-mcp).
func ourMCPTable(b []byte) bool {
	for _, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		if v, ok := strings.CutPrefix(l, "command"); ok {
			v = strings.TrimSpace(v)
			if v, ok = strings.CutPrefix(v, "="); ok {
				var s string
				if json.Unmarshal([]byte(strings.TrimSpace(v)), &s) == nil {
					base := strings.TrimSuffix(filepath.Base(s), ".exe")
					return base == "git-lossless" || base == settings.MCPProgramName
				}
			}
		}
	}
	return false
}
