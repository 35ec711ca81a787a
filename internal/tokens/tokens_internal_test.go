package tokens

import (
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/git-lossless/git-lossless/internal/testkit/benchdata"
)

// countFast counts s the way Counter does: chunk by chunk with a
// line memo, each chunk piece by piece.
func countFast(s string) (int64, error) {
	lm := &lineMemo{m: map[string]int64{}}
	return lm.count(s, newPieceCounter())
}

// awkward are texts aimed at each alternative of the split pattern and at
// the chunk boundaries: contractions in both cases, digit runs, white
// space runs with and without newlines (CR, LF, \v, \f), a "/" after a
// newline, control bytes, non-ASCII letters, marks and spaces (NBSP, NEL),
// invalid UTF-8.
var awkward = []string{
	"", "a", " ", "\n", "\n\n", " \n ", "  \n\n  x", "x  ", "x  \n", "x\n  \n", "\t\tfoo\n\t}\n",
	"don't DON'T we'll WE'LL they're THEY'RE I've I'VE I'm I'M he'd HE'D it's IT'S 'tis 's 'S 'x ''",
	"HTTPServer parseURL XMLHttpRequest ABC abc Abc aBC A B",
	"1 12 123 1234 12345 1234567 3.14159 0x1f 1e10 v1.2.3",
	"}\n// comment\n}\n//\n/", "a\n/b\n /c\n\t/d", "x //\n//\n\n/",
	"x\r\ny\r\n\r\n  \r\n\tz", "a\vb\fc\v\n\fd", "\x00\x01\x7f\x1b[0m \x1c\x1d\x1e\x1f",
	"  .  ..  ...\n  {{  }}  ", " !\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~",
	"héllo wörld — “quoted” naïve café 日本語のテキスト ❤️ 👍🏽 Ελληνικά Русский",
	"a\u00a0b\u0085c \u2028d\u3000e", "e\u0301 a\u0308 ´",
	"x\n\u00a0y\n\u0085z\n", "bad \xff\xfe utf8 \xc3\n\xe2\x82 end",
	"func main() {\n\tfmt.Println(\"hi\")\n}\n", "    indented\n        more\n    less\n",
}

// TestPiecesMatchCodec holds the ASCII pre-tokenizer and the line chunks
// to the codec: every text counts as the codec counts it in one piece.
func TestPiecesMatchCodec(t *testing.T) {
	texts := append([]string(nil), awkward...)
	// Real text: this module's sources and docs.
	root := filepath.Join("..")
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || (d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata")) {
			if d != nil && d.IsDir() && p != root {
				return filepath.SkipDir
			}
			return nil
		}
		if ext := filepath.Ext(p); !d.IsDir() && (ext == ".go" || ext == ".md") && len(texts) < 400 {
			if b, err := os.ReadFile(p); err == nil {
				texts = append(texts, string(b))
			}
		}
		return nil
	})
	// Code-like text, and random strings over the bytes the pattern
	// distinguishes.
	for i := range 50 {
		texts = append(texts, string(benchdata.Source(3, i)))
	}
	alphabet := "aAzZsStTrReEvVlLmMdD'09 \t\n\r\v\f/.{}_-\x01\x7f"
	rng := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		b := make([]byte, rng.IntN(40))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		texts = append(texts, string(b))
	}
	if len(texts) < 3100 {
		t.Fatalf("only %d texts", len(texts))
	}
	for _, s := range texts {
		want, err := CountText(s)
		if err != nil {
			t.Fatal(err)
		}
		got, err := countFast(s)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("%d tokens counted in pieces, the codec counts %d, for %q", got, want, trunc(s))
		}
	}
}

func trunc(s string) string {
	if len(s) > 300 {
		return s[:300] + "..."
	}
	return s
}

// TestShortASCIIMatchCodec: every ASCII string of one or two bytes, and
// every three-byte string over the bytes the pattern tells apart, counts
// as the codec counts it.
func TestShortASCIIMatchCodec(t *testing.T) {
	check := func(s string) {
		t.Helper()
		want, err := CountText(s)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := newPieceCounter().count(s); err != nil || got != want {
			t.Fatalf("%d (%v) tokens counted in pieces, the codec counts %d, for %q", got, err, want, s)
		}
	}
	for a := range 128 {
		check(string([]byte{byte(a)}))
		for b := range 128 {
			check(string([]byte{byte(a), byte(b)}))
		}
	}
	alphabet := "aAzZsSlLrReE'09 \t\n\r\v/.#_\x00\x1f\x7f"
	for i := range len(alphabet) {
		for j := range len(alphabet) {
			for k := range len(alphabet) {
				check(string([]byte{alphabet[i], alphabet[j], alphabet[k]}))
			}
		}
	}
}

// TestNextChunk: chunks end at the documented newlines only.
func TestNextChunk(t *testing.T) {
	for s, want := range map[string]int{
		"a\nb":      2,
		"a\n\tb":    2,
		"a\n  }":    2,
		"a\n/b":     4, // "/" right after a newline continues "[\r\n/]*"
		"a\n //b":   2,
		"a\n\nb":    3, // the blank line joins the next chunk's newline run
		"a\n  \nb":  5,
		"a\n":       2,
		"a":         1,
		"a\n\u00e9": 4, // non-ASCII after the newline: no chunk boundary
	} {
		if got := nextChunk(s); got != want {
			t.Errorf("nextChunk(%q) = %d, want %d", s, got, want)
		}
	}
}

// FuzzChunkedCount: any text counts the same in chunks and pieces as the
// codec counts it whole.
func FuzzChunkedCount(f *testing.F) {
	for _, s := range awkward {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := CountText(s)
		if err != nil {
			t.Skip()
		}
		got, err := countFast(s)
		if err != nil || got != want {
			t.Fatalf("%d (%v) counted in pieces, the codec counts %d, for %q", got, err, want, s)
		}
	})
}

// The counting workers share the line memo: counts do not depend on how
// many there are.
func TestCountWorkersAgree(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("one CPU")
	}
	lm := &lineMemo{m: map[string]int64{}}
	texts := make([]string, 64)
	for i := range texts {
		texts[i] = strings.Repeat(string(benchdata.Source(9, i%8)), 1+i%3)
	}
	out := make([]int64, len(texts))
	done := make(chan error, len(texts))
	for i, s := range texts {
		go func() {
			n, err := lm.count(s, newPieceCounter())
			out[i] = n
			done <- err
		}()
	}
	for range texts {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	for i, s := range texts {
		want, _ := CountText(s)
		if out[i] != want {
			t.Fatalf("text %d: %d tokens, want %d", i, out[i], want)
		}
	}
	if lm.hits.Load() == 0 {
		t.Error("repeated texts reused no line count")
	}
}
