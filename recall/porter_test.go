package recall

import (
	"bufio"
	"os"
	"testing"
)

// TestPorterVocabulary holds the stemmer to Porter's published sample
// vocabulary (testdata/porter: voc.txt and output.txt, 23,531 words):
// every word's stem must be the published one. The stemmer takes
// lower-case ASCII letters only (stemmable); the vocabulary is all such
// words, so every line is checked.
func TestPorterVocabulary(t *testing.T) {
	read := func(name string) []string {
		f, err := os.Open("testdata/porter/" + name)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		var out []string
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			out = append(out, sc.Text())
		}
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	voc, want := read("voc.txt"), read("output.txt")
	if len(voc) != 23531 || len(want) != len(voc) {
		t.Fatalf("vocabulary %d words, output %d: want 23,531 each", len(voc), len(want))
	}
	var z stemmer
	var buf []byte
	wrong := 0
	for i, w := range voc {
		buf = stem(buf[:0], []byte(w), &z)
		if string(buf) != want[i] {
			wrong++
			if wrong <= 20 {
				t.Errorf("stem(%q) = %q, Porter's output %q", w, buf, want[i])
			}
		}
	}
	if wrong > 0 {
		t.Errorf("%d of %d words stem differently from Porter's output", wrong, len(voc))
	}
}
