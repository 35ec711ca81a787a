package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/hooks/harnesses"
)

// harnessWriters are the writers of harnessArchive: one per harness (as
// their adapters name them), a proxy's, and a Claude Code session written
// before events carried the harness field.
const (
	hwOld      = "cc-0ld5e55" // claude-code, no harness field (told by its prefix)
	hwClaude   = "cc-c1a0de"  // claude-code, the field set
	hwCodex    = "codex-c0dex"
	hwGemini   = "gemini-6e1"
	hwOpencode = "oc-0pen"
)

// harnessArchive is a small repository whose archive holds events of
// several harnesses' writers, written through gitstore as the hooks and
// the proxy write them: the codex, gemini and opencode events carry the
// field (their adapters always write it), the oldest Claude Code session
// and the proxy do not. Each context reads notes.md and its own file, and
// says a word of its own in a span ("<harness>word").
func harnessArchive(t *testing.T, sb *sandbox) harnessFixture {
	t.Helper()
	repo := sb.initRepo("proj")
	if d, err := filepath.EvalSymlinks(repo); err == nil {
		repo = d
	}
	off := false
	st, err := gitstore.OpenDir(repo, gitstore.Options{Fsync: &off})
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := st.OwnWriterName(t.Context(), gitstore.FamilyProxy, "localhost_8080")
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
	n := 0
	add := func(writer, harness, session, op, path, content string) {
		t.Helper()
		n++
		r := gitstore.Record{Event: gitstore.Event{TS: at.Add(time.Duration(n) * time.Second), Session: session,
			Source: "hook", Op: gitstore.Op(op), Harness: harness}}
		r.Content, r.HasContent = []byte(content), true
		switch op {
		case "span":
			r.Source = "sweep"
			if strings.HasPrefix(writer, "proxy-") {
				r.Source, r.Session = "proxy", ""
				r.Extra = map[string]json.RawMessage{"span": json.RawMessage(`"sp-0123456789abcdef"`)}
			} else {
				r.Extra = map[string]json.RawMessage{"kind": json.RawMessage(`"user"`)}
			}
		default:
			r.SetPath(path)
			r.View, r.Tool, r.Key = "full", "Read", writer+"-"+path
		}
		if _, err := st.Append(context.Background(), writer, []gitstore.Record{r}); err != nil {
			t.Fatal(err)
		}
	}
	for _, w := range []struct{ writer, harness, session, word string }{
		{hwOld, "", "0ld5e55", "claudeoldword"},
		{hwClaude, "claude-code", "c1a0de", "claudeword"},
		{hwCodex, "codex", "c0dex", "codexword"},
		{hwGemini, "gemini", "6e1", "geminiword"},
		{hwOpencode, "opencode", "0pen", "opencodeword"},
	} {
		add(w.writer, w.harness, w.session, "read", "notes.md", "# notes\nshared by every harness\n")
		add(w.writer, w.harness, w.session, "read", w.word+".go", "package p // "+w.word+"\n")
		add(w.writer, w.harness, w.session, "span", "", `{"role":"user","text":"please look at `+w.word+` and sharedword"}`)
	}
	add(proxy, "", "", "span", "", `{"summary":"proxyword sharedword"}`)
	mcp, err := st.OwnWriterName(t.Context(), gitstore.FamilyMCP, "")
	if err != nil {
		t.Fatal(err)
	}
	add(mcp, "", "", "read", "notes.md", "# notes\nshared by every harness\n") // the MCP server's read outside a session
	return harnessFixture{repo: repo, proxy: proxy, mcp: mcp, harness: map[string]string{
		hwOld: "claude-code", hwClaude: "claude-code", hwCodex: "codex", hwGemini: "gemini", hwOpencode: "opencode", proxy: "", mcp: "",
	}}
}

// harnessFixture is harnessArchive's repository, its proxy's writer, and
// the harness every command must show for each writer.
type harnessFixture struct {
	repo, proxy, mcp string
	harness          map[string]string
}

// harnessWriters are the writers of each harness in harnessArchive.
var harnessWriters = map[string][]string{
	"claude-code": {hwOld, hwClaude}, "codex": {hwCodex}, "gemini": {hwGemini}, "opencode": {hwOpencode},
}

// registered says whether the harness name is registered in this build
// (codex, gemini and opencode register as their adapters land): a filter
// by an unregistered name is a usage error.
func registered(name string) bool {
	_, ok := harnesses.ByName(name)
	return ok
}

