package guard

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Printable returns s ready to be shown in a message — a deny reason the
// model reads, a line on a terminal: s itself when it is valid UTF-8 of
// printable characters (spaces included), else s quoted as strconv.Quote
// quotes it. Paths and session ids come from the file system and from the
// hook payload, so they can hold anything a file name can: a NUL, a
// newline that forges a second line, an escape sequence a terminal would
// obey, a right-to-left override that makes the text read differently
// from what it is. Quoted, those are seen, never acted on.
func Printable(s string) string {
	if isPrintable(s) {
		return s
	}
	return strconv.Quote(s)
}

func isPrintable(s string) bool {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n == 1) || !strconv.IsPrint(r) {
			return false
		}
		i += n
	}
	return true
}

// ShellQuote returns s as one word of a POSIX shell command that the model
// or a user may run as printed (the restore hint): s itself when it holds
// only characters no shell treats specially, else s in single quotes.
// When s holds characters that cannot be printed (see Printable), it is
// written as an ANSI-C $'...' string (bash, zsh, ksh) with those
// characters escaped, so the command stays on one printable line and
// still names the same bytes.
func ShellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '/' || r == '.' || r == '_' || r == '-')
	}) < 0 {
		return s
	}
	if isPrintable(s) {
		return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	var b strings.Builder
	b.WriteString("$'")
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\'' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case strconv.IsPrint(r):
			b.WriteString(s[i : i+n])
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r <= 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\U%08x`, r)
		}
		i += n
	}
	b.WriteByte('\'')
	return b.String()
}
