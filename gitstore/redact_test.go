package gitstore

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"filippo.io/age"

	"github.com/git-lossless/git-lossless/seal"
	"github.com/git-lossless/git-lossless/secrets"
)

// fakeGitHubToken builds a format-valid, obviously fake token (never a
// literal in the source, so no push protection fires on this file).
func fakeGitHubToken(seed byte) string {
	b := make([]byte, 36)
	for i := range b {
		b[i] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"[(int(seed)*7+i*13)%62]
	}
	return "gh" + "p_" + string(b)
}

// isolatedIdentity points the local identity at a fresh file of the test.
func isolatedIdentity(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "cfg", "git-lossless", IdentityFileName)
	t.Setenv("LOSSLESS_IDENTITY_FILE", p)
	return p
}

func TestRedactSpanAtWrite(t *testing.T) {
	idPath := isolatedIdentity(t)
	dir, s := cryptRepo(t, "")
	ctx := context.Background()
	tok := fakeGitHubToken(1)
	tok2 := fakeGitHubToken(2)
	span := []byte(`{"type":"tool_result","content":"GITHUB_TOKEN=` + tok + `\nother ` + tok2 + ` end"}`)
	file := []byte("token = \"" + tok + "\"\n")
	recs := []Record{
		{Event: Event{Op: "span", Source: "sweep", Session: "s1", Key: "span:1"}, Content: span, HasContent: true, Encrypt: true},
		{Event: Event{Op: "read", Source: "hook", Session: "s1", Path: "config.py", Key: "toolu_1"}, Content: file, HasContent: true},
	}
	if _, err := os.Stat(idPath); !os.IsNotExist(err) {
		t.Fatalf("identity exists before any secret: %v", err)
	}
	res, err := s.Append(ctx, "cc-s1", recs)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Events) != 3 || res.Events[2].Op != OpVault {
		t.Fatalf("want span, read, vault; got %d events", len(res.Events))
	}
	// The identity was created on first use, 0600 in a 0700 directory.
	fi, err := os.Stat(idPath)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("identity: %v %v", fi, err)
	}
	if di, _ := os.Stat(filepath.Dir(idPath)); di.Mode().Perm() != 0o700 {
		t.Fatalf("identity dir mode %v", di.Mode().Perm())
	}

	sp, rd, vault := res.Events[0], res.Events[1], res.Events[2]
	if string(sp.Extra["redacted"]) != "2" || sp.vault != nil {
		t.Fatalf("span event: redacted=%s, vault kept in the returned event: %v", sp.Extra["redacted"], sp.vault != nil)
	}
	stored, err := s.Objects().Blob(ctx, sp.Blob)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(stored, []byte(tok)) || bytes.Contains(stored, []byte(tok2)) {
		t.Fatalf("the span was stored with its secret: %s", stored)
	}
	refs := secrets.Placeholders(stored)
	if len(refs) != 2 || refs[0].ID == refs[1].ID || len(refs[0].ID) != PlaceholderIDLen {
		t.Fatalf("placeholders %+v in %s", refs, stored)
	}
	if !json.Valid(stored) {
		t.Fatalf("redacted span is not valid JSON: %s", stored)
	}
	// The file version is the exact bytes, marked.
	fb, _ := s.Objects().Blob(ctx, rd.Blob)
	if !bytes.Equal(fb, file) || string(rd.Extra["secrets"]) != "1" {
		t.Fatalf("file version rewritten or not marked: %q secrets=%s", fb, rd.Extra["secrets"])
	}
	if !IsEncrypted(&vault) || string(vault.Extra["count"]) != "2" {
		t.Fatalf("vault event: %s", vault.Raw)
	}

	// Verify works without any identity; git agrees the objects are sound.
	rep, err := s.Verify(ctx, "cc-s1", seal.Options{})
	if err != nil || !rep.OK() {
		t.Fatalf("verify: %+v %v", rep, err)
	}
	gitRun(t, dir, "fsck", "--strict")

	// The token is in exactly one object: the file version (marked).
	gitRun(t, dir, "gc", "-q", "--prune=now")
	out := gitRun(t, dir, "cat-file", "--batch-all-objects", "--batch")
	if n := strings.Count(out, tok2); n != 0 {
		t.Errorf("span-only token in %d objects", n)
	}
	if n := strings.Count(out, tok); n != 1 {
		t.Errorf("token in %d objects, want 1 (the file version)", n)
	}

	// With the local identity the span comes back byte for byte.
	got, n, left, err := s.Crypt().Reveal(ctx, "cc-s1", stored, nil)
	if err != nil || n != 2 || left != 0 || !bytes.Equal(got, span) {
		t.Fatalf("reveal: %q n=%d left=%d %v", got, n, left, err)
	}
	// Without it (another user's identity only) the placeholders stay.
	t.Setenv("LOSSLESS_IDENTITY_FILE", filepath.Join(t.TempDir(), "none.age"))
	other, _ := age.GenerateX25519Identity()
	got, n, left, err = s.Crypt().Reveal(ctx, "cc-s1", stored, []age.Identity{other})
	if err != nil || n != 0 || left != 2 || !bytes.Equal(got, stored) {
		t.Fatalf("reveal with a foreign identity: n=%d left=%d %v", n, left, err)
	}
	v, err := s.Crypt().OpenVault(ctx, "cc-s1", nil)
	if err != nil || v.Entries != 1 || v.Locked != 1 || v.Len() != 0 {
		t.Fatalf("locked vault: %+v %v", v, err)
	}
}

