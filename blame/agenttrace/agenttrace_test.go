package agenttrace_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/blame"
	"github.com/git-lossless/git-lossless/blame/agenttrace"
	"github.com/git-lossless/git-lossless/internal/testkit/agenttracetest"
)

var t0 = time.Date(2026, 12, 6, 5, 0, 0, 0, time.UTC)

// write is an archived write's origin for line `line` of its version.
func write(harness, writer string, seq int64, session, agent, model, blob string, line int) *blame.Origin {
	return &blame.Origin{Harness: harness, Writer: writer, Seq: seq, Session: session, Agent: agent, Model: model,
		Op: "edit", Tool: "Edit", Call: "toolu_" + writer, TS: t0.Add(time.Duration(seq) * time.Second), Path: "src/a.go", Blob: blob, Line: line}
}

// fixture is two commits: the first adds src/a.go with lines from two
// writes of one session (one write split by a person's line), a subagent's
// write with a different model and person-written lines; also a binary
// file and a file with removals only. The second adds nothing.
func fixture() []blame.CommitChange {
	w1 := func(l int) *blame.Origin {
		return write("claude-code", "cc-1", 7, "sess-1", "", "claude-opus-4-5-20251101", "b1", l)
	}
	w2 := func(l int) *blame.Origin {
		return write("claude-code", "cc-1", 9, "sess-1", "", "claude-sonnet-4-5", "b2", l)
	}
	sub := func(l int) *blame.Origin {
		return write("claude-code", "cc-1", 11, "sess-1", "agent a/1", "claude-haiku-4-5", "b3", l)
	}
	cx := func(l int) *blame.Origin { return write("codex", "cx-1", 3, "", "", "gpt-5-codex", "b4", l) }
	return []blame.CommitChange{{
		Commit: strings.Repeat("a", 40), Parent: strings.Repeat("0", 39) + "1",
		Author: "Dev", AuthorMail: "dev@example.com", AuthorTime: t0, CommitTime: t0.Add(time.Minute), Summary: "first",
		Files: []blame.FileChange{
			{Path: "z/removed.txt", Removed: 3},
			{Path: "src/a.go", OldPath: "src/old.go", Removed: 1, Rewritten: 2, Added: []blame.AddedLine{
				{N: 1, Text: "package a", Origin: w1(1)},
				{N: 2, Text: "", Origin: w1(2)},
				{N: 3, Text: "// by hand", Origin: nil},
				{N: 4, Text: "func A() {}", Origin: w1(4)}, // line 3 of b1 was replaced: a new range
				{N: 5, Text: "func B() {}", Origin: w2(1)},
				{N: 6, Text: "func C() {}", Origin: w2(2)},
				{N: 8, Text: "func D() {}", Origin: w2(3)}, // line 7 kept from the parent: a new range
				{N: 9, Text: "func E() {}", Origin: sub(5)},
				{N: 10, Text: "// also by hand", Origin: nil},
				{N: 11, Text: "// and this", Origin: nil},
				{N: 12, Text: "func F() {}", Origin: cx(1)},
			}},
			{Path: "img.png", Binary: true},
		},
	}, {
		Commit: strings.Repeat("b", 40), Parent: strings.Repeat("a", 40),
		AuthorTime: t0.Add(2 * time.Minute), CommitTime: t0.Add(3 * time.Minute), Summary: "empty",
	}}
}

func encode(t *testing.T, changes []blame.CommitChange, opt agenttrace.EncodeOptions) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := agenttrace.Encode(&buf, changes, opt); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func hashOf(lines ...string) string {
	s := sha256.Sum256([]byte(strings.Join(lines, "\n") + "\n"))
	return "sha256:" + hex.EncodeToString(s[:])
}

