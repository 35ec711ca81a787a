package opencode_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/hooks/opencode"
	"github.com/git-lossless/git-lossless/internal/testkit"
	"github.com/git-lossless/git-lossless/internal/testkit/opencodetest"
)

// buildWithHookProgram builds git-lossless and git-lossless-hook and
// git-lossless-mcp beside it, as `go install ./cmd/...` lays them out:
// install then writes the hook program into the plugin and the MCP
// server's into opencode.json.
func buildWithHookProgram(t *testing.T) (bin, hook string) {
	t.Helper()
	bins, err := testkit.BuildPrograms(t.TempDir(), "git-lossless", "git-lossless-hook", "git-lossless-mcp")
	if err != nil {
		t.Fatal(err)
	}
	return bins[0], bins[1]
}

func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func fileIs(t *testing.T, p, want string) {
	t.Helper()
	got, err := os.ReadFile(p)
	if err != nil || string(got) != want {
		t.Fatalf("%s = %q (%v), want %q", filepath.Base(p), got, err, want)
	}
}

// TestOpencodeEndToEnd drives the real opencode 1.18.33 with the plugin
// installed by `git lossless install opencode --scope project --apply`,
// against a scripted model: a read (recorded), an edit of it (allowed,
// content after archived), an edit of a file never read (denied: the file
// is unchanged and the model reads our reason), a read of .env (access
// recorded, no content), a compaction (the model's limit below the usage
// it reports), after which every request's system message carries the
// working set, an edit of a file read before the compaction is denied,
// and, once it is read again, allowed.
func TestOpencodeEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("drives the real opencode CLI")
	}
	oc, deps := opencodetest.EnsureOpencode(t), opencodetest.EnsurePluginDeps(t)
	bin, hookProg := buildWithHookProgram(t)
	ctx := context.Background()

	dir, _ := filepath.EvalSymlinks(t.TempDir())
	gitOut(t, dir, "init", "-q")
	hello, other, env, notes := filepath.Join(dir, "hello.txt"), filepath.Join(dir, "other.txt"), filepath.Join(dir, ".env"), filepath.Join(dir, "notes.txt")
	lines := filepath.Join(dir, "lines.txt")
	const secret = "sk-E2E-OPENCODE-PLANTED-0xC0FFEE"
	for p, s := range map[string]string{hello: "hello world\n", other: "other content\n", notes: "notes\n", lines: "one\ntwo\nthree\nfour\nfive\n", env: "API_KEY=" + secret + "\n"} {
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	helloBefore := strings.TrimSpace(gitOut(t, dir, "hash-object", "hello.txt"))

	const sc = "SCENARIO:oc-e2e"
	m := opencodetest.NewModel(t, opencodetest.Script{sc: {
		opencodetest.Read(hello),                                                              // 0
		opencodetest.Edit(hello, "hello world", "hello opencode"),                             // 1 allowed
		opencodetest.Edit(other, "other content", "other EDITED"),                             // 2 denied
		opencodetest.Read(env),                                                                // 3 .env
		opencodetest.Read(notes),                                                              // 4, then the compaction; it may run twice (the summary counts the denied call out)
		opencodetest.Edit(hello, "hello opencode", "hello compacted"),                         // 5 denied: compacted
		opencodetest.Read(hello),                                                              // 6
		opencodetest.Edit(hello, "hello opencode", "hello after read"),                        // 7 allowed
		opencodetest.Call("git-lossless_read_file", map[string]any{"path": "other.txt"}),      // 8 MCP: seen
		opencodetest.Edit(other, "other content", "other after mcp"),                          // 9 allowed
		opencodetest.Call("read", map[string]any{"filePath": lines, "offset": 2, "limit": 2}), // 10 partial
		opencodetest.Say("DONE oc-e2e"),
	}})
	var compacting atomic.Bool
	m.SetPromptTokens(func(q opencodetest.Request) int {
		// The answer calling step 4 (four results so far; Kind and Step are
		// not set yet when this runs), once.
		if q.HasTools() && len(q.ToolResults()) == 4 && !strings.Contains(q.Text(), opencodetest.DefaultSummary) && compacting.CompareAndSwap(false, true) {
			return 9000 // over context - output: opencode compacts after the read
		}
		return 100
	})
	r := opencodetest.NewRunner(t, oc, m)
	r.PluginDeps = deps
	r.Context, r.Output = 8000, 1000
	// opencode asks before reading .env (a run rejects what it would ask):
	// allowed here, as a user who approves the read.
	cfgEnv := r.Config()
	cfgEnv["permission"].(map[string]any)["read"] = "allow"
	cfgJSON, _ := json.Marshal(cfgEnv)
	r.Env = append(r.Env, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "OPENCODE_CONFIG_CONTENT="+string(cfgJSON))

	inst := exec.Command(bin, "install", "opencode", "--scope", "project", "--apply")
	inst.Dir = dir
	inst.Env = append(os.Environ(), "HOME="+r.Home, "XDG_CONFIG_HOME="+filepath.Join(r.Home, ".config"))
	if out, err := inst.CombinedOutput(); err != nil {
		t.Fatalf("install: %v\n%s", err, out)
	}
	plugin, err := os.ReadFile(filepath.Join(dir, ".opencode", "plugin", "git-lossless.js"))
	if err != nil || !bytes.Contains(plugin, []byte(`"bin":"`+hookProg+`"`)) {
		t.Fatalf("plugin after install does not run %s: %v\n%.400s", hookProg, err, plugin)
	}
	cfg, err := os.ReadFile(filepath.Join(dir, "opencode.json"))
	if err != nil || !bytes.Contains(cfg, []byte(`"mcp"`)) || !bytes.Contains(cfg, []byte(bin)) {
		t.Fatalf("opencode.json after install: %s %v", cfg, err)
	}
	again := exec.Command(bin, "install", "opencode", "--scope", "project", "--apply")
	again.Dir, again.Env = dir, inst.Env
	if out, err := again.CombinedOutput(); err != nil || !strings.Contains(string(out), "already installed") || strings.Contains(string(out), "backup:") {
		t.Fatalf("second install is not a no-op: %v\n%s", err, out)
	}

	doc := exec.Command(bin, "doctor")
	doc.Dir, doc.Env = dir, inst.Env
	docOut, _ := doc.CombinedOutput() // other checks (Claude Code's) may fail here
	if !regexp.MustCompile(`(?m)^OK\s+opencode plugin: project ` + regexp.QuoteMeta(filepath.Join(dir, ".opencode", "plugin", "git-lossless.js")) + ` \(MCP server registered\)$`).Match(docOut) {
		t.Fatalf("doctor does not report the plugin:\n%s", docOut)
	}

	res, err := r.Run(ctx, dir, sc+" please work")
	if err != nil {
		t.Fatalf("run: %v\n%s", err, m.Log())
	}
	t.Logf("run: %s, session %s, text %q\n%s", res.Duration.Round(time.Millisecond), res.SessionID, res.Text, m.Log())
	t.Logf("opencode stderr (ours):\n%s", grepLines(res.Stderr, "git-lossless"))
	if strings.Contains(res.Stderr, "git-lossless:") {
		t.Errorf("the plugin or hook complained:\n%s", grepLines(res.Stderr, "git-lossless"))
	}
	session := res.SessionID
	st, err := gitstore.OpenDir(dir, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	events := func(q gitstore.Query) []gitstore.Event {
		t.Helper()
		q.Session = session
		evs, err := st.Events(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		return evs
	}
	results := map[string]string{}
	for _, tr := range m.ToolResults(sc) {
		results[tr.CallID] = tr.Text
	}

	// Read, then edit: recorded, allowed, content after archived.
	reads := events(gitstore.Query{Path: "hello.txt", Op: "read"})
	if len(reads) < 1 || reads[0].Blob != helloBefore || reads[0].Key != opencodetest.CallID(sc, 0) || reads[0].View != "full" {
		t.Fatalf("read of hello.txt archived as %+v, want blob %s", reads, helloBefore)
	}
	edits := events(gitstore.Query{Path: "hello.txt", Op: "edit"})
	if len(edits) != 2 || edits[0].Blob != gitstore.BlobID([]byte("hello opencode\n")) || edits[0].Key != opencodetest.CallID(sc, 1) {
		t.Fatalf("edits of hello.txt archived as %+v", edits)
	}
	for _, e := range append(reads, edits...) {
		if e.Harness != "opencode" || !strings.Contains(string(e.Raw), `"harness":"opencode"`) {
			t.Fatalf("event %s: want \"harness\":\"opencode\"", e.Raw)
		}
	}
	if refs := gitOut(t, dir, "for-each-ref", "--format=%(refname)", "refs/lossless/oc-"+session); !strings.Contains(refs, "refs/lossless/oc-"+session) {
		t.Fatalf("no writer oc-%s: %q", session, refs)
	}

	// The blind edit: denied (the file changed only at step 9, after the
	// MCP server's read_file), our reason in the next request.
	if txt := results[opencodetest.CallID(sc, 2)]; !strings.Contains(txt, "git-lossless") {
		t.Fatalf("blind edit result %q, want our deny reason", txt)
	}
	if d := events(gitstore.Query{Path: "other.txt", Op: "deny"}); len(d) != 1 || string(d[0].Extra["reason_kind"]) != `"never-seen"` {
		t.Fatalf("denials of other.txt: %+v", d)
	}

	// .env: access recorded, content withheld.
	envEv := events(gitstore.Query{Path: ".env"})
	if len(envEv) == 0 || !envEv[0].Excluded || envEv[0].Blob != "" {
		t.Fatalf(".env events %+v", envEv)
	}

	// Compaction: one boundary, the working set in every later system
	// message and in none before.
	reqs := m.Requests()
	compactAt := -1
	for i, q := range reqs {
		if q.Kind == "compact" {
			compactAt = i
		}
	}
	if compactAt < 0 {
		t.Fatalf("no compaction request\n%s", m.Log())
	}
	const handed = "git-lossless: this session"
	for i, q := range reqs {
		if q.Kind != "scenario" {
			continue
		}
		if has := strings.Contains(q.System(), handed); has != (i > compactAt) {
			t.Errorf("request #%d (step %d): working set in the system message: %v", q.Seq, q.Step, has)
		}
		if i > compactAt && !strings.Contains(q.System(), "hello.txt") {
			t.Errorf("request #%d after the compaction: the working set does not name hello.txt", q.Seq)
		}
	}
	if b := events(gitstore.Query{Op: "compact"}); len(b) != 1 || !strings.HasPrefix(b[0].Key, "compact:") || b[0].Source != "sweep" {
		t.Fatalf("compaction boundaries %+v", b)
	}
	// After it: the edit of a file read before is denied, and allowed once
	// it is read again.
	if txt := results[opencodetest.CallID(sc, 5)]; !strings.Contains(txt, "git-lossless") || !strings.Contains(txt, "compact") {
		t.Fatalf("edit after the compaction: %q, want our deny", txt)
	}
	fileIs(t, hello, "hello after read\n")
	// The MCP server's read_file counts as seen for the opencode context.
	fileIs(t, other, "other after mcp\n")
	if mr := events(gitstore.Query{Path: "other.txt", Op: "read"}); len(mr) != 1 || mr[0].Source != "mcp" || mr[0].Harness != "opencode" {
		t.Fatalf("MCP reads of other.txt: %+v", mr)
	}
	// A partial read: lines 2-3, exactly.
	if pr := events(gitstore.Query{Path: "lines.txt", Op: "read"}); len(pr) != 1 || pr[0].View != "lines:2-3" || pr[0].Blob != gitstore.BlobID([]byte("two\nthree")) {
		t.Fatalf("partial read of lines.txt: %+v", pr)
	}
	if spans := events(gitstore.Query{Op: "span"}); len(spans) == 0 {
		t.Fatal("no spans archived")
	}
	// The session log carries the turns' tokens: how full the context is.
	logFile := filepath.Join(r.Home, ".local", "state", "git-lossless", "opencode", session+".jsonl")
	if u, err := opencode.New().ContextUsage(logFile); err != nil || !u.Known || u.Used < 100 || u.Compactions != 1 || u.Model != opencodetest.ProviderID+"/"+opencodetest.ModelID {
		t.Fatalf("context usage %+v %v", u, err)
	}

	// Import: the plugin's logs again (everything is archived: nothing
	// added), then `opencode export` of the session, whose keys are the
	// log's (no second boundary, no span twice; it adds the denied calls'
	// error results, which the plugin never sees).
	count := func() int { return len(events(gitstore.Query{})) }
	before := count()
	imp := exec.Command(bin, "import", "--harness", "opencode", "--quiet")
	imp.Dir, imp.Env = dir, append(inst.Env, "XDG_STATE_HOME="+filepath.Join(r.Home, ".local", "state"))
	if out, err := imp.CombinedOutput(); err != nil || count() != before {
		t.Fatalf("import of the logs: %v, %d events added\n%s", err, count()-before, out)
	}
	exp, err := r.Export(ctx, dir, session)
	if err != nil {
		t.Fatal(err)
	}
	expFile := filepath.Join(t.TempDir(), session+".json")
	if err := os.WriteFile(expFile, exp, 0o600); err != nil {
		t.Fatal(err)
	}
	imp = exec.Command(bin, "import", "--harness", "opencode", "--quiet", expFile)
	imp.Dir, imp.Env = dir, inst.Env
	if out, err := imp.CombinedOutput(); err != nil {
		t.Fatalf("import of the export: %v\n%s", err, out)
	}
	if b := events(gitstore.Query{Op: "compact"}); len(b) != 1 {
		t.Fatalf("after importing the export: %d boundaries", len(b))
	}
	keys := map[string]bool{}
	for _, e := range events(gitstore.Query{Op: "span"}) {
		if keys[e.Key] {
			t.Fatalf("span %s twice", e.Key)
		}
		keys[e.Key] = true
	}
	if !keys["span:"+opencodetest.CallID(sc, 2)+":1"] {
		t.Fatal("the export's error result of the denied edit was not archived")
	}

	// The archive is sound, and the secret is in no object.
	gitOut(t, dir, "gc", "--quiet", "--prune=now")
	gitOut(t, dir, "fsck", "--strict")
	vf := exec.Command(bin, "verify", "--all")
	vf.Dir = dir
	if out, err := vf.CombinedOutput(); err != nil {
		t.Fatalf("verify --all: %v\n%s", err, out)
	}
	all, _ := exec.Command("git", "-C", dir, "cat-file", "--batch-all-objects", "--batch").Output()
	if bytes.Contains(all, []byte(secret)) {
		t.Fatal("the planted key is in an object")
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
