package hooks

// Install and uninstall of our hooks in Claude Code's settings.json.
//
// The settings file belongs to the user: other tools write hooks into it,
// people edit it by hand, and Claude Code itself rewrites it. So the merge
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
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
)

// SettingsScope names which Claude Code settings file an install targets.
type SettingsScope string

const (
	// ScopeUser is the user's own settings: every project on the machine.
	ScopeUser SettingsScope = "user"
	// ScopeProject is the project's shared .claude/settings.json.
	ScopeProject SettingsScope = "project"
)

// SettingsPath returns the settings.json of scope. User scope is
// $CLAUDE_CONFIG_DIR/settings.json, or ~/.claude/settings.json when that is
// unset (Claude Code's own rule); project scope is .claude/settings.json at
// the top of the repository containing dir, or in dir outside any
// repository, since that is where Claude Code looks when started there.
func SettingsPath(scope SettingsScope, dir string, getenv func(string) string) (string, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	switch scope {
	case ScopeUser:
		if d := getenv("CLAUDE_CONFIG_DIR"); d != "" {
			return filepath.Join(instAbsFrom(dir, d), "settings.json"), nil
		}
		home := getenv("HOME")
		if home == "" {
			h, err := os.UserHomeDir()
			if err != nil {
				return "", fmt.Errorf("locate ~/.claude: %w (set HOME or CLAUDE_CONFIG_DIR)", err)
			}
			home = h
		}
		return filepath.Join(home, ".claude", "settings.json"), nil
	case ScopeProject:
		top := dir
		if loc, err := gitstore.FindRepository(dir); err == nil && loc.WorkTree != "" {
			top = loc.WorkTree
		}
		top, err := filepath.Abs(top)
		if err != nil {
			return "", err
		}
		return filepath.Join(top, ".claude", "settings.json"), nil
	}
	return "", fmt.Errorf("unknown settings scope %q (use user or project)", scope)
}

func instAbsFrom(dir, p string) string {
	if filepath.IsAbs(p) || dir == "" {
		return p
	}
	return filepath.Join(dir, p)
}

// HookSpec is one hook we install: Claude Code runs `<bin> hook <Arg>` on
// Event for tools (or sources) matching Matcher.
type HookSpec struct {
	Event   string // Claude Code's event name
	Matcher string // "" = no matcher key: every occurrence of the event
	Arg     string // the `git-lossless hook` argument
	Timeout int    // seconds (Claude Code's unit); a hook past it is abandoned
}

// InstallSpecs lists the hooks install writes, in the order new event keys
// are added. Timeouts are short because Claude Code waits for a hook before
// the tool runs, and a timed-out hook fails open: the per-tool hooks get
// 10 s, the transcript sweeps 30 s.
func InstallSpecs() []HookSpec {
	return []HookSpec{
		{Event: "SessionStart", Matcher: "compact|resume", Arg: "session-start", Timeout: 10},
		{Event: "PreToolUse", Matcher: "Edit|Write|MultiEdit|NotebookEdit", Arg: "pre-tool-use", Timeout: 10},
		{Event: "PostToolUse", Matcher: "Read|Edit|Write|MultiEdit|NotebookEdit", Arg: "post-tool-use", Timeout: 10},
		{Event: "PreCompact", Arg: "pre-compact", Timeout: 30},
		{Event: "SubagentStop", Arg: "subagent-stop", Timeout: 30},
		{Event: "SessionEnd", Arg: "session-end", Timeout: 30},
	}
}

// HookCommand is the command line of one hook: the program, shell-quoted
// when it needs to be (Claude Code runs the command through a shell), then
// `hook ARG`.
func HookCommand(bin, arg string) string {
	return instQuote(bin) + " hook " + arg
}

// ourCommandRe recognises a command of ours whatever path it was installed
// with: git-lossless (possibly quoted, possibly .exe) followed by the word
// hook, or `git lossless hook`.
var ourCommandRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(git-lossless(\.exe)?['"]?|(^|[\s;&|(])git\s+lossless)\s+hook(\s|$)`)
})

// IsOurHookCommand reports whether a settings command was written by us
// (any version, any path), or runs bin (the program being installed, which
// tests and unusual setups may name otherwise) as `bin hook ...`. Only such
// entries are ever replaced or removed; anything else is someone else's.
func IsOurHookCommand(command, bin string) bool {
	if ourCommandRe().MatchString(command) {
		return true
	}
	if bin == "" {
		return false
	}
	c := strings.TrimSpace(command)
	for _, b := range []string{instQuote(bin), bin} {
		if strings.HasPrefix(c, b+" hook ") {
			return true
		}
	}
	return false
}

// HookBinary is the program the hooks will run.
type HookBinary struct {
	// Path is the program: an absolute path, or a bare name found on PATH
	// at hook time when given so with --command.
	Path string
	// Warning explains a choice the user should know about ("" = none):
	// a temporary `go run` build, or another git-lossless on PATH.
	Warning string
}

