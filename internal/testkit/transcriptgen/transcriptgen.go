// Package transcriptgen generates large, realistic Claude Code transcripts
// for tests and benchmarks (Go benchmarks and `git lossless bench hooks`,
// `bench recall`, `bench secrets`). Lines follow the shapes Claude Code
// 2.1.328 writes (see hooks/testdata/claude-code-2.1.328): queue and
// bookkeeping lines, api-request-shape / api-request-blob / api-request
// lines, prompt_snapshot and listing attachments (the big lines a sweep
// skips), user prompts, assistant tool calls and their results (Read full
// and partial, Edit with originalFile and structuredPatch, MultiEdit,
// Write, Bash, Grep), a subagent whose results carry no toolUseResult
// (numbered text only, as subagent transcripts have) and compactions with
// their boundary, summary and re-attached files. File contents come from
// internal/testkit/benchdata and are kept consistent: every Read shows the
// file as the earlier Writes and Edits left it.
//
// It is a fixture, not part of git-lossless: only tests, the demo and the
// bench commands of cmd/git-lossless may import it, never a production
// package (internal/layoutcheck enforces that). It imports the standard
// library and internal/testkit/benchdata, not testing, so the bench
// commands can link it.
package transcriptgen

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/git-lossless/git-lossless/internal/jsonscan"
	"github.com/git-lossless/git-lossless/internal/testkit/benchdata"
)

// Options configures GenerateWith.
type Options struct {
	Seed        int64
	TargetBytes int    // the main transcript ends at the first line boundary at or past it
	Root        string // project directory (absolute); default /home/dev/project
	SessionID   string // default: derived from Seed
	// Subagent, when set, receives the subagent's lines (as Claude Code
	// writes them to <session>/subagents/agent-<id>.jsonl); when nil they
	// are written into the main transcript (isSidechain, agentId set).
	Subagent io.Writer
	// Files is the number of files in the generated project (default 150).
	Files int
	// Secrets, when set, adds an `env` call to the first turn and makes
	// about one Bash call in 25 an `env`, whose output holds made-up credentials (a GitHub token, an AWS key pair,
	// a password), as real sessions do: benchmarks of redaction need
	// something to redact. Off, the bytes are what they always were.
	Secrets bool
}

// Generate writes a realistic transcript of about targetBytes
// to w, the same bytes for the same seed.
func Generate(w io.Writer, seed int64, targetBytes int) error {
	return GenerateWith(w, Options{Seed: seed, TargetBytes: targetBytes})
}

// SubagentID is the agent id of the generated transcripts'
// subagent for a seed.
func SubagentID(seed int64) string {
	r := rand.New(rand.NewPCG(uint64(seed), 0xa9e17))
	return fmt.Sprintf("a%016x", r.Uint64())
}

// GenerateWith writes a transcript as opt says.
func GenerateWith(w io.Writer, opt Options) error {
	if opt.TargetBytes <= 0 {
		return errors.New("transcript generator: target size must be positive")
	}
	if opt.Root == "" {
		opt.Root = "/home/dev/project"
	}
	if opt.Files <= 0 {
		opt.Files = 150
	}
	g := &tgen{
		r:      rand.New(rand.NewPCG(uint64(opt.Seed), 0x7ac5c21f)),
		seed:   uint64(opt.Seed),
		opt:    opt,
		ts:     time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC).Add(time.Duration(opt.Seed%1000) * time.Hour),
		target: int64(opt.TargetBytes),
	}
	g.main = &tgenOut{w: bufio.NewWriterSize(w, 1<<20)}
	g.sub = g.main
	if opt.Subagent != nil {
		g.sub = &tgenOut{w: bufio.NewWriterSize(opt.Subagent, 1<<20)}
	}
	g.session = opt.SessionID
	if g.session == "" {
		g.session = g.uuid()
	}
	g.agentID = SubagentID(opt.Seed)
	g.setup()
	g.run()
	if g.err != nil {
		return g.err
	}
	if err := g.main.w.Flush(); err != nil {
		return err
	}
	if g.sub != g.main {
		return g.sub.w.Flush()
	}
	return nil
}

// tobj is a JSON object with ordered members.
type tobj []tkv

type tkv struct {
	k string
	v any
}

type tgenOut struct {
	w   *bufio.Writer
	n   int64
	buf []byte
}

type tgenFile struct {
	path    string
	content string
}

