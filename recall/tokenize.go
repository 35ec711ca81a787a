package recall

import (
	"unicode"

	"github.com/git-lossless/git-lossless/secrets"
	"unicode/utf8"
)

// Tokens and terms.
//
// A token is a run of word bytes (ASCII letters and digits, and every byte
// of a non-ASCII character) in which single joiners ('_', '.', '-') may
// stand between word bytes: "sweep.go", "tool_use", "git-lossless",
// "v1.2.3". Everything else separates tokens, '/' included, so a path
// falls apart into its components.
//
// A token yields its terms:
//
//   - a simple token (no joiner, no lower-to-upper case change) yields one
//     term, lower-cased and, when it is ASCII letters only, stemmed;
//   - a compound (joiners or camelCase) yields itself lower-cased and
//     unstemmed ("sweep.go", "sweepsession"), then each part as a simple
//     token ("sweep", "go"; "sweep", "session").
//
// Terms longer than maxTerm bytes are dropped (a base64 run or a long
// hash would only bloat the dictionary); the parts of a long compound
// are still kept. Queries go through the same code, so a query token
// meets the terms its text was indexed under.

// maxTerm is the longest term indexed, in bytes.
const maxTerm = 64

// maxToken is the longest token looked at, in bytes: longer runs are
// data (base64, minified code), skipped whole.
const maxToken = 512

// byte classes
const (
	cSep   = 0
	cWord  = 1 // letters, digits, non-ASCII bytes
	cJoin  = 2 // _ . -
	cUpper = 4 // A-Z (also cWord)
	cLower = 8 // a-z (also cWord)
)

var class = func() (t [256]uint8) {
	for c := 0; c < 256; c++ {
		switch {
		case c >= 'a' && c <= 'z':
			t[c] = cWord | cLower
		case c >= 'A' && c <= 'Z':
			t[c] = cWord | cUpper
		case c >= '0' && c <= '9', c >= 0x80:
			t[c] = cWord
		case c == '_', c == '.', c == '-':
			t[c] = cJoin
		}
	}
	return t
}()

// eachToken calls fn with the start and end of every token of text.
func eachToken(text []byte, fn func(start, end int)) {
	n := len(text)
	i := 0
	for i < n {
		for i < n && class[text[i]]&cWord == 0 {
			i++
		}
		if i >= n {
			return
		}
		start := i
		for i < n {
			c := class[text[i]]
			if c&cWord != 0 {
				i++
				continue
			}
			if c == cJoin && i+1 < n && class[text[i+1]]&cWord != 0 {
				i += 2
				continue
			}
			break
		}
		if i-start <= maxToken {
			fn(start, i)
		}
	}
}

// analyzer turns tokens into terms; its buffers are reused, so it is not
// safe for concurrent use.
type analyzer struct {
	low  []byte
	term []byte
	st   stemmer
}

// terms calls emit with every term of tok (see the comment at the top of
// this file) and the offsets, within tok, of the part it came from. The
// term slice is only valid during the call.
func (a *analyzer) terms(tok []byte, emit func(term []byte, from, to int)) {
	if !isCompound(tok) {
		a.simple(tok, 0, emit)
		return
	}
	if len(tok) <= maxTerm {
		a.low = lower(a.low[:0], tok)
		emit(a.low, 0, len(tok))
	}
	start := 0
	for i := 0; i <= len(tok); i++ {
		split := i == len(tok)
		if !split {
			k := class[tok[i]]
			switch {
			case k == cJoin:
				split = true
			case i > start && k&cUpper != 0:
				p := class[tok[i-1]]
				// fooBar, and HTTPServer at the S
				split = p&cLower != 0 ||
					p&cUpper != 0 && i+1 < len(tok) && class[tok[i+1]]&cLower != 0
				if split {
					a.simple(tok[start:i], start, emit)
					start = i
					continue
				}
			}
		}
		if split {
			if i > start {
				a.simple(tok[start:i], start, emit)
			}
			start = i + 1
		}
	}
}

// isCompound reports whether tok holds a joiner or a lower-to-upper case
// change.
func isCompound(tok []byte) bool {
	prev := uint8(0)
	for _, c := range tok {
		k := class[c]
		if k == cJoin || k&cUpper != 0 && prev&cLower != 0 {
			return true
		}
		prev = k
	}
	return false
}

// simple emits the one term of a simple token: lower-cased, stemmed when
// it is ASCII letters.
func (a *analyzer) simple(tok []byte, off int, emit func(term []byte, from, to int)) {
	if len(tok) == 0 || len(tok) > maxTerm {
		return
	}
	a.low = lower(a.low[:0], tok)
	if stemmable(a.low) {
		a.term = stem(a.term[:0], a.low, &a.st)
		emit(a.term, off, off+len(tok))
		return
	}
	emit(a.low, off, off+len(tok))
}

// lower appends s lower-cased to dst (ASCII fast; other characters by
// unicode.ToLower).
func lower(dst, s []byte) []byte {
	ascii := true
	for _, c := range s {
		if c >= 0x80 {
			ascii = false
			break
		}
	}
	if ascii {
		for _, c := range s {
			if c >= 'A' && c <= 'Z' {
				c += 'a' - 'A'
			}
			dst = append(dst, c)
		}
		return dst
	}
	for len(s) > 0 {
		r, n := utf8.DecodeRune(s)
		if r == utf8.RuneError && n <= 1 {
			dst = append(dst, s[0])
			s = s[1:]
			continue
		}
		dst = utf8.AppendRune(dst, unicode.ToLower(r))
		s = s[n:]
	}
	return dst
}

// queryToken is one token of a query, with the forms it is looked up in.
type queryToken struct {
	term  string   // its term as a whole: a simple token's only term, a compound's whole
	frag  string   // lower-cased whole, for fragment and typo lookup
	parts []string // the part terms of a compound (nil for a simple token)
}

// parseQuery splits a query into tokens. Duplicate tokens count once. A
// token that is (part of) a secret the scanner finds is dropped (dropped
// reports it): secrets are never indexed, and a fuzzy match of one would
// only find noise.
func parseQuery(q string) (_ []queryToken, dropped bool) {
	var a analyzer
	var out []queryToken
	seen := map[string]bool{}
	b := []byte(q)
	fs := secrets.Scan(b)
	fi := 0
	eachToken(b, func(s, e int) {
		for fi < len(fs) && fs[fi].End <= s {
			fi++
		}
		if fi < len(fs) && fs[fi].Start < e {
			dropped = true
			return
		}
		tok := b[s:e]
		if len(tok) > maxTerm {
			// Too long to be a term: its parts are, as when indexing.
			a.terms(tok, func(t []byte, _, _ int) {
				if p := string(t); !seen[p] {
					seen[p] = true
					out = append(out, queryToken{term: p, frag: p})
				}
			})
			return
		}
		qt := queryToken{frag: string(lower(nil, tok))}
		if seen[qt.frag] {
			return
		}
		seen[qt.frag] = true
		var terms []string
		a.terms(tok, func(t []byte, _, _ int) { terms = append(terms, string(t)) })
		if len(terms) == 0 {
			return
		}
		qt.term = terms[0]
		if isCompound(tok) {
			qt.parts = terms[1:]
		}
		out = append(out, qt)
	})
	return out, dropped
}