// BinaryOptions are the inputs of ResolveBinary; zero values use the
// process's own.
type BinaryOptions struct {
	// Override is an explicit program (the --command flag); relative paths
	// are taken from Dir.
	Override string
	Dir      string
	// Getenv supplies PATH (default os.Getenv).
	Getenv func(string) string
	// Executable returns the running program (default os.Executable).
	Executable func() (string, error)
}

// ResolveBinary picks the program hooks run: the git-lossless on PATH when
// it is this very program (its PATH name survives upgrades that replace
// the file), else the running executable's absolute path. Hooks always get
// an absolute path because Claude Code runs them with the session's
// environment, whose PATH may differ from the installer's.
func ResolveBinary(opt BinaryOptions) (HookBinary, error) {
	if opt.Override != "" {
		p := opt.Override
		if strings.ContainsRune(p, filepath.Separator) {
			p = filepath.Clean(instAbsFrom(opt.Dir, p))
		}
		return HookBinary{Path: p}, nil
	}
	getenv := opt.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	executable := opt.Executable
	if executable == nil {
		executable = os.Executable
	}
	exe, err := executable()
	if err != nil {
		return HookBinary{}, fmt.Errorf("locate the running git-lossless: %w (pass --command PATH)", err)
	}
	if abs, err := filepath.Abs(exe); err == nil {
		exe = abs
	}
	onPath, found := instLookPath("git-lossless", getenv("PATH"))
	if found && instSameFile(onPath, exe) {
		return HookBinary{Path: onPath}, nil
	}
	b := HookBinary{Path: exe}
	switch {
	case instIsTempBuild(exe):
		b.Warning = fmt.Sprintf("%s looks like a temporary `go run`/`go test` build that will be deleted; hooks pointing at it will stop working. Install git-lossless (`go install ./cmd/git-lossless`) and run install again with that binary, or pass --command PATH", exe)
	case found:
		b.Warning = fmt.Sprintf("the git-lossless on PATH (%s) is a different program; the hooks will run this one (%s)", onPath, exe)
	}
	return b, nil
}

// instLookPath is exec.LookPath over an explicit PATH value, so the CLI's
// environment (and a test's) decides, not the process's.
func instLookPath(name, path string) (string, bool) {
	for _, d := range filepath.SplitList(path) {
		if d == "" || !filepath.IsAbs(d) {
			continue // relative PATH entries depend on the cwd: never trust them for hooks
		}
		p := filepath.Join(d, name)
		if instIsExecutable(p) {
			return p, true
		}
	}
	return "", false
}

func instIsExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0
}

func instSameFile(a, b string) bool {
	sa, err := os.Stat(a)
	if err != nil {
		return false
	}
	sb, err := os.Stat(b)
	if err != nil {
		return false
	}
	return os.SameFile(sa, sb)
}

// instIsTempBuild recognises binaries `go run` and `go test` leave in the
// temporary directory (…/go-build123/b001/exe/…).
func instIsTempBuild(p string) bool {
	sep := string(filepath.Separator)
	if strings.Contains(p, sep+"go-build") {
		return true
	}
	tmp := filepath.Clean(os.TempDir())
	return tmp != sep && strings.HasPrefix(p, tmp+sep)
}

// instQuote quotes s for a POSIX shell unless it is made of characters
// that need none.
func instQuote(s string) string {
	if s == "" {
		return "''"
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._+-:@%=,", r)) {
			return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
		}
	}
	return s
}

// instSplitWords splits a shell command line into words, honouring
// single quotes, double quotes and backslashes: enough to recover the
// program and arguments of a command we (or a person) wrote.
func instSplitWords(s string) []string {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\'':
			inWord = true
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				cur.WriteString(s[i+1:])
				i = len(s)
				break
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
		case c == '"':
			inWord = true
			for i++; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(s[i])
			}
		case c == '\\' && i+1 < len(s):
			inWord = true
			i++
			cur.WriteByte(s[i])
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			inWord = true
			cur.WriteByte(c)
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

var envAssignRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`) })

// hookProgram returns the program and `hook` argument of one of our
// commands ("", "" when it does not have that shape, e.g. `git lossless
// hook x` or a wrapper with environment assignments before the program).
func hookProgram(command string) (prog, arg string) {
	w := instSplitWords(command)
	for len(w) > 0 && envAssignRe().MatchString(w[0]) {
		w = w[1:] // VAR=value prefixes
	}
	if len(w) < 2 || w[1] != "hook" {
		return "", ""
	}
	if len(w) > 2 {
		arg = w[2]
	}
	return w[0], arg
}

