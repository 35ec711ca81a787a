package settings

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"
)

// HookSpec is one hook we install: the harness runs `<bin> hook <Arg>` on
// Event for tools (or sources) matching Matcher. Which hooks a harness
// gets is its adapter's (hooks/claudecode.HookSpecs for Claude Code).
type HookSpec struct {
	Event   string // the harness's event name
	Matcher string // "" = no matcher key: every occurrence of the event
	Arg     string // the `git-lossless hook` arguments ("pre-tool-use", or "HARNESS EVENT")
	Timeout int    // in the harness's unit (Claude Code: seconds); a hook past it is abandoned
	// Name, when set, is written as the hook entry's "name" (Gemini CLI
	// shows it, and its hooks.disabled list names hooks by it).
	Name string
}

// HookCommand is the command line of one hook: the program, shell-quoted
// when it needs to be (harnesses run the command through a shell, Claude
// Code does), then `hook ARG`.
func HookCommand(bin, arg string) string {
	return Quote(bin) + " hook " + arg
}

// ourCommandRe recognises a command of ours whatever path it was installed
// with: git-lossless or git-lossless-hook (possibly quoted, possibly .exe)
// followed by the word hook, or `git lossless hook`.
var ourCommandRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(git-lossless(-hook)?(\.exe)?['"]?|(^|[\s;&|(])git\s+lossless)\s+hook(\s|$)`)
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
	for _, b := range []string{Quote(bin), bin} {
		if strings.HasPrefix(c, b+" hook ") {
			return true
		}
	}
	return false
}

// HookBinary is the program the hooks will run.
type HookBinary struct {
	// Path is git-lossless: an absolute path, or a bare name found on PATH
	// at hook time when given so with --command. The MCP server is
	// registered with it.
	Path string
	// Hook is the program the hook commands run: git-lossless-hook when it
	// sits beside Path (see HookProgram), else Path.
	Hook string
	// MCP is the program the harness's MCP server entry runs, with the
	// argument mcp: git-lossless-mcp when it sits beside Path (see
	// MCPProgram), else Path, whose `mcp` command runs git-lossless-mcp
	// found beside it or on PATH. "" means Path (see MCPCommand).
	MCP string
	// Warning explains a choice the user should know about ("" = none):
	// a temporary `go run` build, or another git-lossless on PATH.
	Warning string
	// MCPWarning says why the MCP server may not start or may run other
	// code than Path ("" = none): no git-lossless-mcp beside Path or on
	// PATH, or one of another version. Install prints it only when it
	// registers the server.
	MCPWarning string
}

// MCPCommand is the program an MCP server entry runs (MCP, else Path).
func (b HookBinary) MCPCommand() string {
	if b.MCP != "" {
		return b.MCP
	}
	return b.Path
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
	// Version is the running program's version. When set, a
	// git-lossless-hook beside the program is used only if it reports the
	// same version (a stale one would run old code on every tool call).
	Version string
	// VersionOf returns the version a program reports (default: runs
	// `PATH --version` with a 5 s timeout).
	VersionOf func(ctx context.Context, path string) (string, error)
}

// ResolveBinary picks the program hooks run: the git-lossless on PATH when
// it is this very program (its PATH name survives upgrades that replace
// the file), else the running executable's absolute path. Hooks always get
// an absolute path because a harness runs them with the session's
// environment, whose PATH may differ from the installer's.
func ResolveBinary(ctx context.Context, opt BinaryOptions) (HookBinary, error) {
	if opt.Override != "" {
		p := opt.Override
		if strings.ContainsRune(p, filepath.Separator) {
			p = filepath.Clean(absFrom(opt.Dir, p))
		}
		b := HookBinary{Path: p}
		b.pickHook(ctx, opt)
		b.pickMCP(ctx, opt)
		return b, nil
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
	onPath, found := LookPath("git-lossless", getenv("PATH"))
	if found && SameFile(onPath, exe) {
		b := HookBinary{Path: onPath}
		b.pickHook(ctx, opt)
		b.pickMCP(ctx, opt)
		return b, nil
	}
	b := HookBinary{Path: exe}
	switch {
	case IsTempBuild(exe):
		b.Warning = fmt.Sprintf("%s looks like a temporary `go run`/`go test` build that will be deleted; hooks pointing at it will stop working. Install git-lossless (`go install ./cmd/...`) and run install again with that binary, or pass --command PATH", exe)
	case found:
		b.Warning = fmt.Sprintf("the git-lossless on PATH (%s) is a different program; the hooks will run this one (%s)", onPath, exe)
	}
	b.pickHook(ctx, opt)
	b.pickMCP(ctx, opt)
	return b, nil
}

// HookProgramName is the hook-only program `go install ./cmd/...` puts
// beside git-lossless (cmd/git-lossless-hook).
const HookProgramName = "git-lossless-hook"

// HookProgram returns the program hook commands should run for the
// git-lossless at bin: the git-lossless-hook in the same directory when
// there is one (a regular, executable file), whose smaller set of linked
// packages starts faster on every tool call, else bin itself. A bare name
// (resolved on PATH at hook time) is kept as it is.
func HookProgram(bin string) string {
	return sibling(bin, HookProgramName)
}

// MCPProgramName is the MCP server's program, which `go install
// ./cmd/...` puts beside git-lossless (cmd/git-lossless-mcp): the server
// links the MCP SDK, which git-lossless does not (so that every other
// command starts without its initialisation).
const MCPProgramName = "git-lossless-mcp"

// MCPProgram returns the program an MCP server entry should run for the
// git-lossless at bin: the git-lossless-mcp in the same directory when
// there is one (a regular, executable file), so the harness starts the
// server without a git-lossless process in between, else bin itself
// (`bin mcp` runs git-lossless-mcp found beside bin or on PATH). A bare
// name (resolved on PATH when the harness starts it) is kept as it is.
func MCPProgram(bin string) string {
	return sibling(bin, MCPProgramName)
}

// sibling is the program name in bin's directory when it is there and
// executable (.exe added when bin has it), else bin; bin itself when it
// is not an absolute path.
func sibling(bin, name string) string {
	if !filepath.IsAbs(bin) {
		return bin
	}
	if strings.HasSuffix(strings.ToLower(bin), ".exe") {
		name += ".exe"
	}
	sib := filepath.Join(filepath.Dir(bin), name)
	if IsExecutable(sib) {
		return sib
	}
	return bin
}

// pickMCP sets b.MCP to MCPProgram(b.Path) and b.MCPWarning when the
// server may not start (git-lossless-mcp neither beside b.Path nor on
// PATH) or would run another version than opt.Version. A git-lossless-mcp
// of another version is still the one written: `git-lossless mcp` would
// run that same program (beside first), so falling back would change
// nothing but the start-up cost.
func (b *HookBinary) pickMCP(ctx context.Context, opt BinaryOptions) {
	b.MCP = MCPProgram(b.Path)
	if b.MCP == b.Path {
		getenv := opt.Getenv
		if getenv == nil {
			getenv = os.Getenv
		}
		if _, found := LookPath(MCPProgramName, getenv("PATH")); !found {
			b.MCPWarning = fmt.Sprintf("%s is not installed beside %s or on PATH: the MCP server (`%s mcp`) will not start until it is; install every program with `go install ./cmd/...` (or `go install github.com/git-lossless/git-lossless/cmd/...@latest`)",
				MCPProgramName, b.Path, Quote(b.Path))
		}
		return
	}
	if opt.Version == "" {
		return
	}
	versionOf := opt.VersionOf
	if versionOf == nil {
		versionOf = RunVersion
	}
	v, err := versionOf(ctx, b.MCP)
	if err == nil && v == opt.Version {
		return
	}
	what := "version " + v
	if err != nil {
		what = "unusable (" + err.Error() + ")"
	}
	b.MCPWarning = fmt.Sprintf("%s is %s, not %s like %s: the MCP server runs other code than the commands; install both of one version with `go install ./cmd/...`", b.MCP, what, opt.Version, b.Path)
}

// pickHook sets b.Hook: HookProgram(b.Path), unless that is a
// git-lossless-hook of another version than opt.Version, which is passed
// over with a warning.
func (b *HookBinary) pickHook(ctx context.Context, opt BinaryOptions) {
	b.Hook = HookProgram(b.Path)
	if b.Hook == b.Path || opt.Version == "" {
		return
	}
	versionOf := opt.VersionOf
	if versionOf == nil {
		versionOf = RunVersion
	}
	v, err := versionOf(ctx, b.Hook)
	if err == nil && v == opt.Version {
		return
	}
	what := "version " + v
	if err != nil {
		what = "unusable (" + err.Error() + ")"
	}
	w := fmt.Sprintf("%s is %s, not %s like %s: the hooks will run %s, which starts slower; install both of one version with `go install ./cmd/...`", b.Hook, what, opt.Version, b.Path, b.Path)
	if b.Warning != "" {
		w = b.Warning + "; " + w
	}
	b.Hook, b.Warning = b.Path, w
}

// RunVersion runs `path --version` (5 s at most) and returns the version
// it prints after "git-lossless version ".
func RunVersion(ctx context.Context, path string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--version").Output()
	if err != nil {
		return "", err
	}
	v, ok := strings.CutPrefix(strings.TrimSpace(string(out)), "git-lossless version ")
	if !ok {
		return "", fmt.Errorf("%s --version printed %.40q, not git-lossless's version line", path, out)
	}
	return v, nil
}

// LookPath is exec.LookPath over an explicit PATH value, so the CLI's
// environment (and a test's) decides, not the process's.
func LookPath(name, path string) (string, bool) {
	for _, d := range filepath.SplitList(path) {
		if d == "" || !filepath.IsAbs(d) {
			continue // relative PATH entries depend on the cwd: never trust them for hooks
		}
		p := filepath.Join(d, name)
		if IsExecutable(p) {
			return p, true
		}
	}
	return "", false
}

// IsExecutable reports whether p is a regular file someone may execute:
// what a hook or server command must name for a harness to start it.
func IsExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0
}

// SameFile reports whether a and b are one file (os.SameFile), false
// when either cannot be stat'ed: two paths of one program, a symlink
// on PATH and its target, are one program.
func SameFile(a, b string) bool {
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

// IsTempBuild recognises binaries `go run` and `go test` leave in the
// temporary directory (…/go-build123/b001/exe/…).
func IsTempBuild(p string) bool {
	sep := string(filepath.Separator)
	if strings.Contains(p, sep+"go-build") {
		return true
	}
	tmp := filepath.Clean(os.TempDir())
	return tmp != sep && strings.HasPrefix(p, tmp+sep)
}

// Quote quotes s for a POSIX shell unless it is made of characters
// that need none.
func Quote(s string) string {
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

// splitWords splits a shell command line into words, honouring
// single quotes, double quotes and backslashes: enough to recover the
// program and arguments of a command we (or a person) wrote.
func splitWords(s string) []string {
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

// hookProgram returns the program and `hook` arguments of one of our
// commands ("", "" when it does not have that shape, e.g. `git lossless
// hook x` or a wrapper with environment assignments before the program).
func hookProgram(command string) (prog, arg string) {
	w := splitWords(command)
	for len(w) > 0 && envAssignRe().MatchString(w[0]) {
		w = w[1:] // VAR=value prefixes
	}
	if len(w) < 2 || w[1] != "hook" {
		return "", ""
	}
	return w[0], strings.Join(w[2:], " ")
}
