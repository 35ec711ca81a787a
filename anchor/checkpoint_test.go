package anchor

import (
	"strings"
	"testing"
)

// TestParseTextRejects: every deviation from the documented layout is an
// error, never a partly read checkpoint.
func TestParseTextRejects(t *testing.T) {
	first, second, _ := goldenCheckpoints(t)
	good := noteText(second)
	if _, err := ParseText(good); err != nil {
		t.Fatalf("the vector does not parse: %v", err)
	}
	if _, err := ParseText(noteText(first)); err != nil {
		t.Fatalf("checkpoint 1 does not parse: %v", err)
	}
	bad := map[string]string{
		"no final newline":   strings.TrimSuffix(good, "\n"),
		"other header":       strings.Replace(good, Header, "git-lossless checkpoint v2", 1),
		"fields swapped":     strings.Replace(strings.Replace(good, "machine ", "MACHINE ", 1), "clone ", "machine ", 1),
		"n not a number":     strings.Replace(good, "\nn 2\n", "\nn two\n", 1),
		"n with a sign":      strings.Replace(good, "\nn 2\n", "\nn +2\n", 1),
		"n zero":             strings.Replace(strings.Replace(good, "\nn 2\n", "\nn 0\n", 1), "prev 8d", "prev 8d", 1),
		"local time":         strings.Replace(good, "2026-12-01T10:00:00Z", "2026-12-01T11:00:00+01:00", 1),
		"prev short":         strings.Replace(good, "prev 8d959d", "prev 8d959", 1),
		"first has a prev":   strings.Replace(noteText(second), "\nn 2\n", "\nn 1\n", 1),
		"later has no prev":  strings.Replace(noteText(second), "prev 8d959d977be7044f68176d30506e20a249281fbbb2d2e01a947a5b5dbd4514bb", "prev none", 1),
		"writers unsorted":   strings.Replace(good, "writer cc-", "writer zz-", 1),
		"writer bad seal":    strings.Replace(good, " efef", " EFEF", 1),
		"writer zero":        strings.Replace(good, "writer cli 3 ", "writer cli 0 ", 1),
		"writer extra field": strings.Replace(good, "writer cli 3 ", "writer cli 3 x ", 1),
		"notes before writer": func() string {
			i := strings.Index(good, "writer cc-")
			return good[:i] + "notes a " + strings.Repeat("1", 40) + "\n" + good[i:]
		}(),
		"unknown line":   good + "comment hello\n",
		"blank line":     strings.Replace(good, "\nwriter cli", "\n\nwriter cli", 1),
		"bad writer":     strings.Replace(good, "writer cli ", "writer ../x ", 1),
		"bad machine":    strings.Replace(good, "machine golden-laptop", "machine golden+laptop", 1),
		"duplicate line": strings.Replace(good, "writer cli ", "writer cli 3 "+strings.Repeat("cd", 32)+" "+strings.Repeat("2e", 20)+"\nwriter cli ", 1),
	}
	for name, text := range bad {
		if c, err := ParseText(text); err == nil {
			t.Errorf("%s: parsed as %+v", name, c)
		}
	}
}

// TestSignRefusesAnotherMachine: a key signs only its own machine's
// checkpoints, and a signed checkpoint opens only with its own key.
func TestSignRefusesAnotherMachine(t *testing.T) {
	signer, vkey := goldenKey(t)
	c := &Checkpoint{Machine: "someone-else", Clone: "0a1b2c3d", N: 1}
	if _, err := Sign(c, signer); err == nil {
		t.Fatal("signed another machine's checkpoint")
	}
	_, second, _ := goldenCheckpoints(t)
	other := strings.Replace(vkey, "golden-laptop", "other", 1)
	if v, err := ParseVerifierKey(other); err == nil {
		if _, err := OpenSigned(second, v); err == nil {
			t.Fatal("opened with a key of another name")
		}
	}
	tampered := []byte(strings.Replace(string(second), "writer cli 3 ", "writer cli 4 ", 1))
	v, _ := ParseVerifierKey(vkey)
	if _, err := OpenSigned(tampered, v); err == nil {
		t.Fatal("opened a tampered checkpoint")
	}
}

// FuzzParseText: any input either fails or parses to a checkpoint whose
// text is the input again (one spelling per checkpoint).
func FuzzParseText(f *testing.F) {
	f.Add("git-lossless checkpoint v1\nmachine m\nclone c\nn 1\ntime 2026-01-01T00:00:00Z\nprev none\n")
	f.Add("git-lossless checkpoint v1\nmachine m\nclone c\nn 2\ntime 2026-01-01T00:00:00Z\nprev " + strings.Repeat("a", 64) + "\nwriter w 1 " + strings.Repeat("b", 64) + " " + strings.Repeat("c", 40) + "\nnotes r " + strings.Repeat("d", 40) + "\n")
	f.Fuzz(func(t *testing.T, text string) {
		c, err := ParseText(text)
		if err != nil {
			return
		}
		out, err := c.Text()
		if err != nil || out != text {
			t.Fatalf("parsed %q, re-encoded %q (%v)", text, out, err)
		}
	})
}