// SettingsError is a settings file we refuse to touch: invalid JSON, or a
// shape we cannot merge into with certainty. Line and Col (1-based) locate
// the problem; they are 0 when there is no position.
type SettingsError struct {
	Path      string
	Offset    int64
	Line, Col int
	Msg       string
}

func (e *SettingsError) Error() string {
	name := e.Path
	if name == "" {
		name = "settings.json"
	}
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d:%d: %s", name, e.Line, e.Col, e.Msg)
	}
	return fmt.Sprintf("%s: %s", name, e.Msg)
}

func settingsErrorAt(path string, doc []byte, off int, format string, a ...any) *SettingsError {
	if off > len(doc) {
		off = len(doc)
	}
	if off < 0 {
		off = 0
	}
	line := 1 + bytes.Count(doc[:off], []byte("\n"))
	col := off - bytes.LastIndexByte(doc[:off], '\n')
	return &SettingsError{Path: path, Offset: int64(off), Line: line, Col: col, Msg: fmt.Sprintf(format, a...)}
}

// A settings document, scanned with byte offsets so that it can be spliced.

type instSpan struct{ start, end int }

type instMember struct {
	key      string
	keyStart int // the key's opening quote
	keyEnd   int // after its closing quote
	val      instSpan
}

// instScanObject lists the members of the object whose '{' is at doc[at], and
// returns the offset of its closing '}'. doc must be valid JSON.
func instScanObject(doc []byte, at int) ([]instMember, int, error) {
	dec := json.NewDecoder(bytes.NewReader(doc[at:]))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, 0, fmt.Errorf("expected an object at offset %d", at)
	}
	var out []instMember
	prev := at + 1
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, 0, err
		}
		key, _ := t.(string)
		m := instMember{key: key, keyEnd: at + int(dec.InputOffset())}
		m.keyStart = prev
		for m.keyStart < len(doc) && doc[m.keyStart] != '"' {
			m.keyStart++ // whitespace and the comma
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, 0, err
		}
		m.val.end = at + int(dec.InputOffset())
		m.val.start = m.val.end - len(raw)
		prev = m.val.end
		out = append(out, m)
	}
	if _, err := dec.Token(); err != nil {
		return nil, 0, err
	}
	return out, at + int(dec.InputOffset()) - 1, nil
}

// instScanArray lists the elements of the array whose '[' is at doc[at], and
// returns the offset of its closing ']'.
func instScanArray(doc []byte, at int) ([]instSpan, int, error) {
	dec := json.NewDecoder(bytes.NewReader(doc[at:]))
	if t, err := dec.Token(); err != nil || t != json.Delim('[') {
		return nil, 0, fmt.Errorf("expected an array at offset %d", at)
	}
	var out []instSpan
	for dec.More() {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, 0, err
		}
		end := at + int(dec.InputOffset())
		out = append(out, instSpan{end - len(raw), end})
	}
	if _, err := dec.Token(); err != nil {
		return nil, 0, err
	}
	return out, at + int(dec.InputOffset()) - 1, nil
}

