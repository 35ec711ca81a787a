package settings

// Install and uninstall of our hooks in a harness's hooks file: the
// "hooks" object of event names to matcher groups that Claude Code's
// settings.json has (and Codex's hooks.json and Gemini CLI's
// settings.json copy).
//
// The settings file belongs to the user: other tools write hooks into it,
// people edit it by hand, and the harness itself rewrites it. So the merge
// touches as little as it can: the file is spliced, not re-encoded. Only
// what changes is written: a matcher group of ours added, replaced or
// dropped, an entry of ours taken out of a shared group, an event key or
// the "hooks" key added or dropped; new parts copy the layout around them
// (indentation, key separator, line endings, one-line files). Every other
// byte stays where it was, other tools' hooks included, so key order,
// formatting and unknown keys survive and the diff a user reviews is the
// change and nothing else; install then uninstall gives the file back
// byte for byte. A file we cannot read with certainty is refused (fail
// closed): an install never guesses.

import (
	"bytes"
	"encoding/json"
)

// A settings document, scanned with byte offsets so that it can be spliced.

type event struct {
	m       objMember
	closeAt int // the array's ']'
	groups  []group
}

// group is one matcher group: {"matcher": ..., "hooks": [...]}.
type group struct {
	span       textSpan
	members    []objMember
	hooksAt    int // index in members of "hooks", -1 when absent
	hooksClose int // the ']' of its hooks array
	hooks      []hook
	matcher    string
	hasMatcher bool
}

type hook struct {
	span    textSpan
	command string
	ours    bool
}

func (g group) nOurs() int {
	n := 0
	for _, h := range g.hooks {
		if h.ours {
			n++
		}
	}
	return n
}

// matches reports whether the group's matcher selects what spec's does:
// equal strings, or both match-all (absent, "" and "*" all mean every
// occurrence in Claude Code and the harnesses that copy it).
func (g group) matches(spec HookSpec) bool {
	all := !g.hasMatcher || g.matcher == "" || g.matcher == "*"
	if spec.Matcher == "" {
		return all
	}
	return g.hasMatcher && g.matcher == spec.Matcher
}

// parseSettings scans a settings document, refusing anything whose hooks
// part does not have the documented shape. bin is the program
// being installed, to recognise our entries (see IsOurHookCommand).
func parseSettings(path string, doc []byte, bin string) (*document, error) {
	s, err := parseObjectFile(path, doc, "the settings are")
	if err != nil || s.empty {
		return s, err
	}
	return s, s.parseHooks(bin)
}

// parseHooks scans the "hooks" member of parsed settings, refusing
// anything whose shape is not the documented one.
func (s *document) parseHooks(bin string) error {
	path, doc := s.path, s.doc
	for i, m := range s.top {
		if m.key != "hooks" {
			continue
		}
		if s.hooksAt >= 0 {
			return errorAt(path, doc, m.keyStart, `duplicate key "hooks": which one is used is ambiguous; merge them by hand`)
		}
		s.hooksAt = i
	}
	if s.hooksAt < 0 {
		return nil
	}
	hv := s.top[s.hooksAt].val
	if doc[hv.start] != '{' {
		return errorAt(path, doc, hv.start, `"hooks" is %s, expected an object of event names`, JSONKind(doc[hv.start]))
	}
	evs, hooksClose, err := scanObject(doc, hv.start)
	if err != nil {
		return &Error{Path: path, Msg: err.Error()}
	}
	s.hooksClose = hooksClose
	seen := map[string]bool{}
	for _, em := range evs {
		if seen[em.key] {
			return errorAt(path, doc, em.keyStart, "duplicate key hooks.%s: which one is used is ambiguous; merge them by hand", em.key)
		}
		seen[em.key] = true
		if doc[em.val.start] != '[' {
			return errorAt(path, doc, em.val.start, "hooks.%s is %s, expected an array of matcher groups", em.key, JSONKind(doc[em.val.start]))
		}
		spans, closeAt, err := scanArray(doc, em.val.start)
		if err != nil {
			return &Error{Path: path, Msg: err.Error()}
		}
		ev := event{m: em, closeAt: closeAt}
		for gi, gs := range spans {
			if doc[gs.start] != '{' {
				return errorAt(path, doc, gs.start, "hooks.%s[%d] is %s, expected a matcher group object", em.key, gi, JSONKind(doc[gs.start]))
			}
			g := group{span: gs, hooksAt: -1}
			if g.members, _, err = scanObject(doc, gs.start); err != nil {
				return &Error{Path: path, Msg: err.Error()}
			}
			for mi, gm := range g.members {
				switch gm.key {
				case "matcher":
					g.hasMatcher = true
					_ = json.Unmarshal(doc[gm.val.start:gm.val.end], &g.matcher)
				case "hooks":
					if doc[gm.val.start] != '[' {
						return errorAt(path, doc, gm.val.start, "hooks.%s[%d].hooks is %s, expected an array", em.key, gi, JSONKind(doc[gm.val.start]))
					}
					g.hooksAt = mi
					hs, hooksClose, err := scanArray(doc, gm.val.start)
					g.hooksClose = hooksClose
					if err != nil {
						return &Error{Path: path, Msg: err.Error()}
					}
					for hi, h := range hs {
						if doc[h.start] != '{' {
							return errorAt(path, doc, h.start, "hooks.%s[%d].hooks[%d] is %s, expected a hook object", em.key, gi, hi, JSONKind(doc[h.start]))
						}
						var fields struct {
							Command any `json:"command"`
						}
						_ = json.Unmarshal(doc[h.start:h.end], &fields)
						hk := hook{span: h}
						if c, ok := fields.Command.(string); ok {
							hk.command = c
							hk.ours = IsOurHookCommand(c, bin)
						}
						g.hooks = append(g.hooks, hk)
					}
				}
			}
			ev.groups = append(ev.groups, g)
		}
		s.events = append(s.events, ev)
	}
	return nil
}

