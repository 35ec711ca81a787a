package geminitest

import (
	"os"
	"testing"

	"github.com/git-lossless/git-lossless/internal/testkit/npmcli"
)

// Version is the Gemini CLI release the kit installs and drives.
const Version = "0.61.0"

// Package is Gemini CLI's npm package: one bundled node program.
var Package = npmcli.Package{Name: "@google/gemini-cli", Version: Version, Bin: "gemini", Check: checkVersion}

var installer = npmcli.NewInstaller(Package, "GEMINITEST_BIN")

// EnsureGemini returns the path of a Gemini CLI Version launcher,
// installing it with npm on first use into os.UserCacheDir()/
// git-lossless/npm/gemini-cli-<Version> (see npmcli). GEMINITEST_BIN
// names a binary to use instead. Without npm, or when the install fails,
// the test is skipped, except under CI=true where it fails.
func EnsureGemini(t testing.TB) string {
	t.Helper()
	return installer.Require(t)
}

// checkVersion runs `gemini --version` (which prints "0.61.0") with a
// throwaway HOME.
func checkVersion(bin string) error {
	home, err := os.MkdirTemp("", "geminitest-version-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(home)
	return npmcli.CheckVersion(bin, Version, "HOME="+home, "GEMINI_CLI_NO_RELAUNCH=true")
}
