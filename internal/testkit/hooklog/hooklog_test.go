package hooklog_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/git-lossless/git-lossless/internal/testkit/hooklog"
)

func call(t *testing.T, l *hooklog.Log, payload string) (string, int) {
	t.Helper()
	cmd := exec.Command(l.Script)
	cmd.Stdin = strings.NewReader(payload)
	out, err := cmd.Output()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), code
}

func TestRulesAndPayloads(t *testing.T) {
	l := hooklog.New(t,
		hooklog.Rule{Event: "PreToolUse", Contains: "other.txt", Stdout: `{"deny":"it's 'quoted'"}`},
		hooklog.Rule{Event: "BeforeTool", Exit: 2, Stdout: "blocked"})
	cases := []struct {
		payload, out string
		code         int
	}{
		{`{"hook_event_name":"PreToolUse","tool_input":{"path":"hello.txt"}}`, "", 0},
		{`{"hook_event_name": "PreToolUse", "tool_input": {"path": "other.txt"}}`, `{"deny":"it's 'quoted'"}`, 0},
		{`{"hook_event_name":"PostToolUse","tool_input":{"path":"other.txt"}}`, "", 0},
		{`{"hook_event_name":"BeforeTool"}`, "blocked", 2},
	}
	for _, c := range cases {
		out, code := call(t, l, c.payload)
		if out != c.out || code != c.code {
			t.Errorf("%s: out %q exit %d, want %q %d", c.payload, out, code, c.out, c.code)
		}
	}
	ps := l.Payloads(t)
	if got := strings.Join(hooklog.Events(ps, func(p hooklog.Payload) string {
		path, _ := p.Input()["path"].(string)
		return path
	}), " "); got != "PreToolUse(hello.txt) PreToolUse(other.txt) PostToolUse(other.txt) BeforeTool" {
		t.Errorf("payloads in order: %s", got)
	}
	if n := len(l.Find(t, "PreToolUse", nil)); n != 2 {
		t.Errorf("%d PreToolUse payloads", n)
	}
}
