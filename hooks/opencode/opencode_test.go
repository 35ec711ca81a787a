package opencode

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/hooks"
	"github.com/git-lossless/git-lossless/hooks/settings"
	"github.com/git-lossless/git-lossless/hooks/transcript"
)

// readOut is opencode 1.18.33's read output for lines first.. of a file
// (the format the e2e test records from the real CLI).
func readOut(path string, first int, lines []string, footer string) string {
	var b strings.Builder
	b.WriteString("<path>" + path + "</path>\n<type>file</type>\n<content>\n")
	for i, l := range lines {
		b.WriteString(strconv.Itoa(first+i) + ": " + l + "\n")
	}
	b.WriteString("\n" + footer + "\n</content>")
	return b.String()
}

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestReadEvidence: a read is evidence only when the lines shown are the
// file's lines on disk: the whole file (content = the disk bytes, with or
// without a final newline, CRLF kept) or an exact range; never a file
// that changed, a cut line, a directory, or an output of another shape.
func TestReadEvidence(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f.txt")
	cases := []struct {
		name, disk, out string
		ok              bool
		content         string
		partial         bool
		first, n        int64
	}{
		{"full with newline", "a\nb\n", readOut(p, 1, []string{"a", "b"}, "(End of file - total 2 lines)"), true, "a\nb\n", false, 0, 0},
		{"full without newline", "a\nb", readOut(p, 1, []string{"a", "b"}, "(End of file - total 2 lines)"), true, "a\nb", false, 0, 0},
		{"full CRLF", "a\r\nb\r\n", readOut(p, 1, []string{"a", "b"}, "(End of file - total 2 lines)"), true, "a\r\nb\r\n", false, 0, 0},
		{"empty line", "a\n\nc\n", readOut(p, 1, []string{"a", "", "c"}, "(End of file - total 3 lines)"), true, "a\n\nc\n", false, 0, 0},
		{"partial", "one\ntwo\nthree\nfour\nfive\n", readOut(p, 2, []string{"two", "three"}, "(Showing lines 2-3 of 5. Use offset=4 to continue.)"), true, "two\nthree", true, 2, 2},
		{"tail to the end", "one\ntwo\nthree\n", readOut(p, 2, []string{"two", "three"}, "(End of file - total 3 lines)"), true, "two\nthree", true, 2, 2},
		{"changed since", "a\nB\n", readOut(p, 1, []string{"a", "b"}, "(End of file - total 2 lines)"), false, "", false, 0, 0},
		{"grew since", "a\nb\nc\n", readOut(p, 1, []string{"a", "b"}, "(End of file - total 2 lines)"), false, "", false, 0, 0},
		{"cut line", "a\n" + strings.Repeat("x", 3000) + "\n", readOut(p, 1, []string{"a", strings.Repeat("x", 2000) + "... (line truncated to 2000 chars)"}, "(End of file - total 2 lines)"), false, "", false, 0, 0},
		{"total disagrees", "a\nb\n", readOut(p, 1, []string{"a", "b"}, "(End of file - total 3 lines)"), false, "", false, 0, 0},
		{"numbers out of sequence", "a\nb\n", "<path>x</path>\n<type>file</type>\n<content>\n1: a\n3: b\n\n(End of file - total 2 lines)\n</content>", false, "", false, 0, 0},
		{"directory", "a\n", "<path>x</path>\n<type>directory</type>\n<entries>\na\n</entries>", false, "", false, 0, 0},
		{"error text", "a\n", "File not found: x", false, "", false, 0, 0},
		{"extra text after the footer", "a\n", "<path>x</path>\n<type>file</type>\n<content>\n1: a\n\n(End of file - total 1 lines)\nmore\n</content>", false, "", false, 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			write(t, p, c.disk)
			f, ok := ReadEvidence(p, c.out)
			if ok != c.ok {
				t.Fatalf("ok = %v, want %v (%+v)", ok, c.ok, f)
			}
			if !ok {
				return
			}
			if string(f.Content) != c.content || !f.HasContent || f.Partial != c.partial || f.Op != "read" || f.Path != p {
				t.Fatalf("got %+v content %q, want %q partial %v", f, f.Content, c.content, c.partial)
			}
			if c.partial && (f.FirstLine != c.first || f.NumLines != c.n) {
				t.Fatalf("lines %d+%d, want %d+%d", f.FirstLine, f.NumLines, c.first, c.n)
			}
		})
	}
	if _, ok := ReadEvidence(filepath.Join(dir, "missing"), readOut(p, 1, []string{"a"}, "(End of file - total 1 lines)")); ok {
		t.Fatal("a read of a file gone from disk is evidence")
	}
}