type tgen struct {
	r       *rand.Rand
	seed    uint64
	opt     Options
	main    *tgenOut
	sub     *tgenOut
	ts      time.Time
	target  int64
	session string
	agentID string
	err     error

	parent     string // uuid of the previous conversation line (main)
	subParent  string
	promptID   string
	msgN       int
	files      []tgenFile
	nextFile   int
	recent     []int
	prose      []string
	tools      []any // api-request-shape tools
	snapTools  []any // prompt_snapshot tools
	system     []any
	didSub     bool
	compacts   int
	turns      int
	lastReqID  string
	inSubagent bool
	didEnv     bool // Secrets: the first turn's env call was written
}

var tgenWords = strings.Fields(`the agent file tool result read edit write session context user model
request response change review test build check update line value error path store archive commit batch
event version content output input command shell task plan step report summary guard history
should must never always when before after because while unless only every each other same new old`)

func (g *tgen) setup() {
	for i := range g.opt.Files {
		g.files = append(g.files, tgenFile{path: g.filePath(i), content: string(benchdata.Source(g.seed, i))})
	}
	g.nextFile = len(g.files)
	for range 24 {
		g.prose = append(g.prose, g.sentences(4+g.r.IntN(10)))
	}
	names := []string{"Agent", "Bash", "Edit", "Glob", "Grep", "MultiEdit", "NotebookEdit", "Read", "Skill",
		"TaskCreate", "TaskList", "TaskUpdate", "TodoWrite", "ToolSearch", "WebFetch", "WebSearch", "Write"}
	for _, n := range names {
		desc := g.sentences(6 + g.r.IntN(24))
		props := tobj{}
		for j := range 2 + g.r.IntN(5) {
			props = append(props, tkv{fmt.Sprintf("param_%d", j), tobj{{"description", g.sentences(1 + g.r.IntN(4))}, {"type", "string"}}})
		}
		schema := tobj{{"$schema", "https://json-schema.org/draft/2020-12/schema"}, {"type", "object"},
			{"properties", props}, {"required", []any{"param_0"}}, {"additionalProperties", false}}
		g.tools = append(g.tools, tobj{{"name", n}, {"description", desc}, {"input_schema", schema}})
		g.snapTools = append(g.snapTools, tobj{{"name", n}, {"description", desc},
			{"schema", tobj{{"name", n}, {"description", desc}, {"input_schema", schema}}}})
	}
	g.system = []any{
		tobj{{"type", "text"}, {"text", "You are a Claude agent, built on Anthropic's Claude Agent SDK."}},
		tobj{{"type", "text"}, {"text", strings.Join(g.prose[:14], "\n\n")}},
	}
}

func (g *tgen) filePath(i int) string {
	dirs := []string{"cmd/app", "internal/store", "internal/index", "internal/seal", "pkg/api", "pkg/client", "docs", "scripts"}
	d := dirs[i%len(dirs)]
	ext := ".go"
	switch d {
	case "docs":
		ext = ".md"
	case "scripts":
		ext = ".sh"
	}
	return g.opt.Root + "/" + d + "/file_" + strconv.Itoa(i) + ext
}

func (g *tgen) sentences(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		k := 6 + g.r.IntN(14)
		for j := range k {
			w := tgenWords[g.r.IntN(len(tgenWords))]
			if j == 0 {
				w = strings.ToUpper(w[:1]) + w[1:]
			} else {
				b.WriteByte(' ')
			}
			b.WriteString(w)
		}
		b.WriteByte('.')
	}
	return b.String()
}

func (g *tgen) hex(n int) string {
	const digits = "0123456789abcdef"
	b := make([]byte, n)
	for i := range b {
		b[i] = digits[g.r.IntN(16)]
	}
	return string(b)
}

func (g *tgen) uuid() string {
	h := g.hex(32)
	return h[:8] + "-" + h[8:12] + "-4" + h[13:16] + "-a" + h[17:20] + "-" + h[20:]
}

func (g *tgen) toolID() string {
	const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	b := []byte("toolu_01")
	for range 22 {
		b = append(b, alnum[g.r.IntN(len(alnum))])
	}
	return string(b)
}

func (g *tgen) tick(maxMS int) string {
	g.ts = g.ts.Add(time.Duration(1+g.r.IntN(maxMS)) * time.Millisecond)
	return g.ts.Format("2006-01-02T15:04:05.000Z")
}

func (g *tgen) done() bool { return g.err != nil || g.main.n >= g.target }

