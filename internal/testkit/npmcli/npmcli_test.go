package npmcli_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/git-lossless/git-lossless/internal/testkit/npmcli"
)

func TestDirName(t *testing.T) {
	for name, want := range map[string]string{
		"@openai/codex":             "codex-1.2.3",
		"@anthropic-ai/claude-code": "claude-code-1.2.3",
		"opencode-ai":               "opencode-ai-1.2.3",
	} {
		if got := (npmcli.Package{Name: name, Version: "1.2.3"}).DirName(); got != want {
			t.Errorf("DirName(%s) = %s, want %s", name, got, want)
		}
	}
}

// fakeNPM puts an npm on PATH that "installs" NAME@VERSION by writing
// node_modules/NAME/package.json and node_modules/.bin/tool, and counts
// its runs in a file.
func fakeNPM(t *testing.T) (count func() int) {
	t.Helper()
	bin := t.TempDir()
	runs := filepath.Join(t.TempDir(), "runs")
	script := `#!/bin/sh
echo run >> ` + runs + `
prefix=$3
spec=$(eval echo \${$#})
name=${spec%@*}; version=${spec##*@}
mkdir -p "$prefix/node_modules/$name" "$prefix/node_modules/.bin"
printf '{"name":"%s","version":"%s"}' "$name" "$version" > "$prefix/node_modules/$name/package.json"
printf '#!/bin/sh\necho tool %s\n' "$version" > "$prefix/node_modules/.bin/tool"
chmod +x "$prefix/node_modules/.bin/tool"
`
	if err := os.WriteFile(filepath.Join(bin, "npm"), []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	return func() int {
		b, _ := os.ReadFile(runs)
		return strings.Count(string(b), "run")
	}
}

func TestInstallOnceAndReuse(t *testing.T) {
	count := fakeNPM(t)
	p := npmcli.Package{Name: "@scope/tool", Version: "2.0.0", Bin: "tool",
		Check: func(bin string) error { return npmcli.CheckVersion(bin, "2.0.0") }}
	var wg sync.WaitGroup
	bins := make([]string, 4)
	errs := make([]error, 4)
	for i := range bins {
		wg.Add(1)
		go func() {
			defer wg.Done()
			bins[i], _, errs[i] = npmcli.Install(context.Background(), p)
		}()
	}
	wg.Wait()
	for i := range bins {
		if errs[i] != nil || bins[i] != bins[0] {
			t.Fatalf("install %d: %s, %v", i, bins[i], errs[i])
		}
	}
	if n := count(); n != 1 {
		t.Errorf("npm ran %d times for four concurrent installs, want 1", n)
	}
	dir, _ := npmcli.Dir(p)
	if bins[0] != filepath.Join(dir, "node_modules", ".bin", "tool") {
		t.Errorf("bin %s not in %s", bins[0], dir)
	}
	if _, cold, err := npmcli.Install(context.Background(), p); err != nil || cold {
		t.Errorf("second install: cold %v, %v", cold, err)
	}
	if leftovers, _ := filepath.Glob(dir + ".tmp-*"); len(leftovers) != 0 {
		t.Errorf("temp dirs left: %v", leftovers)
	}

	// A broken install (wrong version) is replaced.
	pj := filepath.Join(dir, "node_modules", "@scope", "tool", "package.json")
	if err := os.WriteFile(pj, []byte(`{"version":"1.0.0"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, cold, err := npmcli.Install(context.Background(), p); err != nil || !cold || count() != 2 {
		t.Errorf("reinstall over a wrong version: cold %v, %v, npm runs %d", cold, err, count())
	}
}

func TestInstallCheckFails(t *testing.T) {
	fakeNPM(t)
	bad := errors.New("not good enough")
	p := npmcli.Package{Name: "tool", Version: "3.0.0", Bin: "tool", Check: func(string) error { return bad }}
	if _, _, err := npmcli.Install(context.Background(), p); !errors.Is(err, bad) {
		t.Errorf("Install = %v, want the check's error", err)
	}
	dir, _ := npmcli.Dir(p)
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("a failed install left %s: %v", dir, err)
	}
}