// TestDecode: the plugin's payloads to calls; unusable payloads are errors.
func TestDecode(t *testing.T) {
	dir := t.TempDir()
	hello := filepath.Join(dir, "hello.txt")
	write(t, hello, "hello world\n")
	h := New()
	dec := func(ev hooks.HookEvent, s string) (hooks.Call, error) { return h.Decode(ev, strings.NewReader(s)) }
	base := `"session":"ses_1","cwd":"` + dir + `","transcript":"/s/ses_1.jsonl"`

	c, err := dec(hooks.PreToolUse, `{`+base+`,"agent":"ses_2","context_transcript":"/s/ses_1/ses_2.jsonl","tool":"edit","call_id":"c1","args":{"filePath":"hello.txt","oldString":"a","newString":"b"}}`)
	if err != nil || c.Session != "ses_1" || c.Agent != "ses_2" || c.ContextTranscript != "/s/ses_1/ses_2.jsonl" || c.CallID != "c1" ||
		len(c.Files) != 1 || c.Files[0].Path != hello || c.Files[0].Op != "edit" {
		t.Fatalf("pre edit: %+v %v", c, err)
	}
	c, err = dec(hooks.PostToolUse, `{`+base+`,"tool":"write","call_id":"c2","args":{"filePath":"`+hello+`","content":"x\n"}}`)
	if err != nil || len(c.Files) != 1 || !c.Files[0].HasContent || string(c.Files[0].Content) != "x\n" || c.ContextTranscript != "/s/ses_1.jsonl" {
		t.Fatalf("post write: %+v %v", c, err)
	}
	out := readOut(hello, 1, []string{"hello world"}, "(End of file - total 1 lines)")
	c, err = dec(hooks.PostToolUse, `{`+base+`,"tool":"read","call_id":"c3","args":{"filePath":"`+hello+`"},"output":`+quote(out)+`}`)
	if err != nil || len(c.Files) != 1 || string(c.Files[0].Content) != "hello world\n" {
		t.Fatalf("post read: %+v %v", c, err)
	}
	c, err = dec(hooks.PostToolUse, `{`+base+`,"tool":"bash","call_id":"c4","args":{"command":"cat hello.txt"},"output":"hello world\n"}`)
	if err != nil || c.Shell == nil || c.Shell.Command != "cat hello.txt" || !c.Shell.HasOutput || len(c.Files) != 0 {
		t.Fatalf("post bash: %+v %v", c, err)
	}
	pt := `"*** Begin Patch\n*** Update File: hello.txt\n@@\n-hello world\n+x\n*** Add File: new.txt\n+n\n*** End Patch"`
	c, err = dec(hooks.PreToolUse, `{`+base+`,"tool":"apply_patch","call_id":"c6","args":{"patchText":`+pt+`}}`)
	if err != nil || c.ToolErr != nil || len(c.Files) != 1 || c.Files[0].Path != hello {
		t.Fatalf("pre apply_patch (the update needs hello.txt seen, the add nothing): %+v %v", c, err)
	}
	c, err = dec(hooks.PostToolUse, `{`+base+`,"tool":"apply_patch","call_id":"c6","args":{"patchText":`+pt+`}}`)
	if err != nil || len(c.Files) != 2 || c.Files[1].Path != filepath.Join(dir, "new.txt") || c.Files[0].HasContent {
		t.Fatalf("post apply_patch (both written, read from disk): %+v %v", c, err)
	}
	c, err = dec(hooks.PreToolUse, `{`+base+`,"tool":"edit","call_id":"c5","args":{}}`)
	if err != nil || c.ToolErr == nil {
		t.Fatalf("edit without filePath: %+v %v", c, err)
	}
	for _, bad := range []string{``, `[]`, `{}`, `{"session":""}`, `{"session":"a/b"}`, `{"session":"s","agent":"../x"}`,
		`{"session":"s","cwd":"rel"}`, `{"session":"s","transcript":"rel.jsonl"}`, `{"session":1}`} {
		if _, err := dec(hooks.PreToolUse, bad); err == nil {
			t.Errorf("payload %q decoded", bad)
		}
	}
	if h.Event("tool.execute.before") != hooks.PreToolUse || h.Event("session-end") != hooks.SessionEnd || h.Event("nope") != "" {
		t.Error("event names")
	}
	if got := string(h.Reply(hooks.Call{}, hooks.Reply{Deny: "no"})); got != "{\"deny\":\"no\"}\n" {
		t.Errorf("deny reply %q", got)
	}
	if got := string(h.Reply(hooks.Call{}, hooks.Reply{Context: "ws"})); got != "{\"context\":\"ws\"}\n" {
		t.Errorf("context reply %q", got)
	}
	if h.Reply(hooks.Call{}, hooks.Reply{}) != nil {
		t.Error("empty reply printed something")
	}
}

