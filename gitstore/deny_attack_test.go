package gitstore

import (
	"os"
	"path/filepath"
	"testing"
)

// Findings of an attack run against the deny list, each reproduced here.

// TestDenyCaseInsensitive: the deny globs match whatever the case of the
// path (".ENV", "ID_RSA", "Secrets.JSON" are the same secrets on a
// case-insensitive file system, and denying them on a case-sensitive one
// is the safe direction), while the near misses stay allowed in any case.
func TestDenyCaseInsensitive(t *testing.T) {
	d := newDenyList(t, "Private/**", "*.SQLite")
	for _, tt := range []struct{ path, glob string }{
		{".ENV", ".env"},
		{".Env", ".env"},
		{".ENV.LOCAL", ".env.*"},
		{".EnvRC", ".envrc"},
		{"SERVER.PEM", "*.pem"},
		{"tls/Server.Key", "*.key"},
		{"ID_RSA", "id_rsa*"},
		{"Id_Ed25519.PUB", "id_ed25519*"},
		{"Secrets.JSON", "secret*.{json,yaml,yml,toml,txt}"},
		{"SECRETS.YML", "secret*.{json,yaml,yml,toml,txt}"},
		{".SSH/config", ".ssh/**"},
		{".Ssh", ".ssh/**"},
		{".AWS/Credentials", ".aws/**"},
		{".NPMRC", ".npmrc"},
		{".Git-Credentials", ".git-credentials"},
		{"CREDENTIALS.json", "credentials*"},
		// User globs are case-insensitive too, and reported as written.
		{"private/notes.md", "Private/**"},
		{"PRIVATE/notes.md", "Private/**"},
		{"app.sqlite", "*.SQLite"},
		{"APP.SQLITE", "*.SQLite"},
	} {
		for _, p := range variants(tt.path) {
			if glob, denied := d.Match(p); !denied || glob != tt.glob {
				t.Errorf("Match(%q) = %q, %v; want %q, true", p, glob, denied, tt.glob)
			}
		}
	}
	for _, rel := range []string{
		"ENVIRONMENT.TS", "Environment.ts",
		"KEYBOARD.TS", "Keyboard.ts",
		"MONKEY.TS", "Monkey.ts",
		"ENVELOPE.TEST.TS", "Envelope.Test.ts",
		"NOTES.MD", "Notes.md",
		"SRC/ENV/CONFIG.GO",
		"KEYS.GO",
		"DOTENV.MD",
		"ENV",
		"MY.ENV.EXAMPLE.MD/README",
		"SSH", "SSH/CONFIG", "SRC/SSH/CLIENT.GO",
		"AWS/CONFIG",
		"SECRET.GO", "SECRETS.MD",
		"PEM.GO",
		"KEY",
		"README.MD",
		"PRIVATEER/Y",
		"APP.SQLITE3",
	} {
		for _, p := range variants(rel) {
			if glob, denied := d.Match(p); denied {
				t.Errorf("Match(%q) denied by %q; want allowed", p, glob)
			}
		}
	}
}

// hardLinkRig is a repository (a directory holding .git) and a home
// directory on the same file system, with secrets in both.
type hardLinkRig struct {
	t          *testing.T
	repo, home string
}

func newHardLinkRig(t *testing.T) *hardLinkRig {
	t.Helper()
	base := t.TempDir()
	base, err := filepath.EvalSymlinks(base)
	if err != nil {
		t.Fatal(err)
	}
	r := &hardLinkRig{t: t, repo: filepath.Join(base, "home", "u", "proj"), home: filepath.Join(base, "home", "u")}
	if err := os.MkdirAll(filepath.Join(r.repo, ".git"), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", r.home)
	return r
}

func (r *hardLinkRig) write(path, content string) string {
	r.t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		r.t.Fatal(err)
	}
	return path
}

func (r *hardLinkRig) link(target, name string) string {
	r.t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o700); err != nil {
		r.t.Fatal(err)
	}
	if err := os.Link(target, name); err != nil {
		r.t.Skipf("hard links unsupported: %v", err)
	}
	return name
}