// Group and hook objects as we write them; field order is the order
// Claude Code's own documentation uses.
type groupOut struct {
	Matcher string    `json:"matcher,omitempty"`
	Hooks   []hookOut `json:"hooks"`
}

type hookOut struct {
	Type    string `json:"type"`
	Name    string `json:"name,omitempty"`
	Command string `json:"command"`
	Timeout int    `json:"timeout"`
}

func canonicalGroup(spec HookSpec, bin string) []byte {
	return marshal(groupOut{Matcher: spec.Matcher, Hooks: []hookOut{{Type: "command", Name: spec.Name, Command: HookCommand(bin, spec.Arg), Timeout: spec.Timeout}}})
}

// groupWithoutOurs returns a group's text with our hooks taken out of its
// hooks array and every other byte kept.
func (s *document) groupWithoutOurs(g group) []byte {
	hm := g.members[g.hooksAt]
	spans := make([]textSpan, len(g.hooks))
	for i, h := range g.hooks {
		spans[i] = h.span
	}
	sp := s.newSplicer(hm.val.start, g.hooksClose, spans)
	for i, h := range g.hooks {
		sp.items[i].gone = h.ours
	}
	return bytes.Join([][]byte{s.doc[g.span.start:hm.val.start], sp.bytes(), s.doc[hm.val.end:g.span.end]}, nil)
}

// rewriteEvent returns the event's new array and whether it held hooks of
// ours. Groups without hooks of ours stay as written and in place; groups
// holding only ours are dropped, except that the first one matching spec
// is replaced in place by the canonical group (so a reinstall does not
// move it); groups mixing ours with foreign hooks keep the foreign ones.
// With spec non-nil the canonical group is appended when not placed.
func (s *document) rewriteEvent(ev event, spec *HookSpec, bin string) (arr []byte, hadOurs bool, empty bool) {
	spans := make([]textSpan, len(ev.groups))
	for i, g := range ev.groups {
		spans[i] = g.span
	}
	sp := s.newSplicer(ev.m.val.start, ev.closeAt, spans)
	placed := false
	for i, g := range ev.groups {
		n := g.nOurs()
		switch {
		case n == 0:
		case n == len(g.hooks):
			hadOurs = true
			if spec != nil && !placed && g.matches(*spec) {
				if c := canonicalGroup(*spec, bin); !jsonEqual(c, s.text(g.span)) {
					sp.items[i].text = sp.formatAt(i, c)
				}
				placed = true
			} else {
				sp.items[i].gone = true
			}
		default:
			hadOurs = true
			sp.items[i].text = s.groupWithoutOurs(g)
		}
	}
	if spec != nil && !placed {
		sp.add(sp.format(canonicalGroup(*spec, bin)))
	}
	return sp.bytes(), hadOurs, sp.live() == 0
}

