// Package settings edits Claude Code's configuration files for
// git-lossless: the hooks in settings.json and the registration of the MCP
// server in .claude.json or .mcp.json. It is what `git lossless install
// claude-code` and `uninstall claude-code` change, and what the doctor and
// the SessionStart hook read back.
//
// It owns:
//
//   - where the files are: Path and MCPConfigPath, per Scope, from
//     CLAUDE_CONFIG_DIR, HOME and the repository's top (paths.go);
//   - what is installed: InstallSpecs, HookCommand, the program the hooks
//     run (ResolveBinary), and which entries are ours (IsOurHookCommand,
//     IsOurMCPServer) (command.go, mcp.go);
//   - the splice: a JSON document scanned with byte offsets and rebuilt
//     with only our members changed, every other byte kept, so install then
//     uninstall gives a file back byte for byte; a file it cannot read with
//     certainty is an *Error, never a guess (jsondoc.go, hooks.go, mcp.go);
//   - the Plan: before and after, the Changes, Diff (the dry run's unified
//     diff, made by github.com/aymanbagabas/go-udiff, a maintained port of
//     gopls's line diff, so that patch and git apply accept it), and Apply
//     (a backup, then an atomic replace that refuses a file changed since
//     it was read) (plan.go);
//   - reading back: Inspect (our hooks in a settings file, for the doctor)
//     and FindMCPRegistrations/EffectiveMCPServer (which registration
//     Claude Code starts in a directory, for the doctor and SessionStart)
//     (inspect.go, mcp.go).
//
// LookPath, IsExecutable, SameFile, IsTempBuild and Quote are exported
// because the doctor judges the programs the settings name by the same
// rules ResolveBinary and HookCommand use to write them; JSONKind because
// the hook payload's errors name JSON kinds as the settings errors do.
//
// It may import the standard library, gitstore (only to find a
// repository's top: FindRepository) and go-udiff. It must not import
// hooks: hooks imports it (SessionStart reads the MCP registration), as
// does hooks/doctor.
package settings
