package tokens

import "fmt"

// o200k_base counts a text by splitting it into pieces with a regular
// expression and byte-pair encoding each piece on its own. The codec runs
// that expression with dlclark/regexp2, which allocates a match per piece
// and dominates the cost of counting (about 4 MB/s per core here). For
// ASCII text the expression reduces to a few byte classes, and nextPiece
// below finds exactly the pieces it finds; each distinct piece is then
// encoded once by the codec itself (a piece, alone, splits into itself),
// so the count is the codec's, only reached with far fewer regexp2 runs.
// Text with any non-ASCII byte goes to the codec whole. The equivalence
// is held by TestPiecesMatchCodec and FuzzChunkedCount against counting
// with the codec in one piece.
//
// The expression (codec.NewO200kBase), alternatives tried in order, the
// whole alternation atomic:
//
//  1. [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//  2. [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//  3. \p{N}{1,3}
//  4. ' '?[^\s\p{L}\p{N}]+[\r\n/]*   (each part atomic)
//  5. \s*[\r\n]+
//  6. \s+(?!\S)
//  7. \s+
//
// In ASCII, \p{Lu} is A-Z, \p{Ll} a-z, \p{Lt}, \p{Lm}, \p{Lo} and \p{M}
// are empty, \p{N} is 0-9, and \s (unicode.IsSpace) is \t \n \v \f \r and
// space. One quirk is the codec's, and followed here because the count
// must be its count: its compiled classes [^\r\n\p{L}\p{N}] and
// [^\s\p{L}\p{N}] leave out DEL (0x7F), which is still \S, so no piece
// starts with DEL and the codec skips it ("\x7f#a" is the one piece "#a").

func asciiSpace(c byte) bool  { return c == ' ' || (c >= '\t' && c <= '\r') }
func asciiUpper(c byte) bool  { return c >= 'A' && c <= 'Z' }
func asciiLower(c byte) bool  { return c >= 'a' && c <= 'z' }
func asciiDigit(c byte) bool  { return c >= '0' && c <= '9' }
func asciiLetter(c byte) bool { return asciiUpper(c) || asciiLower(c) }

// prefixClass is [^\r\n\p{L}\p{N}] as the codec compiles it (not DEL).
func prefixClass(c byte) bool {
	return c != '\r' && c != '\n' && c != 0x7f && !asciiLetter(c) && !asciiDigit(c)
}

// punctClass is [^\s\p{L}\p{N}] as the codec compiles it (not DEL).
func punctClass(c byte) bool { return !asciiSpace(c) && c != 0x7f && !asciiLetter(c) && !asciiDigit(c) }

// isASCII reports whether s has no byte above 0x7F.
func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// contraction returns the end of (?i:'s|'t|'re|'ve|'m|'ll|'d)? at i.
func contraction(s string, i int) int {
	if i+1 >= len(s) || s[i] != '\'' {
		return i
	}
	switch s[i+1] | 0x20 {
	case 's', 't', 'm', 'd':
		return i + 2
	}
	if i+2 < len(s) {
		a, b := s[i+1]|0x20, s[i+2]|0x20
		if (a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l') {
			return i + 3
		}
	}
	return i
}

// nextPiece returns the end of the piece that starts at i (i < len(s)) in
// the ASCII string s.
func nextPiece(s string, i int) int {
	n := len(s)
	// 1 and 2: an optional prefix, then letters. Without the prefix the
	// letters would have to start at i, where the prefix character is,
	// so trying the prefix first and only then none is one check.
	j := i
	if prefixClass(s[i]) {
		j++
	}
	k := j
	for k < n && asciiUpper(s[k]) {
		k++
	}
	if k < n && asciiLower(s[k]) { // 1: [A-Z]*[a-z]+
		m := k + 1
		for m < n && asciiLower(s[m]) {
			m++
		}
		return contraction(s, m)
	}
	if k > j { // 2: [A-Z]+ (no lower case follows, or 1 would have matched)
		return contraction(s, k)
	}
	// 3: one to three digits.
	if asciiDigit(s[i]) {
		m := i + 1
		for m < n && m < i+3 && asciiDigit(s[m]) {
			m++
		}
		return m
	}
	// 4: an optional space, punctuation, then newlines and slashes.
	j = i
	if s[j] == ' ' {
		j++
	}
	if j < n && punctClass(s[j]) {
		m := j + 1
		for m < n && punctClass(s[m]) {
			m++
		}
		for m < n && (s[m] == '\r' || s[m] == '\n' || s[m] == '/') {
			m++
		}
		return m
	}
	// What is left starts with white space (every other byte matched
	// above): the run of it.
	end := i
	for end < n && asciiSpace(s[end]) {
		end++
	}
	if end == i {
		// DEL, which no alternative matches: the codec skips it. As a
		// piece of its own it counts 0 tokens, which the codec confirms.
		return i + 1
	}
	// 5: up to the run's last newline.
	for k := end - 1; k >= i; k-- {
		if s[k] == '\r' || s[k] == '\n' {
			return k + 1
		}
	}
	// 6: the run when it ends the text, else all of it but its last
	// character (which then starts the next piece, e.g. " foo").
	if end == n {
		return end
	}
	if end-i >= 2 {
		return end - 1
	}
	// 7: one white-space character.
	return end
}

// pieceCounter counts ASCII text piece by piece, encoding each distinct
// piece once. It belongs to one goroutine (no lock on the hot path).
type pieceCounter struct {
	memo map[string]int64
}

func newPieceCounter() *pieceCounter { return &pieceCounter{memo: map[string]int64{}} }

// count returns the o200k tokens of s: piece by piece when s is ASCII,
// else with the codec in one piece.
func (pc *pieceCounter) count(s string) (int64, error) {
	if !isASCII(s) {
		return CountText(s)
	}
	var total int64
	for i := 0; i < len(s); {
		e := nextPiece(s, i)
		p := s[i:e]
		i = e
		n, ok := pc.memo[p]
		if !ok {
			k, err := tokenizer().Count(p)
			if err != nil {
				return 0, fmt.Errorf("count o200k tokens: %w", err)
			}
			n = int64(k)
			pc.memo[p] = n
		}
		total += n
	}
	return total, nil
}