// TestEncodeMapping pins the mapping: one record per commit, ranges of
// consecutive lines of one write (or of no write), conversations per
// context in the order of their first line, the models in models.dev
// form with a per-range override, and the writes in metadata.
func TestEncodeMapping(t *testing.T) {
	out := encode(t, fixture(), agenttrace.EncodeOptions{ToolVersion: "1.2.3"})
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("want one record per commit, got %d lines:\n%s", len(lines), out)
	}
	var recs [2]agenttrace.Record
	for i, l := range lines {
		dec := json.NewDecoder(strings.NewReader(l))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&recs[i]); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	r := recs[0]
	if r.Version != "0.1.0" || r.Timestamp != "2026-12-06T05:01:00Z" {
		t.Errorf("version %q timestamp %q, want 0.1.0 and the commit time", r.Version, r.Timestamp)
	}
	if *r.VCS != (agenttrace.VCS{Type: "git", Revision: strings.Repeat("a", 40)}) || *r.Tool != (agenttrace.Tool{Name: "git-lossless", Version: "1.2.3"}) {
		t.Errorf("vcs %+v tool %+v", r.VCS, r.Tool)
	}
	ai := func(m string) *agenttrace.Contributor { return &agenttrace.Contributor{Type: "ai", ModelID: m} }
	want := []agenttrace.File{{Path: "src/a.go", Conversations: []agenttrace.Conversation{
		{URL: "git-lossless:session/sess-1", Contributor: ai("anthropic/claude-opus-4-5-20251101"), Ranges: []agenttrace.Range{
			{StartLine: 1, EndLine: 2, ContentHash: hashOf("package a", "")},
			{StartLine: 4, EndLine: 4, ContentHash: hashOf("func A() {}")},
			{StartLine: 5, EndLine: 6, ContentHash: hashOf("func B() {}", "func C() {}"), Contributor: ai("anthropic/claude-sonnet-4-5")},
			{StartLine: 8, EndLine: 8, ContentHash: hashOf("func D() {}"), Contributor: ai("anthropic/claude-sonnet-4-5")},
		}},
		{Contributor: &agenttrace.Contributor{Type: "human"}, Ranges: []agenttrace.Range{
			{StartLine: 3, EndLine: 3, ContentHash: hashOf("// by hand")},
			{StartLine: 10, EndLine: 11, ContentHash: hashOf("// also by hand", "// and this")},
		}},
		{URL: "git-lossless:session/sess-1/agent/agent%20a%2F1", Contributor: ai("anthropic/claude-haiku-4-5"),
			Ranges:  []agenttrace.Range{{StartLine: 9, EndLine: 9, ContentHash: hashOf("func E() {}")}},
			Related: []agenttrace.Related{{Type: "session", URL: "git-lossless:session/sess-1"}}},
		{Contributor: ai("openai/gpt-5-codex"), Ranges: []agenttrace.Range{{StartLine: 12, EndLine: 12, ContentHash: hashOf("func F() {}")}}},
	}}}
	if !reflect.DeepEqual(r.Files, want) {
		got, _ := json.MarshalIndent(r.Files, "", "  ")
		t.Errorf("files:\n%s", got)
	}
	m := r.Metadata.Lossless
	if m.Parent != strings.Repeat("0", 39)+"1" {
		t.Errorf("parent %q", m.Parent)
	}
	var paths []string
	for _, f := range m.Files {
		paths = append(paths, f.Path)
	}
	if strings.Join(paths, " ") != "img.png src/a.go z/removed.txt" {
		t.Errorf("metadata files %v, want every changed file by path", paths)
	}
	if f := m.Files[0]; !f.Binary || f.Added != 0 {
		t.Errorf("binary file %+v", f)
	}
	fa := m.Files[1]
	if fa.OldPath != "src/old.go" || fa.Added != 11 || fa.Removed != 1 || fa.Rewritten != 2 || len(fa.Writes) != 6 {
		t.Fatalf("src/a.go metadata %+v", fa)
	}
	if w := fa.Writes[2]; w.StartLine != 5 || w.EndLine != 6 || w.Writer != "cc-1" || w.Seq != 9 || w.Model != "claude-sonnet-4-5" ||
		w.Blob != "b2" || w.Line != 1 || w.Call != "toolu_cc-1" || w.Harness != "claude-code" || w.Session != "sess-1" || w.TS != "2026-12-06T05:00:09Z" {
		t.Errorf("write of 5-6: %+v", w)
	}
	if w := fa.Writes[5]; w.StartLine != 12 || w.Harness != "codex" || w.Session != "" || w.Writer != "cx-1" {
		t.Errorf("codex write: %+v", w)
	}
	if m := recs[1]; len(m.Files) != 0 || m.VCS.Revision != strings.Repeat("b", 40) || m.Timestamp != "2026-12-06T05:03:00Z" {
		t.Errorf("empty commit's record: %+v", m)
	}
	if recs[0].ID == recs[1].ID {
		t.Error("two records share an id")
	}
}

