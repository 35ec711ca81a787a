package geminitest_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/git-lossless/git-lossless/internal/testkit/geminitest"
)

func post(t *testing.T, url, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestModelSideCalls covers the calls the CLI runs did not make: a
// JSON-mode request gets JSON shaped by its schema, countTokens a count,
// and requests past the cap a 400.
func TestModelSideCalls(t *testing.T) {
	m := geminitest.NewModel(t, geminitest.Script{"SCENARIO:x": {geminitest.Say("hi")}})
	m.SetPromptTokens(func(geminitest.Request) int { return 42 })
	m.MaxRequests = 3
	base := m.URL() + "/v1beta/models/gemini-2.5-flash"

	code, body := post(t, base+":generateContent", `{"contents":[{"role":"user","parts":[{"text":"who speaks next?"}]}],
		"generationConfig":{"responseMimeType":"application/json","responseJsonSchema":{"type":"object",
		"properties":{"reasoning":{"type":"string"},"next_speaker":{"type":"string","enum":["model","user"]},"confidence":{"type":"number"}}}}}`)
	var resp struct {
		Candidates []struct {
			Content struct{ Parts []struct{ Text string } }
		}
	}
	if err := json.Unmarshal([]byte(body), &resp); code != 200 || err != nil || len(resp.Candidates) != 1 {
		t.Fatalf("JSON-mode answer %d %s", code, body)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(resp.Candidates[0].Content.Parts[0].Text), &v); err != nil ||
		v["next_speaker"] != "user" || v["confidence"] != 0.0 || v["reasoning"] == nil {
		t.Errorf("JSON-mode text %q", resp.Candidates[0].Content.Parts[0].Text)
	}

	if code, body := post(t, base+":countTokens", `{"contents":[]}`); code != 200 || strings.TrimSpace(body) != `{"totalTokens":42}` {
		t.Errorf("countTokens %d %s", code, body)
	}
	if code, body := post(t, base+":streamGenerateContent?alt=sse", `{"contents":[{"role":"user","parts":[{"text":"SCENARIO:x"}]}],"tools":[{}]}`); code != 200 ||
		!strings.HasPrefix(body, "data: ") || !strings.Contains(body, `"text":"hi"`) {
		t.Errorf("stream answer %d %s", code, body)
	}
	if code, _ := post(t, base+":generateContent", `{}`); code != http.StatusBadRequest {
		t.Errorf("request past the cap: %d", code)
	}
	if k := m.Kinds(); k["json"] != 1 || k["count_tokens"] != 1 || k["scenario"] != 1 || k["capped"] != 1 {
		t.Errorf("kinds %v", k)
	}
}