// emit writes one line.
func (g *tgen) emit(out *tgenOut, o tobj) {
	if g.err != nil {
		return
	}
	out.buf = tgenAppend(out.buf[:0], o)
	out.buf = append(out.buf, '\n')
	n, err := out.w.Write(out.buf)
	out.n += int64(n)
	if err != nil {
		g.err = err
	}
	if cap(out.buf) > 4<<20 {
		out.buf = nil
	}
}

func tgenAppend(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...)
	case string:
		return jsonscan.AppendQuote(b, x)
	case bool:
		return strconv.AppendBool(b, x)
	case int:
		return strconv.AppendInt(b, int64(x), 10)
	case int64:
		return strconv.AppendInt(b, x, 10)
	case float64:
		return strconv.AppendFloat(b, x, 'g', -1, 64)
	case json.RawMessage:
		return append(b, x...)
	case tobj:
		b = append(b, '{')
		for i, kv := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonscan.AppendQuote(b, kv.k)
			b = append(b, ':')
			b = tgenAppend(b, kv.v)
		}
		return append(b, '}')
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = tgenAppend(b, e)
		}
		return append(b, ']')
	case []string:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonscan.AppendQuote(b, e)
		}
		return append(b, ']')
	}
	panic(fmt.Sprintf("transcript generator: unsupported value %T", v))
}

// ---- line shapes ----

func (g *tgen) out() *tgenOut {
	if g.inSubagent {
		return g.sub
	}
	return g.main
}

func (g *tgen) envTail(o tobj) tobj {
	return append(o, tkv{"userType", "external"}, tkv{"entrypoint", "sdk-cli"}, tkv{"cwd", g.opt.Root},
		tkv{"sessionId", g.session}, tkv{"version", "2.1.328"}, tkv{"gitBranch", "master"})
}