// TestEncodeUnrecorded: lines no write produced can be "unknown" instead
// of "human"; anything else is refused.
func TestEncodeUnrecorded(t *testing.T) {
	out := encode(t, fixture()[:1], agenttrace.EncodeOptions{Unrecorded: "unknown"})
	if !bytes.Contains(out, []byte(`{"contributor":{"type":"unknown"},"ranges":[{"start_line":3`)) || bytes.Contains(out, []byte(`"human"`)) {
		t.Errorf("unrecorded lines not unknown:\n%s", out)
	}
	if err := agenttrace.Encode(&bytes.Buffer{}, fixture(), agenttrace.EncodeOptions{Unrecorded: "mixed"}); err == nil {
		t.Error("Unrecorded mixed accepted")
	}
}

// TestEncodeDeterministic: the same input gives the same bytes, whatever
// the order of the files in it; a different attribution of the same
// commit gets a different id, another git-lossless version the same.
func TestEncodeDeterministic(t *testing.T) {
	a := encode(t, fixture(), agenttrace.EncodeOptions{ToolVersion: "v"})
	b := encode(t, fixture(), agenttrace.EncodeOptions{ToolVersion: "v"})
	if !bytes.Equal(a, b) {
		t.Fatalf("two runs differ:\n%s\n%s", a, b)
	}
	shuffled := fixture()
	fs := shuffled[0].Files
	fs[0], fs[1], fs[2] = fs[2], fs[0], fs[1]
	if c := encode(t, shuffled, agenttrace.EncodeOptions{ToolVersion: "v"}); !bytes.Equal(a, c) {
		t.Errorf("file order changed the output:\n%s\n%s", a, c)
	}
	other := fixture()
	other[0].Files[1].Added[2].Origin = other[0].Files[1].Added[0].Origin // line 3 now the agent's
	var r1, r2 agenttrace.Record
	json.Unmarshal(bytes.SplitN(a, []byte("\n"), 2)[0], &r1)
	json.Unmarshal(bytes.SplitN(encode(t, other, agenttrace.EncodeOptions{ToolVersion: "v"}), []byte("\n"), 2)[0], &r2)
	if r1.ID == "" || r1.ID == r2.ID {
		t.Errorf("ids %q and %q: a different attribution must get a different id", r1.ID, r2.ID)
	}
	var r3 agenttrace.Record
	json.Unmarshal(bytes.SplitN(encode(t, fixture(), agenttrace.EncodeOptions{ToolVersion: "v2"}), []byte("\n"), 2)[0], &r3)
	if r3.ID != r1.ID || r3.Tool.Version != "v2" {
		t.Errorf("another git-lossless version changed the id: %q, %q", r1.ID, r3.ID)
	}
	if r1.ID[14] != '5' {
		t.Errorf("id %s is not a version 5 UUID", r1.ID)
	}
}

