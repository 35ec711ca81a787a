package seal

import "strings"

// ValidWriter is the one rule for a writer's name, which names its chain
// (Genesis), its ref (refs/lossless/<writer>) and its lines in receipts:
// letters, digits, '.', '_' and '-', not starting with a punctuation mark,
// at most 128 bytes, and a valid git ref component (no "..", no ".lock"
// or "." suffix).
//
// It is written by hand: a regexp with a {0,127} repetition compiles into
// a program large enough to cost milliseconds at every process start,
// which every hook pays.
func ValidWriter(w string) bool {
	if len(w) == 0 || len(w) > 128 || strings.Contains(w, "..") || strings.HasSuffix(w, ".lock") || strings.HasSuffix(w, ".") {
		return false
	}
	for i := 0; i < len(w); i++ {
		c := w[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case (c == '.' || c == '_' || c == '-') && i > 0:
		default:
			return false
		}
	}
	return true
}
