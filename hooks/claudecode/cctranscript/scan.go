package cctranscript

import (
	"bytes"
	"encoding/json"

	"github.com/git-lossless/git-lossless/internal/jsonscan"
)

// readDefaultLimit is how many lines Claude Code's Read shows when no
// limit is given: a result of this many lines may be a truncated view.
const readDefaultLimit = 2000

func emptyString(raw []byte) bool { return len(raw) == 2 && raw[0] == '"' }

// stringValue decodes raw when it is a string ("" otherwise).
func stringValue(raw []byte) string {
	s, _ := jsonscan.String(raw)
	return s
}

// firstType returns the string value of an object's first member when
// that member is "type" ("" otherwise), without scanning the rest.
func firstType(v []byte) string {
	i := jsonscan.WS(v, 0)
	if i >= len(v) || v[i] != '{' {
		return ""
	}
	i = jsonscan.WS(v, i+1)
	if !bytes.HasPrefix(v[i:], []byte(`"type"`)) {
		return ""
	}
	i = jsonscan.WS(v, i+len(`"type"`))
	if i >= len(v) || v[i] != ':' {
		return ""
	}
	i = jsonscan.WS(v, i+1)
	if i >= len(v) || v[i] != '"' {
		return ""
	}
	e, ok := jsonscan.Skip(v, i, jsonscan.Escapes)
	if !ok {
		return ""
	}
	s, _ := jsonscan.String(v[i:e])
	return s
}

func clone(b []byte) json.RawMessage { return append(json.RawMessage(nil), b...) }
