package codextest

import (
	"os"
	"testing"

	"github.com/git-lossless/git-lossless/internal/testkit/npmcli"
)

// Version is the Codex CLI release the kit installs and drives.
const Version = "0.169.0"

// Package is Codex's npm package: a node launcher whose optional
// dependency @openai/codex-linux-x64 (about 400 MB) holds the Rust binary.
var Package = npmcli.Package{Name: "@openai/codex", Version: Version, Bin: "codex", Check: checkVersion}

var installer = npmcli.NewInstaller(Package, "CODEXTEST_BIN")

// EnsureCodex returns the path of a Codex Version launcher, installing it
// with npm on first use into os.UserCacheDir()/git-lossless/npm/
// codex-<Version> (see npmcli). CODEXTEST_BIN names a binary to use
// instead. Without npm, or when the install fails, the test is skipped,
// except under CI=true where it fails.
func EnsureCodex(t testing.TB) string {
	t.Helper()
	return installer.Require(t)
}

// checkVersion runs `codex --version` (which prints "codex-cli 0.169.0")
// with a throwaway CODEX_HOME: Codex writes helper links there on start.
func checkVersion(bin string) error {
	home, err := os.MkdirTemp("", "codextest-version-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(home)
	return npmcli.CheckVersion(bin, Version, "HOME="+home, "CODEX_HOME="+home)
}
