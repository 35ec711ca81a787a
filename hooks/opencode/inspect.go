package opencode

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/git-lossless/git-lossless/hooks/settings"
)

// Installed is the plugin as one scope has it, for doctor.
type Installed struct {
	Scope settings.Scope
	Path  string // the plugin file
	// Hook is the program the plugin runs ("" when it names none).
	Hook string
	// Current: the file is exactly what this version's install writes for
	// Hook (else another version wrote it, or someone edited it).
	Current bool
	// MCP: the scope's opencode.json registers our server (enabled).
	MCP bool
}

// hookLine finds the program a plugin file runs: its `const HOOK = {...}`.
func hookLine(js []byte) string {
	const decl = "const HOOK = "
	i := bytes.Index(js, []byte(decl))
	if i < 0 {
		return ""
	}
	rest := js[i+len(decl):]
	if j := bytes.IndexByte(rest, '\n'); j >= 0 {
		rest = rest[:j]
	}
	var h struct {
		Bin string `json:"bin"`
	}
	if json.Unmarshal(rest, &h) != nil {
		return ""
	}
	return h.Bin
}

// Inspect finds the plugin installs of dir's project and of the user
// (none: an empty list). A plugin file that is not ours is not listed.
func Inspect(dir string, getenv func(string) string) ([]Installed, error) {
	var out []Installed
	var errs []error
	for _, sc := range []settings.Scope{settings.ScopeUser, settings.ScopeProject} {
		d, err := ConfigDir(sc, dir, getenv)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		p := filepath.Join(d, "plugin", PluginFile)
		b, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !bytes.Contains(b[:min(len(b), 512)], []byte(pluginMark)) {
			continue
		}
		in := Installed{Scope: sc, Path: p, Hook: hookLine(b)}
		in.Current = in.Hook != "" && bytes.Equal(b, PluginSource(in.Hook))
		if cf, err := ConfigFile(sc, dir, getenv); err == nil {
			in.MCP = registered(cf)
		}
		out = append(out, in)
	}
	return out, errors.Join(errs...)
}

// registered reports whether an opencode.json registers our server,
// enabled.
func registered(path string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	var cfg struct {
		MCP map[string]json.RawMessage `json:"mcp"`
	}
	if json.Unmarshal(b, &cfg) != nil {
		return false
	}
	e, ok := cfg.MCP[settings.MCPServerName]
	if !ok || !isOurMCPEntry("")(e) {
		return false
	}
	var en struct {
		Enabled *bool `json:"enabled"`
	}
	_ = json.Unmarshal(e, &en)
	return en.Enabled == nil || *en.Enabled
}

// describe is one install in a doctor line.
func (in Installed) describe() string {
	s := string(in.Scope) + " " + in.Path
	if in.MCP {
		s += " (MCP server registered)"
	}
	return s
}

// DoctorDetail words the installs for doctor: the lines' detail, and
// what is wrong (empty: nothing).
func DoctorDetail(ins []Installed) (detail string, problems []string) {
	var parts []string
	for _, in := range ins {
		parts = append(parts, in.describe())
		switch fi, err := os.Stat(in.Hook); {
		case in.Hook == "":
			problems = append(problems, in.Path+" names no hook program")
		case err != nil:
			problems = append(problems, in.Path+" runs "+in.Hook+", which is missing: every hook fails and nothing is recorded")
		case !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0:
			problems = append(problems, in.Path+" runs "+in.Hook+", which is not an executable file")
		case !in.Current:
			problems = append(problems, in.Path+" was written by another git-lossless version (or edited)")
		}
	}
	return strings.Join(parts, "; "), problems
}
