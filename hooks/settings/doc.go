// Package settings is git-lossless's editor of agent harnesses' JSON
// configuration files: the hooks a harness runs (the "hooks" object of
// event names to matcher groups that Claude Code's settings.json has and
// other harnesses copy) and the registration of the MCP server (an
// "mcpServers" entry). It is what `git lossless install HARNESS` and
// `uninstall HARNESS` change, and what the doctor reads back. Which files,
// which hooks (HookSpec) and which entry shape are the harness's adapter's
// to say (hooks/claudecode for Claude Code: its paths, HookSpecs,
// MCPServerEntry and MCP lookup); this package knows no harness.
//
// It owns:
//
//   - what is installed: HookCommand, the program the hooks run
//     (ResolveBinary), and which entries are ours (IsOurHookCommand,
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
//   - reading back: Inspect (our hooks in a settings file, against the
//     specs install writes, for the doctor) (inspect.go).
//
// LookPath, IsExecutable, SameFile, IsTempBuild and Quote are exported
// because the doctor judges the programs the settings name by the same
// rules ResolveBinary and HookCommand use to write them; JSONKind because
// a hook payload's errors name JSON kinds as the settings errors do.
//
// It imports the standard library and go-udiff only. It must not import
// hooks or an adapter: they import it.
package settings
