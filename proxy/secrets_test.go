package proxy

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/internal/testkit"
	"github.com/git-lossless/git-lossless/internal/testkit/stubbackend"
	"github.com/git-lossless/git-lossless/seal"
)

// An OpenAI-style tool-calling conversation carrying secrets (a pasted key
// in a user message, a `cat .env` tool result) is compacted by the proxy
// into a real git archive: the spans are stored redacted, no planted value
// is in any object after gc, verify passes without any identity, and the
// vault gives every value back byte for byte.
func TestProxySpansRedacted(t *testing.T) {
	t.Setenv("LOSSLESS_IDENTITY_FILE", filepath.Join(t.TempDir(), "id", "identity.age"))
	dir, store := bareRepo(t, "")
	sec := testkit.PlantedSecrets(1)
	env := fmt.Sprintf("GITHUB_TOKEN=%s\nAWS_ACCESS_KEY_ID=%s\nAWS_SECRET_ACCESS_KEY=%s\nOPENAI_API_KEY=%s\nSLACK_BOT_TOKEN=%s\nSTRIPE_SECRET_KEY=%s\nDB_PASSWORD=%s\n",
		sec["github"], sec["aws-id"], sec["aws-key"], sec["openai"], sec["slack"], sec["stripe"], sec["password"])

	s := newStack(t, &stubbackend.Server{Kind: stubbackend.LlamaCpp, Window: 8192}, func(c *Config) {
		c.Archive, c.Store, c.Writer = nil, store, "proxy-secrets"
		c.LogPath = filepath.Join(dir, "lossless", "proxy", LogFile)
	})
	c := stubbackend.NewConversation("stub-model", "You are a coding agent.")
	c.User("Here is my Anthropic key, use it for the deploy: " + sec["anthropic"])
	c.ToolCall("call_1", "bash", `{"command":"cat .env"}`, env)
	for i := 1; i <= 10; i++ {
		c.User(stubbackend.DemoTurn(i))
		c.Assistant("ok")
	}
	c.User("go on")
	if code, resp := s.post("/v1/chat/completions", c.Body(false)); code != 200 {
		t.Fatalf("HTTP %d %s", code, resp)
	}
	if !isCompacted(s.lastChat().Body) {
		t.Fatal("the request was not compacted: the test proves nothing")
	}
	ctx := context.Background()
	evs, err := store.Events(ctx, gitstore.Query{Writers: []string{"proxy-secrets"}})
	if err != nil {
		t.Fatal(err)
	}
	var spans, vaults int
	var docs [][]byte
	for _, e := range evs {
		switch e.Op {
		case "span":
			spans++
			b, err := store.Crypt().OpenContent(ctx, e, nil)
			if err != nil {
				t.Fatal(err)
			}
			docs = append(docs, b)
		case gitstore.OpVault:
			vaults++
		}
	}
	if spans == 0 || vaults != 1 {
		t.Fatalf("%d spans, %d vault events", spans, vaults)
	}
	if rep, err := store.Verify(ctx, "proxy-secrets", seal.Options{}); err != nil || !rep.OK() {
		t.Fatalf("verify without identity: %+v %v", rep, err)
	}
	if out, err := exec.Command("git", "-C", dir, "gc", "-q", "--prune=now").CombinedOutput(); err != nil {
		t.Fatalf("gc: %v %s", err, out)
	}
	all, err := exec.Command("git", "-C", dir, "cat-file", "--batch-all-objects", "--batch").Output()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(all, []byte("cat .env")) {
		t.Fatal("the tool call is in no object: the search below proves nothing")
	}
	for kind, v := range sec {
		if bytes.Contains(all, []byte(v)) {
			t.Errorf("%s secret is in an object of the archive", kind)
		}
	}
	// The vault gives every value back.
	var revealed []byte
	for _, d := range docs {
		got, _, left, err := store.Crypt().Reveal(ctx, "proxy-secrets", d, nil)
		if err != nil || left != 0 {
			t.Fatalf("reveal: %d left, %v", left, err)
		}
		revealed = append(revealed, got...)
	}
	for kind, v := range sec {
		if !strings.Contains(string(revealed), v) {
			t.Errorf("%s secret not revealed", kind)
		}
	}
}
