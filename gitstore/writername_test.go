package gitstore_test

import (
	"context"
	"strings"
	"testing"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/secrets"
)

// A writer's name is a ref name, and leaves with every push: a name made
// from a label that holds a key is the label's hashed form (the same for
// the same label, so a session finds its writer again), and a name given
// that holds one is refused by Append, Import and WriteNote, shown
// masked; nothing is written.
func TestWriterNameNeverHoldsSecret(t *testing.T) {
	tok := ogToken(9)
	for _, label := range []string{"sess-" + tok, "token=" + tok, "password=hunter2verysecretvalue"} {
		w := gitstore.WriterName("cli-", label)
		if len(secrets.Scan([]byte(w))) != 0 || strings.Contains(w, tok[4:]) || strings.Contains(w, "hunter2") {
			t.Errorf("WriterName(%.12s…) = %q holds the secret", label, w)
		}
		if !strings.HasPrefix(w, "cli-") || len(w) != len("cli-")+16 || gitstore.ValidWriter(w) != nil {
			t.Errorf("WriterName(%.12s…) = %q, want cli- and 16 hex digits", label, w)
		}
		if again := gitstore.WriterName("cli-", label); again != w {
			t.Errorf("WriterName is not deterministic: %q then %q", w, again)
		}
	}
	if w := gitstore.WriterName("cc-", "9e33e208-2b1c-4064-b54f-efdf0f79781b"); w != "cc-9e33e208-2b1c-4064-b54f-efdf0f79781b" {
		t.Errorf("a plain session id changed: %q", w)
	}

	ogEnv(t)
	dir := ogRepo(t)
	st := ogOpen(t, dir)
	ctx := context.Background()
	bad := "cli-sess-" + tok
	_, err := st.Append(ctx, bad, []gitstore.Record{ogRead("a.txt", "a\n")})
	if err == nil || !strings.Contains(err.Error(), "holds a secret") || strings.Contains(err.Error(), tok) || !strings.Contains(err.Error(), secrets.Mask([]byte(tok))) {
		t.Fatalf("Append to %s: %v", "cli-sess-<token>", err)
	}
	if _, err := st.Import(ctx, bad, []gitstore.Record{ogRead("a.txt", "a\n")}, 10); err == nil || strings.Contains(err.Error(), tok) {
		t.Fatalf("Import: %v", err)
	}
	res := ogAppend(t, st, "w", ogRead("a.txt", "a\n"))
	if _, err := st.WriteNote(ctx, "receipts-"+tok, res.Commit, []byte("x\n"), nil); err == nil || strings.Contains(err.Error(), tok) {
		t.Fatalf("WriteNote: %v", err)
	}
	if refs := ogGit(t, dir, "for-each-ref", "--format=%(refname)"); strings.Contains(refs, tok[4:]) {
		t.Fatalf("a ref was written: %s", refs)
	}
}
