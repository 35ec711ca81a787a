package doctor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/hooks"
	"github.com/git-lossless/git-lossless/hooks/gemini"
	"github.com/git-lossless/git-lossless/hooks/settings"
)

// TestCheckGemini: no line without Gemini CLI; a WARN when ~/.gemini
// exists without our hooks; OK once install wrote them; WARN when one of
// them is gone.
func TestCheckGemini(t *testing.T) {
	home, dir := t.TempDir(), t.TempDir()
	getenv := func(k string) string {
		if k == "HOME" {
			return home
		}
		return ""
	}
	opt := Options{Dir: dir, Getenv: getenv}
	if cs := checkGemini(opt); len(cs) != 0 {
		t.Fatalf("without ~/.gemini: %+v", cs)
	}
	if err := os.MkdirAll(filepath.Join(home, ".gemini"), 0o700); err != nil {
		t.Fatal(err)
	}
	if cs := checkGemini(opt); len(cs) != 1 || cs[0].Status != Warn || !strings.Contains(cs[0].Fix, "install gemini") {
		t.Fatalf("with ~/.gemini and no hooks: %+v", cs)
	}
	inst, err := gemini.New().Install(context.Background(), hooks.InstallOptions{Scope: "user", Dir: dir, Getenv: getenv,
		Bin: settings.HookBinary{Path: "/x/git-lossless", Hook: "/x/git-lossless"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := inst.Targets[0].Plan.Apply(time.Now()); err != nil {
		t.Fatal(err)
	}
	if cs := checkGemini(opt); len(cs) != 1 || cs[0].Status != OK {
		t.Fatalf("after install: %+v", cs)
	}
	path := filepath.Join(home, ".gemini", "settings.json")
	b, _ := os.ReadFile(path)
	cut := strings.Replace(string(b), "hook gemini before-agent", "hook gemini before-agentx", 1)
	if err := os.WriteFile(path, []byte(cut), 0o600); err != nil {
		t.Fatal(err)
	}
	if cs := checkGemini(opt); len(cs) != 1 || cs[0].Status != Warn || !strings.Contains(cs[0].Detail, "partly installed") {
		t.Fatalf("with one hook changed: %+v", cs)
	}
}