// rewrite applies install (specs non-empty) or uninstall (specs empty) and
// returns the new document: the old one with the hooks object spliced,
// byte-identical when nothing of ours changes.
func (s *document) rewrite(specs []HookSpec, bin string) ([]byte, []Change) {
	want := map[string]*HookSpec{}
	for i := range specs {
		want[specs[i].Event] = &specs[i]
	}
	var changes []Change
	added := func(spec HookSpec) {
		changes = append(changes, Change{Event: spec.Event, Matcher: spec.Matcher, Command: HookCommand(bin, spec.Arg), Action: "added"})
	}
	// a hooks object holding only the events we add
	newHooks := func() []byte {
		var parts [][]byte
		for _, spec := range specs {
			added(spec)
			parts = append(parts, s.member(spec.Event, nil, append(append([]byte{'['}, canonicalGroup(spec, bin)...), ']')))
		}
		return append(append([]byte{'{'}, bytes.Join(parts, []byte{','})...), '}')
	}
	if s.empty {
		if len(specs) == 0 {
			return s.doc, nil
		}
		return bytes.Join([][]byte{[]byte("{" + s.nl + s.unit + `"hooks"` + s.sep), s.indent(newHooks(), s.unit), []byte(s.nl + "}" + s.nl)}, nil), changes
	}
	top := s.newSplicer(s.topOpen, s.topClose, memberSpans(s.top))
	spliceTop := func() []byte {
		return bytes.Join([][]byte{s.doc[:s.topOpen], top.bytes(), s.doc[s.topClose+1:]}, nil)
	}
	if s.hooksAt < 0 {
		if len(specs) == 0 {
			return s.doc, nil
		}
		top.add(s.member("hooks", nil, top.format(newHooks())))
		return spliceTop(), changes
	}

	hm := s.top[s.hooksAt]
	hs := s.newSplicer(hm.val.start, s.hooksClose, memberSpans(eventMembers(s.events)))
	changed := false
	for i, ev := range s.events {
		spec := want[ev.m.key]
		arr, hadOurs, empty := s.rewriteEvent(ev, spec, bin)
		same := jsonEqual(arr, s.text(ev.m.val))
		if spec != nil {
			c := Change{Event: spec.Event, Matcher: spec.Matcher, Command: HookCommand(bin, spec.Arg), Action: "added"}
			switch {
			case same:
				c.Action = "unchanged"
			case hadOurs:
				c.Action = "replaced"
			}
			changes = append(changes, c)
			delete(want, ev.m.key)
		} else if hadOurs {
			changes = append(changes, Change{Event: ev.m.key, Action: "removed"})
		}
		switch {
		case same:
		case empty && hadOurs:
			hs.items[i].gone = true // the event held only ours
			changed = true
		default:
			hs.items[i].text = s.member("", s.doc[ev.m.keyStart:ev.m.keyEnd], arr)
			changed = true
		}
	}
	for _, spec := range specs {
		if want[spec.Event] == nil {
			continue
		}
		added(spec)
		hs.add(s.member(spec.Event, nil, hs.format(append(append([]byte{'['}, canonicalGroup(spec, bin)...), ']'))))
		changed = true
	}
	if !changed {
		return s.doc, changes
	}
	if hs.live() == 0 && len(specs) == 0 {
		top.items[s.hooksAt].gone = true // hooks held only ours
	} else {
		top.items[s.hooksAt].text = s.member("", s.doc[hm.keyStart:hm.keyEnd], hs.bytes())
	}
	return spliceTop(), changes
}

func eventMembers(evs []event) []objMember {
	out := make([]objMember, len(evs))
	for i, e := range evs {
		out[i] = e.m
	}
	return out
}

// MergeHooks returns settings with our hooks installed (specs, the
// harness's; bin is the program they run) and what changed. Foreign hooks and every other key are kept
// as written; entries of ours from any version are replaced, never
// duplicated; when everything is already in place the input comes back
// unchanged. Settings it cannot merge with certainty give a
// *Error naming path.
func MergeHooks(path string, settings []byte, bin string, specs []HookSpec) ([]byte, []Change, error) {
	s, err := parseSettings(path, settings, bin)
	if err != nil {
		return nil, nil, err
	}
	out, ch := s.rewrite(specs, bin)
	return out, ch, nil
}

// RemoveHooks returns settings without any hook of ours, dropping the
// matcher groups, event keys and "hooks" key that held only ours.
func RemoveHooks(path string, settings []byte, bin string) ([]byte, []Change, error) {
	s, err := parseSettings(path, settings, bin)
	if err != nil {
		return nil, nil, err
	}
	out, ch := s.rewrite(nil, bin)
	return out, ch, nil
}
