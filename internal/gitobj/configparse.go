package gitobj

import (
	"errors"
	"fmt"
	"strings"
)

// parseConfig reads git's config file syntax (git-config(1), "CONFIGURATION
// FILE") and calls add for every variable in file order, with its key
// normalised as `git config --list` prints it: section and variable name
// lower-cased, a subsection kept as written ("remote.Origin.url"). A
// variable without "=" (git's boolean true) has the value "", which is
// what `git config --get` prints for it. include and includeIf are not
// followed.
//
// It exists so that reading four small files per hook process does not
// link a general configuration library (go-git's pulls in encoding/gob,
// whose package initialisation alone cost about 0.8 ms of every process).
// TestConfigParseMatchesGit holds it to `git config --list --file` on
// every rule below, quoting, escapes, continuations and errors included.
//
// The rules, as git's config.c applies them:
//   - a UTF-8 byte order mark at the start is skipped; "\r\n" reads as "\n"
//     and the file's end as a newline;
//   - "#" and ";" start a comment outside a quoted value;
//   - "[name]" opens a section; "[name "sub"]" a subsection, where "\"
//     takes the next character literally and a newline is an error;
//     "[name.sub]" is the old form, wholly lower-cased; a variable may
//     follow the "]" on the same line;
//   - a variable name starts with a letter and holds letters, digits and
//     "-"; after it come blanks, then "=" and a value, or the line's end;
//   - in a value, blanks at either end are dropped, each blank inside
//     (outside quotes) becomes one space, quotes toggle quoting and are
//     dropped, "\n" "\t" "\b" "\\" "\"" are escapes, "\" at a line's end
//     continues it, and any other escape is an error.
func parseConfig(b []byte, add func(key, value string)) error {
	p := configParser{b: b, line: 1}
	if strings.HasPrefix(string(b), "\xef\xbb\xbf") {
		p.i = 3
	}
	prefix := "" // the section and ".", once a header was read
	for {
		c, ok := p.next()
		if !ok {
			return nil
		}
		switch {
		case c == '\n' || isConfigSpace(c):
		case c == '#' || c == ';':
			p.skipLine()
		case c == '[':
			s, err := p.header()
			if err != nil {
				return p.errorf("%v", err)
			}
			prefix = s + "."
		case isASCIILetter(c):
			// Before any header git takes the bare name as the key, and
			// so do we (LoadConfig's lookups never match one).
			name, value, err := p.variable(c)
			if err != nil {
				return p.errorf("%v", err)
			}
			add(prefix+name, value)
		default:
			return p.errorf("unexpected %q", c)
		}
	}
}

type configParser struct {
	b    []byte
	i    int
	line int
}

// next returns the next character, "\r\n" as "\n"; ok is false at the end.
func (p *configParser) next() (byte, bool) {
	if p.i >= len(p.b) {
		return 0, false
	}
	c := p.b[p.i]
	p.i++
	if c == '\r' && p.i < len(p.b) && p.b[p.i] == '\n' {
		c = '\n'
		p.i++
	}
	if c == '\n' {
		p.line++
	}
	return c, true
}

// nextOrNewline is next with the end of the file read as a newline, as
// git reads it inside a variable.
func (p *configParser) nextOrNewline() (byte, bool) {
	c, ok := p.next()
	if !ok {
		return '\n', false
	}
	return c, true
}

func (p *configParser) skipLine() {
	for {
		c, ok := p.next()
		if !ok || c == '\n' {
			return
		}
	}
}

func (p *configParser) errorf(format string, args ...any) error {
	return fmt.Errorf("bad config line %d: %s", p.line, fmt.Sprintf(format, args...))
}

// header reads a section header after its "[", returning the section as
// keys carry it ("core", "remote.origin").
func (p *configParser) header() (string, error) {
	var name strings.Builder
	for {
		c, ok := p.next()
		if !ok {
			return "", errors.New("unterminated section header")
		}
		switch {
		case c == ']':
			if name.Len() == 0 {
				return "", errors.New("empty section name")
			}
			return name.String(), nil
		case c == '\n':
			return "", errors.New("newline in section header")
		case isConfigSpace(c):
			// git allows an empty name here (`[ "sub"]`), and so do we.
			sub, err := p.subsection()
			if err != nil {
				return "", err
			}
			return name.String() + "." + sub, nil
		case isKeyChar(c) || c == '.':
			name.WriteByte(toLowerASCII(c))
		default:
			return "", fmt.Errorf("%q in a section name", c)
		}
	}
}

// subsection reads ` "sub"]` after a section name and its first blank.
func (p *configParser) subsection() (string, error) {
	c, ok := p.next()
	for ok && isConfigSpace(c) {
		c, ok = p.next()
	}
	if !ok || c != '"' {
		return "", errors.New("a subsection must be quoted")
	}
	var sub strings.Builder
	for {
		c, ok := p.next()
		if !ok || c == '\n' {
			return "", errors.New("unterminated subsection")
		}
		if c == '"' {
			break
		}
		if c == '\\' {
			if c, ok = p.next(); !ok || c == '\n' {
				return "", errors.New("unterminated subsection")
			}
		}
		sub.WriteByte(c)
	}
	if c, ok := p.next(); !ok || c != ']' {
		return "", errors.New(`expected "]" after a subsection`)
	}
	return sub.String(), nil
}

// variable reads a variable whose name starts with first.
func (p *configParser) variable(first byte) (name, value string, err error) {
	var nb strings.Builder
	nb.WriteByte(toLowerASCII(first))
	c, _ := p.nextOrNewline()
	for isKeyChar(c) {
		nb.WriteByte(toLowerASCII(c))
		c, _ = p.nextOrNewline()
	}
	for c == ' ' || c == '\t' {
		c, _ = p.nextOrNewline()
	}
	if c == '\n' {
		return nb.String(), "", nil
	}
	if c != '=' {
		return "", "", fmt.Errorf("%q after variable %s", c, nb.String())
	}
	value, err = p.value()
	return nb.String(), value, err
}

// value reads a variable's value after its "=", through the line's end.
func (p *configParser) value() (string, error) {
	var v []byte
	quote, comment := false, false
	spaces := 0
	for {
		c, _ := p.nextOrNewline()
		if c == '\n' {
			if quote {
				return "", errors.New("unterminated quoted value")
			}
			return string(v), nil
		}
		if comment {
			continue
		}
		if isConfigSpace(c) && !quote {
			if len(v) > 0 {
				spaces++
			}
			continue
		}
		if !quote && (c == ';' || c == '#') {
			comment = true
			continue
		}
		for ; spaces > 0; spaces-- {
			v = append(v, ' ')
		}
		switch c {
		case '\\':
			e, _ := p.nextOrNewline()
			switch {
			case e == '\n':
				continue // continuation
			case e == 't':
				e = '\t'
			case e == 'b':
				e = '\b'
			case e == 'n':
				e = '\n'
			case e == '\\' || e == '"':
			default:
				return "", fmt.Errorf(`bad escape "\%c"`, e)
			}
			v = append(v, e)
		case '"':
			quote = !quote
		default:
			v = append(v, c)
		}
	}
}

// isConfigSpace is git's isspace (" \t\n\r", not \v or \f) without the
// newline, which ends lines.
func isConfigSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' }

func isASCIILetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }

func isKeyChar(c byte) bool { return isASCIILetter(c) || c >= '0' && c <= '9' || c == '-' }

func toLowerASCII(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