func instJSONKind(b byte) string {
	switch b {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// ccSettings is a parsed settings.json: its bytes, the top-level members
// and the hooks tree, each node with its span in the bytes, and the
// file's layout (so that what we add looks like what is there).
type ccSettings struct {
	path       string
	doc        []byte
	empty      bool // no file, or only whitespace: treated as {}
	top        []instMember
	topOpen    int // '{'
	topClose   int // '}'
	hooksAt    int // index in top of "hooks", -1 when absent
	hooksClose int // the '}' of the hooks object
	events     []ccEvent

	multiline bool   // members on lines of their own (else one-line JSON)
	unit      string // one level of indentation
	sep       string // between a key and its value, as the file writes it
	nl        string // "\n", or "\r\n" in a CRLF file
}

type ccEvent struct {
	m       instMember
	closeAt int // the array's ']'
	groups  []ccGroup
}

// ccGroup is one matcher group: {"matcher": ..., "hooks": [...]}.
type ccGroup struct {
	span       instSpan
	members    []instMember
	hooksAt    int // index in members of "hooks", -1 when absent
	hooksClose int // the ']' of its hooks array
	hooks      []ccHook
	matcher    string
	hasMatcher bool
}

type ccHook struct {
	span    instSpan
	command string
	ours    bool
}

func (g ccGroup) nOurs() int {
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
// occurrence in Claude Code).
func (g ccGroup) matches(spec HookSpec) bool {
	all := !g.hasMatcher || g.matcher == "" || g.matcher == "*"
	if spec.Matcher == "" {
		return all
	}
	return g.hasMatcher && g.matcher == spec.Matcher
}

// parseSettings scans a settings document, refusing anything whose hooks
// part does not have the shape Claude Code documents. bin is the program
// being installed, to recognise our entries (see IsOurHookCommand).
func parseSettings(path string, doc []byte, bin string) (*ccSettings, error) {
	s, err := parseJSONObjectFile(path, doc, "the settings are")
	if err != nil || s.empty {
		return s, err
	}
	return s, s.parseHooks(bin)
}

// parseJSONObjectFile scans a JSON file whose top level must be an
// object (what names it in messages: "the settings are"): its
// members with their spans and its layout, so that changes can be
// spliced in looking like the rest. Whitespace only (or nothing) is an
// empty document, treated as {}.
func parseJSONObjectFile(path string, doc []byte, what string) (*ccSettings, error) {
	s := &ccSettings{path: path, doc: doc, hooksAt: -1, multiline: true, unit: "  ", sep: ": ", nl: "\n"}
	if bytes.Contains(doc, []byte("\r\n")) {
		s.nl = "\r\n"
	}
	if len(bytes.TrimSpace(doc)) == 0 {
		s.empty = true
		return s, nil
	}
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			off := int(se.Offset)
			if off > 0 && !strings.Contains(se.Error(), "unexpected end") {
				off-- // Offset is after the offending byte; at EOF, the end
			}
			return nil, settingsErrorAt(path, doc, off, "invalid JSON: %v", se)
		}
		return nil, &SettingsError{Path: path, Msg: "invalid JSON: " + err.Error()}
	}
	s.topOpen = len(doc) - len(bytes.TrimLeft(doc, " \t\r\n"))
	if doc[s.topOpen] != '{' {
		return nil, settingsErrorAt(path, doc, s.topOpen, "%s %s, expected an object", what, instJSONKind(doc[s.topOpen]))
	}
	var err error
	if s.top, s.topClose, err = instScanObject(doc, s.topOpen); err != nil {
		return nil, &SettingsError{Path: path, Msg: err.Error()}
	}
	if len(s.top) > 0 {
		first := s.top[0]
		lead := doc[s.topOpen+1 : first.keyStart]
		if i := bytes.LastIndexByte(lead, '\n'); i >= 0 {
			if u := string(lead[i+1:]); u != "" {
				s.unit = u
			}
		} else {
			s.multiline = false
		}
		s.sep = string(doc[first.keyEnd:first.val.start])
	}
	return s, nil
}

// parseHooks scans the "hooks" member of parsed settings, refusing
// anything whose shape is not the one Claude Code documents.
func (s *ccSettings) parseHooks(bin string) error {
	path, doc := s.path, s.doc
	for i, m := range s.top {
		if m.key != "hooks" {
			continue
		}
		if s.hooksAt >= 0 {
			return settingsErrorAt(path, doc, m.keyStart, `duplicate key "hooks": which one Claude Code uses is ambiguous; merge them by hand`)
		}
		s.hooksAt = i
	}
	if s.hooksAt < 0 {
		return nil
	}
	hv := s.top[s.hooksAt].val
	if doc[hv.start] != '{' {
		return settingsErrorAt(path, doc, hv.start, `"hooks" is %s, expected an object of event names`, instJSONKind(doc[hv.start]))
	}
	evs, hooksClose, err := instScanObject(doc, hv.start)
	if err != nil {
		return &SettingsError{Path: path, Msg: err.Error()}
	}
	s.hooksClose = hooksClose
	seen := map[string]bool{}
	for _, em := range evs {
		if seen[em.key] {
			return settingsErrorAt(path, doc, em.keyStart, "duplicate key hooks.%s: which one Claude Code uses is ambiguous; merge them by hand", em.key)
		}
		seen[em.key] = true
		if doc[em.val.start] != '[' {
			return settingsErrorAt(path, doc, em.val.start, "hooks.%s is %s, expected an array of matcher groups", em.key, instJSONKind(doc[em.val.start]))
		}
		spans, closeAt, err := instScanArray(doc, em.val.start)
		if err != nil {
			return &SettingsError{Path: path, Msg: err.Error()}
		}
		ev := ccEvent{m: em, closeAt: closeAt}
		for gi, gs := range spans {
			if doc[gs.start] != '{' {
				return settingsErrorAt(path, doc, gs.start, "hooks.%s[%d] is %s, expected a matcher group object", em.key, gi, instJSONKind(doc[gs.start]))
			}
			g := ccGroup{span: gs, hooksAt: -1}
			if g.members, _, err = instScanObject(doc, gs.start); err != nil {
				return &SettingsError{Path: path, Msg: err.Error()}
			}
			for mi, gm := range g.members {
				switch gm.key {
				case "matcher":
					g.hasMatcher = true
					_ = json.Unmarshal(doc[gm.val.start:gm.val.end], &g.matcher)
				case "hooks":
					if doc[gm.val.start] != '[' {
						return settingsErrorAt(path, doc, gm.val.start, "hooks.%s[%d].hooks is %s, expected an array", em.key, gi, instJSONKind(doc[gm.val.start]))
					}
					g.hooksAt = mi
					hs, hooksClose, err := instScanArray(doc, gm.val.start)
					g.hooksClose = hooksClose
					if err != nil {
						return &SettingsError{Path: path, Msg: err.Error()}
					}
					for hi, h := range hs {
						if doc[h.start] != '{' {
							return settingsErrorAt(path, doc, h.start, "hooks.%s[%d].hooks[%d] is %s, expected a hook object", em.key, gi, hi, instJSONKind(doc[h.start]))
						}
						var fields struct {
							Command any `json:"command"`
						}
						_ = json.Unmarshal(doc[h.start:h.end], &fields)
						hk := ccHook{span: h}
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

func (s *ccSettings) text(sp instSpan) []byte { return s.doc[sp.start:sp.end] }

// SettingsChange is what an install or uninstall does to one of our hooks.
type SettingsChange struct {
	Event   string `json:"event"`
	Matcher string `json:"matcher,omitempty"`
	Command string `json:"command,omitempty"`
	// Action is "added", "replaced" (an entry of ours with another path,
	// matcher or timeout), "unchanged" or "removed".
	Action string `json:"action"`
}

// Group and hook objects as we write them; field order is the order
// Claude Code's own documentation uses.
type ccGroupOut struct {
	Matcher string      `json:"matcher,omitempty"`
	Hooks   []ccHookOut `json:"hooks"`
}

type ccHookOut struct {
	Type    string `json:"type"`
	Command string `json:"command"`
	Timeout int    `json:"timeout"`
}

func instMarshal(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // keep && and > readable in commands
	if err := enc.Encode(v); err != nil {
		panic(err) // plain structs of strings and ints
	}
	return bytes.TrimRight(b.Bytes(), "\n")
}

func canonicalGroup(spec HookSpec, bin string) []byte {
	return instMarshal(ccGroupOut{Matcher: spec.Matcher, Hooks: []ccHookOut{{Type: "command", Command: HookCommand(bin, spec.Arg), Timeout: spec.Timeout}}})
}

func instJSONEqual(a, b []byte) bool {
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

// splicer rebuilds one object or array of the document with some items
// dropped, replaced or appended, and every other byte, whitespace and
// commas included, as it was. Appended items copy the layout of the last
// item (its line break and indentation).
type splicer struct {
	s           *ccSettings
	open, close byte
	items       []*spliceItem
	lastPost    []byte // between the last item and the closing bracket
	newLead     []byte // before an appended item
	prefix      string // indentation of an appended item
	compact     bool   // items on one line: appended items compact too
}

type spliceItem struct {
	lead []byte // between the preceding '[', '{' or ',' and the item
	text []byte
	post []byte // between the item and its ',' (nil for the last item)
	gone bool
}

// newSplicer takes the container at doc[openAt:closeAt+1] whose items
// (members from the key on, or elements) are spans.
func (s *ccSettings) newSplicer(openAt, closeAt int, spans []instSpan) *splicer {
	sp := &splicer{s: s, open: s.doc[openAt], close: s.doc[closeAt], compact: !s.multiline}
	prev := openAt + 1
	for i, x := range spans {
		it := &spliceItem{lead: s.doc[prev:x.start], text: s.doc[x.start:x.end]}
		if i < len(spans)-1 {
			c := x.end
			for s.doc[c] != ',' {
				c++
			}
			it.post = s.doc[x.end:c]
			prev = c + 1
		} else {
			sp.lastPost = s.doc[x.end:closeAt]
		}
		sp.items = append(sp.items, it)
	}
	switch {
	case len(spans) > 0:
		sp.newLead = sp.items[len(sp.items)-1].lead
		if i := bytes.LastIndexByte(sp.newLead, '\n'); i >= 0 {
			sp.prefix, sp.compact = string(sp.newLead[i+1:]), false
		} else {
			sp.compact = true
		}
	case s.multiline:
		ind := s.lineIndent(openAt)
		sp.prefix = ind + s.unit
		sp.newLead = []byte(s.nl + sp.prefix)
		sp.lastPost = []byte(s.nl + ind)
	}
	return sp
}

func instMemberSpans(ms []instMember) []instSpan {
	out := make([]instSpan, len(ms))
	for i, m := range ms {
		out[i] = instSpan{m.keyStart, m.val.end}
	}
	return out
}

// format lays out compact JSON for an appended item.
func (sp *splicer) format(v []byte) []byte {
	if sp.compact {
		return v
	}
	return sp.s.indent(v, sp.prefix)
}

// formatAt lays out compact JSON replacing item i.
func (sp *splicer) formatAt(i int, v []byte) []byte {
	lead := sp.items[i].lead
	j := bytes.LastIndexByte(lead, '\n')
	if j < 0 {
		return v
	}
	return sp.s.indent(v, string(lead[j+1:]))
}

func (sp *splicer) add(text []byte) {
	sp.items = append(sp.items, &spliceItem{lead: sp.newLead, text: text})
}

func (sp *splicer) live() int {
	n := 0
	for _, it := range sp.items {
		if !it.gone {
			n++
		}
	}
	return n
}

func (sp *splicer) bytes() []byte {
	var live []*spliceItem
	for _, it := range sp.items {
		if !it.gone {
			live = append(live, it)
		}
	}
	var b bytes.Buffer
	b.WriteByte(sp.open)
	for k, it := range live {
		if k > 0 {
			b.WriteByte(',')
		}
		b.Write(it.lead)
		b.Write(it.text)
		if k < len(live)-1 {
			b.Write(it.post)
		} else {
			b.Write(sp.lastPost)
		}
	}
	b.WriteByte(sp.close)
	return b.Bytes()
}

// indent lays out compact JSON as a value whose line starts with prefix.
func (s *ccSettings) indent(v []byte, prefix string) []byte {
	var b bytes.Buffer
	if err := json.Indent(&b, v, prefix, s.unit); err != nil {
		panic(err) // v is built from valid JSON
	}
	if s.nl != "\n" {
		return bytes.ReplaceAll(b.Bytes(), []byte("\n"), []byte(s.nl))
	}
	return b.Bytes()
}

// lineIndent returns the leading whitespace of the line holding off.
func (s *ccSettings) lineIndent(off int) string {
	start := bytes.LastIndexByte(s.doc[:off], '\n') + 1
	end := start
	for end < off && (s.doc[end] == ' ' || s.doc[end] == '\t') {
		end++
	}
	return string(s.doc[start:end])
}

// member joins a key (as written, or encoded) and a value.
func (s *ccSettings) member(key string, raw []byte, val []byte) []byte {
	if raw == nil {
		raw, _ = json.Marshal(key)
	}
	return append(append(append([]byte{}, raw...), s.sep...), val...)
}

// groupWithoutOurs returns a group's text with our hooks taken out of its
// hooks array and every other byte kept.
func (s *ccSettings) groupWithoutOurs(g ccGroup) []byte {
	hm := g.members[g.hooksAt]
	spans := make([]instSpan, len(g.hooks))
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
func (s *ccSettings) rewriteEvent(ev ccEvent, spec *HookSpec, bin string) (arr []byte, hadOurs bool, empty bool) {
	spans := make([]instSpan, len(ev.groups))
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
				if c := canonicalGroup(*spec, bin); !instJSONEqual(c, s.text(g.span)) {
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
func (s *ccSettings) rewrite(specs []HookSpec, bin string) ([]byte, []SettingsChange) {
	want := map[string]*HookSpec{}
	for i := range specs {
		want[specs[i].Event] = &specs[i]
	}
	var changes []SettingsChange
	added := func(spec HookSpec) {
		changes = append(changes, SettingsChange{Event: spec.Event, Matcher: spec.Matcher, Command: HookCommand(bin, spec.Arg), Action: "added"})
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
	top := s.newSplicer(s.topOpen, s.topClose, instMemberSpans(s.top))
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
	hs := s.newSplicer(hm.val.start, s.hooksClose, instMemberSpans(instEventMembers(s.events)))
	changed := false
	for i, ev := range s.events {
		spec := want[ev.m.key]
		arr, hadOurs, empty := s.rewriteEvent(ev, spec, bin)
		same := instJSONEqual(arr, s.text(ev.m.val))
		if spec != nil {
			c := SettingsChange{Event: spec.Event, Matcher: spec.Matcher, Command: HookCommand(bin, spec.Arg), Action: "added"}
			switch {
			case same:
				c.Action = "unchanged"
			case hadOurs:
				c.Action = "replaced"
			}
			changes = append(changes, c)
			delete(want, ev.m.key)
		} else if hadOurs {
			changes = append(changes, SettingsChange{Event: ev.m.key, Action: "removed"})
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

func instEventMembers(evs []ccEvent) []instMember {
	out := make([]instMember, len(evs))
	for i, e := range evs {
		out[i] = e.m
	}
	return out
}

// MergeHooks returns settings with our hooks installed (bin is the program
// they run) and what changed. Foreign hooks and every other key are kept
// as written; entries of ours from any version are replaced, never
// duplicated; when everything is already in place the input comes back
// unchanged. Settings it cannot merge with certainty give a
// *SettingsError naming path.
func MergeHooks(path string, settings []byte, bin string) ([]byte, []SettingsChange, error) {
	s, err := parseSettings(path, settings, bin)
	if err != nil {
		return nil, nil, err
	}
	out, ch := s.rewrite(InstallSpecs(), bin)
	return out, ch, nil
}

// RemoveHooks returns settings without any hook of ours, dropping the
// matcher groups, event keys and "hooks" key that held only ours.
func RemoveHooks(path string, settings []byte, bin string) ([]byte, []SettingsChange, error) {
	s, err := parseSettings(path, settings, bin)
	if err != nil {
		return nil, nil, err
	}
	out, ch := s.rewrite(nil, bin)
	return out, ch, nil
}

// SettingsPlan is a computed change to one settings file: what it holds,
// what it would hold, and the steps that get there. Nothing is written
// until Apply.
type SettingsPlan struct {
	// Path is the file that is read and written, with symlinks resolved
	// (a dotfiles symlink stays a symlink; its target is updated).
	Path string
	// Exists is false when there is no file yet.
	Exists  bool
	Before  []byte
	After   []byte
	Changes []SettingsChange
	// RemoveFile is set when applying deletes the file (after its backup)
	// instead of writing After: an MCP config that held nothing but our
	// server, which install created (see PlanMCPUninstall).
	RemoveFile bool
}

// Changed reports whether applying the plan would write anything.
func (p *SettingsPlan) Changed() bool {
	if p.RemoveFile {
		return p.Exists
	}
	if !p.Exists {
		return p.After != nil && !bytes.Equal(p.After, p.Before)
	}
	return !bytes.Equal(p.Before, p.After)
}

// PlanInstall reads path and computes the settings with our hooks.
func PlanInstall(path, bin string) (*SettingsPlan, error) {
	return planSettings(path, bin, MergeHooks)
}

// PlanUninstall reads path and computes the settings without our hooks.
func PlanUninstall(path, bin string) (*SettingsPlan, error) {
	return planSettings(path, bin, RemoveHooks)
}

func planSettings(path, bin string, f func(string, []byte, string) ([]byte, []SettingsChange, error)) (*SettingsPlan, error) {
	real, err := resolveSettingsPath(path)
	if err != nil {
		return nil, err
	}
	p := &SettingsPlan{Path: real}
	b, err := os.ReadFile(real)
	switch {
	case err == nil:
		p.Exists, p.Before = true, b
	case errors.Is(err, fs.ErrNotExist):
	default:
		return nil, fmt.Errorf("read %s: %w", real, err)
	}
	if p.After, p.Changes, err = f(real, p.Before, bin); err != nil {
		return nil, err
	}
	if !p.Exists && bytes.Equal(p.After, p.Before) {
		p.After = nil // nothing to create
	}
	return p, nil
}

// resolveSettingsPath follows a symlinked settings.json to its target, so
// that the atomic rename replaces the file and not the link.
func resolveSettingsPath(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	if fi, err := os.Lstat(abs); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		t, err := filepath.EvalSymlinks(abs)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return "", fmt.Errorf("%s is a symlink to a missing file; fix or remove the link", abs)
			}
			return "", fmt.Errorf("resolve %s: %w", abs, err)
		}
		return t, nil
	}
	return abs, nil
}

// Apply writes the plan: first a backup of the current file next to it
// (settings.json.bak-YYYYMMDD-HHMMSS, 0600), then the new settings through
// a temporary file renamed into place (0600; missing directories created
// 0700), so Claude Code never reads half a file. It refuses when the file
// changed since the plan read it, rather than overwrite someone's edit.
// A RemoveFile plan deletes the file after the backup. It returns the
// backup's path ("" when there was no file to back up).
func (p *SettingsPlan) Apply(now time.Time) (backup string, err error) {
	if !p.Changed() {
		return "", nil
	}
	cur, err := os.ReadFile(p.Path)
	switch {
	case err == nil && (!p.Exists || !bytes.Equal(cur, p.Before)):
		return "", fmt.Errorf("%s changed since it was read; run the command again", p.Path)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("read %s: %w", p.Path, err)
	case err != nil && p.Exists:
		return "", fmt.Errorf("%s was removed since it was read; run the command again", p.Path)
	}
	dir := filepath.Dir(p.Path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("create %s: %w", dir, err)
	}
	if p.Exists {
		if backup, err = writeBackup(p.Path, p.Before, now); err != nil {
			return "", err
		}
	}
	if p.RemoveFile {
		if err := os.Remove(p.Path); err != nil {
			return backup, fmt.Errorf("remove %s: %w", p.Path, err)
		}
		return backup, nil
	}
	if err := writeSettingsAtomic(p.Path, p.After, 0o600); err != nil {
		return backup, err
	}
	return backup, nil
}

// writeBackup writes data to path.bak-<local time>, never overwriting an
// earlier backup (a second one in the same second gets -2, -3, ...).
func writeBackup(path string, data []byte, now time.Time) (string, error) {
	base := path + ".bak-" + now.Format("20060102-150405")
	for i := 1; i < 1000; i++ {
		name := base
		if i > 1 {
			name = fmt.Sprintf("%s-%d", base, i)
		}
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("back up %s: %w", path, err)
		}
		_, err = f.Write(data)
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(name)
			return "", fmt.Errorf("back up %s: %w", path, err)
		}
		return name, nil
	}
	return "", fmt.Errorf("back up %s: too many backups named %s*", path, base)
}

// writeSettingsAtomic replaces path with data: temp file in the same
// directory, fsync, chmod, rename, then fsync of the directory.
func writeSettingsAtomic(path string, data []byte, mode os.FileMode) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	fail := func(err error) error {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Chmod(mode); err != nil {
		return fail(err)
	}
	if _, err := f.Write(data); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// Diff renders the plan as a unified diff of the settings text, with
// three lines of context ("" when nothing changes).
func (p *SettingsPlan) Diff() string {
	if !p.Changed() {
		return ""
	}
	from, to, after := p.Path+" (current)", p.Path+" (new)", string(p.After)
	if !p.Exists {
		from = "/dev/null"
	}
	if p.RemoveFile {
		to, after = "/dev/null", ""
	}
	return unifiedLineDiff(from, to, string(p.Before), after, 3)
}

// unifiedLineDiff is a small line diff (longest common subsequence over
// the lines that differ after trimming the common head and tail), enough
// for files of the size of a settings.json.
func unifiedLineDiff(fromName, toName, a, b string, context int) string {
	al, bl := splitDiffLines(a), splitDiffLines(b)
	pre := 0
	for pre < len(al) && pre < len(bl) && al[pre] == bl[pre] {
		pre++
	}
	suf := 0
	for suf < len(al)-pre && suf < len(bl)-pre && al[len(al)-1-suf] == bl[len(bl)-1-suf] {
		suf++
	}
	ma, mb := al[pre:len(al)-suf], bl[pre:len(bl)-suf]
	// ops over the whole files: ' ' keep, '-' delete, '+' insert
	type op struct {
		kind byte
		line string
	}
	var ops []op
	for _, l := range al[:pre] {
		ops = append(ops, op{' ', l})
	}
	if len(ma)*len(mb) > 4_000_000 {
		for _, l := range ma {
			ops = append(ops, op{'-', l})
		}
		for _, l := range mb {
			ops = append(ops, op{'+', l})
		}
	} else {
		n, m := len(ma), len(mb)
		lcs := make([][]int, n+1)
		for i := range lcs {
			lcs[i] = make([]int, m+1)
		}
		for i := n - 1; i >= 0; i-- {
			for j := m - 1; j >= 0; j-- {
				if ma[i] == mb[j] {
					lcs[i][j] = lcs[i+1][j+1] + 1
				} else {
					lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
				}
			}
		}
		i, j := 0, 0
		for i < n || j < m {
			switch {
			case i < n && j < m && ma[i] == mb[j]:
				ops = append(ops, op{' ', ma[i]})
				i++
				j++
			case i < n && (j == m || lcs[i+1][j] >= lcs[i][j+1]):
				ops = append(ops, op{'-', ma[i]})
				i++
			default:
				ops = append(ops, op{'+', mb[j]})
				j++
			}
		}
	}
	for _, l := range al[len(al)-suf:] {
		ops = append(ops, op{' ', l})
	}

	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", fromName, toName)
	for k := 0; k < len(ops); {
		if ops[k].kind == ' ' {
			k++
			continue
		}
		// a hunk: back up context lines, run until context*2 equal lines
		start := max(k-context, 0)
		end := k
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].kind == ' ' {
				run++
			}
			if run == len(ops) || run-end > 2*context {
				end = min(end+context, len(ops))
				break
			}
			end = run
		}
		aStart, bStart := 0, 0
		for _, o := range ops[:start] {
			if o.kind != '+' {
				aStart++
			}
			if o.kind != '-' {
				bStart++
			}
		}
		aLen, bLen := 0, 0
		for _, o := range ops[start:end] {
			if o.kind != '+' {
				aLen++
			}
			if o.kind != '-' {
				bLen++
			}
		}
		fmt.Fprintf(&out, "@@ -%s +%s @@\n", hunkRange(aStart, aLen), hunkRange(bStart, bLen))
		for _, o := range ops[start:end] {
			out.WriteByte(o.kind)
			out.WriteString(o.line)
			out.WriteByte('\n')
		}
		k = end
	}
	return out.String()
}

func hunkRange(start, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", start)
	}
	if n == 1 {
		return fmt.Sprintf("%d", start+1)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}

func splitDiffLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	for i, l := range lines {
		if strings.HasSuffix(l, "\n") {
			lines[i] = strings.TrimSuffix(strings.TrimSuffix(l, "\n"), "\r")
		} else {
			lines[i] = l + "\n\\ No newline at end of file"
		}
	}
	return lines
}
