package recall

import (
	"strings"

	"github.com/git-lossless/git-lossless/secrets"
)

// Mask returns text with every secret the scanner finds replaced by
// secrets.Mask of it (first 3 and last 4 bytes around "****", or "****"
// for a short value). For a secret-named assignment only the value is
// masked: DB_PASSWORD=hun****x7Qm. Placeholders ([secret:KIND:ID]) are
// left as they are.
//
// Masking must never be the reason a recall fails, nor the reason a
// secret is printed: if the scanner panics, or returns findings that do
// not fit the text, Mask falls back to masking conservatively every
// token that could be a credential — a run of 8 or more letters, digits
// and _-+/= holding both a letter and a digit — which masks too much
// (hashes, ids) rather than too little.
func Mask(text string) string { return maskWith(text, secrets.Scan) }

func maskWith(text string, scan func([]byte) []secrets.Finding) (out string) {
	defer func() {
		if r := recover(); r != nil {
			out = maskConservative(text)
		}
	}()
	fs := scan([]byte(text))
	if len(fs) == 0 {
		return text
	}
	var b strings.Builder
	b.Grow(len(text))
	last := 0
	for _, f := range fs {
		if f.Start < last || f.End > len(text) || f.Start >= f.End {
			return maskConservative(text)
		}
		b.WriteString(text[last:f.Start])
		b.WriteString(secrets.Mask([]byte(text[f.Start:f.End])))
		last = f.End
	}
	b.WriteString(text[last:])
	return b.String()
}

// maskConservative masks every credential-like token (see Mask), leaving
// placeholders.
func maskConservative(text string) string {
	isTok := func(c byte) bool {
		return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '_' || c == '-' || c == '+' || c == '/' || c == '='
	}
	var b strings.Builder
	b.Grow(len(text))
	for i := 0; i < len(text); {
		if !isTok(text[i]) {
			b.WriteByte(text[i])
			i++
			continue
		}
		j := i
		letter, digit := false, false
		for j < len(text) && isTok(text[j]) {
			c := text[j]
			letter = letter || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
			digit = digit || c >= '0' && c <= '9'
			j++
		}
		tok := text[i:j]
		placeholderID := i > 0 && text[i-1] == ':' && j < len(text) && text[j] == ']' && strings.LastIndex(text[:i], "[secret:") >= 0
		if j-i >= 8 && letter && digit && !placeholderID {
			b.WriteString(secrets.Mask([]byte(tok)))
		} else {
			b.WriteString(tok)
		}
		i = j
	}
	return b.String()
}