func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '\n':
			b.WriteString(`\n`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// TestReadTranscript: the plugin's session log to items; a last line
// without its newline is left for the next read.
func TestReadTranscript(t *testing.T) {
	log := `{"v":1,"type":"user","id":"prt_1","session":"ses_1","ts":1000,"cwd":"/w","text":"do it"}
{"v":1,"type":"tool","id":"call_1","session":"ses_1","ts":2000,"cwd":"/w","tool":"read","args":{"filePath":"a.txt"},"output":"<path>/w/a.txt</path>"}
{"v":1,"type":"assistant","id":"prt_2","session":"ses_1","agent":"ses_2","ts":3000,"text":"ok"}
not json
{"v":1,"type":"compacted","id":"evt_1","session":"ses_1","ts":4000}
{"v":1,"type":"summary","id":"prt_3","session":"ses_1","ts":5000,"text":"sum"}
{"v":1,"type":"user","id":"prt_4","session":"ses_1","ts":6000,"text":"half`
	r := New().ReadTranscript(strings.NewReader(log), hooks.TranscriptPos{})
	var kinds []string
	for {
		l, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if l.Invalid {
			kinds = append(kinds, "invalid")
		}
		for _, it := range l.Items {
			switch x := it.(type) {
			case *transcript.TextSpan:
				kinds = append(kinds, x.Kind+":"+x.Key+":"+x.Agent)
			case *transcript.ToolUse:
				kinds = append(kinds, "use:"+x.SpanKey+":"+x.Path)
			case *transcript.ToolResult:
				kinds = append(kinds, "result:"+x.SpanKey+":"+x.Path)
			case *transcript.CompactBoundary:
				kinds = append(kinds, "boundary:"+x.Key)
			case *transcript.CompactSummary:
				kinds = append(kinds, "summary:"+x.Key)
			}
		}
	}
	want := "user:span:prt_1: use:span:call_1:0:/w/a.txt result:span:call_1:1:/w/a.txt assistant:span:prt_2:ses_2 invalid boundary:compact:evt_1 summary:span:prt_3"
	if got := strings.Join(kinds, " "); got != want {
		t.Fatalf("items\n got %s\nwant %s", got, want)
	}
	if want := int64(strings.LastIndex(log, "\n") + 1); r.Offset() != want {
		t.Fatalf("offset %d, want %d (before the unfinished line)", r.Offset(), want)
	}
}

// TestInstallPlans: the plugin is written with the hook program's path,
// a second install changes nothing, a plugin file of someone else's is
// refused, opencode.json keeps its other keys, and uninstall removes ours.
func TestInstallPlans(t *testing.T) {
	home := t.TempDir()
	getenv := func(k string) string {
		if k == "HOME" {
			return home
		}
		return ""
	}
	bin := settings.HookBinary{Path: "/opt/bin/git-lossless", Hook: "/opt/bin/git-lossless-hook"}
	ctx := context.Background()
	cfgDir := filepath.Join(home, ".config", "opencode")
	if err := os.MkdirAll(cfgDir, 0o700); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(cfgDir, "opencode.json"), "{\n  \"theme\": \"dark\",\n  \"mcp\": {\"other\": {\"type\": \"remote\", \"url\": \"https://x\"}}\n}\n")
	apply := func(uninstall bool) hooks.Install {
		t.Helper()
		inst, err := New().Install(ctx, hooks.InstallOptions{Uninstall: uninstall, Scope: "user", Getenv: getenv, Bin: bin})
		if err != nil {
			t.Fatal(err)
		}
		for _, tg := range inst.Targets {
			if _, err := tg.Plan.Apply(tgNow()); err != nil {
				t.Fatal(err)
			}
		}
		return inst
	}
	inst := apply(false)
	if len(inst.Targets) != 2 || inst.Targets[0].Plan.Path != filepath.Join(cfgDir, "plugin", PluginFile) {
		t.Fatalf("targets %+v", inst.Targets)
	}
	js, _ := os.ReadFile(filepath.Join(cfgDir, "plugin", PluginFile))
	if !strings.Contains(string(js), `{"args":["hook","opencode"],"bin":"/opt/bin/git-lossless-hook"}`) || strings.Contains(string(js), "__GIT_LOSSLESS_HOOK__") {
		t.Fatalf("plugin does not run the hook program:\n%.300s", js)
	}
	cfg, _ := os.ReadFile(filepath.Join(cfgDir, "opencode.json"))
	if !strings.Contains(string(cfg), `"theme": "dark"`) || !strings.Contains(string(cfg), `"other"`) || !strings.Contains(string(cfg), `"/opt/bin/git-lossless"`) {
		t.Fatalf("opencode.json after install:\n%s", cfg)
	}
	again, err := New().Install(ctx, hooks.InstallOptions{Scope: "user", Getenv: getenv, Bin: bin})
	if err != nil {
		t.Fatal(err)
	}
	for _, tg := range again.Targets {
		if tg.Plan.Changed() {
			t.Errorf("second install changes %s", tg.Plan.Path)
		}
	}
	tools, _ := New().MCPTools(t.TempDir(), getenv)
	if tools == nil || tools("read_file") != "git-lossless_read_file" {
		t.Error("MCPTools does not see the registration")
	}
	ins, err := Inspect(t.TempDir(), getenv)
	if err != nil || len(ins) != 1 || !ins[0].Current || !ins[0].MCP || ins[0].Hook != bin.Hook || ins[0].Scope != "user" {
		t.Fatalf("Inspect: %+v %v", ins, err)
	}
	if _, problems := DoctorDetail(ins); len(problems) != 1 || !strings.Contains(problems[0], "missing") {
		t.Fatalf("doctor on a plugin whose program is missing: %q", problems)
	}
	apply(true)
	if _, err := os.Stat(filepath.Join(cfgDir, "plugin", PluginFile)); !os.IsNotExist(err) {
		t.Fatalf("plugin left after uninstall: %v", err)
	}
	cfg, _ = os.ReadFile(filepath.Join(cfgDir, "opencode.json"))
	if strings.Contains(string(cfg), "git-lossless") || !strings.Contains(string(cfg), `"other"`) {
		t.Fatalf("opencode.json after uninstall:\n%s", cfg)
	}
	write(t, filepath.Join(cfgDir, "plugin", PluginFile), "export const Mine = async () => ({})\n")
	if _, err := New().Install(ctx, hooks.InstallOptions{Scope: "user", Getenv: getenv, Bin: bin}); err == nil {
		t.Fatal("install over someone else's plugin file was not refused")
	}
}

