package claudecode_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"filippo.io/age"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/internal/testkit"
	"github.com/git-lossless/git-lossless/internal/testkit/claudetest"
)

// TestClaudeCodeSecretsNeverArchived drives the real Claude Code CLI: the
// scripted model runs Bash `cat .env` and `env` and a Grep inside .env
// with planted secrets of several kinds, and the user's prompt carries a
// pasted key. After the session and `git gc` no planted value is in any
// loose or packed object; verify passes without any identity; `git
// lossless span --reveal` with the local identity prints every value back
// exactly. A second session with lossless.encrypt on stores its spans as
// age ciphertext (still redacted inside) that verify checks without the
// key.
func TestClaudeCodeSecretsNeverArchived(t *testing.T) {
	if testing.Short() {
		t.Skip("drives the real Claude Code CLI")
	}
	claude := claudetest.EnsureClaude(t)
	bin := buildBinary(t)
	ctx := context.Background()

	dir := t.TempDir()
	dir, _ = filepath.EvalSymlinks(dir)
	gitOut(t, dir, "init", "-q")
	sec := testkit.PlantedSecrets(3)
	envFile := fmt.Sprintf("GITHUB_TOKEN=%s\nAWS_ACCESS_KEY_ID=%s\nAWS_SECRET_ACCESS_KEY=%s\nOPENAI_API_KEY=%s\nSLACK_BOT_TOKEN=%s\nSTRIPE_SECRET_KEY=%s\nDB_PASSWORD=%s\n",
		sec["github"], sec["aws-id"], sec["aws-key"], sec["openai"], sec["slack"], sec["stripe"], sec["password"])
	writeFile(t, filepath.Join(dir, ".env"), envFile)
	writeFile(t, filepath.Join(dir, "README.md"), "a project\n")
	idFile := filepath.Join(t.TempDir(), "cfg", "identity.age")

	// `cat -n`, not `cat`: a plain `cat .env` is a shell read of a
	// deny-listed file, whose spans are withheld whole (bash_e2e_test.go);
	// this test is about the redaction of secrets in the spans that are
	// archived.
	const sc, enc = "SCENARIO:secrets", "SCENARIO:encrypted"
	m := claudetest.NewModel(t, claudetest.Script{
		sc: {
			claudetest.Call("Bash", map[string]any{"command": "cat -n .env", "description": "show the env file"}),
			claudetest.Call("Bash", map[string]any{"command": "env", "description": "show the environment"}),
			claudetest.Call("Grep", map[string]any{"pattern": "TOKEN", "path": filepath.Join(dir, ".env"), "output_mode": "content"}),
			claudetest.Say("DONE secrets"),
		},
		enc: {
			claudetest.Call("Bash", map[string]any{"command": "cat -n .env", "description": "again"}),
			claudetest.Say("DONE encrypted"),
		},
	})
	r := claudetest.NewRunner(t, claude, m)
	r.Env = append(r.Env, "XDG_DATA_HOME="+filepath.Join(r.Home, "data"), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"LOSSLESS_IDENTITY_FILE="+idFile,
		// The environment the Bash tool's `env` prints.
		"GH_TOKEN="+sec["github"], "AWS_SECRET_ACCESS_KEY="+sec["aws-key"], "STRIPE_API_KEY="+sec["stripe"])
	inst := exec.Command(bin, "install", "claude-code", "--scope", "user", "--apply", "--command", bin)
	inst.Env = append(os.Environ(), "CLAUDE_CONFIG_DIR="+r.ConfigDir, "HOME="+r.Home)
	if out, err := inst.CombinedOutput(); err != nil {
		t.Fatalf("install: %v\n%s", err, out)
	}

	res, err := r.Run(ctx, dir, sc+" deploy with my key "+sec["anthropic"], "--allowedTools", "Bash,Grep")
	if err != nil {
		t.Fatalf("run: %v\n%s", err, m.Log())
	}
	// The tools really ran and the model saw the secrets: otherwise the
	// object search below proves nothing.
	results := m.ToolResults(sc)
	if len(results) != 3 || !strings.Contains(results[0].Text, sec["github"]) || !strings.Contains(results[1].Text, sec["aws-key"]) ||
		!strings.Contains(results[2].Text, sec["github"]) {
		t.Fatalf("tool results did not carry the planted secrets: %+v\n%s", results, m.Log())
	}

	st, err := gitstore.OpenDir(dir, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	spans, err := st.Events(ctx, gitstore.Query{Session: res.SessionID, Op: "span"})
	if err != nil {
		t.Fatal(err)
	}
	var redacted []gitstore.Event
	for _, e := range spans {
		if len(e.Extra["redacted"]) > 0 {
			redacted = append(redacted, e)
		}
	}
	// The prompt, the two Bash results, the Grep result (and tool inputs
	// naming the key) were redacted.
	if len(redacted) < 4 {
		t.Fatalf("%d of %d spans redacted, want the prompt and three tool results at least", len(redacted), len(spans))
	}
	vaults, _ := st.Events(ctx, gitstore.Query{Session: res.SessionID, Op: gitstore.OpVault})
	if len(vaults) == 0 {
		t.Fatal("no vault event")
	}
	if fi, err := os.Stat(idFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("local identity: %v %v", fi, err)
	}

	// Second session, encryption on.
	team, _ := age.GenerateX25519Identity()
	teamFile := filepath.Join(t.TempDir(), "team.age")
	os.WriteFile(teamFile, []byte(team.String()+"\n"), 0o600)
	gitOut(t, dir, "config", "lossless.encrypt", "true")
	gitOut(t, dir, "config", "lossless.recipient", team.Recipient().String())
	res2, err := r.Run(ctx, dir, enc+" once more", "--allowedTools", "Bash")
	if err != nil {
		t.Fatalf("run 2: %v\n%s", err, m.Log())
	}
	st, _ = gitstore.OpenDir(dir, gitstore.Options{})
	spans2, _ := st.Events(ctx, gitstore.Query{Session: res2.SessionID, Op: "span"})
	var encrypted, encRedacted int
	for _, e := range spans2 {
		if gitstore.IsEncrypted(&e) {
			encrypted++
		}
		if gitstore.IsEncrypted(&e) && len(e.Extra["redacted"]) > 0 {
			encRedacted++
		}
	}
	if len(spans2) == 0 || encrypted != len(spans2) || encRedacted == 0 {
		t.Fatalf("encrypted session: %d spans, %d encrypted, %d encrypted and redacted", len(spans2), encrypted, encRedacted)
	}

	// After gc: no planted value in any loose or packed object.
	gitOut(t, dir, "gc", "-q", "--prune=now")
	if !secretIn(t, dir, "cat -n .env") {
		t.Fatal("the Bash call is in no object: the search proves nothing")
	}
	for kind, v := range sec {
		if secretIn(t, dir, v) {
			t.Errorf("planted %s secret found in an object", kind)
		}
	}
	gitOut(t, dir, "fsck", "--strict")

	// Verify without any identity.
	lossless := func(env []string, args ...string) (string, error) {
		c := exec.Command(bin, args...)
		c.Dir = dir
		c.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "LOSSLESS_AGE_IDENTITY=")
		c.Env = append(c.Env, env...)
		out, err := c.CombinedOutput()
		return string(out), err
	}
	noID := []string{"LOSSLESS_IDENTITY_FILE=" + filepath.Join(t.TempDir(), "absent.age")}
	if out, err := lossless(noID, "verify", "--all"); err != nil {
		t.Fatalf("verify without identity: %v\n%s", err, out)
	}
	// Reveal with the local identity: every value back, exactly.
	withID := []string{"LOSSLESS_IDENTITY_FILE=" + idFile}
	var all strings.Builder
	for _, e := range redacted {
		ref := fmt.Sprintf("%s#%d", e.Writer, e.Seq)
		out, err := lossless(withID, "span", "--reveal", ref)
		if err != nil {
			t.Fatalf("span --reveal %s: %v\n%s", ref, err, out)
		}
		all.WriteString(out)
		// Without the identity the placeholders stay, and it says so.
		out, err = lossless(noID, "span", "--reveal", ref)
		if err == nil || strings.Contains(out, sec["github"]) || !strings.Contains(out, "[secret:") {
			t.Fatalf("span --reveal without identity: %v\n%s", err, out)
		}
	}
	for kind, v := range sec {
		if !strings.Contains(all.String(), v) {
			t.Errorf("%s not revealed", kind)
		}
	}
	// The encrypted session: locked without the span key, revealed with it.
	for _, e := range spans2 {
		if len(e.Extra["redacted"]) == 0 {
			continue
		}
		ref := fmt.Sprintf("%s#%d", e.Writer, e.Seq)
		if out, err := lossless(noID, "span", ref); err == nil || !strings.Contains(out, "locked") {
			t.Fatalf("encrypted span without identity: %v\n%s", err, out)
		}
		out, err := lossless(withID, "span", "--reveal", "--identity", teamFile, ref)
		if err != nil || !bytes.Contains([]byte(out), []byte(sec["github"])) {
			t.Fatalf("encrypted span revealed: %v\n%s", err, out)
		}
	}
}
