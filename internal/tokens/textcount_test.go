package tokens

import (
	"strings"
	"testing"
)

// TestTextCounterEqualsCountText: one counter over texts that share
// lines (a file, its diff, prose, non-ASCII) gives CountText's figure for
// each, whatever it has counted before.
func TestTextCounterEqualsCountText(t *testing.T) {
	src := strings.Repeat("func f(x int) int {\n\treturn x * 2 // twice\n}\n\n", 20)
	texts := []string{
		"", "\n", src, src + "// end\n",
		"--- a/x.go\n+++ b/x.go\n@@ -1,3 +1,3 @@\n-func f(x int) int {\n+func g(x int) int {\n \treturn x * 2 // twice\n }\n",
		"x.go is unchanged since you last saw it in this context.",
		"héllo wörld — ünïcode\n\tmixed with ASCII\n/slash start\n  spaced\n",
		src,
	}
	c := NewTextCounter()
	for i, s := range texts {
		want, err := CountText(s)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.Count(s)
		if err != nil || got != want {
			t.Fatalf("text %d: %d %v, want %d", i, got, err, want)
		}
	}
}