func tgNow() time.Time { return time.Date(2026, 12, 6, 4, 0, 0, 0, time.UTC) }

// TestSamplePayload: the bench's payloads run through Decode as the
// plugin's do: an edit to guard, a read that is evidence of the file.
func TestSamplePayload(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "a.go")
	body := "package a\n\nfunc A() {}\n"
	write(t, f, body)
	h := New()
	ev, in := h.SamplePayload(hooks.PreToolUse, "ses_b", dir, filepath.Join(dir, "ses_b.jsonl"), f, []byte(body))
	c, err := h.Decode(h.Event(ev), strings.NewReader(string(in)))
	if err != nil || h.Event(ev) != hooks.PreToolUse || len(c.Files) != 1 || c.Files[0].Path != f {
		t.Fatalf("pre sample %s %s: %+v %v", ev, in, c, err)
	}
	ev, in = h.SamplePayload(hooks.PostToolUse, "ses_b", dir, filepath.Join(dir, "ses_b.jsonl"), f, []byte(body))
	c, err = h.Decode(h.Event(ev), strings.NewReader(string(in)))
	if err != nil || h.Event(ev) != hooks.PostToolUse || len(c.Files) != 1 || string(c.Files[0].Content) != body || c.Files[0].Partial {
		t.Fatalf("post sample %s: %+v %v", ev, c, err)
	}
}

