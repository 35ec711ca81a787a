package claudetest

import (
	"bytes"
	"context"
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

// Version is the Claude Code release the harness installs and drives.
const Version = "2.1.328"

const npmPackage = "@anthropic-ai/claude-code@" + Version

var (
	ensureOnce sync.Once
	ensureBin  string
	ensureErr  error
)

// EnsureClaude returns the path of a Claude Code Version binary, installing
// it with npm on first use into os.UserCacheDir()/git-lossless/npm/
// claude-code-<Version> (shared by test binaries running at once: a lock
// file serialises installs and a finished install appears by rename). The
// environment variable CLAUDETEST_BIN names a binary to use instead.
// Without npm, or when the install fails, the test is skipped, except
// under CI=true where it fails.
func EnsureClaude(t testing.TB) string {
	t.Helper()
	ensureOnce.Do(func() { ensureBin, ensureErr = ensureClaude() })
	if ensureErr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("claudetest: Claude Code %s unavailable: %v", Version, ensureErr)
		}
		t.Skipf("claudetest: Claude Code %s unavailable: %v", Version, ensureErr)
	}
	return ensureBin
}

func ensureClaude() (string, error) {
	if bin := os.Getenv("CLAUDETEST_BIN"); bin != "" {
		return bin, checkVersion(bin)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	root := filepath.Join(cache, "git-lossless", "npm")
	dir := filepath.Join(root, "claude-code-"+Version)
	bin := filepath.Join(dir, "node_modules", ".bin", "claude")
	if checkVersion(bin) == nil {
		return bin, nil
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", fmt.Errorf("npm not found: %w", err)
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	unlock, err := lockFile(filepath.Join(root, "claude-code-"+Version+".lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	if checkVersion(bin) == nil { // installed by another process meanwhile
		return bin, nil
	}
	tmp, err := os.MkdirTemp(root, "claude-code-"+Version+".tmp-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	_ = os.Chmod(tmp, 0o755)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "install", "--prefix", tmp, "--no-audit", "--no-fund", "--loglevel=error", npmPackage)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("npm install %s: %v\n%s", npmPackage, err, out.Bytes())
	}
	if err := checkVersion(filepath.Join(tmp, "node_modules", ".bin", "claude")); err != nil {
		return "", err
	}
	if err := os.RemoveAll(dir); err != nil { // a broken earlier install
		return "", err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return "", err
	}
	return bin, checkVersion(bin)
}

// checkVersion runs bin --version and wants Version.
func checkVersion(bin string) error {
	if _, err := os.Stat(bin); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--version")
	cmd.Env = append(os.Environ(), "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s --version: %v: %s", bin, err, out)
	}
	if v, _, _ := strings.Cut(strings.TrimSpace(string(out)), " "); v != Version {
		return errors.New(bin + " --version printed " + strings.TrimSpace(string(out)) + ", want " + Version)
	}
	return nil
}
