package shellread

import (
	"errors"
	"strings"
	"unicode/utf8"
)

// Read is a shell command recognised as printing one named file, whole or
// a range of its lines. The zero value is no read.
type Read struct {
	// Path is the file as the command names it, after quote removal; with
	// `cd DIR && …` and a relative file, DIR + "/" + file. It is never
	// cleaned: `a/../b` opens b beside wherever the symlink a points, as
	// cat did, which filepath.Clean would get wrong. Resolve joins it to
	// the directory the command ran in.
	Path string
	// Cmd is the program that printed it: "cat", "sed", "nl", "head" or
	// "tail".
	Cmd string
	// From and To select lines From..To (1-based, inclusive; To 0: to the
	// end of the file). Unused (0) when Last is set.
	From, To int
	// Last is N of `tail -n N`: the last N lines; 0 otherwise.
	Last int
	// Numbered is set for `nl -ba`: each line was printed after its number
	// (right-aligned in six columns) and a tab, and the last one with a
	// newline even when the file has none.
	Numbered bool
}

// Resolve returns the name to open for r when the command ran in cwd:
// r.Path when it is absolute, else cwd + "/" + r.Path, not cleaned, so
// that the kernel resolves ".." through symlinks exactly as the command
// did.
func (r Read) Resolve(cwd string) string {
	if strings.HasPrefix(r.Path, "/") || cwd == "" {
		return r.Path
	}
	return strings.TrimSuffix(cwd, "/") + "/" + r.Path
}

// ErrNotRead is what every refusal of Parse wraps: the command is not one
// of the recognised reads, so its output is no evidence.
var ErrNotRead = errors.New("not a recognised read")

// NotReadError is a refusal of Parse, with the rule that refused.
type NotReadError struct{ Reason string }

func (e *NotReadError) Error() string { return "shellread: " + ErrNotRead.Error() + ": " + e.Reason }

// Is makes errors.Is(err, ErrNotRead) true.
func (e *NotReadError) Is(target error) bool { return target == ErrNotRead }

func refuse(reason string) (Read, error) { return Read{}, &NotReadError{Reason: reason} }

// Parse recognises command as one of the read forms in the package doc
// and returns which file it prints and which of its lines; any other
// command is refused with a *NotReadError (wrapping ErrNotRead) and a
// zero Read.
func Parse(command string) (Read, error) {
	return parse(command, 0)
}

// maxWords bounds a command's words; no recognised form has more than
// seven (`cd DIR && sed -n A,Bp FILE`).
const maxWords = 8

func parse(command string, depth int) (Read, error) {
	if !utf8.ValidString(command) {
		return refuse("command is not valid UTF-8")
	}
	toks, reason := split(command)
	if reason != "" {
		return refuse(reason)
	}
	words, dir := toks, ""
	hasDir := false
	for i, t := range toks {
		if t.op {
			if i != 2 || toks[0].op || toks[0].w != "cd" || toks[1].op {
				return refuse("&& only after `cd DIR`")
			}
			d, why := cdDir(toks[1].w)
			if why != "" {
				return refuse(why)
			}
			dir, hasDir, words = d, true, toks[3:]
			for _, w := range words {
				if w.op {
					return refuse("more than one &&")
				}
			}
			break
		}
	}
	if len(words) == 0 {
		return refuse("no command")
	}
	w := make([]string, len(words))
	for i, t := range words {
		w[i] = t.w
	}
	if isShell(w[0]) {
		if hasDir || depth > 0 {
			return refuse("a shell wrapper only around the whole command, once")
		}
		if len(w) != 3 || (w[1] != "-c" && w[1] != "-lc") {
			return refuse("a shell wrapper other than `bash -c|-lc SCRIPT`")
		}
		return parse(w[2], depth+1)
	}
	r, err := readOf(w)
	if err != nil {
		return Read{}, err
	}
	if hasDir && !strings.HasPrefix(r.Path, "/") {
		r.Path = strings.TrimSuffix(dir, "/") + "/" + r.Path
	}
	return r, nil
}

// isShell reports whether name is a POSIX shell whose -c wrapper is
// unwrapped: bash (Codex runs `/bin/bash -lc CMD`) and sh. zsh is not: it
// expands `=word` and more, which the word rules below do not model.
func isShell(name string) bool {
	switch name {
	case "bash", "sh", "/bin/bash", "/bin/sh", "/usr/bin/bash", "/usr/bin/sh":
		return true
	}
	return false
}

