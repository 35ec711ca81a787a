package codex

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// cxHome lays the sample rollouts out as Codex does under a CODEX_HOME,
// with things that are not rollouts beside them.
func cxHome(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	day := filepath.Join(home, "sessions", "2026", "12", "05")
	if err := os.MkdirAll(day, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, th := range []string{cxRun1, cxCompact, cxParent, cxChild} {
		src := cxRollout(t, th)
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(day, filepath.Base(src)), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for name, content := range map[string]string{
		"sessions/2026/12/05/rollout-2026-12-05T16-00-00-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee.jsonl": `{"type":"event_msg"`,
		"sessions/2026/12/05/notes.txt":      "not a rollout",
		"sessions/2026/12/05/state_5.sqlite": "",
		"sessions/tmp/rollout-2026-12-05T16-00-00-ffffffff-bbbb-cccc-dddd-eeeeeeeeeeee.jsonl":      "{}\n",
		"archived_sessions/rollout-2026-12-05T16-00-00-ffffffff-bbbb-cccc-dddd-eeeeeeeeeeee.jsonl": "{}\n",
	} {
		p := filepath.Join(home, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return home
}

func TestFindSessions(t *testing.T) {
	home := cxHome(t)
	ss, err := FindSessions(context.Background(), home)
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 4 {
		t.Fatalf("%d sessions: %+v", len(ss), ss)
	}
	// Oldest first: the broken rollout (its start is unknown: first),
	// the subagent run (14:16:40), the compaction run (14:16:51), run1
	// (15:15:10).
	broken, parent, compact, run1 := ss[0], ss[1], ss[2], ss[3]
	if broken.ID != "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee" || broken.Main == nil || broken.Main.MetaErr == nil || len(broken.Subagents) != 0 {
		t.Errorf("broken %+v", broken)
	}
	if parent.ID != cxParent || parent.Main == nil || parent.Main.Meta.ID != cxParent || len(parent.Subagents) != 1 ||
		parent.Subagents[0].Meta.ID != cxChild || parent.Subagents[0].Meta.ParentThreadID != cxParent || parent.Subagents[0].MetaErr != nil {
		t.Errorf("subagent session %+v", parent)
	}
	if compact.ID != cxCompact || run1.ID != cxRun1 || len(compact.Subagents)+len(run1.Subagents) != 0 {
		t.Errorf("sessions %s %s", compact.ID, run1.ID)
	}
	if fs := parent.Files(); len(fs) != 2 || fs[0].Path != parent.Main.Path || fs[1].Size != 47697 {
		t.Errorf("files %+v", fs)
	}
	// Nothing there: no sessions, no error.
	if ss, err := FindSessions(context.Background(), t.TempDir()); err != nil || len(ss) != 0 {
		t.Errorf("empty home: %v %v", ss, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := FindSessions(ctx, home); err == nil {
		t.Error("a cancelled walk did not fail")
	}
}

func TestHome(t *testing.T) {
	env := map[string]string{"HOME": "/home/u"}
	get := func(k string) string { return env[k] }
	if h, err := Home(get); err != nil || h != "/home/u/.codex" {
		t.Errorf("%q %v", h, err)
	}
	env["CODEX_HOME"] = "/opt/codex"
	if h, err := Home(get); err != nil || h != "/opt/codex" {
		t.Errorf("%q %v", h, err)
	}
}
