package codex

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/git-lossless/git-lossless/hooks"
	"github.com/git-lossless/git-lossless/hooks/settings"
)

var _ hooks.DoctorChecker = Harness{}

const doctorFix = "git lossless install codex --apply"

// DoctorChecks implements hooks.DoctorChecker: for each scope whose
// hooks.json holds hooks of ours, that they are all there ("codex
// hooks"), and that config.toml trusts each one with the hash Codex
// computes for it now ("codex hook trust": Codex runs no untrusted or
// modified hook, and says nothing; the hash is computed as Codex 0.169.0
// does, checked against `codex app-server` hooks/list in
// internal/testkit/codextest), a project scope's repository trusted; then
// the MCP server's registration ("codex mcp"). Nothing when Codex's home
// does not exist and no scope holds our hooks.
func (Harness) DoctorChecks(ctx context.Context, opt hooks.DoctorOptions) []hooks.DoctorCheck {
	getenv := getenvOr(opt.Getenv)
	home, err := Home(getenv)
	if err != nil {
		return []hooks.DoctorCheck{{Check: "codex hooks", Status: "FAIL", Detail: err.Error(), Fix: "set HOME or CODEX_HOME"}}
	}
	cfgPath, _ := ConfigPath(opt.Dir, getenv)
	cfg, cfgErr := os.ReadFile(cfgPath)
	tables, tErr := tomlTables(cfg)
	var out []hooks.DoctorCheck
	installed := false
	for _, sc := range []settings.Scope{settings.ScopeUser, settings.ScopeProject} {
		path, err := HooksPath(sc, opt.Dir, getenv)
		if err != nil {
			continue
		}
		ins, err := settings.Inspect(path, HookSpecs())
		if err != nil {
			out = append(out, hooks.DoctorCheck{Check: "codex hooks", Status: "FAIL", Detail: err.Error(), Fix: "fix " + path + ", then " + doctorFix})
			continue
		}
		if !ins.Any() {
			continue
		}
		installed = true
		fix := doctorFix
		if sc == settings.ScopeProject {
			fix += " --scope project"
		}
		if ins.Complete() {
			out = append(out, hooks.DoctorCheck{Check: "codex hooks", Status: "OK", Detail: fmt.Sprintf("%s (%s): %d hooks", path, sc, len(ins.Current))})
		} else {
			out = append(out, hooks.DoctorCheck{Check: "codex hooks", Status: "WARN", Detail: fmt.Sprintf("%s (%s): missing %s, outdated %s", path, sc, strings.Join(ins.Missing, ","), strings.Join(ins.Outdated, ",")), Fix: fix})
		}
		doc, _ := os.ReadFile(path)
		want, err := OurTrust(TrustKeyPath(sc, path, getenv, false), doc, "")
		if err != nil || cfgErr != nil || tErr != nil {
			why := "cannot read the trust in " + cfgPath
			if cfgErr != nil {
				why += ": " + cfgErr.Error()
			}
			out = append(out, hooks.DoctorCheck{Check: "codex hook trust", Status: "FAIL", Detail: why, Fix: fix})
			continue
		}
		var bad []string
		for _, e := range want {
			if trustedHash(cfg, tables, trustHeader(e.Key)) != e.Hash {
				bad = append(bad, keyLabel(e.Key))
			}
		}
		if len(bad) > 0 {
			out = append(out, hooks.DoctorCheck{Check: "codex hook trust", Status: "FAIL",
				Detail: fmt.Sprintf("%d of %d hooks in %s are installed but not trusted in %s (%s): Codex skips them without a word, so nothing is recorded or guarded", len(bad), len(want), path, cfgPath, strings.Join(bad, ", ")), Fix: fix})
		} else {
			out = append(out, hooks.DoctorCheck{Check: "codex hook trust", Status: "OK", Detail: fmt.Sprintf("%d hooks trusted in %s", len(want), cfgPath)})
		}
		if sc == settings.ScopeProject {
			top, _ := projectTop(opt.Dir)
			if d, err := filepath.EvalSymlinks(top); err == nil {
				top = d
			}
			h := "[projects." + tomlString(top) + "]"
			if !strings.Contains(tableText(cfg, tables, h), `trust_level = "trusted"`) {
				out = append(out, hooks.DoctorCheck{Check: "codex project trust", Status: "FAIL",
					Detail: fmt.Sprintf("%s is not a trusted project in %s: Codex does not read its .codex/hooks.json", top, cfgPath), Fix: "codex exec --trust in " + top + ", or " + fix})
			}
		}
	}
	if !installed {
		if _, err := os.Stat(home); err != nil {
			return nil
		}
		return append(out, hooks.DoctorCheck{Check: "codex hooks", Status: "WARN", Detail: "Codex is set up (" + home + ") but no hooks of git-lossless are installed: its sessions are not recorded or guarded", Fix: doctorFix})
	}
	if tomlHasTable(cfg, mcpTableHeader) {
		out = append(out, hooks.DoctorCheck{Check: "codex mcp", Status: "OK", Detail: mcpTableHeader + " in " + cfgPath})
	} else {
		out = append(out, hooks.DoctorCheck{Check: "codex mcp", Status: "WARN", Detail: "git-lossless's MCP server is not registered in " + cfgPath + ": after a compaction the model can only read files again", Fix: doctorFix})
	}
	return out
}

// keyLabel is the event:group:handler end of a trust key.
func keyLabel(key string) string {
	parts := strings.Split(key, ":")
	if len(parts) < 3 {
		return key
	}
	return strings.Join(parts[len(parts)-3:], ":")
}

// tableText is the text of the table with header h ("" when absent).
func tableText(doc []byte, tables []tomlTable, h string) string {
	for _, t := range tables {
		if t.Header == h {
			return string(doc[t.Start:t.End])
		}
	}
	return ""
}

// trustedHash is the trusted_hash of the table with header h.
func trustedHash(doc []byte, tables []tomlTable, h string) string {
	for _, l := range strings.Split(tableText(doc, tables, h), "\n") {
		v, ok := strings.CutPrefix(strings.TrimSpace(l), "trusted_hash")
		if !ok {
			continue
		}
		v, ok = strings.CutPrefix(strings.TrimSpace(v), "=")
		if !ok {
			continue
		}
		var s string
		if json.Unmarshal([]byte(strings.TrimSpace(v)), &s) == nil {
			return s
		}
	}
	return ""
}
