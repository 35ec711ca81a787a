package seal

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/git-lossless/git-lossless/internal/jsonscan"
)

// decodeEntry decodes the part of a line the verifier reads. Lines in the
// form writers produce (jsonscan's plain form: a flat object, no white
// space, strings without escapes) are decoded in one pass; anything else goes to encoding/json,
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
	return jsonscan.Plain(line, func(k, raw []byte, quoted bool) bool {
		switch key := string(k); key {
		case "seq":
			if quoted || raw[0] == 't' || raw[0] == 'f' {
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
		return true
	})
}