// TestModelID: models.dev provider prefixes for the families whose
// provider is certain, other names as archived, too long ones left out.
func TestModelID(t *testing.T) {
	for in, want := range map[string]string{
		"claude-opus-4-5-20251101": "anthropic/claude-opus-4-5-20251101",
		"gpt-5-codex":              "openai/gpt-5-codex",
		"o3-mini":                  "openai/o3-mini",
		"gemini-2.5-pro":           "google/gemini-2.5-pro",
		"openrouter/x/y":           "openrouter/x/y",
		"mystery-model":            "mystery-model",
		strings.Repeat("m", 251):   "",
	} {
		ch := []blame.CommitChange{{Commit: "c", Files: []blame.FileChange{{Path: "f", Added: []blame.AddedLine{{N: 1, Origin: &blame.Origin{Writer: "w", Session: "s", Model: in}}}}}}}
		r, err := agenttrace.Build(&ch[0], agenttrace.EncodeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Files[0].Conversations[0].Contributor.ModelID; got != want {
			t.Errorf("model %.20q: model_id %q, want %q", in, got, want)
		}
		if got := r.Metadata.Lossless.Files[0].Writes[0].Model; got != in {
			t.Errorf("metadata model %.20q, want the archived one", got)
		}
	}
}

// TestSchemaValidates: every record the encoder writes validates against
// the specification's schema, as do the specification's own examples.
func TestSchemaValidates(t *testing.T) {
	v := agenttracetest.Load(t)
	for _, opt := range []agenttrace.EncodeOptions{{ToolVersion: "1.0"}, {Unrecorded: "unknown"}} {
		recs := v.ValidateLines(t, encode(t, fixture(), opt))
		if len(recs) != 2 {
			t.Errorf("%d records", len(recs))
		}
	}
	for _, name := range []string{"example-6.2.json", "example-appendix-a.json"} {
		b, err := os.ReadFile(filepath.Join(agenttracetest.Dir(), name))
		if err != nil {
			t.Fatal(err)
		}
		if err := v.Validate(b); err != nil {
			t.Errorf("the specification's %s fails: %v", name, err)
		}
	}
}

// TestSchemaRejects: the validator is not a rubber stamp. Each record
// below is the encoder's first record with one thing broken: a required
// field missing, a wrong enum, a bad pattern or format, a line below 1.
func TestSchemaRejects(t *testing.T) {
	v := agenttracetest.Load(t)
	good := bytes.SplitN(encode(t, fixture(), agenttrace.EncodeOptions{}), []byte("\n"), 2)[0]
	if err := v.Validate(good); err != nil {
		t.Fatalf("the unbroken record fails: %v", err)
	}
	for _, tc := range []struct {
		name   string
		break_ func(r map[string]any)
	}{
		{"no version", func(r map[string]any) { delete(r, "version") }},
		{"no id", func(r map[string]any) { delete(r, "id") }},
		{"no timestamp", func(r map[string]any) { delete(r, "timestamp") }},
		{"no files", func(r map[string]any) { delete(r, "files") }},
		{"version not semver", func(r map[string]any) { r["version"] = "0.1" }},
		{"id not a uuid", func(r map[string]any) { r["id"] = "commit-aaaa" }},
		{"timestamp not RFC 3339", func(r map[string]any) { r["timestamp"] = "2026-12-06 05:01:00" }},
		{"no vcs revision", func(r map[string]any) { delete(r["vcs"].(map[string]any), "revision") }},
		{"vcs type unknown", func(r map[string]any) { r["vcs"].(map[string]any)["type"] = "cvs" }},
		{"files not an array", func(r map[string]any) { r["files"] = map[string]any{} }},
		{"file without path", func(r map[string]any) { delete(file0(r), "path") }},
		{"file without conversations", func(r map[string]any) { delete(file0(r), "conversations") }},
		{"conversation without ranges", func(r map[string]any) { delete(conv0(r), "ranges") }},
		{"contributor type unknown", func(r map[string]any) { conv0(r)["contributor"].(map[string]any)["type"] = "robot" }},
		{"contributor without type", func(r map[string]any) { delete(conv0(r)["contributor"].(map[string]any), "type") }},
		{"model_id too long", func(r map[string]any) {
			conv0(r)["contributor"].(map[string]any)["model_id"] = strings.Repeat("m", 251)
		}},
		{"url not a URI", func(r map[string]any) { conv0(r)["url"] = "session 1" }},
		{"related without url", func(r map[string]any) {
			conv0(r)["related"] = []any{map[string]any{"type": "session"}}
		}},
		{"range without end_line", func(r map[string]any) { delete(range0(r), "end_line") }},
		{"range starting at 0", func(r map[string]any) { range0(r)["start_line"] = 0 }},
		{"range line not an integer", func(r map[string]any) { range0(r)["start_line"] = 1.5 }},
		{"metadata not an object", func(r map[string]any) { r["metadata"] = "x" }},
	} {
		var r map[string]any
		if err := json.Unmarshal(good, &r); err != nil {
			t.Fatal(err)
		}
		tc.break_(r)
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if err := v.Validate(b); err == nil {
			t.Errorf("%s: validates:\n%s", tc.name, b)
		} else {
			t.Logf("%s: %v", tc.name, err)
		}
	}
}

func file0(r map[string]any) map[string]any { return r["files"].([]any)[0].(map[string]any) }
func conv0(r map[string]any) map[string]any {
	return file0(r)["conversations"].([]any)[0].(map[string]any)
}
func range0(r map[string]any) map[string]any { return conv0(r)["ranges"].([]any)[0].(map[string]any) }
