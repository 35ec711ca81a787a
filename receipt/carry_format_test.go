package receipt_test

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/git-lossless/git-lossless/receipt/note"
)

// TestCarriedFormat: a carried receipt's "carried" lines and union window
// round-trip byte for byte; a receipt without them parses as before (its
// window ends at the committer time); a non-canonical or inconsistent
// carried receipt is rejected.
func TestCarriedFormat(t *testing.T) {
	old := exampleBody(t)
	r, err := note.Parse(old)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Carried) != 0 || r.WindowEnd() != r.Committed {
		t.Fatalf("a receipt without carried lines: %+v end %d", r.Carried, r.WindowEnd())
	}

	in := exampleInput()
	a, b := strings.Repeat("a", 40), strings.Repeat("b", 40)
	// Given unsorted: Compute sorts them.
	in.Carried = []note.Carried{{Commit: b, From: in.From - 600, HasFrom: true, To: in.Committed - 60}, {Commit: a, From: in.From, HasFrom: true, To: in.Committed}}
	cr, err := note.Compute(in)
	if err != nil {
		t.Fatal(err)
	}
	body, err := cr.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	wantLines := []string{
		"window " + itoa(in.From-600) + " " + itoa(in.Committed) + "\n",
		"carried " + a + " window " + itoa(in.From) + " " + itoa(in.Committed) + "\ncarried " + b + " window " + itoa(in.From-600) + " " + itoa(in.Committed-60) + "\n",
	}
	for _, w := range wantLines {
		if !bytes.Contains(body, []byte(w)) {
			t.Fatalf("carried body lacks %q:\n%s", w, body)
		}
	}
	back, err := note.Parse(body)
	if err != nil {
		t.Fatal(err)
	}
	again, err := back.Marshal()
	if err != nil || !bytes.Equal(again, body) {
		t.Fatalf("round trip: %v\n%s", err, again)
	}
	if len(back.Carried) != 2 || back.Carried[0].Commit != a || back.WindowEnd() != in.Committed {
		t.Fatalf("parsed %+v", back.Carried)
	}

	bad := map[string]string{
		"unsorted":       strings.Replace(strings.Replace(string(body), "carried "+a, "carried X", 1), "carried "+b, "carried "+a, 1),
		"window end":     strings.Replace(string(body), "window "+itoa(in.From-600)+" "+itoa(in.Committed)+"\n", "window "+itoa(in.From-600)+" "+itoa(in.Committed-60)+"\n", 1),
		"window start":   strings.Replace(string(body), "window "+itoa(in.From-600)+" ", "window "+itoa(in.From)+" ", 1),
		"short line":     strings.Replace(string(body), "carried "+a+" window ", "carried "+a+" ", 1),
		"self":           strings.Replace(string(body), "carried "+a, "carried "+cr.Commit, 1),
		"no root window": strings.Replace(string(body), "carried "+a+" window "+itoa(in.From), "carried "+a+" window -", 1),
	}
	bad["unsorted"] = strings.Replace(bad["unsorted"], "carried X", "carried "+b, 1)
	for name, text := range bad {
		if text == string(body) {
			t.Fatalf("%s: the mutation changed nothing", name)
		}
		if _, err := note.Parse([]byte(text)); err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
