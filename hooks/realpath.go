package hooks

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"path/filepath"
	"unicode/utf8"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/internal/jsonscan"
)

// Evidence of what a model saw is keyed by the file, not by the spelling
// of its path: a Read through a symlink (or a symlinked directory) and an
// Edit of its target are the same file, and so are the reverse. An event
// keeps the path the model named — that is what the transcript says and
// what the model will name again — and, when that path resolves to
// another one, carries the resolved file beside it in the extra field
// "real_path" (in the same form as path: repository-relative inside the
// repository, absolute outside it; "real_path64" with the raw bytes,
// standard base64, when it is not valid UTF-8). The guard looks evidence
// up by both (see fileKey).

// realFile returns the file abs names with every symlink resolved
// (filepath.EvalSymlinks). When abs does not resolve — a file about to be
// created, a dangling symlink, a loop — the longest leading directory of
// it that does is resolved and the rest kept as written, so a file created
// through a symlinked directory is keyed by where it lands.
func realFile(abs string) string {
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		return r
	}
	dir, rest := filepath.Dir(abs), filepath.Base(abs)
	for {
		if r, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return abs
		}
		rest = filepath.Join(filepath.Base(dir), rest)
		dir = parent
	}
}

// fileKey is how the guard finds evidence for one file: rel is the path
// as the model named it and real the file it resolves to, both as
// Store.RelPath records paths.
type fileKey struct{ rel, real string }

func keyOf(st *gitstore.Store, abs string) fileKey {
	return fileKey{rel: st.RelPath(abs), real: st.RelPath(realFile(abs))}
}

// matches reports whether an archived event is about the file k names:
// it resolved to the same file, or (events recorded before real_path
// existed, or when the file behind a path was replaced) it names the same
// path. A match by path alone is safe: the content it vouches for is
// still checked against the file on disk now.
func (k fileKey) matches(e gitstore.Event) bool {
	return e.RawPath() == k.rel || realPathOf(e) == k.real
}

// needles are the byte strings one of which every stored line that
// matches k holds: the path as the model named it, or the resolved file
// as path or as real_path. `"path":"X"` and `"real_path":"X"` end alike
// (and so do path64 and real_path64), so one needle without the leading
// quote finds both, and the common case, a path that is no symlink,
// costs the store one scan, as it did before symlinks were resolved.
// What else such a needle finds is sifted out on the parsed event.
func (k fileKey) needles() [][]byte {
	real := pathNeedle(k.real)
	if real == nil {
		return nil
	}
	out := [][]byte{bytes.TrimPrefix(real, []byte(`"`))}
	if k.rel != k.real {
		rel := pathNeedle(k.rel)
		if rel == nil {
			return nil
		}
		out = append(out, rel)
	}
	return out
}

// setRealPath records beside rec's path the file it resolves to, when
// that is another path.
func setRealPath(rec *gitstore.Record, real string) {
	if k, v, ok := realPathExtra(rec.RawPath(), real); ok {
		setExtra(rec, k, v)
	}
}

// realPathExtra is the extra field that records real beside path, unless
// they are the same. Its value is encoded exactly as the store encodes a
// path (path64 for one that is not valid UTF-8), which fileKey.needles
// relies on.
func realPathExtra(path, real string) (string, json.RawMessage, bool) {
	if real == "" || real == path {
		return "", nil, false
	}
	if utf8.ValidString(real) {
		return "real_path", jsonscan.Quote(real), true
	}
	return "real_path64", jsonscan.Quote(base64.StdEncoding.EncodeToString([]byte(real))), true
}

// realPathOf is the file an archived event is about: its real_path, else
// its path.
func realPathOf(e gitstore.Event) string {
	if s := e.ExtraString("real_path64"); s != "" {
		if b, err := base64.StdEncoding.DecodeString(s); err == nil {
			return string(b)
		}
	}
	if s := e.ExtraString("real_path"); s != "" {
		return s
	}
	return e.RawPath()
}