func TestRedactDedupeAddsNoVault(t *testing.T) {
	isolatedIdentity(t)
	_, s := cryptRepo(t, "")
	ctx := context.Background()
	rec := Record{Event: Event{Op: "span", Source: "sweep", Key: "span:x"}, Content: []byte("key " + fakeGitHubToken(3)), HasContent: true}
	if res, err := s.Append(ctx, "w", []Record{rec}); err != nil || len(res.Events) != 2 {
		t.Fatalf("first: %v %v", res.Events, err)
	}
	res, err := s.Append(ctx, "w", []Record{rec})
	if err != nil || len(res.Events) != 0 || res.Deduped != 1 {
		t.Fatalf("second append of the same key stored %d events (deduped %d): %v", len(res.Events), res.Deduped, err)
	}
	// The same through Import (the sweep's bulk path).
	recs := []Record{rec, {Event: Event{Op: "span", Source: "sweep", Key: "span:y"}, Content: []byte("another " + fakeGitHubToken(4)), HasContent: true}}
	ir, err := s.Import(ctx, "w", recs, 1)
	if err != nil || len(ir.Events) != 2 || ir.Events[1].Op != OpVault || ir.Deduped != 1 {
		t.Fatalf("import: %d events, deduped %d, %v", len(ir.Events), ir.Deduped, err)
	}
	rep, err := s.Verify(ctx, "w", seal.Options{})
	if err != nil || !rep.OK() {
		t.Fatalf("verify: %+v %v", rep, err)
	}
}

func TestRedactOffAndEncrypted(t *testing.T) {
	isolatedIdentity(t)
	tok := fakeGitHubToken(5)
	ctx := context.Background()

	// lossless.redact off: stored as it is, no vault.
	dir, _ := cryptRepo(t, "")
	gitRun(t, dir, "config", "lossless.redact", "off")
	s, err := OpenDir(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Append(ctx, "w", []Record{{Event: Event{Op: "span", Source: "cli"}, Content: []byte(tok), HasContent: true}})
	if err != nil || len(res.Events) != 1 {
		t.Fatalf("%v %v", res.Events, err)
	}
	if b, _ := s.Objects().Blob(ctx, res.Events[0].Blob); string(b) != tok {
		t.Fatalf("redact off changed the span: %q", b)
	}
	gitRun(t, dir, "config", "lossless.redact", "maybe")
	s, _ = OpenDir(dir, Options{})
	if _, err := s.Append(ctx, "w", []Record{{Event: Event{Op: "span", Source: "cli"}, Content: []byte("x"), HasContent: true}}); err == nil || !strings.Contains(err.Error(), "lossless.redact") {
		t.Fatalf("a bad lossless.redact value: %v", err)
	}

	// Encryption on: the redacted text is what is encrypted.
	team, _ := age.GenerateX25519Identity()
	_, s = cryptRepo(t, "true", team.Recipient().String())
	span := []byte(`{"text":"my key is ` + tok + `"}`)
	res, err = s.Append(ctx, "w", []Record{{Event: Event{Op: "span", Source: "sweep"}, Content: span, HasContent: true, Encrypt: true}})
	if err != nil || len(res.Events) != 2 {
		t.Fatalf("%v %v", res.Events, err)
	}
	plain, err := s.Crypt().OpenContent(ctx, res.Events[0], []age.Identity{team})
	if err != nil || bytes.Contains(plain, []byte(tok)) || len(secrets.Placeholders(plain)) != 1 {
		t.Fatalf("decrypted span holds the secret or no placeholder: %q %v", plain, err)
	}
	// The team key opens the span but not the vault; the local identity does.
	if v, _ := s.Crypt().OpenVault(ctx, "w", []age.Identity{team}); v.Len() != 1 {
		t.Fatalf("vault with the local identity present: %d values", v.Len())
	}
	got, n, _, err := s.Crypt().Reveal(ctx, "w", plain, nil)
	if err != nil || n != 1 || !bytes.Equal(got, span) {
		t.Fatalf("reveal: %q %d %v", got, n, err)
	}
}

func TestLocalIdentityConcurrentCreate(t *testing.T) {
	isolatedIdentity(t)
	const n = 8
	var wg sync.WaitGroup
	keys := make([]string, n)
	errs := make([]error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			id, err := LocalIdentity(true)
			errs[i] = err
			if id != nil {
				keys[i] = id.String()
			}
		}(i)
	}
	wg.Wait()
	for i := range keys {
		if errs[i] != nil || keys[i] == "" || keys[i] != keys[0] {
			t.Fatalf("creator %d: %v, key differs: %v", i, errs[i], keys[i] != keys[0])
		}
	}
	p, _ := LocalIdentityPath()
	ents, _ := os.ReadDir(filepath.Dir(p))
	if len(ents) != 1 {
		t.Fatalf("temporary files left: %v", ents)
	}
}

