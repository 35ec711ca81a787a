// Package npmcli installs pinned npm packages (agent CLIs, SDKs) once into
// the user cache dir for tests that drive them, shared by every test
// binary on the machine: os.UserCacheDir()/git-lossless/npm/<name>-<version>.
// It imports testing: only test kits and _test.go files may import it.
//
// An install runs `npm install --prefix TMP --no-audit --no-fund
// --loglevel=error NAME@VERSION` into a temp dir beside the target, under
// an exclusive flock on <dir>.lock, checks the result and renames it into
// place; a finished install is therefore either absent or whole, and a
// second process waiting on the lock finds it done. An install is reused
// when node_modules/<name>/package.json holds the pinned version, the
// executable exists, and the package's own Check passes.
//
// npm 11 refuses to run install scripts not in allowScripts; none of the
// CLIs driven here needs its postinstall (each ships its binary in an
// optional platform package, or bundles its JavaScript).
package npmcli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Package is one npm package pinned for tests.
type Package struct {
	Name    string // npm name: "@openai/codex", "opencode-ai"
	Version string // exact version: "0.169.0"
	// Bin is the executable's name under node_modules/.bin; empty for a
	// library (Install then returns the install directory).
	Bin string
	// Check, when set, vets an install further (after the package.json
	// version check); bin is the executable, or the install directory
	// for a library. An error makes a cached install count as missing and
	// a fresh one fail.
	Check func(bin string) error
}

// DirName is the cache directory's name: the npm name without its scope,
// a dash and the version ("codex-0.169.0", "claude-code-2.1.328").
func (p Package) DirName() string {
	name := p.Name
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	return name + "-" + p.Version
}

// Root is os.UserCacheDir()/git-lossless/npm, where installs live.
func Root() (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("npmcli: user cache dir: %w", err)
	}
	return filepath.Join(cache, "git-lossless", "npm"), nil
}

// Dir is the install directory of p under Root.
func Dir(p Package) (string, error) {
	root, err := Root()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, p.DirName()), nil
}

// target is what Install returns for an install in dir.
func (p Package) target(dir string) string {
	if p.Bin == "" {
		return dir
	}
	return filepath.Join(dir, "node_modules", ".bin", p.Bin)
}

// Installed checks an install directory: the package at the pinned
// version, the executable present, and p.Check.
func Installed(p Package, dir string) error {
	pj := filepath.Join(dir, "node_modules", filepath.FromSlash(p.Name), "package.json")
	b, err := os.ReadFile(pj)
	if err != nil {
		return err
	}
	var meta struct{ Version string }
	if err := json.Unmarshal(b, &meta); err != nil {
		return fmt.Errorf("%s: %w", pj, err)
	}
	if meta.Version != p.Version {
		return fmt.Errorf("%s is version %s, want %s", pj, meta.Version, p.Version)
	}
	target := p.target(dir)
	if p.Bin != "" {
		if _, err := os.Stat(target); err != nil {
			return err
		}
	}
	if p.Check != nil {
		return p.Check(target)
	}
	return nil
}

// Install returns the executable (or, for a library, the install
// directory) of p, installing it with npm when the cache lacks a good
// install. cold reports that this call ran npm.
func Install(ctx context.Context, p Package) (target string, cold bool, err error) {
	dir, err := Dir(p)
	if err != nil {
		return "", false, err
	}
	if Installed(p, dir) == nil {
		return p.target(dir), false, nil
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", false, fmt.Errorf("npm not found: %w", err)
	}
	root := filepath.Dir(dir)
	if err := os.MkdirAll(root, 0o700); err != nil {
		return "", false, fmt.Errorf("npmcli: %w", err)
	}
	unlock, err := lockFile(dir + ".lock")
	if err != nil {
		return "", false, fmt.Errorf("npmcli: lock %s: %w", dir, err)
	}
	defer unlock()
	if Installed(p, dir) == nil { // installed by another process meanwhile
		return p.target(dir), false, nil
	}
	tmp, err := os.MkdirTemp(root, p.DirName()+".tmp-")
	if err != nil {
		return "", false, fmt.Errorf("npmcli: %w", err)
	}
	defer os.RemoveAll(tmp)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	spec := p.Name + "@" + p.Version
	cmd := exec.CommandContext(ctx, npm, "install", "--prefix", tmp, "--no-audit", "--no-fund", "--loglevel=error", spec)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", false, fmt.Errorf("npm install %s: %w\n%s", spec, err, out.Bytes())
	}
	if err := Installed(p, tmp); err != nil {
		return "", false, fmt.Errorf("npm install %s: %w", spec, err)
	}
	if err := os.RemoveAll(dir); err != nil { // a broken earlier install
		return "", false, fmt.Errorf("npmcli: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return "", false, fmt.Errorf("npmcli: %w", err)
	}
	// The .bin symlinks are relative, so they survive the rename; the
	// check runs again on the final path for packages that record it.
	if err := Installed(p, dir); err != nil {
		return "", false, err
	}
	return p.target(dir), true, nil
}

// Require turns an unavailable tool into a skipped test, or under CI=true
// a failed one. It returns only when err is nil.
func Require(t testing.TB, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s unavailable: %v", what, err)
	}
	t.Skipf("%s unavailable: %v", what, err)
}

// Installer installs one package at most once per process, for a test kit
// whose tests all want it.
type Installer struct {
	pkg Package
	env string // names a binary to use instead, when set

	once   sync.Once
	target string
	cold   bool
	err    error
}

// NewInstaller returns an Installer for p. When the environment variable
// env (if not empty) is set, its value is used as the executable instead
// of an install; p.Check still vets it.
func NewInstaller(p Package, env string) *Installer { return &Installer{pkg: p, env: env} }

// Path installs on first use and returns the executable (or library dir).
func (i *Installer) Path() (target string, cold bool, err error) {
	i.once.Do(func() {
		if i.env != "" {
			if bin := os.Getenv(i.env); bin != "" {
				i.target = bin
				if i.pkg.Check != nil {
					i.err = i.pkg.Check(bin)
				}
				return
			}
		}
		i.target, i.cold, i.err = Install(context.Background(), i.pkg)
	})
	return i.target, i.cold, i.err
}

// Require returns the executable, skipping the test (failing it under
// CI=true) when it cannot be had.
func (i *Installer) Require(t testing.TB) string {
	t.Helper()
	target, _, err := i.Path()
	Require(t, i.pkg.Name+"@"+i.pkg.Version, err)
	return target
}

// errNoOutput is what CheckVersion reports for a program that printed
// nothing.
var errNoOutput = errors.New("no output")

// CheckVersion runs `bin --version` with env appended to the test
// process's environment and wants version among the words printed.
func CheckVersion(bin, version string, env ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--version")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s --version: %w: %s", bin, err, out)
	}
	words := strings.Fields(string(out))
	if len(words) == 0 {
		return fmt.Errorf("%s --version: %w", bin, errNoOutput)
	}
	for _, w := range words {
		if w == version {
			return nil
		}
	}
	return fmt.Errorf("%s --version printed %q, want %s", bin, strings.TrimSpace(string(out)), version)
}