// TestLogHarness: log shows each event's harness (the field, else the
// writer's prefix, else none) in the table and in --json, and --harness
// keeps one harness's events, old ones without the field included; an
// unknown harness is a usage error.
func TestLogHarness(t *testing.T) {
	sb := newSandbox(t)
	f := harnessArchive(t, sb)
	repo, harnessOfWriter := f.repo, f.harness

	r := sb.ok(repo, "log", "--json")
	seen := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var ev struct {
			Writer  string `json:"writer"`
			Harness string `json:"harness"`
		}
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatalf("log --json line %q: %v", l, err)
		}
		want, ok := harnessOfWriter[ev.Writer]
		if !ok || ev.Harness != want {
			t.Errorf("log --json: writer %s harness %q, want %q (%s)", ev.Writer, ev.Harness, want, l)
		}
		if strings.Count(l, `"harness":`) > 1 {
			t.Errorf("log --json: harness twice: %s", l)
		}
		seen[ev.Writer]++
	}
	if len(seen) != len(harnessOfWriter) {
		t.Errorf("log --json writers %v", seen)
	}

	table := sb.ok(repo, "log").stdout
	lines := strings.Split(strings.TrimSpace(table), "\n")
	if !strings.Contains(lines[0], "HARNESS") {
		t.Fatalf("log table header %q", lines[0])
	}
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) < 4 {
			t.Fatalf("log row %q", l)
		}
		w, _, _ := strings.Cut(f[2], "#")
		want := harnessOfWriter[w]
		if want == "" {
			want = "-"
		}
		if f[3] != want {
			t.Errorf("log row %q: harness %q, want %q", l, f[3], want)
		}
	}

	for name, writers := range harnessWriters {
		if !registered(name) {
			if r := sb.run(repo, "log", "--harness", name); r.code != exitUsage {
				t.Errorf("log --harness %s (not registered): exit %d", name, r.code)
			}
			continue
		}
		_, evs := sb.log(repo, "--harness", name)
		got := map[string]bool{}
		for _, ev := range evs {
			got[ev.Writer] = true
		}
		if len(evs) != 3*len(writers) || len(got) != len(writers) {
			t.Errorf("log --harness %s: %d events of %v, want 3 each of %v", name, len(evs), got, writers)
		}
		for _, w := range writers {
			if !got[w] {
				t.Errorf("log --harness %s lacks %s", name, w)
			}
		}
	}
	if _, evs := sb.log(repo, "--harness", "claude-code", "--limit", "1"); len(evs) != 1 || evs[0].Writer != hwClaude || evs[0].Op != "span" {
		t.Errorf("log --harness claude-code --limit 1: %+v", evs)
	}
	if r := sb.run(repo, "log", "--harness", "no-such"); r.code != exitUsage || !strings.Contains(r.stderr, "claude-code") {
		t.Errorf("log --harness no-such: exit %d %q", r.code, r.stderr)
	}
}

// meterJSONRows is what the tests read of `meter --json`.
type meterJSONRows struct {
	Harness  string `json:"harness"`
	Contexts int    `json:"contexts"`
	Totals   struct {
		Reads int `json:"reads"`
	} `json:"totals"`
	Rows []struct {
		Key     string `json:"key"`
		Harness string `json:"harness"`
		Reads   int    `json:"reads"`
	} `json:"rows"`
}