// TestDenyCheckHardLinks: a hard link to a denied file under an innocent
// name is the denied file (same device and inode), so its content must
// not be archived: "ln .env notes.txt". What is caught is documented on
// DenyList.Check; the cases below pin both sides of that line.
func TestDenyCheckHardLinks(t *testing.T) {
	r := newHardLinkRig(t)
	repo, home := r.repo, r.home
	env := r.write(filepath.Join(repo, ".env"), "TOKEN=1\n")
	deepEnv := r.write(filepath.Join(repo, "config", "prod", ".env"), "TOKEN=2\n")
	key := r.write(filepath.Join(home, ".ssh", "id_ed25519"), "-----BEGIN OPENSSH PRIVATE KEY-----\n")
	sshCfg := r.write(filepath.Join(home, ".ssh", "config"), "Host x\n")
	awsCreds := r.write(filepath.Join(home, ".aws", "credentials"), "[default]\n")
	netrc := r.write(filepath.Join(home, ".netrc"), "machine x password y\n")
	pem := r.write(filepath.Join(repo, "tls", "server.pem"), "-----BEGIN CERTIFICATE-----\n")
	plain := r.write(filepath.Join(repo, "a.txt"), "a\n")

	notes := r.link(env, filepath.Join(repo, "notes.txt"))
	deep := r.link(env, filepath.Join(repo, "src", "deep", "dir", "notes.txt"))
	keyTxt := r.link(key, filepath.Join(repo, "key.txt"))
	cfgTxt := r.link(sshCfg, filepath.Join(repo, "docs", "cfg.txt"))
	awsTxt := r.link(awsCreds, filepath.Join(repo, "aws.txt"))
	netrcTxt := r.link(netrc, filepath.Join(repo, "src", "n.txt"))
	pemTxt := r.link(pem, filepath.Join(repo, "tls", "cert.txt"))
	far := r.link(deepEnv, filepath.Join(repo, "src", "far.txt"))
	twin := r.link(plain, filepath.Join(repo, "b.txt"))
	if err := os.Symlink(notes, filepath.Join(repo, "via-symlink.txt")); err != nil {
		t.Skipf("symlinks unsupported: %v", err)
	}

	d := newDenyList(t)
	for _, tt := range []struct {
		name, path, glob, matched string
		denied                    bool
	}{
		{"beside the secret", notes, ".env", env, true},
		{"below the secret, up to the repository top", deep, ".env", env, true},
		{"home ssh key", keyTxt, ".ssh/**", key, true},
		{"home ssh config", cfgTxt, ".ssh/**", sshCfg, true},
		{"home aws credentials", awsTxt, ".aws/**", awsCreds, true},
		{"home dotfile", netrcTxt, ".netrc", netrc, true},
		{"beside a key by glob", pemTxt, "*.pem", pem, true},
		{"through a symlink", filepath.Join(repo, "via-symlink.txt"), ".env", env, true},
		// The documented limit: a denied file in a directory that is
		// neither an ancestor of the link, nor the repository top, nor
		// home or its credential directories is not found.
		{"distant directory (not recognised)", far, "", "", false},
		{"hard link to a harmless file", twin, "", "", false},
		{"the harmless file itself", plain, "", "", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			glob, matched, denied := d.Check(tt.path)
			if glob != tt.glob || matched != tt.matched || denied != tt.denied {
				t.Errorf("Check(%q) = %q, %q, %v; want %q, %q, %v", tt.path, glob, matched, denied, tt.glob, tt.matched, tt.denied)
			}
		})
	}
}