// cdDir checks the DIR of `cd DIR &&`.
func cdDir(d string) (string, string) {
	switch {
	case d == "":
		return "", "cd to an empty directory name"
	case strings.HasPrefix(d, "-"):
		return "", "cd with an option or cd -"
	}
	for _, c := range strings.Split(d, "/") {
		if c == ".." {
			// cd resolves ".." lexically (cd -L), the file it then opens
			// physically: two different directories through a symlink.
			return "", "cd DIR with a .. component"
		}
	}
	return d, ""
}

// readOf recognises the words of one read command.
func readOf(w []string) (Read, error) {
	switch w[0] {
	case "cat":
		args, dashdash := w[1:], false
		if len(args) > 0 && args[0] == "--" {
			args, dashdash = args[1:], true
		}
		switch {
		case len(args) == 0:
			return refuse("cat of standard input")
		case !dashdash && len(args[0]) > 1 && args[0][0] == '-':
			return refuse("cat with an option")
		case len(args) > 1:
			return refuse("cat of more than one file")
		}
		return fileRead(Read{Cmd: "cat", From: 1}, args[0])
	case "sed":
		if len(w) != 4 || w[1] != "-n" {
			return refuse("sed other than `sed -n SCRIPT FILE`")
		}
		from, to, ok := sedScript(w[2])
		if !ok {
			return refuse("sed script other than Ap, A,Bp or A,$p")
		}
		return fileRead(Read{Cmd: "sed", From: from, To: to}, w[3])
	case "nl":
		if len(w) != 3 || w[1] != "-ba" {
			return refuse("nl other than `nl -ba FILE`")
		}
		return fileRead(Read{Cmd: "nl", From: 1, Numbered: true}, w[2])
	case "head":
		n, file := 10, ""
		switch {
		case len(w) == 2:
			file = w[1]
		case len(w) == 3 && strings.HasPrefix(w[1], "-n"):
			n, file = count(w[1][2:]), w[2]
		case len(w) == 3 && strings.HasPrefix(w[1], "-"):
			n, file = count(w[1][1:]), w[2]
		case len(w) == 4 && w[1] == "-n":
			n, file = count(w[2]), w[3]
		default:
			return refuse("head other than `head [-n N|-N] FILE`")
		}
		if n < 1 {
			return refuse("head line count other than a decimal N >= 1")
		}
		return fileRead(Read{Cmd: "head", From: 1, To: n}, file)
	case "tail":
		var arg, file string
		switch {
		case len(w) == 3 && strings.HasPrefix(w[1], "-n") && len(w[1]) > 2:
			arg, file = w[1][2:], w[2]
		case len(w) == 4 && w[1] == "-n":
			arg, file = w[2], w[3]
		default:
			return refuse("tail other than `tail -n N|+N FILE`")
		}
		if from, ok := strings.CutPrefix(arg, "+"); ok {
			n := count(from)
			if n < 1 {
				return refuse("tail -n +N with N other than a decimal >= 1")
			}
			return fileRead(Read{Cmd: "tail", From: n}, file)
		}
		n := count(arg)
		if n < 1 {
			return refuse("tail line count other than a decimal N >= 1")
		}
		return fileRead(Read{Cmd: "tail", Last: n}, file)
	}
	return refuse("not cat, sed, nl, head or tail")
}

// fileRead sets r's file, refusing what is no file name: empty, an
// option, or "-" (standard input).
func fileRead(r Read, file string) (Read, error) {
	switch {
	case file == "":
		return refuse("empty file name")
	case file == "-":
		return refuse("standard input")
	case strings.HasPrefix(file, "-") && r.Cmd != "cat":
		return refuse("option where the file goes")
	}
	r.Path = file
	return r, nil
}

// maxCount bounds every line number and count: nine decimal digits.
const maxCount = 999_999_999

// count parses a decimal line number or count; -1 for anything else.
func count(s string) int {
	if s == "" || len(s) > 9 {
		return -1
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return -1
		}
		n = n*10 + int(s[i]-'0')
	}
	return n
}

