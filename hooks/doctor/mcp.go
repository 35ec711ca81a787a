package doctor

// The doctor's MCP server check: start the registration Claude Code
// would start and ask it for its tools.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

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
//
// It speaks JSON-RPC over stdio itself (mcpClient), not through the MCP
// SDK: the doctor is part of git-lossless, which links no SDK (its
// initialisation would cost every command; see cmd/git-lossless-mcp), and
// three messages need none.
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
	c, err := startMCPClient(ctx, cmd)
	if err != nil {
		return fail("cannot start", err)
	}
	defer c.close()
	var init struct {
		ServerInfo *struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"serverInfo"`
	}
	if err := c.call("initialize", map[string]any{
		"protocolVersion": mcpProtocolVersion,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]string{"name": "git-lossless-doctor", "version": opt.Version},
	}, &init); err != nil {
		return fail("failed to initialize", err)
	}
	var info string
	if init.ServerInfo != nil {
		info = strings.TrimSpace(init.ServerInfo.Name + " " + init.ServerInfo.Version)
	}
	if err := c.notify("notifications/initialized"); err != nil {
		return fail("failed to initialize", err)
	}
	var names []string
	cursor := ""
	for page := 0; ; page++ {
		if page == mcpMaxPages {
			return fail("tools/list failed", fmt.Errorf("more than %d pages", mcpMaxPages))
		}
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		var res struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
			NextCursor string `json:"nextCursor"`
		}
		if err := c.call("tools/list", params, &res); err != nil {
			return fail("tools/list failed", err)
		}
		for _, t := range res.Tools {
			names = append(names, t.Name)
		}
		if cursor = res.NextCursor; cursor == "" {
			break
		}
	}
	return names, info, nil
}

// mcpProtocolVersion is the MCP version the doctor asks for: the last one
// opened by initialize (2025-11-25; later versions negotiate per request,
// and servers answer initialize with the one they speak).
const mcpProtocolVersion = "2025-11-25"

// mcpMaxPages bounds tools/list's pages (a server that hands out cursors
// forever is not answering).
const mcpMaxPages = 100

// mcpMaxFrame bounds one line the server writes (a tools/list answer is
// tens of kilobytes).
const mcpMaxFrame = 16 << 20

// mcpClient is the client side of MCP's stdio transport, as much as the
// doctor needs: JSON-RPC 2.0 messages, one per line, requests answered
// in order. Whatever else the server writes in between is skipped: its
// notifications (logging, list changes), and its requests to the client
// (roots, sampling), answered "method not found" since the doctor
// declares no capability.
type mcpClient struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    io.ReadCloser
	r      *bufio.Reader
	nextID int
	stop   func() bool
}

// startMCPClient starts cmd with pipes on its stdin and stdout. When ctx
// ends, the stdout pipe is closed so a read waiting on a server that
// never answers returns (the process is killed too, but a program it
// started may hold the pipe open).
func startMCPClient(ctx context.Context, cmd *exec.Cmd) (*mcpClient, error) {
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &mcpClient{cmd: cmd, in: in, out: out, r: bufio.NewReader(out)}
	c.stop = context.AfterFunc(ctx, func() { out.Close() })
	return c, nil
}

// mcpMessage is a JSON-RPC 2.0 message of any kind.
type mcpMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  any             `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

func (c *mcpClient) send(m mcpMessage) error {
	m.JSONRPC = "2.0"
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if _, err := c.in.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("write to the server: %w", err)
	}
	return nil
}

func (c *mcpClient) notify(method string) error {
	return c.send(mcpMessage{Method: method})
}

// call sends a request and decodes its result into res.
func (c *mcpClient) call(method string, params, res any) error {
	c.nextID++
	id := json.RawMessage(strconv.Itoa(c.nextID))
	if err := c.send(mcpMessage{ID: id, Method: method, Params: params}); err != nil {
		return err
	}
	for {
		line, err := c.readLine()
		if err != nil {
			return err
		}
		var m mcpMessage
		if err := json.Unmarshal(line, &m); err != nil {
			return fmt.Errorf("the server wrote %.80q, not a JSON-RPC message", line)
		}
		switch {
		case m.Method != "" && len(m.ID) > 0: // a request of the server's
			if err := c.send(mcpMessage{ID: m.ID, Error: &struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			}{-32601, "method not found"}}); err != nil {
				return err
			}
		case m.Method != "": // a notification
		case string(m.ID) != string(id):
			return fmt.Errorf("an answer to request %s, expected %s", m.ID, id)
		case m.Error != nil:
			return fmt.Errorf("%s (JSON-RPC error %d)", m.Error.Message, m.Error.Code)
		default:
			if err := json.Unmarshal(m.Result, res); err != nil {
				return fmt.Errorf("its %s result: %w", method, err)
			}
			return nil
		}
	}
}

// readLine reads one line of the server's output, blank lines skipped.
func (c *mcpClient) readLine() ([]byte, error) {
	var line []byte
	for {
		chunk, err := c.r.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > mcpMaxFrame {
			return nil, fmt.Errorf("a message over %d bytes", mcpMaxFrame)
		}
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF && len(bytes.TrimSpace(line)) == 0:
			return nil, errors.New("the server closed its output (exited?)")
		case err != nil && err != io.EOF:
			return nil, fmt.Errorf("read the server's output: %w", err)
		}
		if t := bytes.TrimSpace(line); len(t) > 0 {
			return t, nil
		}
		line = line[:0]
	}
}

// close ends the session as the stdio transport says: stdin closed, then
// the server has a moment to exit before it is killed. Its exit status
// says nothing more: it answered, or the error already says why not.
func (c *mcpClient) close() {
	c.in.Close()
	done := make(chan struct{})
	go func() {
		c.cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		c.cmd.Process.Kill()
		<-done
	}
	c.stop()
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