// conv starts a conversation line (parentUuid, isSidechain, agentId).
func (g *tgen) conv(uuid string) tobj {
	var o tobj
	if g.inSubagent {
		o = tobj{{"parentUuid", nilIfEmpty(g.subParent)}, {"isSidechain", true}, {"agentId", g.agentID}}
		g.subParent = uuid
	} else {
		o = tobj{{"parentUuid", nilIfEmpty(g.parent)}, {"isSidechain", false}}
		g.parent = uuid
	}
	return o
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func (g *tgen) simple(typ string, extra ...tkv) {
	o := tobj{{"type", typ}}
	o = append(o, extra...)
	o = append(o, tkv{"sessionId", g.session})
	if g.inSubagent {
		o = append(o, tkv{"agentId", g.agentID})
	}
	g.emit(g.out(), o)
}

func (g *tgen) attachment(a tobj, rendered string) {
	u := g.uuid()
	o := g.conv(u)
	o = append(o, tkv{"attachment", a}, tkv{"type", "attachment"}, tkv{"uuid", u}, tkv{"timestamp", g.tick(3)})
	if rendered != "" {
		o = append(o, tkv{"rendered", []any{tobj{{"content", "<system-reminder>\n" + rendered + "\n</system-reminder>"}}}}, tkv{"renderedRole", "system"})
	}
	g.emit(g.out(), g.envTail(o))
}

func (g *tgen) userText(text string, extra ...tkv) string {
	u := g.uuid()
	o := g.conv(u)
	o = append(o, tkv{"promptId", g.promptID}, tkv{"type", "user"}, tkv{"message", tobj{{"role", "user"}, {"content", text}}})
	o = append(o, extra...)
	o = append(o, tkv{"uuid", u}, tkv{"timestamp", g.tick(40)}, tkv{"permissionMode", "acceptEdits"})
	g.emit(g.out(), g.envTail(o))
	return u
}

var tgenParams = json.RawMessage(`{"model":"claude-opus-5-5","betas":["claude-code-20250219","interleaved-thinking-2025-05-14","context-management-2025-06-27","per-turn-control-2026-07-01","mid-conversation-tool-changes-2026-07-01","thinking-token-count-2026-05-13","advanced-tool-use-2025-11-20","effort-2025-11-24"],"max_tokens":128000,"thinking":{"type":"adaptive","display":"omitted"},"context_management":{"edits":[{"type":"clear_thinking_20251015","keep":"all"}]},"output_config":{"effort":"medium"}}`)

var tgenUsage = json.RawMessage(`{"input_tokens":10,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":5,"output_tokens_details":{"thinking_tokens":0},"server_tool_use":{"web_search_requests":0,"web_fetch_requests":0},"service_tier":"standard","cache_creation":{"ephemeral_1h_input_tokens":0,"ephemeral_5m_input_tokens":0},"inference_geo":"","iterations":[],"speed":"standard","fallback_credit":null}`)

func (g *tgen) apiRequest() {
	g.lastReqID = g.uuid()
	o := tobj{{"type", "api-request"}, {"sessionId", g.session}}
	if g.inSubagent {
		o = append(o, tkv{"agentId", g.agentID})
	}
	o = append(o, tkv{"id", g.lastReqID}, tkv{"timestamp", g.tick(20)}, tkv{"version", "2.1.328"},
		tkv{"querySource", "sdk"}, tkv{"shapeHash", g.hex(64)}, tkv{"params", tgenParams},
		tkv{"keep", g.r.IntN(40)}, tkv{"tail", []string{g.hex(64), g.hex(64)}},
		tkv{"cacheControl", json.RawMessage(`[{"path":["system",0],"value":{"type":"ephemeral"}},{"path":["system",1],"value":{"type":"ephemeral"}}]`)},
		tkv{"requestDigest", g.hex(64)})
	g.emit(g.out(), o)
}

func (g *tgen) apiBlob(role string, content any) {
	o := tobj{{"type", "api-request-blob"}, {"sessionId", g.session}}
	if g.inSubagent {
		o = append(o, tkv{"agentId", g.agentID})
	}
	o = append(o, tkv{"hash", g.hex(64)}, tkv{"message", tobj{{"role", role}, {"content", content}}})
	g.emit(g.out(), o)
}

func (g *tgen) apiShape() {
	o := tobj{{"type", "api-request-shape"}, {"sessionId", g.session}}
	if g.inSubagent {
		o = append(o, tkv{"agentId", g.agentID})
	}
	o = append(o, tkv{"shapeHash", g.hex(64)}, tkv{"timestamp", g.tick(5)}, tkv{"version", "2.1.328"},
		tkv{"shape", tobj{{"system", g.system}, {"tools", g.tools}}})
	g.emit(g.out(), o)
}

func (g *tgen) promptSnapshot(full bool) {
	a := tobj{{"type", "prompt_snapshot"}, {"systemPrompt", g.prose[:10]}}
	if full {
		a = append(a, tkv{"tools", g.snapTools}, tkv{"cliPrefix", "You are a Claude agent, built on Anthropic's Claude Agent SDK."})
	}
	a = append(a, tkv{"reminderFold", false}, tkv{"echoWireToolInputs", false}, tkv{"contextRendering", "announced"})
	g.attachment(a, "")
}

// startup writes what a Claude Code process writes before its first
// request: the listing attachments, a prompt snapshot, the request shape.
func (g *tgen) startup() {
	g.attachment(tobj{{"type", "environment"}, {"snapshot", tobj{{"workingDirectory", g.opt.Root}, {"isWorktree", false}, {"isGitRepo", true},
		{"additionalWorkingDirectories", []any{}}, {"platform", "linux"}, {"shell", "bash"}, {"osVersion", "Linux 6.1.0"}}}},
		"# Environment\nYou have been invoked in the following environment: \n - Primary working directory: "+g.opt.Root)
	g.attachment(tobj{{"type", "model"}, {"identity", tobj{{"modelId", "claude-opus-5-5"}, {"marketingName", "Opus 5.5"}}}},
		"You are powered by the model named Opus 5.5.")
	g.attachment(tobj{{"type", "deferred_tools_delta"}, {"addedNames", []string{"CronCreate", "CronDelete", "Monitor", "WebFetch", "WebSearch"}}}, "")
	g.attachment(tobj{{"type", "agent_listing_delta"}, {"addedLines", []string{g.prose[14], g.prose[15]}}, {"isInitial", true}}, g.prose[14])
	g.attachment(tobj{{"type", "skill_listing"}, {"content", strings.Join(g.prose[16:22], "\n")}, {"skillCount", 13}, {"isInitial", true}},
		strings.Join(g.prose[16:22], "\n"))
	g.simple("atis-latch", tkv{"atis", ""})
	g.promptSnapshot(false)
	g.apiShape()
}

func (g *tgen) assistant(content []any, stop string) string {
	u := g.uuid()
	o := g.conv(u)
	g.msgN++
	o = append(o, tkv{"message", tobj{{"id", "msg_" + strconv.Itoa(g.msgN)}, {"type", "message"}, {"role", "assistant"},
		{"model", "claude-opus-5-5"}, {"content", content}, {"stop_reason", stop}, {"stop_sequence", nil},
		{"usage", tgenUsage}, {"stop_details", nil}}},
		tkv{"apiBlockIndex", 0}, tkv{"requestRef", g.lastReqID}, tkv{"requestedModel", "claude-opus-5-5"},
		tkv{"promptCacheRequested", "5m"}, tkv{"type", "assistant"}, tkv{"uuid", u}, tkv{"timestamp", g.tick(2000)},
		tkv{"effort", "medium"}, tkv{"perTurnEffort", "medium"}, tkv{"madeBy", "model"})
	g.emit(g.out(), g.envTail(o))
	return u
}

// toolCall writes a request, the assistant's tool_use and the result.
// tur is the toolUseResult (omitted in a subagent, as Claude Code does).
func (g *tgen) toolCall(name string, input tobj, result any, tur any) {
	g.apiRequest()
	id := g.toolID()
	au := g.assistant([]any{tobj{{"type", "tool_use"}, {"id", id}, {"name", name}, {"input", input}}}, "tool_use")
	if g.r.IntN(3) == 0 {
		g.simple("tools-used", tkv{"tools", []string{name}})
	}
	u := g.uuid()
	o := g.conv(u)
	o = append(o, tkv{"promptId", g.promptID}, tkv{"type", "user"},
		tkv{"message", tobj{{"role", "user"}, {"content", []any{tobj{{"tool_use_id", id}, {"type", "tool_result"}, {"content", result}}}}}},
		tkv{"uuid", u}, tkv{"timestamp", g.tick(300)})
	if tur != nil && !g.inSubagent {
		o = append(o, tkv{"toolUseResult", tur})
	}
	o = append(o, tkv{"sourceToolAssistantUUID", au},
		tkv{"permissionDecision", tobj{{"decision", "accept"}, {"source", "config"}, {"reasonType", "mode"}}})
	g.emit(g.out(), g.envTail(o))
	if g.r.IntN(2) == 0 {
		// The request that follows carries the result again, as a blob.
		if s, ok := result.(string); ok {
			g.apiBlob("user", []any{tobj{{"type", "text"}, {"text", "<system-reminder>\nResult of calling the " + name + " tool:\n" + s + "\n</system-reminder>"}}})
		}
	}
}

func Numbered(lines []string, start int) string {
	var b strings.Builder
	for i, l := range lines {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(strconv.Itoa(start + i))
		b.WriteByte('\t')
		b.WriteString(l)
	}
	return b.String()
}

func (g *tgen) touch(i int) {
	for k, v := range g.recent {
		if v == i {
			g.recent = append(g.recent[:k], g.recent[k+1:]...)
			break
		}
	}
	g.recent = append(g.recent, i)
	if len(g.recent) > 8 {
		g.recent = g.recent[1:]
	}
}

func (g *tgen) pickFile() int {
	if len(g.recent) > 0 && g.r.IntN(3) == 0 {
		return g.recent[g.r.IntN(len(g.recent))]
	}
	return g.r.IntN(len(g.files))
}

func (g *tgen) read(partial bool) {
	i := g.pickFile()
	f := g.files[i]
	lines := strings.Split(f.content, "\n")
	start, n := 1, len(lines)
	input := tobj{{"file_path", f.path}}
	if partial && len(lines) > 10 {
		start = 1 + g.r.IntN(len(lines)-5)
		n = min(1+g.r.IntN(40), len(lines)-start+1)
		input = append(input, tkv{"offset", start}, tkv{"limit", n})
	}
	shown := lines[start-1 : start-1+n]
	tur := tobj{{"type", "text"}, {"file", tobj{{"filePath", f.path}, {"content", strings.Join(shown, "\n")},
		{"numLines", n}, {"startLine", start}, {"totalLines", len(lines)}}}}
	g.toolCall("Read", input, Numbered(shown, start), tur)
	g.touch(i)
}

// editable returns a line of content that occurs once and can be edited.
func (g *tgen) editable(content string) (int, string, bool) {
	lines := strings.Split(content, "\n")
	for range 20 {
		k := g.r.IntN(len(lines))
		l := lines[k]
		if len(strings.TrimSpace(l)) >= 8 && strings.Count(content, l) == 1 {
			return k, l, true
		}
	}
	return 0, "", false
}

func patchHunk(lines []string, k int, old, nw string) tobj {
	lo, hi := max(0, k-3), min(len(lines)-1, k+3)
	if lines[len(lines)-1] == "" && hi == len(lines)-1 && hi > k {
		hi-- // the empty segment after a final newline is not a line
	}
	var hl []string
	for j := lo; j <= hi; j++ {
		if j == k {
			hl = append(hl, "-"+old, "+"+nw)
		} else {
			hl = append(hl, " "+lines[j])
		}
	}
	n := hi - lo + 1
	return tobj{{"oldStart", lo + 1}, {"oldLines", n}, {"newStart", lo + 1}, {"newLines", n}, {"lines", hl}}
}

func (g *tgen) edit() {
	i := g.pickFile()
	f := &g.files[i]
	k, old, ok := g.editable(f.content)
	if !ok {
		g.read(false)
		return
	}
	nw := old + " // " + tgenWords[g.r.IntN(len(tgenWords))]
	orig := f.content
	f.content = strings.Replace(orig, old, nw, 1)
	newLines := strings.Split(f.content, "\n")
	tur := tobj{{"filePath", f.path}, {"oldString", old}, {"newString", nw}, {"originalFile", orig},
		{"structuredPatch", []any{patchHunk(newLines, k, old, nw)}}, {"userModified", false}, {"replaceAll", false}}
	g.toolCall("Edit", tobj{{"replace_all", false}, {"file_path", f.path}, {"old_string", old}, {"new_string", nw}},
		"The file "+f.path+" has been updated successfully. (file state is current in your context — no need to Read it back)", tur)
	g.touch(i)
}

func (g *tgen) multiEdit() {
	i := g.pickFile()
	f := &g.files[i]
	orig := f.content
	content := orig
	type change struct {
		k       int
		old, nw string
	}
	var edits []any
	var changes []change
	for range 2 {
		k, old, ok := g.editable(content)
		if !ok {
			continue
		}
		nw := "\t// " + g.sentences(1) + " " + old // one line: line numbers stay
		content = strings.Replace(content, old, nw, 1)
		edits = append(edits, tobj{{"old_string", old}, {"new_string", nw}, {"replace_all", false}})
		changes = append(changes, change{k, old, nw})
	}
	if len(edits) == 0 {
		g.read(false)
		return
	}
	final := strings.Split(content, "\n")
	var hunks []any
	for _, c := range changes {
		hunks = append(hunks, patchHunk(final, c.k, c.old, c.nw))
	}
	f.content = content
	tur := tobj{{"filePath", f.path}, {"edits", edits}, {"originalFile", orig}, {"structuredPatch", hunks}, {"userModified", false}}
	g.toolCall("MultiEdit", tobj{{"file_path", f.path}, {"edits", edits}},
		"Applied "+strconv.Itoa(len(edits))+" edits to "+f.path, tur)
	g.touch(i)
}

func (g *tgen) write() {
	var i int
	typ := "update"
	if g.r.IntN(2) == 0 {
		i = len(g.files)
		g.files = append(g.files, tgenFile{path: g.filePath(g.nextFile)})
		g.nextFile++
		typ = "create"
	} else {
		i = g.pickFile()
	}
	f := &g.files[i]
	var orig any
	if typ == "update" {
		orig = f.content
	}
	f.content = string(benchdata.Source(g.seed+1, g.nextFile+g.r.IntN(1<<20)))
	msg := "File created successfully at: " + f.path
	if typ == "update" {
		msg = "The file " + f.path + " has been updated successfully."
	}
	tur := tobj{{"type", typ}, {"filePath", f.path}, {"content", f.content}, {"structuredPatch", []any{}}, {"originalFile", orig}, {"userModified", false}}
	g.toolCall("Write", tobj{{"file_path", f.path}, {"content", f.content}}, msg+" (file state is current in your context — no need to Read it back)", tur)
	g.touch(i)
}

func (g *tgen) bash() {
	if g.opt.Secrets && g.r.IntN(25) == 0 {
		g.envCall()
		return
	}
	cmds := []string{"go test ./...", "go vet ./...", "git status --short", "ls -la", "go build ./..."}
	c := cmds[g.r.IntN(len(cmds))]
	var out strings.Builder
	for range 2 + g.r.IntN(30) {
		out.WriteString(g.files[g.r.IntN(len(g.files))].path)
		out.WriteString(": ok\n")
	}
	g.toolCall("Bash", tobj{{"command", c}, {"description", "Run " + c}}, out.String(),
		tobj{{"stdout", out.String()}, {"stderr", ""}, {"interrupted", false}, {"isImage", false}})
}

// envCall is a Bash `env` whose output holds made-up credentials.
func (g *tgen) envCall() {
	const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	pick := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = alnum[g.r.IntN(len(alnum))]
		}
		return string(b)
	}
	var out strings.Builder
	for _, kv := range []string{"SHELL=/bin/bash", "HOME=/home/dev", "LANG=C.UTF-8", "TERM=xterm-256color", "USER=dev",
		"PATH=/usr/local/go/bin:/usr/local/bin:/usr/bin:/bin", "PWD=" + g.opt.Root, "EDITOR=vim", "GOPATH=/home/dev/go",
		"GITHUB_TOKEN=gh" + "p_" + pick(36), "AWS_ACCESS_KEY_ID=AK" + "IA" + strings.ToUpper(pick(16)),
		"AWS_SECRET_ACCESS_KEY=" + pick(40), "PGPASSWORD=" + pick(14), "SHLVL=1", "_=/usr/bin/env"} {
		out.WriteString(kv)
		out.WriteByte('\n')
	}
	g.toolCall("Bash", tobj{{"command", "env"}, {"description", "Show the environment"}}, out.String(),
		tobj{{"stdout", out.String()}, {"stderr", ""}, {"interrupted", false}, {"isImage", false}})
}

