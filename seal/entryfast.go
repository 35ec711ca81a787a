package seal

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/git-lossless/git-lossless/internal/jsonline"
)

// decodeEntry decodes the part of a line the verifier reads. Lines in the
// form writers produce (a flat object, no white space, strings without
// escapes) are decoded in one pass; anything else goes to encoding/json,
// which also gives the error text for invalid lines.
func decodeEntry(line []byte, e *entry) error {
	if decodeEntryFast(line, e) {
		return nil
	}
	*e = entry{}
	return json.Unmarshal(line, e)
}

var entryFields = []string{"seq", "prev", "blob", "sha256", "excluded", "op", "pruned"}

func decodeEntryFast(line []byte, e *entry) bool {
	b := line
	if len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}' {
		return false
	}
	b = b[1 : len(b)-1]
	for len(b) > 0 {
		if len(b) < 3 || b[0] != '"' {
			return false
		}
		end := jsonline.PlainStringLen(b[1:])
		if end < 0 {
			return false
		}
		key := string(b[1 : 1+end])
		b = b[2+end:]
		if len(b) < 2 || b[0] != ':' {
			return false
		}
		b = b[1:]
		var raw []byte
		quoted := b[0] == '"'
		if quoted {
			n := jsonline.PlainStringLen(b[1:])
			if n < 0 {
				return false
			}
			raw = b[1 : 1+n]
			b = b[2+n:]
		} else {
			n := bytes.IndexByte(b, ',')
			if n < 0 {
				n = len(b)
			}
			raw = b[:n]
			b = b[n:]
			if !scalar(raw) {
				return false
			}
		}
		switch key {
		case "seq":
			if quoted || !jsonline.IsInt(raw) {
				return false
			}
			v, err := strconv.ParseInt(string(raw), 10, 64)
			if err != nil {
				return false
			}
			e.Seq = &v
		case "prev", "blob", "sha256", "op":
			if !quoted {
				return false
			}
			s := string(raw)
			switch key {
			case "prev":
				e.Prev = s
			case "blob":
				e.Blob = s
			case "sha256":
				e.SHA256 = s
			default:
				e.Op = s
			}
		case "excluded":
			if quoted || (string(raw) != "true" && string(raw) != "false") {
				return false
			}
			e.Excluded = string(raw) == "true"
		default:
			// Any other key is skipped, but encoding/json matches field
			// names case-insensitively: leave look-alikes to it.
			for _, f := range entryFields {
				if strings.EqualFold(key, f) {
					return false
				}
			}
		}
		if len(b) == 0 {
			return true
		}
		if b[0] != ',' {
			return false
		}
		b = b[1:]
		if len(b) == 0 {
			return false
		}
	}
	return true
}

// scalar accepts the unquoted values writers produce: integers and
// booleans.
func scalar(b []byte) bool {
	return string(b) == "true" || string(b) == "false" || jsonline.IsInt(b)
}
