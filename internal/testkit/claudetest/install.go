package claudetest

import (
	"testing"

	"github.com/git-lossless/git-lossless/internal/testkit/npmcli"
)

// Version is the Claude Code release the harness installs and drives.
const Version = "2.1.328"

// Package is Claude Code's npm package, as npmcli installs it.
var Package = npmcli.Package{
	Name: "@anthropic-ai/claude-code", Version: Version, Bin: "claude",
	Check: checkVersion,
}

var installer = npmcli.NewInstaller(Package, "CLAUDETEST_BIN")

// EnsureClaude returns the path of a Claude Code Version binary, installing
// it with npm on first use into os.UserCacheDir()/git-lossless/npm/
// claude-code-<Version> (see npmcli: shared by test binaries running at
// once, a lock file serialises installs and a finished install appears by
// rename). The environment variable CLAUDETEST_BIN names a binary to use
// instead. Without npm, or when the install fails, the test is skipped,
// except under CI=true where it fails.
func EnsureClaude(t testing.TB) string {
	t.Helper()
	return installer.Require(t)
}

// checkVersion runs bin --version and wants Version.
func checkVersion(bin string) error {
	return npmcli.CheckVersion(bin, Version, "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1")
}
