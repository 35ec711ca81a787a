package gitobj

// Alternates: objects/info/alternates names further object directories
// whose objects this repository may read as its own. `git clone --shared`
// and `--reference` leave one, and so does the fetch quarantine of package
// gitstore (a temporary repository reading the archive's objects through
// it). Only reading follows them: a write always goes to the DB's own
// directory (a duplicate of an object an alternate holds is harmless, and
// an alternate may vanish with its repository).
//
// git's rules (sha1-file.c / object-file.c, read_info_alternates and
// link_alt_odb_entries, checked against git 2.39 by
// TestAlternatesMatchGit):
//
//   - one path per line; a line starting with '#' is a comment, an empty
//     line is skipped, nothing is trimmed (a leading space is part of the
//     path);
//   - a line starting with '"' is a C-quoted path (\t, \n, \\, \", octal);
//   - a relative path is relative to the real path of the objects
//     directory that holds the alternates file, at any depth;
//   - a path that is not a directory, the DB's own directory and a path
//     listed already are skipped;
//   - alternates of alternates are followed: the DB's own file is read at
//     depth 0 and an alternate's at its depth, and a file at a depth past
//     maxAlternateDepth (5) is ignored, so six levels are read.

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// maxAlternateDepth is git's: the alternates file of an alternate at
// depth 6 is ignored ("nesting too deep").
const maxAlternateDepth = 5

// alternates returns the DB's alternate object directories, flattened in
// git's order (an alternate, then its own alternates, then the next),
// loaded on first use: a process that finds every object in its own
// directory never reads the file.
func (db *DB) alternates() []*DB {
	db.altOnce.Do(func() {
		own := db.dir
		if abs, err := filepath.Abs(own); err == nil {
			own = abs
		}
		seen := map[string]bool{filepath.Clean(own): true}
		var link func(objDir string, depth int)
		link = func(objDir string, depth int) {
			if depth > maxAlternateDepth {
				return
			}
			data, err := os.ReadFile(filepath.Join(objDir, "info", "alternates"))
			if err != nil {
				return
			}
			base := objDir
			if real, err := filepath.EvalSymlinks(objDir); err == nil {
				base = real
			}
			for _, e := range ParseAlternates(data) {
				p := e
				if !filepath.IsAbs(p) {
					p = filepath.Join(base, p)
				}
				p = filepath.Clean(p)
				if seen[p] {
					continue
				}
				if st, err := os.Stat(p); err != nil || !st.IsDir() {
					continue // git: "object directory ... does not exist"
				}
				seen[p] = true
				db.alts = append(db.alts, &DB{dir: p, native: newPackReader(p), readOnly: true})
				link(p, depth+1)
			}
		}
		link(own, 0)
	})
	return db.alts
}

// Alternates returns the object directories the DB reads through its
// alternates (none for most repositories), in the order they are searched.
func (db *DB) Alternates() []string {
	var out []string
	for _, a := range db.alternates() {
		out = append(out, a.dir)
	}
	return out
}

// ParseAlternates returns the paths an alternates file lists, as git
// parses it: comments and empty lines dropped, C-quoted paths unquoted,
// nothing trimmed. Paths are returned as written (relative ones are
// relative to the objects directory holding the file).
func ParseAlternates(data []byte) []string {
	var out []string
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		switch {
		case len(line) == 0 || line[0] == '#':
			continue
		case line[0] == '"':
			if p, rest, ok := unquoteC(line); ok {
				// git ignores what follows the closing quote.
				_ = rest
				if p != "" {
					out = append(out, p)
				}
				continue
			}
			// Not a valid quoted string: git takes the line as it is.
		}
		out = append(out, string(line))
	}
	return out
}

// unquoteC decodes a C-style quoted string at the start of s (git's
// unquote_c_style): \a \b \f \n \r \t \v \\ \" and three octal digits.
// ok is false when s is not a well-formed quoted string.
func unquoteC(s []byte) (string, []byte, bool) {
	if len(s) == 0 || s[0] != '"' {
		return "", nil, false
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"':
			return b.String(), s[i+1:], true
		case '\\':
			i++
			if i >= len(s) {
				return "", nil, false
			}
			switch e := s[i]; e {
			case 'a':
				b.WriteByte('\a')
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'v':
				b.WriteByte('\v')
			case '\\', '"':
				b.WriteByte(e)
			case '0', '1', '2', '3':
				if i+2 >= len(s) {
					return "", nil, false
				}
				v, err := strconv.ParseUint(string(s[i:i+3]), 8, 8)
				if err != nil {
					return "", nil, false
				}
				b.WriteByte(byte(v))
				i += 2
			default:
				return "", nil, false
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", nil, false
}
