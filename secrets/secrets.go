// Package secrets finds credentials in text so that the archive never
// stores them in the clear: gitstore redacts every conversation span
// before it is stored, marks file versions that hold one, and the push
// gate refuses to send an object that still holds one.
//
// THIS FILE IS THE AGREED API. The implementation behind it is being
// written; callers may rely on the signatures and doc comments below.
package secrets

import (
	"regexp"
	"sort"
)

// Finding is one secret found in a text: the byte range of the secret
// value itself (for a secret-named assignment, only the value: the name
// stays readable) and its kind.
type Finding struct {
	Start, End int    // text[Start:End] is the secret value
	Kind       string // stable, lower-case kind name: "github-token", "aws-access-key-id", "password", ...
}

// Scan returns the secrets in text, sorted by Start and not overlapping.
// text may be plain text, source code, or JSON (escaped strings: `\"`,
// `\n` and `\uXXXX` are boundaries, never part of a value). A finding
// never starts or ends inside a JSON escape sequence, so replacing it with
// a placeholder keeps a JSON document valid.
func Scan(text []byte) []Finding {
	var out []Finding
	for _, p := range stubPatterns {
		for _, m := range p.re.FindAllSubmatchIndex(text, -1) {
			s, e := m[0], m[1]
			if len(m) >= 4 && m[2] >= 0 {
				s, e = m[2], m[3]
			}
			out = append(out, Finding{Start: s, End: e, Kind: p.kind})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Start < out[j].Start })
	keep := out[:0]
	end := -1
	for _, f := range out {
		if f.Start >= end {
			keep = append(keep, f)
			end = f.End
		}
	}
	return keep
}

// Count returns len(Scan(text)).
func Count(text []byte) int { return len(Scan(text)) }

type stubPattern struct {
	kind string
	re   *regexp.Regexp
}

var stubPatterns = []stubPattern{
	{"github-token", regexp.MustCompile(`gh[pousr]_[A-Za-z0-9]{36,}`)},
	{"aws-access-key-id", regexp.MustCompile(`AKIA[0-9A-Z]{16}`)},
}
