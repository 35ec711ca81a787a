package opencodetest

import (
	"os"
	"testing"

	"github.com/git-lossless/git-lossless/internal/testkit/npmcli"
)

// Version is the opencode release the kit installs and drives.
const Version = "1.18.33"

// Package is opencode's npm package. Its postinstall (which npm 11 skips:
// not in allowScripts) is not needed: bin/opencode.exe arrives through
// the optional dependency opencode-linux-x64 (a 185 MB bun binary).
var Package = npmcli.Package{Name: "opencode-ai", Version: Version, Bin: "opencode", Check: checkVersion}

// PluginPackage is the plugin SDK opencode npm-installs into every config
// directory (~/.config/opencode, <work tree>/.opencode) on its first run
// there. The kit installs it once into the cache and seeds those
// directories from it (see SeedPluginDeps).
var PluginPackage = npmcli.Package{Name: "@opencode-ai/plugin", Version: Version}

var (
	installer       = npmcli.NewInstaller(Package, "OPENCODETEST_BIN")
	pluginInstaller = npmcli.NewInstaller(PluginPackage, "")
)

// EnsureOpencode returns the path of an opencode Version launcher,
// installing it with npm on first use into os.UserCacheDir()/
// git-lossless/npm/opencode-ai-<Version> (see npmcli). OPENCODETEST_BIN
// names a binary to use instead. Without npm, or when the install fails,
// the test is skipped, except under CI=true where it fails.
func EnsureOpencode(t testing.TB) string {
	t.Helper()
	return installer.Require(t)
}

// EnsurePluginDeps returns the install directory of PluginPackage in the
// cache (plugin-<Version>: package.json, package-lock.json and
// node_modules), installing it on first use; skip or CI failure as for
// EnsureOpencode.
func EnsurePluginDeps(t testing.TB) string {
	t.Helper()
	return pluginInstaller.Require(t)
}

// checkVersion runs `opencode --version` (which prints "1.18.33") with a
// throwaway HOME: opencode creates its data and config dirs on start.
func checkVersion(bin string) error {
	home, err := os.MkdirTemp("", "opencodetest-version-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(home)
	return npmcli.CheckVersion(bin, Version, "HOME="+home, "XDG_CONFIG_HOME="+home+"/.config",
		"XDG_DATA_HOME="+home+"/.local/share", "XDG_CACHE_HOME="+home+"/.cache", "XDG_STATE_HOME="+home+"/.local/state")
}
