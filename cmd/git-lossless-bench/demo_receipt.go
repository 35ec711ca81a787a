package main

import (
	"bytes"
	"fmt"
	"github.com/git-lossless/git-lossless/internal/cli"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/hooks/harnesses"
	"github.com/git-lossless/git-lossless/receipt"
	"github.com/git-lossless/git-lossless/receipt/note"
)

// receipt is the demo's last step: a human touches up README.md (which the
// agent read), everything is committed, and the commit's receipt is built,
// signed with a throwaway key, stored as a git note, printed and verified —
// by our verify, and by plain gpg and git when gpg is on PATH (with a
// keyring inside the demo's temporary directory).
func (d *demoRun) receipt(st *gitstore.Store) error {
	d.header(6, "Commit, and the commit's signed receipt (git lossless receipt)")
	readme := filepath.Join(d.repo, "README.md")
	old, err := os.ReadFile(readme)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	if err := os.WriteFile(readme, append(old, "\nStock below 20 is flagged.\n"...), 0o600); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	fmt.Fprintf(d.out, "  a human adds a line to README.md after the agent read it; then:\n")
	fmt.Fprintf(d.out, "  $ git add -A && git commit -m 'flag low stock'\n")
	if _, err := d.git(d.repo, "add", "-A"); err != nil {
		return err
	}
	if _, err := d.git(d.repo, "commit", "-q", "-m", "flag low stock"); err != nil {
		return err
	}
	head, err := d.git(d.repo, "rev-parse", "HEAD")
	if err != nil {
		return err
	}
	commit := strings.TrimSpace(string(head))

	// A throwaway key: the demo never touches your config dir. For real
	// use, `git lossless key generate` creates one there.
	key, err := receipt.GenerateKey("git-lossless demo", "demo@git-lossless.invalid")
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	r, err := receipt.Build(d.ctx, st, commit, receipt.Options{HarnessOf: harnesses.WriterHarness()})
	if err != nil {
		return fmt.Errorf("demo: build receipt: %w", err)
	}
	notesCommit, signed, err := receipt.Save(d.ctx, st, r, key)
	if err != nil {
		return fmt.Errorf("demo: store receipt: %w", err)
	}
	fmt.Fprintf(d.out, "  $ git lossless receipt   (signed with a throwaway Ed25519 key %s)\n\n", strings.ToUpper(key.ID()))
	var buf bytes.Buffer
	cli.WriteReceipt(&buf, r, key.Writer(), "built and stored in notes commit "+cli.Short12(notesCommit))
	d.indent(buf.String(), "    ")
	want := map[string]string{"src/app.go": note.Written, "src/report.go": note.Written, "README.md": note.ChangedAfter}
	for _, p := range r.Paths {
		if w, ok := want[p.Path]; ok && p.Status != w {
			d.fail("receipt says %s is %s, expected %s", p.Path, p.Status, w)
		}
		delete(want, p.Path)
	}
	for p := range want {
		d.fail("receipt does not list %s", p)
	}

	kr := &receipt.Keyring{}
	if err := kr.Add(key); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	found, err := receipt.Find(d.ctx, st, commit)
	if err != nil || len(found) != 1 {
		return fmt.Errorf("demo: read the stored receipt back: %v (%d found)", err, len(found))
	}
	res := receipt.Verify(d.ctx, st, found[0], kr)
	fmt.Fprintf(d.out, "\n  $ git lossless receipt verify\n")
	buf.Reset()
	cli.PrintVerify(&buf, res)
	d.indent(buf.String(), "    ")
	if !res.OK() {
		d.fail("the fresh receipt did not verify")
	}
	d.plainReceiptCheck(key, signed)
	return nil
}

// plainReceiptCheck verifies the note and the notes commit with plain gpg
// and git, in a GNUPGHOME inside the demo directory.
func (d *demoRun) plainReceiptCheck(key *receipt.Key, signed []byte) {
	ref := gitstore.NotesPrefix + key.Writer()
	fmt.Fprintf(d.out, "\n  The same with plain git and gpg:\n")
	if _, err := exec.LookPath("gpg"); err != nil {
		fmt.Fprintf(d.out, "    (gpg is not on PATH: skipped) try\n      git notes --ref=lossless/%s show HEAD | gpg --verify\n", key.Writer())
		return
	}
	home := filepath.Join(d.root, "gnupg")
	if err := os.MkdirAll(home, 0o700); err != nil {
		d.fail("create %s: %v", home, err)
		return
	}
	env := append(append([]string(nil), d.gitEnv...), "GNUPGHOME="+home)
	defer func() {
		kill := exec.Command("gpgconf", "--kill", "all")
		kill.Env = env
		kill.Run()
	}()
	runIn := func(stdin []byte, name string, args ...string) (string, error) {
		cmd := exec.CommandContext(d.ctx, name, args...)
		cmd.Dir, cmd.Env = d.repo, env
		if stdin != nil {
			cmd.Stdin = bytes.NewReader(stdin)
		}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	pub, err := key.ArmoredPublic()
	if err != nil {
		d.fail("export key: %v", err)
		return
	}
	if out, err := runIn([]byte(pub), "gpg", "--batch", "--import"); err != nil {
		d.fail("gpg --import: %v: %s", err, out)
		return
	}
	goodLine := func(out string) string {
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, "Good signature") {
				return strings.TrimSpace(l)
			}
		}
		return ""
	}
	fmt.Fprintf(d.out, "    $ git lossless key export | gpg --import   (into a keyring under the demo directory)\n")
	fmt.Fprintf(d.out, "    $ git notes --ref=lossless/%s show HEAD | gpg --verify\n", key.Writer())
	shown, err := runIn(nil, "git", "notes", "--ref=lossless/"+key.Writer(), "show", "HEAD")
	switch {
	case err != nil:
		d.fail("git notes show: %v: %s", err, shown)
	case shown != string(signed):
		d.fail("git notes show printed another note")
	default:
		out, err := runIn([]byte(shown), "gpg", "--verify")
		if g := goodLine(out); err == nil && g != "" {
			fmt.Fprintf(d.out, "      %s\n", g)
		} else {
			d.fail("gpg --verify of the note: %v: %s", err, out)
		}
	}
	fmt.Fprintf(d.out, "    $ git verify-commit %s\n", ref)
	out, err := runIn(nil, "git", "verify-commit", ref)
	if g := goodLine(out); err == nil && g != "" {
		fmt.Fprintf(d.out, "      %s\n", g)
	} else {
		d.fail("git verify-commit: %v: %s", err, out)
	}
	fmt.Fprintf(d.out, "    $ git log --notes='lossless/*' -1   shows the receipt under the commit\n")
	if out, err := runIn(nil, "git", "log", "--notes=lossless/*", "-1"); err != nil || !strings.Contains(out, note.Header) {
		d.fail("git log --notes does not show the receipt: %v", err)
	}
}