func TestRedactWithoutIdentityStillRedacts(t *testing.T) {
	// A config dir that cannot be created: a file where the dir should be.
	base := t.TempDir()
	os.WriteFile(filepath.Join(base, "cfg"), []byte("x"), 0o600)
	t.Setenv("LOSSLESS_IDENTITY_FILE", filepath.Join(base, "cfg", "git-lossless", IdentityFileName))
	_, s := cryptRepo(t, "")
	var warned []string
	s.warn = func(m string) { warned = append(warned, m) }
	tok := fakeGitHubToken(6)
	res, err := s.Append(context.Background(), "w", []Record{{Event: Event{Op: "span", Source: "cli"}, Content: []byte(tok), HasContent: true}})
	if err != nil || len(res.Events) != 1 {
		t.Fatalf("%v %v", res.Events, err)
	}
	b, _ := s.Objects().Blob(context.Background(), res.Events[0].Blob)
	if bytes.Contains(b, []byte(tok)) || len(warned) != 1 || !strings.Contains(warned[0], "without a vault") {
		t.Fatalf("stored %q, warnings %q", b, warned)
	}
}

func TestRedactWriterRewritesOldArchive(t *testing.T) {
	isolatedIdentity(t)
	team, _ := age.GenerateX25519Identity()
	dir, _ := cryptRepo(t, "true", team.Recipient().String())
	gitRun(t, dir, "config", "lossless.redact", "off") // an archive from before redaction
	s, err := OpenDir(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	t1, t2, t3 := fakeGitHubToken(11), fakeGitHubToken(12), fakeGitHubToken(13)
	recs := []Record{
		{Event: Event{Op: "span", Source: "sweep", Key: "span:a"}, Content: []byte(`{"text":"` + t1 + `"}`), HasContent: true},
		{Event: Event{Op: "span", Source: "proxy", Extra: map[string]json.RawMessage{"span": json.RawMessage(`"sp-aaaaaaaaaaaaaaaa"`)}}, Content: []byte(`{"m":"` + t2 + `"}`), HasContent: true, Encrypt: true},
		{Event: Event{Op: "span", Source: "sweep", Key: "span:clean"}, Content: []byte(`{"text":"nothing here"}`), HasContent: true},
		{Event: Event{Op: "read", Source: "hook", Path: "k.txt", Key: "toolu_9"}, Content: []byte(t3), HasContent: true},
	}
	if _, err := s.Append(ctx, "w", recs); err != nil {
		t.Fatal(err)
	}
	gitRun(t, dir, "config", "--unset", "lossless.redact")
	s, _ = OpenDir(dir, Options{})

	// Without the team identity the encrypted span cannot be checked.
	res, err := s.RedactWriter(ctx, "w", nil, true)
	if err != nil || res.Locked != 1 || res.Replaced != 1 || res.FileVersions != 1 || res.Scanned != 2 {
		t.Fatalf("dry run without identity: %+v %v", res, err)
	}
	ids := []age.Identity{team}
	dry, err := s.RedactWriter(ctx, "w", ids, true)
	if err != nil || dry.Replaced != 2 || dry.Secrets != 2 || len(dry.Prune.Blobs) != 2 {
		t.Fatalf("dry run: %+v %v", dry, err)
	}
	if hs, _ := s.Writers(ctx); hs[0].Seq != 4 {
		t.Fatalf("dry run wrote: head seq %d", hs[0].Seq)
	}
	res, err = s.RedactWriter(ctx, "w", ids, false)
	if err != nil || res.Replaced != 2 || res.Prune.Recorded == nil {
		t.Fatalf("redact: %+v %v", res, err)
	}
	rep, err := s.Verify(ctx, "w", seal.Options{})
	if err != nil || !rep.OK() || len(rep.Pruned) != 2 {
		t.Fatalf("verify after redact: %+v %v", rep, err)
	}
	gitRun(t, dir, "fsck", "--strict")
	gitRun(t, dir, "gc", "-q", "--prune=now")
	out := gitRun(t, dir, "cat-file", "--batch-all-objects", "--batch")
	for _, tok := range []string{t1, t2} {
		if strings.Contains(out, tok) {
			t.Errorf("a span's secret is still in an object after redact")
		}
	}
	if !strings.Contains(out, t3) {
		t.Errorf("the file version was rewritten: it must stay as the model saw it")
	}
	// The copies name their originals, and reveal gives the originals back.
	evs, _ := s.Events(ctx, Query{Writers: []string{"w"}})
	var copies int
	for _, e := range evs {
		if len(e.Extra["replaces"]) == 0 {
			continue
		}
		copies++
		c, err := s.Crypt().OpenContent(ctx, e, ids)
		if err != nil {
			t.Fatal(err)
		}
		got, n, _, err := s.Crypt().Reveal(ctx, "w", c, nil)
		if err != nil || n != 1 || !(bytes.Contains(got, []byte(t1)) || bytes.Contains(got, []byte(t2))) {
			t.Fatalf("reveal of %s: %q %v", e.Raw, got, err)
		}
		if e.Source == "proxy" && (string(e.Extra["span"]) != `"sp-aaaaaaaaaaaaaaaa"` || !IsEncrypted(&e)) {
			t.Errorf("the proxy span's copy lost its id or its encryption: %s", e.Raw)
		}
	}
	if copies != 2 {
		t.Fatalf("%d copies", copies)
	}
	// A second run changes nothing.
	again, err := s.RedactWriter(ctx, "w", ids, false)
	if err != nil || again.Replaced != 0 || again.Prune.Recorded != nil {
		t.Fatalf("second run: %+v %v", again, err)
	}
}

// TestRedactNearMissesUntouched: a span full of things that look random
// but are not secrets — git sha1s, UUIDs, lockfile integrity hashes, a
// base64 image, minified JS — is stored byte for byte: no placeholder, no
// vault, not even a local identity created.
func TestRedactNearMissesUntouched(t *testing.T) {
	idPath := isolatedIdentity(t)
	_, s := cryptRepo(t, "")
	ctx := context.Background()
	img := make([]byte, 4096)
	for i := range img {
		img[i] = byte(i*31 + i/7)
	}
	var b strings.Builder
	b.WriteString("commit 3b18e512dba79e4c8300dd08aeb37f8e728b8dad\nMerge: e83c516 1e7ec5e\n")
	b.WriteString(`{"id":"9e33e208-2b1c-4064-b54f-efdf0f79781b","parentUuid":"77696ee7-01f6-4eba-a895-15da976de01b"}` + "\n")
	b.WriteString(`"node_modules/left-pad": {"version": "1.3.0", "resolved": "https://registry.npmjs.org/left-pad/-/left-pad-1.3.0.tgz", "integrity": "sha512-XI5MPzVNApjAyhQzphX8BkmKsKUxD4LdyK24iZeQzQTWwSyF6U5WcgJnRZG4Wf+kr09+pjiSXPzL5gAoz/vfiQ=="}` + "\n")
	b.WriteString(`<img src="data:image/png;base64,` + base64.StdEncoding.EncodeToString(img) + `">` + "\n")
	b.WriteString(`!function(e,t){"object"==typeof exports?module.exports=t():e.auth=t()}(this,function(){var n={apiKey:null,password:"",token:void 0};return n});` + "\n")
	b.WriteString("sha256  c0535e4be2b79ffd93291305436bf889314e4a3faec05ecffcbb7df31ad9e51a  go.sum\n")
	span, err := json.Marshal(map[string]string{"type": "tool_result", "content": b.String()})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Append(ctx, "cc-near", []Record{{Event: Event{Op: "span", Source: "sweep", Session: "s1", Key: "span:near"}, Content: span, HasContent: true}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Events) != 1 {
		t.Fatalf("%d events, want the span alone (no vault)", len(res.Events))
	}
	ev := res.Events[0]
	if len(ev.Extra["redacted"]) != 0 {
		t.Fatalf("near misses were redacted: %s", ev.Extra["redacted"])
	}
	got, err := s.Objects().Blob(ctx, ev.Blob)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, span) {
		t.Fatalf("stored span differs from what was given:\n%s", got)
	}
	if _, err := os.Stat(idPath); !os.IsNotExist(err) {
		t.Fatalf("a local identity was created with nothing to vault: %v", err)
	}
}
