package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/git-lossless/git-lossless/internal/testkit"
)

// The documentation is held to the code: every `git lossless ...` line of
// a fenced sh block in README.md and docs/ names a command and flags that
// exist, the read-only ones run on a small archive as written, and every
// relative link and #anchor resolves. A renamed flag or a moved page then
// fails here, not in a newcomer's terminal.

// docFiles is README.md and every Markdown file under docs/, relative to
// the repository root.
func docFiles(t *testing.T) []string { return testkit.DocFiles(t, "../..") }

// docCommand is one `git lossless` line of a fenced sh block.
type docCommand struct {
	file string
	line int
	text string   // the line as written
	args []string // after "git lossless", comment and pipe removed
}

var fenceOpen = regexp.MustCompile("^```(sh|bash|shell)\\s*$")

// docCommands collects the `git lossless` lines of every fenced sh block.
func docCommands(t *testing.T) []docCommand {
	t.Helper()
	var out []docCommand
	for _, f := range docFiles(t) {
		src, err := os.ReadFile(filepath.Join("../..", f))
		if err != nil {
			t.Fatal(err)
		}
		in := false
		for i, l := range strings.Split(string(src), "\n") {
			switch {
			case !in && fenceOpen.MatchString(l):
				in = true
				continue
			case in && strings.HasPrefix(l, "```"):
				in = false
				continue
			}
			if !in {
				continue
			}
			s := strings.TrimSpace(l)
			if !strings.HasPrefix(s, "git lossless ") && s != "git lossless" {
				continue
			}
			words, err := shellWords(s)
			if err != nil {
				t.Errorf("%s:%d: %v: %s", f, i+1, err, s)
				continue
			}
			out = append(out, docCommand{file: f, line: i + 1, text: s, args: words[2:]})
		}
	}
	return out
}

// shellWords splits a documentation line as sh would, as far as the docs
// use it: quotes, a trailing # comment, and a pipe or redirection, which
// ends the command. A | inside [...] separates alternatives and is kept.
func shellWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	have, depth := false, 0
	var quote byte
	flush := func() {
		if have {
			words = append(words, cur.String())
		}
		cur.Reset()
		have = false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else {
				cur.WriteByte(c)
			}
		case c == '\'' || c == '"':
			quote, have = c, true
		case c == ' ' || c == '\t':
			flush()
		case c == '#' && !have:
			flush()
			return words, nil
		case (c == '|' || c == '>' || c == '<') && depth == 0 && !have:
			flush()
			return words, nil
		default:
			if c == '[' {
				depth++
			} else if c == ']' && depth > 0 {
				depth--
			}
			cur.WriteByte(c)
			have = true
		}
	}
	if quote != 0 {
		return nil, errUnclosedQuote
	}
	flush()
	return words, nil
}

type docError string

func (e docError) Error() string { return string(e) }

const errUnclosedQuote = docError("unclosed quote")