// TestImportExport imports the sample `opencode export` of a real
// 1.18.33 run (read, edit, denied edit) into a repository: its messages
// and tool calls become spans of writer oc-<session>, the write-free edit
// no evidence; a second import adds nothing.
func TestImportExport(t *testing.T) {
	sample, err := os.ReadFile("/work/shared/samples/opencode-1.18.33/run1-read-edit-deny/session_export.json")
	if err != nil {
		t.Skipf("sample: %v", err)
	}
	repo := t.TempDir()
	if out, err := exec.Command("git", "-C", repo, "init", "-q").CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	ex := filepath.Join(t.TempDir(), "ses.json")
	// As `opencode export > FILE` leaves it: a line of chatter first.
	write(t, ex, "Exporting session: ses_db96a9c01ffeiCN1a7cT0GTKVI\n"+strings.ReplaceAll(string(sample), "/home/dev/project", repo))
	h := New()
	if main, ok := h.SessionFile(ex); !ok || main != ex {
		t.Fatalf("SessionFile(export) = %q %v", main, ok)
	}
	if cwd, err := h.TranscriptCwd(ex, 0); err != nil || cwd != repo {
		t.Fatalf("TranscriptCwd = %q %v", cwd, err)
	}
	ctx := context.Background()
	stats, err := hooks.Import(ctx, h, []string{ex}, hooks.ImportOptions{Workers: 1})
	if err != nil {
		t.Fatalf("import: %v (%+v)", err, stats)
	}
	st, err := gitstore.OpenDir(repo, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const session = "ses_db96a9c01ffeiCN1a7cT0GTKVI"
	evs, err := st.Events(ctx, gitstore.Query{Session: session})
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, e := range evs {
		if e.Harness != "opencode" || e.Writer != "oc-"+session || e.Op != "span" {
			t.Fatalf("event %s", e.Raw)
		}
		kinds[string(e.Extra["kind"])]++
	}
	// The prompt, the last text, three tool calls and their results (one
	// an error: the denied edit).
	if kinds[`"user"`] != 1 || kinds[`"assistant"`] != 1 || kinds[`"tool_use"`] != 3 || kinds[`"tool_result"`] != 3 {
		t.Fatalf("span kinds %v", kinds)
	}
	again, err := hooks.Import(ctx, h, []string{ex}, hooks.ImportOptions{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	evs2, _ := st.Events(ctx, gitstore.Query{Session: session})
	if len(evs2) != len(evs) {
		t.Fatalf("second import added %d events (%+v)", len(evs2)-len(evs), again)
	}
}

// TestPatchOps: the files an apply_patch needs seen (what it replaces or
// removes) and leaves written, from its headers.
func TestPatchOps(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"a", "b", "exists"} {
		write(t, filepath.Join(dir, f), "x\n")
	}
	j := func(n ...string) string {
		var out []string
		for _, s := range n {
			out = append(out, filepath.Base(s))
		}
		return strings.Join(out, " ")
	}
	ops := patchOps("*** Begin Patch\n*** Update File: a\n*** Move to: c\n@@\n-x\n+y\n*** Delete File: b\n*** Add File: new\n+n\n*** Add File: exists\n+n\n*** Update File: new\n@@\n-n\n+m\n  *** Update File: "+filepath.Join(dir, "a")+"\n*** End Patch", dir)
	if got := j(patchNeedsSeen(ops)...); got != "a b exists" {
		t.Errorf("needs seen %q", got)
	}
	if got := j(patchWritten(ops)...); got != "c a new exists" { // order of first touch
		t.Errorf("written %q", got)
	}
	if ops := patchOps("no headers", dir); len(ops) != 0 {
		t.Errorf("ops of no patch: %+v", ops)
	}
}

// TestContextUsage: the last turn's tokens after the last compaction.
func TestContextUsage(t *testing.T) {
	p := filepath.Join(t.TempDir(), "ses_u.jsonl")
	write(t, p, `{"v":1,"type":"usage","id":"m1","model":"p/m","tokens":{"input":100,"output":10,"cache_read":5,"cache_write":0}}
{"v":1,"type":"compacted","id":"prt_c"}
{"v":1,"type":"usage","id":"m2","model":"p/m2","tokens":{"input":40,"output":2,"cache_read":0,"cache_write":3}}
`)
	u, err := New().ContextUsage(p)
	if err != nil || !u.Known || u.Used != 45 || u.Model != "p/m2" || u.Compactions != 1 || u.Session != "ses_u" {
		t.Fatalf("%+v %v", u, err)
	}
	write(t, p, `{"v":1,"type":"usage","id":"m1","model":"p/m","tokens":{"input":100,"output":10,"cache_read":5,"cache_write":0}}
{"v":1,"type":"compacted","id":"prt_c"}
`)
	if u, err := New().ContextUsage(p); err != nil || u.Known || u.Compactions != 1 {
		t.Fatalf("after a compaction without a turn: %+v %v", u, err)
	}
}
