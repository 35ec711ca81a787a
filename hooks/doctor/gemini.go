package doctor

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/git-lossless/git-lossless/hooks/gemini"
	"github.com/git-lossless/git-lossless/hooks/settings"
)

// checkGemini reports our Gemini CLI hooks in its user and project
// settings.json: one line, and none at all for a user without Gemini CLI
// (no ~/.gemini) and no project settings of ours. Gemini CLI merges both
// files, so hooks complete in one are enough. A project file is used only
// when the folder is trusted, which the line says.
func checkGemini(opt Options) []Check {
	const name = "gemini hooks"
	fix := "git lossless install gemini --apply"
	type found struct {
		scope settings.Scope
		path  string
		hooks settings.InstalledHooks
	}
	var fs []found
	for _, sc := range []settings.Scope{settings.ScopeUser, settings.ScopeProject} {
		p, err := gemini.SettingsPath(sc, opt.Dir, opt.Getenv)
		if err != nil {
			continue
		}
		h, err := settings.Inspect(p, gemini.HookSpecs())
		if err != nil {
			return []Check{failCheck(name, err.Error()+"; Gemini CLI may reject these settings too",
				"fix the JSON in "+p+" by hand (backups from install are "+filepath.Base(p)+".bak-* beside it), then run `"+fix+"`")}
		}
		fs = append(fs, found{sc, p, h})
	}
	var partial []string
	for _, f := range fs {
		if f.hooks.Any() && f.hooks.Complete() {
			detail := fmt.Sprintf("installed in %s (%d hooks)", f.path, len(f.hooks.Current))
			if f.scope == settings.ScopeProject {
				detail += "; Gemini CLI uses a project's settings only in a trusted folder started at its top"
			}
			return []Check{okCheck(name, detail)}
		}
		if f.hooks.Any() {
			partial = append(partial, fmt.Sprintf("%s: missing %s; outdated %s", f.path, orNone(f.hooks.Missing), orNone(f.hooks.Outdated)))
		}
	}
	if len(partial) > 0 {
		return []Check{warnCheck(name, "partly installed: "+strings.Join(partial, "; "), fix)}
	}
	if len(fs) > 0 {
		if _, err := os.Stat(filepath.Dir(fs[0].path)); err == nil {
			return []Check{warnCheck(name, "Gemini CLI is set up ("+filepath.Dir(fs[0].path)+") but its sessions are not recorded or guarded", fix)}
		}
	}
	return nil
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