// commandByName finds a subcommand of the shipping binary.
func commandByName(name string) *command {
	for _, c := range commands() {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// globalFlags are accepted before the command (see run).
var globalFlags = map[string]bool{"-C": true, "--version": true, "--help": true, "-h": true}

// resolveDoc splits a documented line into its command and its flag
// tokens (placeholders' brackets and alternatives removed).
func resolveDoc(args []string) (name string, flags []string, rest []string) {
	for len(args) > 0 && globalFlags[args[0]] {
		if args[0] == "-C" && len(args) > 1 {
			args = args[1:]
		}
		args = args[1:]
	}
	if len(args) == 0 {
		return "", nil, nil
	}
	name, rest = args[0], args[1:]
	for _, a := range rest {
		for _, alt := range strings.Split(strings.Trim(a, "[]()"), "|") {
			alt = strings.Trim(alt, "[]()")
			if strings.HasPrefix(alt, "-") && alt != "-" && alt != "--" && !strings.HasPrefix(alt, "---") {
				if k, _, ok := strings.Cut(alt, "="); ok {
					alt = k
				}
				flags = append(flags, alt)
			}
		}
	}
	return name, flags, rest
}

func TestDocsCommandsExist(t *testing.T) {
	cmds := docCommands(t)
	if len(cmds) < 40 {
		t.Fatalf("found %d documented commands: the scan is broken", len(cmds))
	}
	for _, dc := range cmds {
		name, flags, rest := resolveDoc(dc.args)
		if name == "" {
			continue // `git lossless` or `git lossless --version`
		}
		if name == "help" {
			if len(rest) > 0 && rest[0] != "environment" && commandByName(rest[0]) == nil {
				t.Errorf("%s:%d: help of an unknown command: %s", dc.file, dc.line, dc.text)
			}
			continue
		}
		c := commandByName(name)
		if c == nil {
			t.Errorf("%s:%d: no command %q: %s", dc.file, dc.line, name, dc.text)
			continue
		}
		if _, external := externals[name]; external || c.Flags == nil {
			// bench, demo and mcp are other programs': their own tests check
			// their documented flags.
			continue
		}
		fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
		c.Flags(fs)
		for _, f := range flags {
			var ok bool
			switch {
			case f == "--help" || f == "-h":
				ok = true
			case strings.HasPrefix(f, "--"):
				ok = fs.Lookup(f[2:]) != nil
			case len(f) == 2:
				ok = fs.ShorthandLookup(f[1:]) != nil
			default:
				// -1, -32: a number or a negative argument, not a flag.
				ok = regexp.MustCompile(`^-\d`).MatchString(f)
			}
			if !ok {
				t.Errorf("%s:%d: %s has no flag %s: %s", dc.file, dc.line, name, f, dc.text)
			}
		}
	}
}

// readOnly are the commands (and first arguments) a documented line may
// be run with against the test's archive: they write nothing outside a
// temporary HOME and the archive's derived caches.
var readOnly = map[string]bool{
	"log": true, "who": true, "heads": true, "verify": true, "locks": true, "stats": true,
	"meter": true, "pack": true, "savings": true, "handoff": true, "doctor": true, "help": true,
	"recall digests": true, "recall search": true, "recall file": true,
	"receipt show": true, "receipt list": true,
	"install claude-code": true, "install codex": true, "install gemini": true, "install opencode": true,
}

// placeholder marks an argument written for a reader to fill in.
var placeholder = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$|\.\.\.|[\[\]<>]|^~|^cc-|^sp-`)

func TestDocsReadOnlyCommandsRun(t *testing.T) {
	a := newSmallArchive(t, map[string]string{"hooks/sweep.go": "package hooks\n\nfunc Sweep() {}\n", "main.go": "package main\n\nfunc main() {}\n"})
	a.must([]string{"record", "--op", "read", "--session", "docs-session", "hooks/sweep.go", "main.go"},
		[]string{"record", "--op", "edit", "--session", "docs-session", "main.go"})
	cli := a.cli
	ran := 0
	for _, dc := range docCommands(t) {
		name, _, rest := resolveDoc(dc.args)
		key := name
		if len(rest) > 0 && (name == "recall" || name == "receipt" || name == "install") {
			key = name + " " + rest[0]
		}
		if !readOnly[key] || (name == "install" && contains(rest, "--apply")) {
			continue
		}
		runnable := true
		for _, a := range dc.args {
			if placeholder.MatchString(a) {
				runnable = false
			}
		}
		if !runnable {
			continue
		}
		code, out, errOut := cli(dc.args...)
		ran++
		if code != exitOK || strings.TrimSpace(out+errOut) == "" {
			t.Errorf("%s:%d: %s: exit %d\n%s%s", dc.file, dc.line, dc.text, code, out, errOut)
		}
	}
	t.Logf("ran %d documented commands", ran)
	if ran < 10 {
		t.Errorf("ran only %d documented commands", ran)
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// TestReadmeHarnessSetUp runs each harness's set-up as README.md shows
// it, with the built programs on PATH as `go install ./cmd/...` leaves
// them and an empty HOME: every `git lossless install NAME --apply` of the
// set-up table, then the example block line by line; every command exits
// 0 and doctor then finds each harness's hooks and a working MCP server.
func TestReadmeHarnessSetUp(t *testing.T) {
	docsGit(t)
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	sets := regexp.MustCompile("`git lossless install ([a-z-]+) --apply`").FindAllSubmatch(readme, -1)
	if len(sets) < 4 {
		t.Fatalf("README shows %d harness set-ups, want every harness", len(sets))
	}
	example := regexp.MustCompile("(?s)For Claude Code, for example:\n\n```sh\n(.*?)```").FindSubmatch(readme)
	if example == nil {
		t.Fatal("README has no example set-up block")
	}
	sb := newSandbox(t)
	sb.setenv("PATH", filepath.Dir(e2eBin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	repo := sb.initRepo("work")
	var names []string
	for _, m := range sets {
		names = append(names, string(m[1]))
		sb.ok(repo, "install", string(m[1]), "--apply")
	}
	var doctor string
	lines := strings.Split(strings.TrimSpace(string(example[1])), "\n")
	if len(lines) != 3 {
		t.Errorf("the example set-up is %d commands, want 3", len(lines))
	}
	for _, l := range lines {
		words, err := shellWords(l)
		if err != nil || len(words) < 3 || words[0] != "git" || words[1] != "lossless" {
			t.Fatalf("example line %q is not a git lossless command", l)
		}
		r := sb.ok(repo, words[2:]...)
		if words[2] == "doctor" {
			doctor = r.stdout
		}
	}
	for _, name := range names {
		if !regexp.MustCompile(`(?m)^OK +` + regexp.QuoteMeta(name) + ` (hooks|plugin)`).MatchString(doctor) {
			t.Errorf("doctor does not find %s's hooks after its set-up:\n%s", name, doctor)
		}
	}
	if !regexp.MustCompile(`(?m)^OK +mcp server: .*answered tools/list`).MatchString(doctor) {
		t.Errorf("doctor: the MCP server does not answer after the set-up:\n%s", doctor)
	}
}

// TestDocsLinksResolve: every relative link in README.md and docs/ names
// a file or directory of the repository, and every #anchor a heading of
// the Markdown file it points into.
func TestDocsLinksResolve(t *testing.T) {
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	checked := 0
	for _, f := range docFiles(t) {
		src, err := os.ReadFile(filepath.Join("../..", f))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllSubmatch(stripCode(src), -1) {
			target := string(m[1])
			if regexp.MustCompile(`^[a-z][a-z0-9+.-]*:`).MatchString(target) {
				continue // http:, https:, mailto:
			}
			path, frag, _ := strings.Cut(target, "#")
			resolved := filepath.Join("../..", filepath.Dir(f), path)
			if path == "" {
				resolved = filepath.Join("../..", f)
			}
			st, err := os.Stat(resolved)
			if err != nil {
				t.Errorf("%s: link %s: no such file", f, target)
				continue
			}
			checked++
			if frag == "" {
				continue
			}
			if st.IsDir() || !strings.HasSuffix(resolved, ".md") {
				t.Errorf("%s: link %s: an anchor into a non-Markdown file", f, target)
				continue
			}
			body, _ := os.ReadFile(resolved)
			if !headingAnchors(body)[frag] {
				t.Errorf("%s: link %s: no heading with that anchor", f, target)
			}
		}
	}
	if checked < 30 {
		t.Errorf("checked only %d links: the scan is broken", checked)
	}
}

// stripCode blanks fenced code blocks and inline code, where ](...) is
// not a link.
func stripCode(src []byte) []byte {
	var out []string
	in := false
	for _, l := range strings.Split(string(src), "\n") {
		if strings.HasPrefix(l, "```") {
			in = !in
			continue
		}
		if in {
			continue
		}
		out = append(out, regexp.MustCompile("`[^`]*`").ReplaceAllString(l, ""))
	}
	return []byte(strings.Join(out, "\n"))
}

// headingAnchors are the anchors GitHub gives a Markdown file's headings:
// lower case, punctuation but - and _ dropped, spaces made -, and -N
// suffixes for repeats.
func headingAnchors(src []byte) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	drop := regexp.MustCompile(`[^\p{L}\p{N}\- _]`)
	in := false
	for _, l := range strings.Split(string(src), "\n") {
		if strings.HasPrefix(l, "```") {
			in = !in
			continue
		}
		if in || !strings.HasPrefix(l, "#") {
			continue
		}
		h := strings.TrimSpace(strings.TrimLeft(l, "#"))
		h = strings.ReplaceAll(h, "`", "")
		a := strings.ReplaceAll(drop.ReplaceAllString(strings.ToLower(h), ""), " ", "-")
		if n := seen[a]; n > 0 {
			anchors[a+"-"+strconv.Itoa(n)] = true
		} else {
			anchors[a] = true
		}
		seen[a]++
	}
	return anchors
}

// docsGit is the git the tests run; git is required everywhere.
func docsGit(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("git")
	if err != nil {
		t.Fatalf("git is required: %v", err)
	}
	return p
}
