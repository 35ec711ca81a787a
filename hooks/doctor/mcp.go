package doctor

// The doctor's MCP server check: start the registration Claude Code
// would start and ask it for its tools.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/git-lossless/git-lossless/hooks"
	"github.com/git-lossless/git-lossless/hooks/claudecode"
	"github.com/git-lossless/git-lossless/hooks/settings"
)

// doctorMCPTimeout bounds the MCP server check: Claude Code itself gives
// a stdio server about this long to answer before it marks it failed.
const doctorMCPTimeout = 10 * time.Second

// checkMCPServer starts the MCP server Claude Code would start here (the
// registration it reads first: local, approved project, user) and asks it
// for its tools over stdio, as Claude Code does: initialize,
// notifications/initialized, tools/list. A registration that does not
// answer leaves the model without the archive's tools after a compaction,
// silently (Claude Code only marks the server failed in /mcp), hence a
// FAIL; no registration is a WARN, since the hooks work without it.
func checkMCPServer(ctx context.Context, opt Options, ins []doctorInspected) Check {
	const name = "mcp server"
	l := claudecode.MCPLookupFor(opt.Dir, opt.Getenv)
	if opt.UserMCPConfig != "" {
		l.UserConfig = opt.UserMCPConfig
	}
	l.Programs = append(l.Programs, opt.Executable)
	for _, in := range ins {
		l.Programs = append(l.Programs, in.hooks.Programs...)
	}
	install := "git lossless install claude-code --apply"
	regs, err := claudecode.FindMCPRegistrations(l)
	r, ok := claudecode.EffectiveMCPServer(regs)
	switch {
	case err != nil && !ok:
		return failCheck(name, err.Error()+"; Claude Code cannot read its MCP servers either", "fix the JSON in the file named (backups from install are FILE.bak-* beside it)")
	case !ok && len(regs) > 0:
		p := regs[0]
		why := "not approved yet (Claude Code asks on the next interactive start)"
		if p.Approval == "rejected" {
			why = "listed in disabledMcpjsonServers"
		}
		return warnCheck(name, fmt.Sprintf("registered in %s, but Claude Code does not start it: the project server is %s", p.Path, why),
			"start `claude` in the project and approve the git-lossless server (or list it in \"enabledMcpjsonServers\" in your user settings.json), or register it for the user: `"+install+"`")
	case !ok:
		where := "no user registration"
		if l.UserConfig != "" {
			where = "not in " + l.UserConfig
		}
		return warnCheck(name, fmt.Sprintf("not registered with Claude Code (%s, no .mcp.json naming it): after a compaction the model has only the git lossless commands, not the archive's MCP tools", where), install)
	}
	where := fmt.Sprintf("%s scope, %s", r.Scope, r.Path)
	fixScope := install
	if r.Scope == "project" {
		fixScope = "git lossless install claude-code --scope project --apply"
	}
	if r.Server.Type != "" && r.Server.Type != "stdio" {
		return warnCheck(name, fmt.Sprintf("%q in %s is a %s server, not git-lossless's stdio server", settings.MCPServerName, where, r.Server.Type),
			fmt.Sprintf("`claude mcp remove %s -s %s`, then `%s`", settings.MCPServerName, r.Scope, fixScope))
	}
	if !r.Ours {
		return warnCheck(name, fmt.Sprintf("%q in %s runs %q, not `git-lossless mcp`: not checked", settings.MCPServerName, where, r.Server.Command),
			fmt.Sprintf("`claude mcp remove %s -s %s`, then `%s`", settings.MCPServerName, r.Scope, fixScope))
	}
	timeout := opt.MCPTimeout
	if timeout <= 0 {
		timeout = doctorMCPTimeout
	}
	line := strings.Join(append([]string{settings.Quote(r.Server.Command)}, quoteAll(r.Server.Args)...), " ")
	tools, info, err := mcpListTools(ctx, r.Server, opt, timeout)
	if err != nil {
		return failCheck(name, fmt.Sprintf("`%s` (%s) %v", line, where, err),
			"run `"+line+"` by hand to see why (it speaks MCP on stdin/stdout); `"+fixScope+"` rewrites the registration with this git-lossless")
	}
	detail := fmt.Sprintf("`%s` (%s) started and answered tools/list: %s", line, where, doctorCount(len(tools), "tool"))
	if len(tools) > 0 {
		detail += " (" + doctorList(tools) + ")"
	}
	if info != "" {
		detail += "; server " + info
	}
	if len(tools) == 0 {
		return failCheck(name, detail+": the model would get no archive tools", "`"+fixScope+"` with a git-lossless that has the mcp command")
	}
	return okCheck(name, detail)
}

func quoteAll(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = settings.Quote(a)
	}
	return out
}

// mcpListTools starts srv in opt.Dir (Claude Code starts stdio servers in
// the session's directory) with the environment Claude Code would give
// it (this process's, HOME, PATH and CLAUDE_CONFIG_DIR as opt.Getenv has
// them, then the entry's env) and returns the names of its tools and
// "NAME VERSION" from its initialize answer. Its stderr ends the error
// when it fails.
func mcpListTools(ctx context.Context, srv settings.MCPServer, opt Options, timeout time.Duration) ([]string, string, error) {
	prog := srv.Command
	if !strings.ContainsRune(prog, filepath.Separator) {
		p, found := settings.LookPath(prog, opt.Getenv("PATH"))
		if !found {
			return nil, "", fmt.Errorf("cannot start: %s not found on PATH", prog)
		}
		prog = p
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, prog, srv.Args...)
	cmd.Dir = opt.Dir
	env := os.Environ()
	for _, k := range []string{"HOME", "PATH", "CLAUDE_CONFIG_DIR"} {
		if v := opt.Getenv(k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	for k, v := range srv.Env {
		env = append(env, k+"="+v)
	}
	cmd.Env = env
	stderr := &tailBuffer{max: 600}
	cmd.Stderr = stderr
	cmd.WaitDelay = 2 * time.Second
	fail := func(step string, err error) ([]string, string, error) {
		if ctx.Err() != nil {
			err = fmt.Errorf("no answer within %s", timeout)
		}
		if t := strings.TrimSpace(stderr.String()); t != "" {
			return nil, "", fmt.Errorf("%s: %v; its stderr: %s", step, err, hooks.LogLine(t))
		}
		return nil, "", fmt.Errorf("%s: %v", step, err)
	}
	client := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "git-lossless-doctor", Version: opt.Version}, nil)
	cs, err := client.Connect(ctx, &mcpsdk.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, nil)
	if err != nil {
		return fail("failed to initialize", err)
	}
	var info string
	if ir := cs.InitializeResult(); ir != nil && ir.ServerInfo != nil {
		info = strings.TrimSpace(ir.ServerInfo.Name + " " + ir.ServerInfo.Version)
	}
	var names []string
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			cs.Close()
			return fail("tools/list failed", err)
		}
		names = append(names, t.Name)
	}
	cs.Close()
	return names, info, nil
}

// tailBuffer keeps the last max bytes written to it (a child's stderr).
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) > b.max {
		b.buf = append(b.buf[:0], b.buf[len(b.buf)-b.max:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}
