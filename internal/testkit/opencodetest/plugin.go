package opencodetest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// Plugin is a stand-in opencode plugin: it records every hook call as a
// payload file in hooklog's format ({"hook_event_name": hook, "input",
// "output"}; events as "event:<type>" with the event in input), one file
// per call named <ms><counter>.json so they sort in call order, and
// optionally denies tool calls and adds context around compactions.
type Plugin struct {
	LogDir string // where payload files land (hooklog.ReadDir reads them)
	// DenyTools and DenyContains: tool.execute.before throws
	// Error(DenyReason) for a call of one of DenyTools whose JSON args
	// contain DenyContains. opencode hands the message to the model.
	DenyTools    []string
	DenyContains string
	DenyReason   string
	// CompactingContext is pushed into output.context by
	// experimental.session.compacting (it lands in the summarisation
	// request's prompt).
	CompactingContext string
	// SystemAfterCompact is pushed into output.system by
	// experimental.chat.system.transform for every request of a session
	// after its session.compacted event.
	SystemAfterCompact string
}

// hooks the plugin records; "event" covers the bus events.
var pluginHooks = []string{"event", "chat.message", "chat.params", "permission.ask", "tool.execute.before",
	"tool.execute.after", "experimental.session.compacting", "experimental.chat.system.transform",
	"experimental.chat.messages.transform", "experimental.compaction.autocontinue", "experimental.text.complete"}

// JS is the plugin's source, an ES module exporting one plugin function.
func (p Plugin) JS() string {
	cfg, _ := json.Marshal(map[string]any{
		"logDir": p.LogDir, "denyTools": p.DenyTools, "denyContains": p.DenyContains, "denyReason": p.DenyReason,
		"compactingContext": p.CompactingContext, "systemAfterCompact": p.SystemAfterCompact, "hooks": pluginHooks,
	})
	return fmt.Sprintf(`// opencodetest stand-in plugin (generated): logs every hook call.
import fs from "node:fs"
import path from "node:path"

const CFG = %s
let counter = 0
const compacted = new Set()

function safe(v) {
  try { return JSON.parse(JSON.stringify(v === undefined ? null : v, (k, x) => (typeof x === "bigint" ? String(x) : x))) } catch (e) { return String(v) }
}

function log(name, input, output) {
  if (!CFG.logDir) return
  counter += 1
  const base = path.join(CFG.logDir, String(Date.now()) + String(counter).padStart(6, "0"))
  fs.writeFileSync(base + ".tmp", JSON.stringify({ hook_event_name: name, input: safe(input), output: safe(output) }))
  fs.renameSync(base + ".tmp", base + ".json")
}

export const OpencodeTest = async (ctx) => {
  log("plugin.init", { directory: ctx.directory, worktree: ctx.worktree, project: ctx.project }, null)
  const hooks = {}
  for (const name of CFG.hooks) hooks[name] = async (input, output) => { log(name, input, output) }
  hooks["event"] = async (input) => {
    const ev = input && input.event
    log("event:" + (ev && ev.type), input, null)
    if (ev && ev.type === "session.compacted" && ev.properties) compacted.add(ev.properties.sessionID)
  }
  hooks["tool.execute.before"] = async (input, output) => {
    log("tool.execute.before", input, output)
    if (CFG.denyTools && CFG.denyTools.includes(input.tool) && CFG.denyContains &&
        JSON.stringify((output && output.args) || {}).includes(CFG.denyContains)) {
      throw new Error(CFG.denyReason)
    }
  }
  hooks["experimental.session.compacting"] = async (input, output) => {
    log("experimental.session.compacting", input, output)
    if (CFG.compactingContext && output && Array.isArray(output.context)) output.context.push(CFG.compactingContext)
  }
  hooks["experimental.chat.system.transform"] = async (input, output) => {
    if (CFG.systemAfterCompact && input && compacted.has(input.sessionID) && output && Array.isArray(output.system)) {
      output.system.push(CFG.systemAfterCompact)
    }
    log("experimental.chat.system.transform", input, output)
  }
  return hooks
}
`, cfg)
}

// PluginPath is where WritePlugin puts the plugin of work tree dir.
func PluginPath(dir string) string {
	return filepath.Join(dir, ".opencode", "plugin", "opencodetest.js")
}

// WritePlugin writes p into <dir>/.opencode/plugin/, where opencode loads
// it without any config entry, and creates p.LogDir.
func WritePlugin(t testing.TB, dir string, p Plugin) string {
	t.Helper()
	if p.LogDir != "" {
		if err := os.MkdirAll(p.LogDir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	path := PluginPath(dir)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(p.JS()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// SeedPluginDeps makes opencode find its plugin SDK already installed in
// the config directory configDir (~/.config/opencode or <work
// tree>/.opencode), so it does not npm-install it (64 MB) at run time:
// package.json and package-lock.json copied from the cached install deps
// (EnsurePluginDeps), node_modules a symlink to its node_modules.
// opencode 1.18.33 reinstalls only when node_modules is missing or
// package-lock.json's root lacks a dependency package.json names.
func SeedPluginDeps(configDir, deps string) error {
	if err := os.MkdirAll(configDir, 0o700); err != nil {
		return err
	}
	for _, f := range []string{"package.json", "package-lock.json"} {
		dst := filepath.Join(configDir, f)
		if _, err := os.Stat(dst); err == nil {
			continue // opencode's or the test's own
		}
		b, err := os.ReadFile(filepath.Join(deps, f))
		if err != nil {
			return err
		}
		if err := os.WriteFile(dst, b, 0o600); err != nil {
			return err
		}
	}
	nm := filepath.Join(configDir, "node_modules")
	if _, err := os.Lstat(nm); err == nil {
		return nil
	}
	return os.Symlink(filepath.Join(deps, "node_modules"), nm)
}