// TestDenyCheckHardLinksPnpm: pnpm installs every package file as a hard
// link into its content-addressed store, so node_modules is full of files
// with a link count above 1 beside a repository whose top holds a .env:
// none of them is denied, and none is mistaken for the .env.
func TestDenyCheckHardLinksPnpm(t *testing.T) {
	r := newHardLinkRig(t)
	r.write(filepath.Join(r.repo, ".env"), "TOKEN=1\n")
	r.write(filepath.Join(r.repo, ".npmrc"), "//registry/:_authToken=x\n")
	store := filepath.Join(r.home, ".local", "share", "pnpm", "store", "v3", "files")
	pkg := filepath.Join(r.repo, "node_modules", ".pnpm", "left-pad@1.3.0", "node_modules", "left-pad")
	var files []string
	for i, name := range []string{"index.js", "package.json", "README.md", "lib/util.js", "LICENSE"} {
		obj := r.write(filepath.Join(store, string(rune('a'+i))+"0", "hash"+name), "content of "+name+"\n")
		files = append(files, r.link(obj, filepath.Join(pkg, filepath.FromSlash(name))))
	}
	if err := os.Symlink(filepath.Join(".pnpm", "left-pad@1.3.0", "node_modules", "left-pad"), filepath.Join(r.repo, "node_modules", "left-pad")); err != nil {
		t.Skipf("symlinks unsupported: %v", err)
	}
	files = append(files, filepath.Join(r.repo, "node_modules", "left-pad", "index.js"))
	d := newDenyList(t)
	res := newResolver()
	for _, f := range files {
		if glob, matched, denied := d.check(f, res); denied {
			t.Errorf("Check(%q) denied by %q (%s); want allowed", f, glob, matched)
		}
	}
	// Each directory is listed once per batch, however many linked files
	// it holds.
	if n, dirs := res.scans, len(res.secrets); n != dirs || n == 0 {
		t.Errorf("%d directory scans for %d directories", n, dirs)
	}
}

// TestDenyCheckHardLinkCost: a file with one link (the common case) costs
// no directory scan at all, and a linked file's scans are bounded.
func TestDenyCheckHardLinkCost(t *testing.T) {
	r := newHardLinkRig(t)
	r.write(filepath.Join(r.repo, ".env"), "TOKEN=1\n")
	one := r.write(filepath.Join(r.repo, "src", "a", "b", "one.go"), "package b\n")
	d := newDenyList(t)
	res := newResolver()
	if _, _, denied := d.check(one, res); denied {
		t.Fatal("plain file denied")
	}
	if res.scans != 0 {
		t.Errorf("a file with one link cost %d directory scans, want 0", res.scans)
	}
	two := r.link(one, filepath.Join(r.repo, "src", "a", "b", "two.go"))
	if _, _, denied := d.check(two, res); denied {
		t.Fatal("hard link to a plain file denied")
	}
	// src/a/b, src/a, src and the repository top (which stops the walk),
	// home, and the four credential directories under each of home and
	// the top (missing ones cost a failed open each).
	if want := 4 + 1 + 2*len(d.dirs); res.scans != want || len(d.dirs) != 4 {
		t.Errorf("a linked file cost %d directory scans, want %d (%d credential dirs)", res.scans, want, len(d.dirs))
	}
	// A second linked file in the same directories lists nothing again.
	before := res.scans
	three := r.link(one, filepath.Join(r.repo, "src", "a", "b", "three.go"))
	if _, _, denied := d.check(three, res); denied || res.scans != before {
		t.Errorf("second linked file: denied %v, %d more scans", denied, res.scans-before)
	}
}

// BenchmarkDenyCheck is the deny check of one file event on the hooks' hot
// path: a plain file (one link) in a repository, and its name alone.
func BenchmarkDenyCheck(b *testing.B) {
	dir := b.TempDir()
	p := filepath.Join(dir, "src", "pkg", "main.go")
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("package main\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	d, err := NewDenyList(nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("match", func(b *testing.B) {
		for b.Loop() {
			if _, denied := d.Match(p); denied {
				b.Fatal("denied")
			}
		}
	})
	b.Run("check", func(b *testing.B) {
		for b.Loop() {
			if _, _, denied := d.Check(p); denied {
				b.Fatal("denied")
			}
		}
	})
}
