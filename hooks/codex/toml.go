package codex

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Codex keeps its settings in TOML ($CODEX_HOME/config.toml), which Codex
// itself and its users edit. Install changes it only in whole tables of
// its own: it appends them, replaces them, removes them, and leaves
// every other byte as it was. It needs no TOML parser for that, only to
// tell where tables start, which a line scanner does exactly once it
// knows which lines lie inside a multi-line string (where a line that
// looks like a header is text): tomlTables tracks strings and comments
// for that. Anything it cannot be sure of (a hooks table written another
// way, a foreign server under our name) is refused, and the user is
// told the one step to do by hand.

// tomlMarker is the comment line every table of ours holds: what makes
// it ours for uninstall.
const tomlMarker = "# written by git lossless install codex; removed by git lossless uninstall codex"

// mcpTableHeader is the header of our MCP server's table.
const mcpTableHeader = "[mcp_servers.git-lossless]"

// tomlTable is one table of a TOML document: its header line and the
// bytes from the header's start to the next header (or the end).
type tomlTable struct {
	Header     string // the header line, trimmed ("" for what precedes the first header)
	Start, End int
	Ours       bool // it holds tomlMarker
}

// tomlTables splits doc into its tables. A line is a header when it
// starts (after blanks) with '[' outside any string; multi-line strings
// ("""...""", ”'...”') are followed across lines.
func tomlTables(doc []byte) ([]tomlTable, error) {
	var out []tomlTable
	cur := tomlTable{}
	inML := "" // the delimiter of the multi-line string open at the line's start
	off := 0
	for off < len(doc) {
		end := bytes.IndexByte(doc[off:], '\n')
		if end < 0 {
			end = len(doc)
		} else {
			end += off + 1
		}
		line := doc[off:end]
		trimmed := strings.TrimSpace(string(line))
		if inML == "" && strings.HasPrefix(trimmed, "[") {
			cur.End = off
			if cur.End > cur.Start || cur.Header != "" {
				out = append(out, cur)
			}
			cur = tomlTable{Header: trimmed, Start: off}
		}
		if inML == "" && trimmed == tomlMarker {
			cur.Ours = true
		}
		var err error
		if inML, err = scanTOMLLine(line, inML); err != nil {
			return nil, fmt.Errorf("line %d: %w", bytes.Count(doc[:off], []byte("\n"))+1, err)
		}
		off = end
	}
	if inML != "" {
		return nil, errors.New("a multi-line string is not closed")
	}
	cur.End = len(doc)
	if cur.End > cur.Start || cur.Header != "" {
		out = append(out, cur)
	}
	return out, nil
}

// scanTOMLLine follows strings through one line, starting inside the
// multi-line string delimited by inML ("" for none), and returns the one
// open at its end.
func scanTOMLLine(line []byte, inML string) (string, error) {
	s := string(line)
	for i := 0; i < len(s); {
		if inML != "" {
			j := strings.Index(s[i:], inML)
			if j < 0 {
				return inML, nil
			}
			if inML == `"""` && escaped(s, i+j) {
				i += j + 1
				continue
			}
			i += j + 3
			for i < len(s) && s[i] == inML[0] { // up to two quotes may end the string
				i++
			}
			inML = ""
			continue
		}
		switch c := s[i]; c {
		case '#':
			return "", nil
		case '"', '\'':
			q := string([]byte{c, c, c})
			if strings.HasPrefix(s[i:], q) {
				inML = q
				i += 3
				continue
			}
			j := i + 1
			for ; j < len(s); j++ {
				if s[j] == c && (c == '\'' || !escaped(s, j)) {
					break
				}
				if s[j] == '\n' {
					return "", errors.New("a string is not closed on its line")
				}
			}
			if j >= len(s) {
				return "", errors.New("a string is not closed on its line")
			}
			i = j + 1
		default:
			i++
		}
	}
	return inML, nil
}

// escaped reports whether the byte at i follows an odd run of backslashes.
func escaped(s string, i int) bool {
	n := 0
	for j := i - 1; j >= 0 && s[j] == '\\'; j-- {
		n++
	}
	return n%2 == 1
}

// tomlHasTable reports whether doc has a table with header h.
func tomlHasTable(doc []byte, h string) bool {
	ts, err := tomlTables(doc)
	if err != nil {
		return false
	}
	for _, t := range ts {
		if t.Header == h {
			return true
		}
	}
	return false
}

// tomlString renders s as a TOML basic string (JSON's escapes are TOML's
// for what json.Marshal writes).
func tomlString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// tomlEdit removes the tables drop says to and appends add (whole tables,
// each starting with its header line), keeping every other byte.
func tomlEdit(doc []byte, tables []tomlTable, drop func(tomlTable) bool, add []string) []byte {
	var out []byte
	for _, t := range tables {
		if drop(t) {
			// The blank line written before the table goes with it.
			if n := len(out); n >= 2 && out[n-1] == '\n' && out[n-2] == '\n' {
				out = out[:n-1]
			}
			continue
		}
		out = append(out, doc[t.Start:t.End]...)
	}
	for _, a := range add {
		if len(out) > 0 && out[len(out)-1] != '\n' {
			out = append(out, '\n')
		}
		if len(out) > 0 {
			out = append(out, '\n')
		}
		out = append(out, a...)
	}
	return out
}