// TestMeterPackHarness: meter groups by harness (contexts of no harness
// as "-"), names each session's and context's harness (table and
// --json), and --harness meters one harness, old events without the
// field included; pack lists the harnesses that read each file and
// --harness counts one harness's reads.
func TestMeterPackHarness(t *testing.T) {
	sb := newSandbox(t)
	f := harnessArchive(t, sb)
	meterJSON := func(args ...string) meterJSONRows {
		t.Helper()
		r := sb.ok(f.repo, append([]string{"meter", "--json"}, args...)...)
		var m meterJSONRows
		if err := json.Unmarshal([]byte(r.stdout), &m); err != nil {
			t.Fatalf("meter --json %v: %v\n%s", args, err, r.stdout)
		}
		return m
	}
	m := meterJSON("--by", "harness")
	got := map[string]int{}
	for _, r := range m.Rows {
		got[r.Key] = r.Reads
	}
	want := map[string]int{"claude-code": 4, "codex": 2, "gemini": 2, "opencode": 2, "-": 1}
	if len(got) != len(want) || m.Totals.Reads != 11 || m.Contexts != 6 {
		t.Errorf("meter --by harness: %v (%d reads, %d contexts), want %v", got, m.Totals.Reads, m.Contexts, want)
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("meter --by harness: %s has %d reads, want %d", k, got[k], n)
		}
	}
	sessions := map[string]string{"0ld5e55": "claude-code", "c1a0de": "claude-code", "c0dex": "codex", "6e1": "gemini", "0pen": "opencode", "writer:" + f.mcp: ""}
	for _, by := range []string{"session", "agent"} {
		m := meterJSON("--by", by)
		if len(m.Rows) != len(sessions) {
			t.Errorf("meter --by %s: %d rows, want %d", by, len(m.Rows), len(sessions))
		}
		for _, r := range m.Rows {
			s, _, _ := strings.Cut(r.Key, " ")
			if h, ok := sessions[s]; !ok || r.Harness != h {
				t.Errorf("meter --by %s: row %q harness %q, want %q", by, r.Key, r.Harness, h)
			}
		}
		table := sb.ok(f.repo, "meter", "--by", by).stdout
		if !strings.Contains(table, "HARNESS") {
			t.Errorf("meter --by %s: no HARNESS column\n%s", by, table)
		}
		for s, h := range sessions {
			if h == "" {
				h = "-"
			}
			if !regexp.MustCompile(`(?m)\s` + regexp.QuoteMeta(h) + `\s+` + regexp.QuoteMeta(s) + `( main)?$`).MatchString(table) {
				t.Errorf("meter --by %s: no row of %s with harness %s\n%s", by, s, h, table)
			}
		}
	}
	for name, writers := range harnessWriters {
		if !registered(name) {
			if r := sb.run(f.repo, "meter", "--harness", name); r.code != exitUsage {
				t.Errorf("meter --harness %s (not registered): exit %d", name, r.code)
			}
			continue
		}
		m := meterJSON("--harness", name, "--by", "harness")
		if m.Harness != name || m.Totals.Reads != 2*len(writers) || m.Contexts != len(writers) || len(m.Rows) != 1 || m.Rows[0].Key != name {
			t.Errorf("meter --harness %s: %+v, want %d reads of %d contexts", name, m, 2*len(writers), len(writers))
		}
		if table := sb.ok(f.repo, "meter", "--harness", name).stdout; !strings.Contains(table, " of harness "+name+", ") {
			t.Errorf("meter --harness %s: the heading does not say it\n%s", name, table)
		}
	}

	type packJSON struct {
		Harness string `json:"harness"`
		Files   []struct {
			Path      string   `json:"path"`
			Reads     int      `json:"reads"`
			Harnesses []string `json:"harnesses"`
		} `json:"files"`
	}
	pack := func(args ...string) packJSON {
		t.Helper()
		r := sb.ok(f.repo, append([]string{"pack", "--json"}, args...)...)
		var p packJSON
		if err := json.Unmarshal([]byte(r.stdout), &p); err != nil {
			t.Fatalf("pack --json %v: %v\n%s", args, err, r.stdout)
		}
		return p
	}
	p := pack()
	if len(p.Files) == 0 || p.Files[0].Path != "notes.md" || p.Files[0].Reads != 6 ||
		strings.Join(p.Files[0].Harnesses, ",") != "-,claude-code,codex,gemini,opencode" {
		t.Errorf("pack --json: first file %+v", p.Files)
	}
	readBy := map[string]string{"claudeoldword.go": "claude-code", "claudeword.go": "claude-code", "codexword.go": "codex", "geminiword.go": "gemini", "opencodeword.go": "opencode"}
	if len(p.Files) != 1+len(readBy) {
		t.Errorf("pack --json: %d files, want %d", len(p.Files), 1+len(readBy))
	}
	for _, fl := range p.Files[1:] {
		if h := readBy[fl.Path]; len(fl.Harnesses) != 1 || fl.Harnesses[0] != h {
			t.Errorf("pack --json: %s read by %v, want %s", fl.Path, fl.Harnesses, h)
		}
	}
	if !registered("claude-code") {
		t.Fatal("claude-code is not registered")
	}
	p = pack("--harness", "claude-code")
	paths := map[string]int{}
	for _, fl := range p.Files {
		paths[fl.Path] = fl.Reads
		if strings.Join(fl.Harnesses, ",") != "claude-code" {
			t.Errorf("pack --harness claude-code: %s read by %v", fl.Path, fl.Harnesses)
		}
	}
	if p.Harness != "claude-code" || len(paths) != 3 || paths["notes.md"] != 2 || paths["claudeoldword.go"] != 1 || paths["claudeword.go"] != 1 {
		t.Errorf("pack --harness claude-code: %v", paths)
	}
	if r := sb.run(f.repo, "pack", "--harness", "no-such"); r.code != exitUsage {
		t.Errorf("pack --harness no-such: exit %d", r.code)
	}
}

