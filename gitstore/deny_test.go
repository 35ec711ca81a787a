package gitstore

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode"
)

func newDenyList(t *testing.T, user ...string) *DenyList {
	t.Helper()
	d, err := NewDenyList(user)
	if err != nil {
		t.Fatalf("NewDenyList(%q): %v", user, err)
	}
	return d
}

// variants returns rel as an absolute path, relative paths at several depths,
// and with "..", all with OS separators.
func variants(rel string) []string {
	return []string{
		filepath.FromSlash("/home/u/proj/" + rel),
		filepath.FromSlash(rel),
		filepath.FromSlash("./" + rel),
		filepath.FromSlash("sub/dir/" + rel),
		filepath.FromSlash("../x/" + rel),
	}
}

// caseVariants returns rel as written, upper-cased, and in alternating
// case: the deny list matches in any case, near misses stay misses.
func caseVariants(rel string) []string {
	alt := []rune(rel)
	for i, r := range alt {
		if i%2 == 0 {
			alt[i] = unicode.ToUpper(r)
		}
	}
	return []string{rel, strings.ToUpper(rel), string(alt)}
}

func TestDenyDefaults(t *testing.T) {
	d := newDenyList(t)
	tests := []struct {
		path, glob string
	}{
		{".env", ".env"},
		{".env.local", ".env.*"},
		{".env.production", ".env.*"},
		{".envrc", ".envrc"},
		{"server.pem", "*.pem"},
		{"tls/server.key", "*.key"},
		{"cert.p12", "*.p12"},
		{"cert.pfx", "*.pfx"},
		{"release.keystore", "*.keystore"},
		{"app.jks", "*.jks"},
		{"pubring.asc", "*.asc"},
		{"id_rsa", "id_rsa*"},
		{"id_rsa.pub", "id_rsa*"},
		{"id_dsa", "id_dsa*"},
		{"id_ecdsa", "id_ecdsa*"},
		{"id_ed25519", "id_ed25519*"},
		{"keys/id_ed25519.pub", "id_ed25519*"},
		{"secrets.json", "secret*.{json,yaml,yml,toml,txt}"},
		{"secrets.yaml", "secret*.{json,yaml,yml,toml,txt}"},
		{"secrets.yml", "secret*.{json,yaml,yml,toml,txt}"},
		{"secret.toml", "secret*.{json,yaml,yml,toml,txt}"},
		{"secret_prod.txt", "secret*.{json,yaml,yml,toml,txt}"},
		{".ssh/config", ".ssh/**"},
		{".ssh/id_custom", ".ssh/**"},
		{".ssh/keys/deep/nested", ".ssh/**"},
		{".ssh", ".ssh/**"},
		{".aws/credentials", ".aws/**"},
		{".aws/config", ".aws/**"},
		{".gnupg/pubring.kbx", ".gnupg/**"},
		{".kube/config", ".kube/**"},
		{".npmrc", ".npmrc"},
		{".netrc", ".netrc"},
		{".pgpass", ".pgpass"},
		{".git-credentials", ".git-credentials"},
		{".htpasswd", ".htpasswd"},
		{"credentials", "credentials*"},
		{"credentials.json", "credentials*"},
	}
	for _, tt := range tests {
		for _, c := range caseVariants(tt.path) {
			for _, p := range variants(c) {
				glob, denied := d.Match(p)
				if !denied || glob != tt.glob {
					t.Errorf("Match(%q) = %q, %v; want %q, true", p, glob, denied, tt.glob)
				}
			}
		}
	}
}

func TestDenyNearMisses(t *testing.T) {
	d := newDenyList(t)
	for _, rel := range []string{
		"environment.ts",
		"keyboard.ts",
		"monkey.ts",
		"envelope.test.ts",
		"notes.md",
		"src/env/config.go",
		"keys.go",
		"dotenv.md",
		"env",
		"my.env.example.md/readme", // ".env" only matches a whole component
		"ssh",
		"ssh/config",
		"src/ssh/client.go",
		"aws/config",
		"secret.go",
		"secrets.md",
		"pem.go",
		"key",
		"README.md",
		"",
		".",
		"/",
	} {
		for _, c := range caseVariants(rel) {
			for _, p := range variants(c) {
				if glob, denied := d.Match(p); denied {
					t.Errorf("Match(%q) denied by %q; want allowed", p, glob)
				}
			}
		}
	}
}

func TestDenyUserGlobs(t *testing.T) {
	d := newDenyList(t, "**/*.sqlite", "private/**", "  ", "", "/abs/data/**", "build/*.log")
	tests := []struct {
		path, glob string
		denied     bool
	}{
		{"app.sqlite", "**/*.sqlite", true},
		{"/var/db/app.sqlite", "**/*.sqlite", true},
		{"data/x/app.sqlite", "**/*.sqlite", true},
		{"app.sqlite3", "", false},
		{"private/notes.md", "private/**", true},
		{"/home/u/proj/private/a/b/c.txt", "private/**", true},
		{"x/private/y", "private/**", true},
		{"privateer/y", "", false},
		{"public/private.md", "", false},
		{"/abs/data/file", "abs/data/**", true},
		{"/mnt/abs/data/file", "abs/data/**", true},
		{"build/out.log", "build/*.log", true},
		{"/p/build/out.log", "build/*.log", true},
		{"build/sub/out.log", "", false},
		{".env", ".env", true}, // defaults stay in force
	}
	for _, tt := range tests {
		p := filepath.FromSlash(tt.path)
		glob, denied := d.Match(p)
		if denied != tt.denied || glob != tt.glob {
			t.Errorf("Match(%q) = %q, %v; want %q, %v", p, glob, denied, tt.glob, tt.denied)
		}
	}
}

