package recall

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"filippo.io/age"
)

// TestEncryptedSpans: with lossless.encrypt on, spans are age ciphertext.
// Without an identity they are listed as locked (found by their
// metadata only); with one they are searchable and readable; and nothing
// of their plaintext reaches the index files either way.
func TestEncryptedSpans(t *testing.T) {
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	a := newArchive(t, "lossless.encrypt", "true", "lossless.recipient", id.Recipient().String())
	secretWords := []string{"zanzibarian", "quixotically", "marmalades"}
	res := a.add("cc-enc",
		a.span("enc", "user", "please review the zanzibarian ledger quixotically"),
		a.toolUse("enc", "Grep", map[string]any{"pattern": "marmalades", "path": "src/jam.go"}),
		a.span("enc", "assistant", "plain words about the harbor"),
	)
	if !strings.Contains(string(res.Events[0].Extra["enc"]), "age") {
		t.Fatalf("the span was not stored encrypted: %s", res.Events[0].Raw)
	}
	// Stored encrypted: the archive does not hold the words in the clear.
	blob, _ := a.st.Objects().Blob(context.Background(), res.Events[0].Blob)
	if bytes.Contains(blob, []byte("zanzibarian")) {
		t.Fatal("the archive holds the plaintext")
	}

	locked := a.open()
	if st := locked.Stats(); st.Locked != 3 || st.Decrypted != 0 {
		t.Errorf("without identity: %+v", st)
	}
	if r := search(t, locked, Query{Text: "zanzibarian"}); r.Total != 0 {
		t.Errorf("without identity the plaintext was searchable: %+v", r)
	}
	// Found by metadata (the tool name), and locked.
	r := search(t, locked, Query{Text: "grep"})
	if r.Total != 1 || !r.Hits[0].Locked || strings.Contains(r.Hits[0].Snippet, "marmalades") {
		t.Errorf("grep without identity: %+v", r)
	}
	sp, err := locked.Span(context.Background(), r.Hits[0].ID)
	if err != nil || !sp.Locked || len(sp.Lines) != 0 {
		t.Errorf("span without identity: %v %+v", err, sp)
	}
	ds, _ := locked.Digests(context.Background(), DigestQuery{})
	if len(ds) != 1 || ds[0].Locked != 3 || ds[0].Words != "" {
		t.Errorf("digests without identity: %+v", ds)
	}

	open := a.open(Options{Identities: []age.Identity{id}})
	if st := open.Stats(); st.Decrypted != 3 || st.Locked != 0 || st.Docs != 3 {
		t.Errorf("with identity: %+v", st)
	}
	for _, w := range secretWords {
		r := search(t, open, Query{Text: w})
		if r.Total != 1 || r.Hits[0].Locked || !strings.Contains(r.Hits[0].Snippet, w) {
			t.Errorf("%s with identity: %+v", w, r)
		}
	}
	if r := search(t, open, Query{Text: "quixotic"}); r.Total != 1 {
		t.Errorf("stem of an encrypted word: %+v", r)
	}
	sp, err = open.Span(context.Background(), r.Hits[0].ID)
	if err != nil || sp.Locked || !strings.Contains(strings.Join(sp.Lines, "\n"), `"pattern": "marmalades"`) {
		t.Errorf("span with identity: %v %+v", err, sp)
	}
	ds, _ = open.Digests(context.Background(), DigestQuery{})
	if len(ds) != 1 || ds[0].Locked != 0 || !strings.Contains(ds[0].Words, "zanzibarian") {
		t.Errorf("digests with identity: %+v", ds)
	}

	// A new encrypted span, indexed by an Open that holds the identity:
	// still nothing of it on disk.
	a.add("cc-enc", a.span("enc", "user", "the marmalades of zanzibarian kings"))
	open = a.open(Options{Identities: []age.Identity{id}})
	if r := search(t, open, Query{Text: "kings"}); r.Total != 1 {
		t.Errorf("new encrypted span: %+v", r)
	}
	disk := bytes.ToLower(readAll(t, a.indexDir(t.Context())))
	if len(disk) == 0 {
		t.Fatal("no index on disk")
	}
	var an analyzer
	for _, w := range append(secretWords, "kings", "ledger", "review") {
		forms := []string{w}
		an.terms([]byte(w), func(term []byte, _, _ int) { forms = append(forms, string(term)) })
		for _, f := range forms {
			if bytes.Contains(disk, []byte(f)) {
				t.Errorf("the index files hold %q, from an encrypted span", f)
			}
		}
	}
	if bytes.Contains(disk, []byte("harbor")) {
		t.Error("the index files hold a word of an encrypted span")
	}
}