// TestRecallHarness: recall's search hits, digests and file versions name
// their harness (the field, else the writer's prefix; none for the proxy
// and the MCP server's read), in --json and in the text, and --harness
// keeps one harness's.
func TestRecallHarness(t *testing.T) {
	sb := newSandbox(t)
	f := harnessArchive(t, sb)
	type hit struct {
		Writer  string `json:"writer"`
		Harness string `json:"harness"`
		Kind    string `json:"kind"`
	}
	search := func(args ...string) []hit {
		t.Helper()
		r := sb.ok(f.repo, append([]string{"recall", "search", "sharedword", "--limit", "50", "--json"}, args...)...)
		var res struct {
			Hits []hit `json:"hits"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
			t.Fatalf("recall search --json %v: %v\n%s", args, err, r.stdout)
		}
		return res.Hits
	}
	hits := search()
	if len(hits) != 6 {
		t.Errorf("recall search: %d hits, want 6 (five contexts and the proxy): %+v", len(hits), hits)
	}
	for _, h := range hits {
		if want, ok := f.harness[h.Writer]; !ok || h.Harness != want {
			t.Errorf("recall search: hit of %s names harness %q, want %q", h.Writer, h.Harness, want)
		}
	}
	for name, writers := range harnessWriters {
		if !registered(name) {
			if r := sb.run(f.repo, "recall", "search", "sharedword", "--harness", name); r.code != exitUsage {
				t.Errorf("recall search --harness %s (not registered): exit %d", name, r.code)
			}
			continue
		}
		hits := search("--harness", name)
		if len(hits) != len(writers) {
			t.Errorf("recall search --harness %s: %d hits, want %d", name, len(hits), len(writers))
		}
		for _, h := range hits {
			if h.Harness != name {
				t.Errorf("recall search --harness %s: a hit of %s (%s)", name, h.Writer, h.Harness)
			}
		}
	}
	text := sb.ok(f.repo, "recall", "search", "claudeoldword").stdout
	if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(hwOld) + `#\d+\s.*\s0ld5e55  claude-code  user_prompt`).MatchString(text) {
		t.Errorf("recall search text does not name the harness:\n%s", text)
	}
	if text := sb.ok(f.repo, "recall", "open", hwCodex+"#3").stdout; !strings.Contains(text, "  session c0dex  harness codex  lines ") {
		t.Errorf("recall open does not name the harness:\n%s", text)
	}
	text = sb.ok(f.repo, "recall", "search", "proxyword").stdout
	if !regexp.MustCompile(`(?m)\s-  -  proxy`).MatchString(text) {
		t.Errorf("recall search text of a proxy span:\n%s", text)
	}

	r := sb.ok(f.repo, "recall", "digests", "--json")
	var ds []struct {
		Writer  string `json:"writer"`
		Harness string `json:"harness"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &ds); err != nil || len(ds) != 6 {
		t.Fatalf("recall digests --json: %v (%d digests)\n%s", err, len(ds), r.stdout)
	}
	for _, d := range ds {
		if want := f.harness[d.Writer]; d.Harness != want {
			t.Errorf("recall digests: %s names harness %q, want %q", d.Writer, d.Harness, want)
		}
	}
	r = sb.ok(f.repo, "recall", "digests", "--harness", "claude-code")
	if n := strings.Count(r.stdout, "  harness claude-code  "); n != 2 || strings.Contains(r.stdout, f.proxy) {
		t.Errorf("recall digests --harness claude-code: %d digests of claude-code\n%s", n, r.stdout)
	}

	r = sb.ok(f.repo, "recall", "file", "notes.md", "--json")
	var vs []struct {
		Writer  string `json:"writer"`
		Harness string `json:"harness"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &vs); err != nil || len(vs) != 6 {
		t.Fatalf("recall file --json: %v (%d versions)\n%s", err, len(vs), r.stdout)
	}
	for _, v := range vs {
		if want := f.harness[v.Writer]; v.Harness != want {
			t.Errorf("recall file: %s names harness %q, want %q", v.Writer, v.Harness, want)
		}
	}
	r = sb.ok(f.repo, "recall", "file", "notes.md", "--harness", "claude-code")
	if n := strings.Count(r.stdout, "  harness claude-code  "); n != 2 || strings.Count(r.stdout, "\n") != 2 {
		t.Errorf("recall file --harness claude-code:\n%s", r.stdout)
	}
}

// TestReceiptHarness: the receipt of a commit whose files contexts of
// several harnesses touched names each context's harness (text and
// --json; none for the MCP server's read outside a session), the signed
// note carries it, and receipt verify checks it and says which harnesses
// the receipt names.
func TestReceiptHarness(t *testing.T) {
	sb := newSandbox(t)
	f := harnessArchive(t, sb)
	sb.ok(f.repo, "key", "generate", "--name", "Harness Test")
	files := []string{"notes.md", "claudeoldword.go", "claudeword.go", "codexword.go", "geminiword.go", "opencodeword.go"}
	sb.setenv("GIT_COMMITTER_DATE", time.Now().Add(-3*time.Hour).Format(time.RFC3339))
	if err := os.WriteFile(filepath.Join(f.repo, "README"), []byte("readme\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sb.git(f.repo, "add", "README")
	sb.git(f.repo, "commit", "-q", "-m", "before the sessions")
	for _, p := range files {
		if err := os.WriteFile(filepath.Join(f.repo, p), []byte("package p\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	sb.setenv("GIT_COMMITTER_DATE", time.Now().Format(time.RFC3339))
	sb.git(f.repo, "add", ".")
	sb.git(f.repo, "commit", "-q", "-m", "what the sessions touched")

	r := sb.ok(f.repo, "receipt", "--json")
	var rc struct {
		Contexts []struct {
			Session string   `json:"session"`
			Harness []string `json:"harness"`
		} `json:"contexts"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rc); err != nil {
		t.Fatalf("receipt --json: %v\n%s", err, r.stdout)
	}
	want := map[string]string{"0ld5e55": "claude-code", "c1a0de": "claude-code", "c0dex": "codex", "6e1": "gemini", "0pen": "opencode", "": ""}
	if len(rc.Contexts) != len(want) {
		t.Errorf("receipt --json: %d contexts, want %d\n%s", len(rc.Contexts), len(want), r.stdout)
	}
	for _, c := range rc.Contexts {
		if h, ok := want[c.Session]; !ok || strings.Join(c.Harness, ",") != h || c.Harness == nil {
			t.Errorf("receipt --json: context of session %q harness %v, want %q", c.Session, c.Harness, h)
		}
	}
	note := sb.git(f.repo, "notes", "--ref", "lossless/"+strings.TrimPrefix(strings.TrimSpace(sb.git(f.repo, "for-each-ref", "--format=%(refname)", "refs/notes/lossless/")), "refs/notes/lossless/"), "show", "HEAD")
	for s, h := range want {
		if h == "" {
			continue
		}
		if !regexp.MustCompile(`(?m)^context c\d+ session ` + s + ` agent main events \d+ first \S+ last \S+ harness ` + h + `$`).MatchString(note) {
			t.Errorf("the signed note lacks the harness %s of session %s:\n%s", h, s, note)
		}
	}
	if !regexp.MustCompile(`(?m)^context c\d+ session - agent main events \d+ first \S+ last \S+$`).MatchString(note) {
		t.Errorf("the context of no session names a harness:\n%s", note)
	}

	text := sb.ok(f.repo, "receipt", "show", "HEAD").stdout
	if !strings.Contains(text, "HARNESS") {
		t.Errorf("receipt show: no HARNESS column\n%s", text)
	}
	for s, h := range want {
		if h == "" {
			s, h = "-", "-"
		}
		if !regexp.MustCompile(`(?m)^  c\d+\s+` + regexp.QuoteMeta(s) + `\s+main\s+` + regexp.QuoteMeta(h) + `\s+\d+\s`).MatchString(text) {
			t.Errorf("receipt show: no context row of %s with harness %s\n%s", s, h, text)
		}
	}

	v := sb.ok(f.repo, "receipt", "verify", "HEAD").stdout
	if !strings.Contains(v, "; harness claude-code, codex, gemini, opencode\n") || !strings.HasPrefix(v, "OK ") {
		t.Errorf("receipt verify:\n%s", v)
	}
	v = sb.ok(f.repo, "receipt", "verify", "HEAD", "--json").stdout
	var vr struct {
		OK        bool     `json:"ok"`
		Harnesses []string `json:"harnesses"`
	}
	if err := json.Unmarshal([]byte(v), &vr); err != nil || !vr.OK || strings.Join(vr.Harnesses, ",") != "claude-code,codex,gemini,opencode" {
		t.Errorf("receipt verify --json: %v %+v\n%s", err, vr, v)
	}
	sb.fsck(f.repo)
}
