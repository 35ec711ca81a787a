package claudecode

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzDecodePayload feeds anything to the hook payload decoder, the first
// thing every hook runs on what Claude Code (or anyone) writes on stdin:
// it must never panic, and what it accepts must be well formed. Seeds in
// testdata/fuzz/FuzzDecodePayload: every kind of payload of
// shared/samples/claude-code-2.1.328/hook-payloads.log, and hostile ones.
func FuzzDecodePayload(f *testing.F) {
	f.Fuzz(pdFuzzDecode)
}

func pdFuzzDecode(t *testing.T, data []byte) {
	p, err := DecodePayload(bytes.NewReader(data))
	if err != nil {
		if p.SessionID != "" || p.Cwd != "" || p.ToolName != "" {
			t.Fatalf("error %v with a partly filled payload %+v", err, p)
		}
		return
	}
	if !json.Valid(bytes.TrimSpace(data)) {
		t.Fatalf("accepted invalid JSON %q", data)
	}
	if p.SessionID == "" {
		t.Fatal("accepted a payload without session_id")
	}
	if p.Cwd != "" && !filepath.IsAbs(p.Cwd) {
		t.Fatalf("accepted relative cwd %q", p.Cwd)
	}
	// What the handlers derive from it must not panic either, and a
	// target is absolute whenever the payload gives a cwd.
	tgt, terr := p.target()
	if terr == nil && tgt == "" {
		t.Fatal("target: no path and no error")
	}
	if tgt != "" && p.Cwd != "" && !filepath.IsAbs(tgt) {
		t.Fatalf("target %q not absolute with cwd %q", tgt, p.Cwd)
	}
	if tgt != "" && filepath.Clean(tgt) != tgt {
		t.Fatalf("target %q not clean", tgt)
	}
	if in, err := p.input(); err == nil {
		_, _ = in.writtenContent()
	}
	_, _ = p.readResult()
	for _, tp := range []string{p.TranscriptPath, p.contextTranscript()} {
		if tp != "" && !filepath.IsAbs(tp) {
			t.Fatalf("accepted relative transcript %q", tp)
		}
	}
	if tp := p.contextTranscript(); p.AgentID != "" && p.AgentTranscriptPath == "" && p.TranscriptPath != "" {
		// A subagent's transcript is in its session's subagents/ dir,
		// whatever its id says.
		want := filepath.Join(strings.TrimSuffix(p.TranscriptPath, ".jsonl"), "subagents")
		if filepath.Dir(tp) != want || !strings.HasSuffix(tp, ".jsonl") {
			t.Fatalf("subagent %q: transcript %q outside %s", p.AgentID, tp, want)
		}
	}
}

// TestPayloadFuzzSeedCorpus fails when FuzzDecodePayload's committed seeds
// are missing or empty, runs each through the fuzz body, and checks that
// every real payload among them decodes, with the fields the hooks use.
func TestPayloadFuzzSeedCorpus(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzDecodePayload")
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("seed corpus %s: %v", dir, err)
	}
	samples, n := 0, 0
	events := map[string]bool{}
	for _, e := range ents {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		vals, err := trCorpusValues(b)
		if err != nil || len(vals) != 1 {
			t.Fatalf("%s: %v (%d values)", e.Name(), err, len(vals))
		}
		n++
		t.Run(e.Name(), func(t *testing.T) { pdFuzzDecode(t, []byte(vals[0])) })
		if !strings.HasPrefix(e.Name(), "sample-") {
			continue
		}
		samples++
		p, err := DecodePayload(strings.NewReader(vals[0]))
		if err != nil {
			t.Errorf("%s: real payload refused: %v", e.Name(), err)
			continue
		}
		if p.TranscriptPath == "" || p.Cwd == "" || EventName(p.HookEventName) == "" && p.HookEventName != "Stop" {
			t.Errorf("%s: decoded %+v", e.Name(), p)
		}
		events[p.HookEventName] = true
		if strings.HasPrefix(p.HookEventName, "P") && strings.Contains(p.HookEventName, "ToolUse") && (p.ToolName == "" || p.ToolUseID == "") {
			t.Errorf("%s: tool payload without tool_name/tool_use_id: %+v", e.Name(), p)
		}
	}
	if n == 0 || samples == 0 {
		t.Fatalf("seed corpus %s is empty (%d seeds, %d real payloads)", dir, n, samples)
	}
	for _, ev := range []string{"SessionStart", "PreToolUse", "PostToolUse", "PreCompact", "SubagentStop", "SessionEnd"} {
		if !events[ev] {
			t.Errorf("no real %s payload among the seeds", ev)
		}
	}
}
