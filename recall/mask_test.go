package recall

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/git-lossless/git-lossless/internal/testkit"
	"github.com/git-lossless/git-lossless/secrets"
)

// TestSecretsMasked: with redaction off the archive holds planted
// credentials verbatim; recall never indexes them (a query for a value
// finds nothing), its snippets show them masked, Span text shows them
// masked after Mask, and the index files do not hold them.
func TestSecretsMasked(t *testing.T) {
	p := testkit.PlantedSecrets(3)
	a := newArchive(t)
	env := "$ env\nGITHUB_TOKEN=" + p["github"] + "\nAWS_ACCESS_KEY_ID=" + p["aws-id"] + "\nAWS_SECRET_ACCESS_KEY=" + p["aws-key"] +
		"\nDB_PASSWORD=" + p["password"] + "\nOPENAI_API_KEY=" + p["openai"] + "\nHOME=/home/dev\n"
	res := a.add("cc-sec",
		a.span("sec", "tool_result", env),
		a.span("sec", "user", "use the slack token "+p["slack"]+" for the heron channel"),
	)
	blob, err := a.st.Objects().Blob(context.Background(), res.Events[0].Blob)
	if err != nil || !bytes.Contains(blob, []byte(p["github"])) {
		t.Fatalf("redaction off: the archive should hold the token verbatim (%v)", err)
	}
	ix := a.open()
	values := []string{p["github"], p["aws-id"], p["aws-key"], p["password"], p["openai"], p["slack"]}

	r := search(t, ix, Query{Text: "GITHUB_TOKEN"})
	if r.Total != 1 {
		t.Fatalf("GITHUB_TOKEN: %+v", r)
	}
	sn := r.Hits[0].Snippet
	if !strings.Contains(sn, "GITHUB_TOKEN="+secrets.Mask([]byte(p["github"]))) {
		t.Errorf("snippet %q: want the token masked, its name kept", sn)
	}
	r2 := search(t, ix, Query{Text: "heron slack"})
	if r2.Total != 1 || strings.Contains(r2.Hits[0].Snippet, p["slack"]) || !strings.Contains(r2.Hits[0].Snippet, secrets.Mask([]byte(p["slack"]))) {
		t.Errorf("slack snippet: %+v", r2)
	}
	sp, err := ix.Span(context.Background(), r.Hits[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(sp.Lines, "\n")
	if !strings.Contains(text, p["github"]) {
		t.Error("Span text is the archived text (masking is the caller's: Mask)")
	}
	masked := Mask(text)
	for _, v := range values[:5] {
		for _, h := range []string{sn, masked} {
			if strings.Contains(h, v) {
				t.Errorf("%q shows a planted secret", h)
			}
		}
	}
	for _, want := range []string{"GITHUB_TOKEN=" + secrets.Mask([]byte(p["github"])), "DB_PASSWORD=" + secrets.Mask([]byte(p["password"])), "HOME=/home/dev"} {
		if !strings.Contains(masked, want) {
			t.Errorf("masked text lacks %q:\n%s", want, masked)
		}
	}
	// The values are not in the index: a query for one finds nothing,
	// not even a fragment or a typo of it.
	for _, v := range values {
		for _, q := range []string{v, v[:len(v)-1], v[2 : len(v)-2]} {
			if r := search(t, ix, Query{Text: q}); r.Total != 0 {
				t.Errorf("query %q found %d hits: %q", q, r.Total, r.Hits[0].Snippet)
			}
		}
	}
	disk := readAll(t, a.indexDir(t.Context()))
	for _, v := range values {
		if bytes.Contains(bytes.ToLower(disk), bytes.ToLower([]byte(v))) {
			t.Errorf("the index files hold a planted secret")
		}
	}
}

func TestMaskKeepsPlaceholders(t *testing.T) {
	in := "export GITHUB_TOKEN=[secret:github-token:fe7b97f125b7] and DB_PASSWORD=[secret:password:ffb7be4ac256]"
	if got := Mask(in); got != in {
		t.Errorf("Mask changed placeholders: %q", got)
	}
	if got := Mask("nothing to see here"); got != "nothing to see here" {
		t.Errorf("Mask: %q", got)
	}
}

// TestMaskNeverFails: a scanner that panics, or returns findings that do
// not fit the text, falls back to masking every credential-like token.
func TestMaskNeverFails(t *testing.T) {
	p := testkit.PlantedSecrets(4)
	in := "token " + p["github"] + " for [secret:github-token:fe7b97f125b7] in hooks/sweep.go, pw hunter2-x7Qm ok"
	for name, scan := range map[string]func([]byte) []secrets.Finding{
		"panic":        func([]byte) []secrets.Finding { panic("scanner bug") },
		"out of range": func(b []byte) []secrets.Finding { return []secrets.Finding{{Start: 5, End: len(b) + 10, Kind: "x"}} },
		"unsorted":     func([]byte) []secrets.Finding { return []secrets.Finding{{Start: 9, End: 12}, {Start: 2, End: 4}} },
	} {
		got := maskWith(in, scan)
		if strings.Contains(got, p["github"]) || strings.Contains(got, "hunter2-x7Qm") {
			t.Errorf("%s: %q shows a secret", name, got)
		}
		for _, keep := range []string{"token ", "[secret:github-token:fe7b97f125b7]", "hooks/sweep.go", " ok"} {
			if !strings.Contains(got, keep) {
				t.Errorf("%s: %q lost %q", name, got, keep)
			}
		}
	}
}