func (g *tgen) grep() {
	var names []string
	for range 1 + g.r.IntN(12) {
		names = append(names, g.files[g.r.IntN(len(g.files))].path)
	}
	pat := tgenWords[g.r.IntN(len(tgenWords))]
	g.toolCall("Grep", tobj{{"pattern", pat}, {"path", g.opt.Root}, {"output_mode", "files_with_matches"}},
		"Found "+strconv.Itoa(len(names))+" files\n"+strings.Join(names, "\n"),
		tobj{{"mode", "files_with_matches"}, {"numFiles", len(names)}, {"filenames", names}})
}

func (g *tgen) oneTool() {
	switch k := g.r.IntN(100); {
	case k < 38:
		g.read(false)
	case k < 48:
		g.read(true)
	case k < 66:
		g.edit()
	case k < 70:
		g.multiEdit()
	case k < 78:
		g.write()
	case k < 90:
		g.bash()
	default:
		g.grep()
	}
}

func (g *tgen) subagentRun() {
	g.didSub = true
	g.apiRequest()
	id := g.toolID()
	au := g.assistant([]any{tobj{{"type", "tool_use"}, {"id", id}, {"name", "Agent"},
		{"input", tobj{{"description", "look around"}, {"prompt", "SUBTASK survey the store package"}, {"subagent_type", "general-purpose"}}}}}, "tool_use")
	u := g.uuid()
	o := g.conv(u)
	text := "Async agent launched successfully.\nagentId: " + g.agentID + " (internal ID - do not mention to user.)"
	o = append(o, tkv{"promptId", g.promptID}, tkv{"type", "user"},
		tkv{"message", tobj{{"role", "user"}, {"content", []any{tobj{{"tool_use_id", id}, {"type", "tool_result"}, {"content", []any{tobj{{"type", "text"}, {"text", text}}}}}}}}},
		tkv{"uuid", u}, tkv{"timestamp", g.tick(50)},
		tkv{"toolUseResult", tobj{{"isAsync", true}, {"status", "async_launched"}, {"agentId", g.agentID}, {"description", "look around"}}},
		tkv{"sourceToolAssistantUUID", au})
	g.emit(g.main, g.envTail(o))

	g.inSubagent = true
	g.userText("SUBTASK survey the store package")
	g.promptSnapshot(false)
	g.apiShape()
	for range 6 + g.r.IntN(6) {
		switch g.r.IntN(4) {
		case 0:
			g.read(true)
		case 1:
			g.edit()
		default:
			g.read(false)
		}
	}
	g.apiRequest()
	g.assistant([]any{tobj{{"type", "text"}, {"text", "sub done: " + g.sentences(2)}}}, "end_turn")
	g.inSubagent = false
	g.userText("<task-notification>\n<task-id>"+g.agentID+"</task-id>\n<tool-use-id>"+id+"</tool-use-id>\n<status>completed</status>\n</task-notification>",
		tkv{"origin", tobj{{"kind", "task-notification"}}})
}

