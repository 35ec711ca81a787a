package settings

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// InstalledHooks is what a settings file holds of ours.
type InstalledHooks struct {
	Path   string
	Exists bool
	// Current lists events whose hook of ours has exactly the matcher,
	// argument and timeout install writes (any program path).
	Current []string
	// Missing lists install's events holding no hook of ours.
	Missing []string
	// Outdated lists events holding hooks of ours in another shape, and
	// events install no longer writes that still hold ours.
	Outdated []string
	// Programs are the programs our commands run, first appearance first.
	Programs []string
	// GuardOff is true when the settings' "env" sets LOSSLESS_GUARD=off
	// for every session.
	GuardOff bool
}

// Any reports whether the file holds any hook of ours.
func (h InstalledHooks) Any() bool { return len(h.Current)+len(h.Outdated) > 0 }

// Complete reports whether every hook install writes is there as written.
func (h InstalledHooks) Complete() bool { return len(h.Missing)+len(h.Outdated) == 0 }

// Inspect reads a settings file and reports our hooks in it, against the
// hooks install writes (specs). A missing file is no error; a malformed
// one is a *Error.
func Inspect(path string, specs []HookSpec) (InstalledHooks, error) {
	h := InstalledHooks{Path: path}
	doc, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		for _, sp := range specs {
			h.Missing = append(h.Missing, sp.Event)
		}
		return h, nil
	case err != nil:
		return h, fmt.Errorf("read %s: %w", path, err)
	}
	h.Exists = true
	s, err := parseSettings(path, doc, "")
	if err != nil {
		return h, err
	}
	for _, m := range s.top {
		if m.key != "env" {
			continue
		}
		var env map[string]any
		if json.Unmarshal(s.text(m.val), &env) == nil && env["LOSSLESS_GUARD"] == "off" {
			h.GuardOff = true
		}
	}
	byEvent := map[string]HookSpec{}
	for _, sp := range specs {
		byEvent[sp.Event] = sp
	}
	seenProg := map[string]bool{}
	found := map[string]bool{}
	for _, ev := range s.events {
		spec, wanted := byEvent[ev.m.key]
		n, current := 0, false
		for _, g := range ev.groups {
			for _, hk := range g.hooks {
				if !hk.ours {
					continue
				}
				n++
				prog, arg := hookProgram(hk.command)
				if prog != "" && !seenProg[prog] {
					seenProg[prog] = true
					h.Programs = append(h.Programs, prog)
				}
				var f struct {
					Type    string   `json:"type"`
					Timeout *float64 `json:"timeout"`
				}
				_ = json.Unmarshal(s.text(hk.span), &f)
				current = wanted && g.matches(spec) && len(g.hooks) == 1 && arg == spec.Arg &&
					f.Type == "command" && f.Timeout != nil && *f.Timeout == float64(spec.Timeout)
			}
		}
		switch {
		case n == 0:
		case wanted && n == 1 && current:
			h.Current = append(h.Current, ev.m.key)
			found[ev.m.key] = true
		default:
			h.Outdated = append(h.Outdated, ev.m.key)
			found[ev.m.key] = true
		}
	}
	for _, sp := range specs {
		if !found[sp.Event] {
			h.Missing = append(h.Missing, sp.Event)
		}
	}
	return h, nil
}
