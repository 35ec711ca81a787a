// Package benchdata generates the deterministic content git-lossless's
// benchmarks archive: source-file-like text of 1 to 8 KiB, the same bytes
// for the same seed and index on every machine, different for every index.
// Its fixture half (Fixture, Records) builds event-log repositories through
// gitstore for the store's benchmarks and `git lossless bench`.
//
// It is a fixture, not part of git-lossless: only tests and the bench
// commands of cmd/git-lossless may import it, never a production package
// (internal/layoutcheck enforces that). It depends on the standard library
// and gitstore, not on testing, so the bench commands can link it.
package benchdata

import (
	"math/rand/v2"
	"strconv"
)

// MinSize and MaxSize bound the size of generated files.
const (
	MinSize = 1 << 10
	MaxSize = 8 << 10
)

var (
	words = []string{
		"ctx", "err", "buf", "req", "resp", "store", "writer", "event", "batch", "blob",
		"tree", "commit", "ref", "head", "seal", "index", "lines", "path", "name", "id",
		"count", "size", "offset", "key", "value", "item", "node", "parent", "child", "opts",
		"cfg", "conn", "cache", "entry", "token", "session", "agent", "source", "result", "state",
	}
	types = []string{
		"string", "int", "int64", "bool", "[]byte", "error", "*Store", "Event", "[]Event",
		"map[string]bool", "context.Context", "io.Reader", "time.Time", "*bytes.Buffer",
	}
	pkgs = []string{
		"fmt", "os", "io", "bytes", "strings", "strconv", "context", "errors", "sort", "time",
		"path/filepath", "encoding/json", "sync", "crypto/sha256",
	}
	calls = []string{
		"fmt.Errorf", "strings.TrimSpace", "bytes.Equal", "os.ReadFile", "strconv.Itoa",
		"errors.Is", "sort.Strings", "json.Marshal", "filepath.Join", "time.Since",
	}
	comments = []string{
		"handles the common case first; the slow path below is rare",
		"keeps the order stable so that readers see the same sequence",
		"is safe for concurrent use: the mutex guards the map",
		"returns early when the context is done",
		"TODO: batch these writes once the format settles",
		"mirrors what git does, so plain git reads the result",
		"never blocks: a busy lock means someone else is refreshing it",
	}
)

// Size returns the size of file i for seed: spread evenly over
// [MinSize, MaxSize].
func Size(seed uint64, i int) int {
	r := rand.New(rand.NewPCG(seed, uint64(i)*0x9e3779b97f4a7c15+1))
	return MinSize + r.IntN(MaxSize-MinSize+1)
}

// Source returns file i for seed: Go-like source text of Size(seed, i)
// bytes. Its first line names seed and i, so no two files are equal.
func Source(seed uint64, i int) []byte {
	size := Size(seed, i)
	r := rand.New(rand.NewPCG(seed^0x5bd1e995, uint64(i)))
	b := make([]byte, 0, size+256)
	b = append(b, "// Code archived by git-lossless bench: seed "...)
	b = strconv.AppendUint(b, seed, 10)
	b = append(b, ", file "...)
	b = strconv.AppendInt(b, int64(i), 10)
	b = append(b, ".\n\npackage "...)
	b = append(b, pick(r, words)...)
	b = append(b, "\n\nimport (\n"...)
	for n := 2 + r.IntN(5); n > 0; n-- {
		b = append(b, "\t\""...)
		b = append(b, pick(r, pkgs)...)
		b = append(b, "\"\n"...)
	}
	b = append(b, ")\n"...)
	for len(b) < size {
		b = appendFunc(b, r)
	}
	return b[:size]
}

func pick(r *rand.Rand, s []string) string { return s[r.IntN(len(s))] }

func ident(b []byte, r *rand.Rand, exported bool) []byte {
	w := pick(r, words)
	if exported {
		b = append(b, w[0]-'a'+'A')
		b = append(b, w[1:]...)
	} else {
		b = append(b, w...)
	}
	if r.IntN(3) == 0 {
		w2 := pick(r, words)
		b = append(b, w2[0]-'a'+'A')
		b = append(b, w2[1:]...)
	}
	if r.IntN(4) == 0 {
		b = strconv.AppendInt(b, int64(r.IntN(100)), 10)
	}
	return b
}

func appendFunc(b []byte, r *rand.Rand) []byte {
	b = append(b, "\n// "...)
	b = ident(b, r, true)
	b = append(b, ' ')
	b = append(b, pick(r, comments)...)
	b = append(b, ".\nfunc "...)
	if r.IntN(2) == 0 {
		b = append(b, "(s *Store) "...)
	}
	b = ident(b, r, true)
	b = append(b, '(')
	for n := r.IntN(4); n > 0; n-- {
		b = ident(b, r, false)
		b = append(b, ' ')
		b = append(b, pick(r, types)...)
		if n > 1 {
			b = append(b, ", "...)
		}
	}
	b = append(b, ") ("...)
	b = append(b, pick(r, types)...)
	b = append(b, ", error) {\n"...)
	for n := 3 + r.IntN(12); n > 0; n-- {
		b = appendStmt(b, r, 1)
	}
	b = append(b, "\treturn "...)
	b = ident(b, r, false)
	b = append(b, ", nil\n}\n"...)
	return b
}

func indent(b []byte, depth int) []byte {
	for range depth {
		b = append(b, '\t')
	}
	return b
}

func appendStmt(b []byte, r *rand.Rand, depth int) []byte {
	b = indent(b, depth)
	switch k := r.IntN(10); {
	case k < 3:
		b = ident(b, r, false)
		b = append(b, " := "...)
		b = append(b, pick(r, calls)...)
		b = append(b, '(')
		b = ident(b, r, false)
		b = append(b, ")\n"...)
	case k < 5:
		b = append(b, "if err := "...)
		b = ident(b, r, false)
		b = append(b, '.')
		b = ident(b, r, true)
		b = append(b, "(ctx, "...)
		b = ident(b, r, false)
		b = append(b, "); err != nil {\n"...)
		b = indent(b, depth+1)
		b = append(b, "return nil, fmt.Errorf(\""...)
		b = append(b, pick(r, words)...)
		b = append(b, " %s: %w\", "...)
		b = ident(b, r, false)
		b = append(b, ", err)\n"...)
		b = indent(b, depth)
		b = append(b, "}\n"...)
	case k < 7 && depth < 3:
		b = append(b, "for _, "...)
		b = ident(b, r, false)
		b = append(b, " := range "...)
		b = ident(b, r, false)
		b = append(b, " {\n"...)
		for n := 1 + r.IntN(3); n > 0; n-- {
			b = appendStmt(b, r, depth+1)
		}
		b = indent(b, depth)
		b = append(b, "}\n"...)
	case k < 8:
		b = append(b, "// "...)
		b = append(b, pick(r, comments)...)
		b = append(b, '\n')
	default:
		b = ident(b, r, false)
		b = append(b, '.')
		b = ident(b, r, true)
		b = append(b, " = "...)
		b = strconv.AppendInt(b, int64(r.IntN(1<<16)), 10)
		b = append(b, '\n')
	}
	return b
}

// Path returns a plausible repository-relative path for file i.
func Path(seed uint64, i int) string {
	r := rand.New(rand.NewPCG(seed^0x27d4eb2f, uint64(i)))
	return "internal/" + pick(r, words) + "/" + pick(r, words) + "_" + strconv.Itoa(i) + ".go"
}