func (g *tgen) compact() {
	g.compacts++
	g.simple("mode", tkv{"mode", "normal"})
	bu := g.uuid()
	g.emit(g.main, tobj{{"parentUuid", nil}, {"logicalParentUuid", g.parent}, {"isSidechain", false}, {"type", "system"},
		{"subtype", "compact_boundary"}, {"content", "Conversation compacted"}, {"isMeta", false}, {"timestamp", g.tick(5000)},
		{"uuid", bu}, {"level", "info"}, {"compactMetadata", tobj{{"trigger", []string{"manual", "auto"}[g.r.IntN(2)]},
			{"preTokens", 150000 + g.r.IntN(40000)}, {"durationMs", 117}, {"postTokens", 2762}}}})
	g.parent = bu
	g.userText("This session is being continued from a previous conversation that ran out of context. The summary below covers the earlier portion of the conversation.\n\n"+g.sentences(30),
		tkv{"isVisibleInTranscriptOnly", true}, tkv{"isCompactSummary", true})
	g.userText("<local-command-caveat>The command below was run directly in Claude Code, not sent to you as a request.</local-command-caveat>", tkv{"isMeta", true})
	g.userText("<command-name>/compact</command-name>\n            <command-message>compact</command-message>\n            <command-args></command-args>")
	for k := len(g.recent) - 1; k >= 0 && k >= len(g.recent)-5; k-- {
		f := g.files[g.recent[k]]
		n := strings.Count(f.content, "\n") + 1
		g.attachment(tobj{{"type", "file"}, {"filename", f.path}, {"content", tobj{{"type", "text"}, {"file", tobj{
			{"filePath", f.path}, {"content", f.content}, {"numLines", n}, {"startLine", 1}, {"totalLines", n}}}}},
			{"displayPath", strings.TrimPrefix(f.path, g.opt.Root+"/")}}, "")
	}
	g.attachment(tobj{{"type", "skill_listing"}, {"content", strings.Join(g.prose[16:22], "\n")}, {"skillCount", 13}}, strings.Join(g.prose[16:22], "\n"))
}

