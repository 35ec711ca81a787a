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
// When the index is built (analyzer.forms), a stemmed word whose stem is
// not its lower-cased self also yields its exact form, as the term
// formMark STEM formMark WORD ("=compact=compacting"): the word's own
// postings, so that a search for "compacting" can rank the spans that say
// "compacting" above those that only say "compaction". The mark is a
// byte no token holds, so these terms never meet a word's; keyed by the
// stem first, all the forms of one stem are neighbours in the sorted
// dictionary ("=compact=" is the prefix of them all), which is how a
// search for a word that is its own stem ("compact") tells the spans
// that hold the word itself: the stem occurs there more often than its
// other forms do (search.go, formMatch). Exact forms do not count in a
// document's length and are not in the trigram index (a fragment is
// looked for in the stems and whole tokens, as before).
//
// Terms longer than maxTerm bytes are dropped (a base64 run or a long
// hash would only bloat the dictionary); the parts of a long compound
// are still kept. Queries go through the same code, so a query token
// meets the terms its text was indexed under.

// formMark begins and splits an exact-form term (see above): a byte that
// is neither a word byte nor a joiner, so no token yields it.
const formMark = '='

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
	form []byte
	st   stemmer
	// forms: also emit the exact form of each stemmed word that its stem
	// changes (the index's builder sets it; queries, snippets and the
	// line index look words up by stem and leave it unset).
	forms bool
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
// it is ASCII letters; with a.forms, then its exact form when the stem
// differs from it.
func (a *analyzer) simple(tok []byte, off int, emit func(term []byte, from, to int)) {
	if len(tok) == 0 || len(tok) > maxTerm {
		return
	}
	a.low = lower(a.low[:0], tok)
	if stemmable(a.low) {
		a.term = stem(a.term[:0], a.low, &a.st)
		emit(a.term, off, off+len(tok))
		if a.forms && string(a.term) != string(a.low) {
			a.form = appendForm(a.form[:0], a.term, a.low)
			emit(a.form, off, off+len(tok))
		}
		return
	}
	emit(a.low, off, off+len(tok))
}

// appendForm appends the exact-form term of word (lower-cased) under its
// stem: formMark stem formMark word. With word equal to stem it is the
// prefix "=stem=" that every indexed form of the stem starts with (an
// index holds no such term: a word that is its own stem is its stem).
func appendForm(dst, stem, word []byte) []byte {
	dst = append(dst, formMark)
	dst = append(dst, stem...)
	dst = append(dst, formMark)
	if string(word) != string(stem) {
		dst = append(dst, word...)
	}
	return dst
}

// isForm reports whether term is an exact-form term.
func isForm(term []byte) bool { return len(term) > 0 && term[0] == formMark }

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
	// form is the exact-form key of a stemmed simple token (appendForm:
	// "=compact=compacting", or "=compact=" for a word that is its own
	// stem), "" for a token that is not stemmed; partForms the same for
	// each of parts.
	form      string
	partForms []string
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
			a.terms(tok, func(t []byte, from, to int) {
				if p := string(t); !seen[p] {
					seen[p] = true
					qt := queryToken{term: p, frag: p}
					if low := lower(nil, tok[from:to]); stemmable(low) {
						qt.form = string(appendForm(nil, t, low))
					}
					out = append(out, qt)
				}
			})
			return
		}
		qt := queryToken{frag: string(lower(nil, tok))}
		if seen[qt.frag] {
			return
		}
		seen[qt.frag] = true
		var terms, forms []string
		compound := isCompound(tok)
		a.terms(tok, func(t []byte, from, to int) {
			form := ""
			// The exact form of a stemmed word: not of a compound's
			// whole (its first term), which is not stemmed.
			if !compound || len(terms) > 0 {
				if low := lower(nil, tok[from:to]); stemmable(low) {
					form = string(appendForm(nil, t, low))
				}
			}
			terms = append(terms, string(t))
			forms = append(forms, form)
		})
		if len(terms) == 0 {
			return
		}
		qt.term, qt.form = terms[0], forms[0]
		if compound {
			qt.parts, qt.partForms = terms[1:], forms[1:]
		}
		out = append(out, qt)
	})
	return out, dropped
}