func TestDenyInvalidGlob(t *testing.T) {
	_, err := NewDenyList([]string{"ok/**", "bad[", "{unclosed"})
	if err == nil {
		t.Fatal("NewDenyList with invalid globs: want error")
	}
	for _, g := range []string{"bad[", "{unclosed"} {
		if !strings.Contains(err.Error(), g) {
			t.Errorf("error %q does not name %q", err, g)
		}
	}
	if strings.Contains(err.Error(), "ok/**") {
		t.Errorf("error %q names the valid glob", err)
	}
}

func TestDefaultDenyGlobsFresh(t *testing.T) {
	a := DefaultDenyGlobs()
	a[0] = "mutated"
	if b := DefaultDenyGlobs(); b[0] == "mutated" {
		t.Fatal("DefaultDenyGlobs shares its backing array")
	}
	if _, denied := newDenyList(t).Match(".env"); !denied {
		t.Fatal("mutating DefaultDenyGlobs' result changed the defaults")
	}
}

func TestParseDenyEnv(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"   ", nil},
		{",,, ,", nil},
		{"*.sqlite", []string{"*.sqlite"}},
		{"*.sqlite,private/**", []string{"*.sqlite", "private/**"}},
		{" *.sqlite , private/** ,", []string{"*.sqlite", "private/**"}},
		{",a,,b ,\tc\t,", []string{"a", "b", "c"}},
		{"dir with space/**", []string{"dir with space/**"}},
	}
	for _, tt := range tests {
		if got := ParseDenyEnv(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("ParseDenyEnv(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}

func TestDenyCheckSymlinks(t *testing.T) {
	dir := t.TempDir()
	write := func(rel string) {
		t.Helper()
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("SECRET=1\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, name string) {
		t.Helper()
		if err := os.Symlink(filepath.FromSlash(target), filepath.Join(dir, name)); err != nil {
			t.Skipf("symlinks unsupported: %v", err)
		}
	}
	write(".env")
	write(".ssh/config")
	write("notes.md")
	link(".env", "innocent.txt")
	link("innocent.txt", "chain.txt")
	link(".ssh", "link")
	link("missing-target.txt", "dangling.txt")
	link(".env.production", "dangling-env")
	link("notes.md", "notes-link.md")
	link("loop1", "loop2")
	link("loop2", "loop1")

	// The resolved target lives under the real temp dir, which may itself
	// sit behind a symlink (e.g. /var -> /private/var on macOS).
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	real := func(rel string) string { return filepath.Join(realDir, filepath.FromSlash(rel)) }
	abs := func(rel string) string { return filepath.Join(dir, filepath.FromSlash(rel)) }

	d := newDenyList(t)
	tests := []struct {
		name, path, glob, matched string
		denied                    bool
	}{
		{"secret itself", abs(".env"), ".env", abs(".env"), true},
		{"file symlink", abs("innocent.txt"), ".env", real(".env"), true},
		{"symlink chain", abs("chain.txt"), ".env", real(".env"), true},
		{"symlinked dir", abs("link/config"), ".ssh/**", real(".ssh/config"), true},
		{"new file in symlinked dir", abs("link/id_new"), ".ssh/**", real(".ssh/id_new"), true},
		{"dangling to secret name", abs("dangling-env"), ".env.*", real(".env.production"), true},
		{"dangling to harmless name", abs("dangling.txt"), "", "", false},
		{"missing secret name", abs("nope/.env"), ".env", abs("nope/.env"), true},
		{"missing harmless name", abs("nope/notes.md"), "", "", false},
		{"plain file", abs("notes.md"), "", "", false},
		{"harmless symlink", abs("notes-link.md"), "", "", false},
		{"symlink loop", abs("loop1"), "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			glob, matched, denied := d.Check(tt.path)
			if glob != tt.glob || matched != tt.matched || denied != tt.denied {
				t.Errorf("Check(%q) = %q, %q, %v; want %q, %q, %v",
					tt.path, glob, matched, denied, tt.glob, tt.matched, tt.denied)
			}
		})
	}

	t.Run("relative path", func(t *testing.T) {
		t.Chdir(dir)
		glob, matched, denied := d.Check("innocent.txt")
		if !denied || glob != ".env" || filepath.Base(matched) != ".env" {
			t.Errorf(`Check("innocent.txt") = %q, %q, %v; want ".env", ".../.env", true`, glob, matched, denied)
		}
	})
}

func TestDenyConcurrent(t *testing.T) {
	d := newDenyList(t, "private/**")
	done := make(chan struct{})
	for range 8 {
		go func() {
			defer func() { done <- struct{}{} }()
			for range 200 {
				if _, denied := d.Match("/a/private/b"); !denied {
					t.Error("concurrent Match lost a denial")
					return
				}
				d.Check("/no/such/dir/.env")
			}
		}()
	}
	for range 8 {
		<-done
	}
}