func (g *tgen) turn() {
	g.turns++
	g.promptID = g.uuid()
	g.simple("queue-operation", tkv{"operation", "enqueue"}, tkv{"timestamp", g.tick(1000)}, tkv{"content", "next step"})
	g.simple("queue-operation", tkv{"operation", "dequeue"}, tkv{"timestamp", g.tick(5)})
	if g.turns%6 == 1 {
		g.startup() // a new process (--resume)
	}
	g.userText(g.sentences(1 + g.r.IntN(4)))
	g.attachment(tobj{{"type", "date"}, {"date", g.ts.Format("2006-01-02")}}, "Today's date is "+g.ts.Format("2006-01-02")+".")
	g.promptSnapshot(true)
	if g.opt.Secrets && !g.didEnv {
		g.didEnv = true
		g.envCall() // even a short transcript has something to redact
	}
	for range 4 + g.r.IntN(12) {
		if g.done() {
			break
		}
		g.oneTool()
		if !g.didSub && g.main.n > g.target/3 {
			g.subagentRun()
		}
	}
	g.apiRequest()
	g.assistant([]any{tobj{{"type", "text"}, {"text", g.sentences(1 + g.r.IntN(5))}}}, "end_turn")
	su := g.uuid()
	g.emit(g.main, g.envTail(append(g.conv(su), tkv{"type", "system"}, tkv{"subtype", "stop_hook_summary"}, tkv{"hookCount", 1},
		tkv{"timestamp", g.tick(30)}, tkv{"uuid", su})))
	g.simple("last-prompt", tkv{"lastPrompt", "next step"}, tkv{"leafUuid", g.parent})
	g.emit(g.main, tobj{{"type", "cost-state"}, {"totalCostUSD", 0.0014 * float64(g.turns)}, {"totalAPIDuration", 204 * g.turns}})
	if g.main.n > g.target*int64(g.compacts+1)/2 && g.main.n < g.target {
		g.compact()
	}
}

func (g *tgen) run() {
	for !g.done() {
		g.turn()
	}
	if g.compacts == 0 && g.err == nil {
		g.compact() // every generated transcript has one
	}
}