// sedScript parses Ap, A,Bp or A,$p with A >= 1 and B >= A.
func sedScript(s string) (from, to int, ok bool) {
	body, ok := strings.CutSuffix(s, "p")
	if !ok {
		return 0, 0, false
	}
	a, b, two := strings.Cut(body, ",")
	from = count(a)
	if from < 1 {
		return 0, 0, false
	}
	if !two {
		return from, from, true
	}
	if b == "$" {
		return from, 0, true
	}
	to = count(b)
	if to < from {
		// B < A prints line A alone in sed; refused as a likely typo
		// whose output is easy to misread.
		return 0, 0, false
	}
	return from, to, true
}

// tok is a word after quote removal, or the operator &&.
type tok struct {
	w  string
	op bool
}

// split cuts command into words by the POSIX shell's quoting rules,
// refusing (a non-empty reason) anything that is not a plain word or &&:
// see the package doc for each rule.
func split(s string) (toks []tok, reason string) {
	var b strings.Builder
	in := false // inside a word (a quoted empty string is a word)
	end := func() {
		if in {
			toks = append(toks, tok{w: b.String()})
			b.Reset()
			in = false
		}
	}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			end()
			i++
			continue
		case c == '&':
			if i+1 < len(s) && s[i+1] == '&' {
				end()
				toks = append(toks, tok{op: true})
				i += 2
				continue
			}
			return nil, "& (background or redirection)"
		case c == '|':
			return nil, "pipe or ||"
		case c == ';':
			return nil, "; (command list)"
		case c == '<' || c == '>':
			return nil, "redirection"
		case c == '(' || c == ')':
			return nil, "subshell or pattern"
		case c == '$' || c == '`':
			return nil, "expansion or command substitution"
		case c == '*' || c == '?' || c == '[':
			return nil, "glob"
		case c == '{' || c == '}':
			return nil, "brace expansion or group"
		case c == '~':
			return nil, "tilde"
		case c == '#':
			return nil, "comment"
		case c == '!':
			return nil, "! (negation or history)"
		case c == '^':
			return nil, "^ (a zsh glob)"
		case c == '=' && !in:
			return nil, "= at the start of a word (an assignment, or zsh's =cmd)"
		case c == '\n':
			return nil, "newline (command list)"
		case isControl(c):
			return nil, "control character"
		case c == '\\':
			if i+1 >= len(s) {
				return nil, "backslash at the end"
			}
			n := s[i+1]
			if n == '\n' || isControl(n) {
				return nil, "backslash before a newline or control character"
			}
			b.WriteByte(n)
			in = true
			i += 2
			continue
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, "unterminated single quote"
			}
			q := s[i+1 : i+1+j]
			if hasControl(q) {
				return nil, "control character"
			}
			b.WriteString(q)
			in = true
			i += j + 2
			continue
		case c == '"':
			j, why := doubleQuoted(s, i+1, &b)
			if why != "" {
				return nil, why
			}
			in = true
			i = j
			continue
		}
		b.WriteByte(c)
		in = true
		i++
	}
	end()
	if len(toks) > maxWords {
		return nil, "too many words"
	}
	return toks, ""
}

// doubleQuoted removes the quotes of "…" starting after the opening quote
// at i, writing its text to b, and returns the index after the closing
// quote. Inside, $ and ` expand and are refused, ! is refused (history
// expansion in an interactive bash), and a backslash escapes only $ ` " \
// (before anything else it is itself).
func doubleQuoted(s string, i int, b *strings.Builder) (int, string) {
	for i < len(s) {
		c := s[i]
		switch {
		case c == '"':
			return i + 1, ""
		case c == '$' || c == '`':
			return 0, "expansion or command substitution"
		case c == '!':
			return 0, "! (history expansion)"
		case isControl(c):
			return 0, "control character"
		case c == '\\':
			if i+1 >= len(s) {
				return 0, "unterminated double quote"
			}
			switch n := s[i+1]; n {
			case '$', '`', '"', '\\':
				b.WriteByte(n)
				i += 2
				continue
			case '\n':
				return 0, "backslash before a newline"
			}
		}
		b.WriteByte(c)
		i++
	}
	return 0, "unterminated double quote"
}

func hasControl(s string) bool {
	for i := 0; i < len(s); i++ {
		if isControl(s[i]) {
			return true
		}
	}
	return false
}

// isControl reports the bytes refused anywhere in a command, quoted or
// not: the C0 controls but tab, and DEL.
func isControl(c byte) bool { return (c < 0x20 && c != '\t') || c == 0x7f }
