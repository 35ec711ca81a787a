package main

// One verify policy (issue 19): `git lossless verify`, `doctor`, the MCP
// server's seal_status (over stdio, as a client calls it) and `receipt
// verify` give the same verdict over the same damaged archives. Before,
// verify reported a dropped writer while doctor printed "OK seal chains"
// and seal_status "1 ok, 0 broken".

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/git-lossless/git-lossless/internal/testkit"
)

// verdictWorld is machine A's clone of a shared bare remote with a
// recorded edit, a commit and its receipt, synced and anchored; machine B
// is another HOME with its own keys.
type verdictWorld struct {
	t      *testing.T
	sbA    *sandbox
	sbB    *sandbox
	bare   string
	a      string
	writer string // A's writer
}

func newVerdictWorld(t *testing.T) *verdictWorld {
	t.Helper()
	w := &verdictWorld{t: t, sbA: anchorSandbox(t), sbB: anchorSandbox(t), bare: testkit.NewBare(t, "remote.git")}
	w.a = filepath.Join(w.sbA.root, "a")
	w.sbA.git(w.sbA.root, "clone", "-q", w.bare, w.a)
	writeFile(t, filepath.Join(w.a, "a.txt"), []byte("a\n"))
	w.sbA.git(w.a, "add", "-A")
	w.sbA.git(w.a, "commit", "-q", "-m", "one")
	w.sbA.git(w.a, "push", "-q", "origin", "HEAD")
	w.sbA.ok(w.a, "key", "generate", "--name", "Machine A")
	writeFile(t, filepath.Join(w.a, "a.txt"), []byte("a, edited by the agent\n"))
	w.sbA.ok(w.a, "record", "--op", "edit", "--session", "s1", "a.txt")
	w.sbA.git(w.a, "commit", "-q", "-am", "two")
	w.sbA.ok(w.a, "receipt")
	w.sbA.ok(w.a, "sync")
	w.sbA.ok(w.a, "anchor", "push")
	for ref := range w.sbA.refsOf(w.a, "refs/lossless/") {
		w.writer = strings.TrimPrefix(ref, "refs/lossless/")
	}
	if !regexp.MustCompile(`^cli-[0-9a-f]{8}-s1$`).MatchString(w.writer) {
		t.Fatalf("A's writer %q: want cli-<clone>-s1", w.writer)
	}
	return w
}

// verdict is one caller's answer.
type verdict struct {
	ok   bool
	text string
}

// verdicts asks all four callers.
func (w *verdictWorld) verdicts() map[string]verdict {
	w.t.Helper()
	out := map[string]verdict{}
	r := w.sbA.run(w.a, "verify")
	out["verify"] = verdict{r.code == 0, r.stdout + r.stderr}
	r = w.sbA.run(w.a, "doctor")
	line := ""
	for _, l := range strings.Split(r.stdout, "\n") {
		if strings.Contains(l, "seal chains") {
			line = l
		}
	}
	if line == "" {
		w.t.Fatalf("doctor printed no seal chains check:\n%s", r.stdout)
	}
	out["doctor"] = verdict{strings.HasPrefix(strings.TrimSpace(line), "OK"), line}
	text := w.sealStatus()
	out["seal_status"] = verdict{!strings.Contains(text, "BREAK") && !strings.Contains(text, "ALARM") && strings.Contains(text, " 0 broken"), text}
	r = w.sbA.run(w.a, "receipt", "verify")
	out["receipt verify"] = verdict{r.code == 0, r.stdout + r.stderr}
	return out
}

