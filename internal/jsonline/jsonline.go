// Package jsonline holds the byte-level checks shared by the fast parsers
// of the archive's canonical event lines (gitstore's event parser and the
// seal's entry decoder): both take only the plain forms writers produce
// and leave everything else to encoding/json.
package jsonline

import "unicode/utf8"

// PlainStringLen returns the length of the string body at the start of b
// up to its closing quote, or -1 when it holds an escape, a control
// character or invalid UTF-8 (those go to encoding/json).
func PlainStringLen(b []byte) int {
	ascii := true
	for i, c := range b {
		switch {
		case c == '"':
			if !ascii && !utf8.Valid(b[:i]) {
				return -1
			}
			return i
		case c == '\\' || c < 0x20:
			return -1
		case c >= 0x80:
			ascii = false
		}
	}
	return -1
}

// IsInt reports whether b is a JSON integer: -?(0|[1-9][0-9]*).
func IsInt(b []byte) bool {
	if len(b) > 0 && b[0] == '-' {
		b = b[1:]
	}
	if len(b) == 0 || (b[0] == '0' && len(b) > 1) {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
