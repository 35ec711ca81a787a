package hooks

import "testing"

func TestSameLines(t *testing.T) {
	disk := []byte("one\ntwo\r\nthree\n")
	for _, c := range []struct {
		start, n int
		shown    string
		want     bool
	}{
		{1, 1, "one", true},
		{2, 2, "two\nthree", true},
		{2, 1, "two\r", false},
		{3, 2, "three\n", true}, // the last line and the empty piece after the final newline
		{3, 3, "three\n\n", false},
		{1, 1, "uno", false},
		{0, 1, "", false},
		{4, 1, "", true},
	} {
		if got := sameLines(disk, c.start, c.n, []byte(c.shown)); got != c.want {
			t.Errorf("sameLines(%d, %d, %q) = %v, want %v", c.start, c.n, c.shown, got, c.want)
		}
	}
}