// sealStatus calls the MCP tool through `git lossless mcp` over stdio
// with the official Go SDK's client.
func (w *verdictWorld) sealStatus() string {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.Command(e2eBin, "mcp")
	cmd.Dir, cmd.Env = w.a, w.sbA.env
	client := sdk.NewClient(&sdk.Implementation{Name: "verdict-test", Version: "1"}, nil)
	sess, err := client.Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		w.t.Fatalf("mcp connect: %v", err)
	}
	defer sess.Close()
	res, err := sess.CallTool(ctx, &sdk.CallToolParams{Name: "seal_status", Arguments: map[string]any{}})
	if err != nil {
		w.t.Fatalf("seal_status: %v", err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// expect fails unless every caller says ok (want == "") or every caller
// says broken and names one of the kinds in want.
func (w *verdictWorld) expect(damage, want string) {
	w.t.Helper()
	kinds := regexp.MustCompile(want)
	for who, v := range w.verdicts() {
		switch {
		case want == "" && !v.ok:
			w.t.Errorf("%s: %s says broken:\n%s", damage, who, v.text)
		case want != "" && v.ok:
			w.t.Errorf("%s: %s says OK:\n%s", damage, who, v.text)
		case want != "" && !kinds.MatchString(v.text):
			w.t.Errorf("%s: %s does not name %s:\n%s", damage, who, want, v.text)
		}
	}
}

func TestOneVerdictEverywhere(t *testing.T) {
	t.Run("pristine", func(t *testing.T) {
		t.Parallel()
		newVerdictWorld(t).expect("pristine", "")
	})
	t.Run("dropped ref", func(t *testing.T) {
		t.Parallel()
		w := newVerdictWorld(t)
		w.sbA.git(w.a, "update-ref", "-d", "refs/lossless/"+w.writer)
		w.expect("dropped ref", "chain-forked|anchor-mismatch")
	})
	t.Run("rolled-back ref", func(t *testing.T) {
		t.Parallel()
		w := newVerdictWorld(t)
		writeFile(t, filepath.Join(w.a, "b.txt"), []byte("b\n"))
		w.sbA.ok(w.a, "record", "--op", "read", "--session", "s1", "b.txt")
		w.sbA.git(w.a, "update-ref", "refs/lossless/"+w.writer, "refs/lossless/"+w.writer+"~1")
		w.expect("rolled-back ref", "chain-forked")
	})
	t.Run("foreign append", func(t *testing.T) {
		t.Parallel()
		w := newVerdictWorld(t)
		b := filepath.Join(w.sbB.root, "b")
		w.sbB.git(w.sbB.root, "clone", "-q", w.bare, b)
		w.sbB.git(b, "fetch", "-q", "origin", "refs/lossless/*:refs/lossless/*")
		writeFile(t, filepath.Join(b, "evil.txt"), []byte("evil\n"))
		// B's own binary refuses to write into A's writer...
		if r := w.sbB.run(b, "record", "--op", "write", "--writer", w.writer, "evil.txt"); r.code == 0 || !strings.Contains(r.stderr, "owned by another clone") {
			t.Fatalf("B recorded into A's writer: exit %d\n%s", r.code, r.stderr)
		}
		// ...so B forges its bookkeeping, as a modified binary would: A's
		// clone id and ownership of A's writer.
		writeFile(t, filepath.Join(b, ".git", "lossless", "clone"), []byte(strings.Split(w.writer, "-")[1]+"\n"))
		writeFile(t, filepath.Join(b, ".git", "lossless", "own", w.writer), nil)
		w.sbB.ok(b, "record", "--op", "write", "--writer", w.writer, "evil.txt")
		w.sbB.git(b, "push", "-q", "origin", "refs/lossless/"+w.writer)
		before := w.sbA.refsOf(w.a, "refs/lossless/")
		if r := w.sbA.run(w.a, "sync"); r.code != exitFailed || !strings.Contains(r.stdout+r.stderr, "foreign-append") {
			t.Fatalf("sync of a foreign append: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		if after := w.sbA.refsOf(w.a, "refs/lossless/"); after["refs/lossless/"+w.writer] != before["refs/lossless/"+w.writer] {
			t.Fatalf("A adopted B's batch: %v -> %v", before, after)
		}
		w.expect("foreign append", "foreign-append")
	})
	t.Run("forged checkpoint", func(t *testing.T) {
		t.Parallel()
		w := newVerdictWorld(t)
		b := filepath.Join(w.sbB.root, "b")
		w.sbB.git(w.sbB.root, "clone", "-q", w.bare, b)
		writeFile(t, filepath.Join(b, "c.txt"), []byte("c\n"))
		w.sbB.ok(b, "record", "--op", "read", "c.txt")
		cp, _ := w.sbB.anchorPush(b)
		// The checkpoint's text changed after it was signed.
		ref := cp.ref()
		tree := strings.TrimSpace(w.sbB.git(b, "rev-parse", ref+"^{tree}"))
		signed := w.sbB.git(b, "cat-file", "blob", ref+":checkpoint")
		forged := regexp.MustCompile(`(?m)^time .*$`).ReplaceAllString(signed, "time 2020-01-01T00:00:00Z")
		if forged == signed {
			t.Fatalf("no time line in %s", signed)
		}
		blob := strings.TrimSpace(w.sbB.gitIn(b, []byte(forged), "hash-object", "-w", "--stdin"))
		ls := w.sbB.git(b, "ls-tree", tree)
		var entries []string
		for _, l := range strings.Split(strings.TrimSpace(ls), "\n") {
			if strings.HasSuffix(l, "\tcheckpoint") {
				l = "100644 blob " + blob + "\tcheckpoint"
			}
			entries = append(entries, l)
		}
		nt := strings.TrimSpace(w.sbB.gitIn(b, []byte(strings.Join(entries, "\n")+"\n"), "mktree"))
		commit := strings.TrimSpace(w.sbB.git(b, "commit-tree", nt, "-m", "forged"))
		w.sbB.git(b, "push", "-q", "-f", "origin", commit+":"+ref)
		if r := w.sbA.run(w.a, "verify", "--anchor", "origin"); r.code != exitFailed || !strings.Contains(r.stdout, "anchor-bad-signature") {
			t.Fatalf("verify --anchor of a forged checkpoint: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		w.expect("forged checkpoint", "anchor-bad-signature")
	})
	t.Run("damaged witness", func(t *testing.T) {
		t.Parallel()
		w := newVerdictWorld(t)
		wf := filepath.Join(w.a, ".git", "lossless", "witness", w.writer)
		if err := os.WriteFile(wf, []byte("\x00garbage written over the witness\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		w.expect("damaged witness", "witness-damaged")
	})
}

// TestCheckpointChainAcrossRemotesE2E: machine B accepted checkpoint 2
// of machine A's chain from origin; a mirror serving checkpoint 1 of the
// same chain used to be "1 newly accepted" (exit 0). Two HOMEs, two
// anchor keys, real git remotes.
func TestCheckpointChainAcrossRemotesE2E(t *testing.T) {
	t.Parallel()
	w := newVerdictWorld(t) // A anchored checkpoint 1 on origin
	mirror := testkit.NewBare(t, "mirror.git")
	w.sbA.git(w.a, "remote", "add", "mirror", mirror)
	w.sbA.git(w.a, "push", "-q", "mirror", "refs/lossless/*:refs/lossless/*", "refs/notes/*:refs/notes/*")
	cp, _ := w.sbA.anchorPush(w.a, "mirror")
	if cp.n != "1" {
		t.Fatalf("mirror got checkpoint %s, want 1", cp.n)
	}
	writeFile(t, filepath.Join(w.a, "b.txt"), []byte("b\n"))
	w.sbA.ok(w.a, "record", "--op", "read", "--session", "s1", "b.txt")
	w.sbA.ok(w.a, "sync")
	w.sbA.git(w.a, "push", "-q", "mirror", "refs/lossless/*:refs/lossless/*")
	if cp, _ := w.sbA.anchorPush(w.a, "origin"); cp.n != "2" {
		t.Fatalf("origin got checkpoint %s, want 2", cp.n)
	}

	b := filepath.Join(w.sbB.root, "b")
	w.sbB.git(w.sbB.root, "clone", "-q", w.bare, b)
	w.sbB.git(b, "remote", "add", "mirror", mirror)
	if r := w.sbB.ok(b, "verify", "--anchor", "origin"); !strings.Contains(r.stdout, "1 newly accepted") {
		t.Fatalf("verify --anchor origin:\n%s", r.stdout)
	}
	r := w.sbB.run(b, "verify", "--anchor", "mirror")
	if r.code != exitFailed || !strings.Contains(r.stdout, "anchor-rollback") || strings.Contains(r.stdout, "newly accepted") {
		t.Fatalf("verify --anchor mirror (checkpoint 1 after 2): exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// The alarm is open offline, and for the doctor too.
	if r := w.sbB.run(b, "verify"); r.code != exitFailed || !strings.Contains(r.stdout, "anchor-rollback") {
		t.Fatalf("verify after the rollback: exit %d\n%s", r.code, r.stdout)
	}
	if r := w.sbB.run(b, "doctor"); !strings.Contains(r.stdout, "FAIL  seal chains") || !strings.Contains(r.stdout, "anchor-rollback") {
		t.Fatalf("doctor after the rollback:\n%s", r.stdout)
	}
	// A pushes checkpoint 2 to the mirror: the alarm closes.
	w.sbA.anchorPush(w.a, "mirror")
	w.sbB.ok(b, "verify", "--anchor", "mirror")
	w.sbB.ok(b, "verify")
}
