package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/git-lossless/git-lossless/internal/jsonscan"
)

// Backend kinds.
const (
	kindLlamaCpp  = "llamacpp"
	kindVLLM      = "vllm"
	kindOllama    = "ollama"
	kindOpenAI    = "openai" // any other OpenAI-compatible server
	kindAnthropic = "anthropic"
)

// Count sources, as /lossless/usage and the statusline report them.
const (
	sourceExact    = "exact"    // the backend's tokenizer
	sourceEstimate = "est"      // bytes / 3.5, calibrated per model
	sourceReported = "reported" // usage the backend reported for the request
)

// probeTimeout bounds each detection and counting call.
const probeTimeout = 2 * time.Second

// upstream talks to the backend for everything but the client's own
// requests: detection, windows, exact counts.
type upstream struct {
	base   *url.URL
	client *http.Client
	conf   string // configured backend kind ("auto" to detect)

	mu        sync.Mutex
	kind      string
	detected  time.Time
	kindTTL   time.Duration        // how long a detected generic kind holds
	exactDown map[string]time.Time // counter -> when it last failed
}

func newUpstream(base *url.URL, client *http.Client, kind string) *upstream {
	u := &upstream{base: base, client: client, conf: kind, exactDown: map[string]time.Time{}}
	if kind != "auto" {
		u.kind = kind
	}
	return u
}

// url joins the base URL and a path (with query).
func (u *upstream) url(pathQuery string) string {
	return strings.TrimRight(u.base.String(), "/") + pathQuery
}

// call sends one small JSON request and decodes the JSON answer.
func (u *upstream) call(ctx context.Context, method, path string, hdr http.Header, in, out any) error {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	var body io.Reader
	switch v := in.(type) {
	case nil:
	case rawJSON:
		body = bytes.NewReader(v)
	default:
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.url(path), body)
	if err != nil {
		return err
	}
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := u.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return &statusError{method: method, path: path, status: resp.StatusCode}
	}
	if r, ok := out.(*rawJSON); ok {
		*r = data
		return nil
	}
	return json.Unmarshal(data, out)
}

// statusError is a probe the backend answered with a non-2xx status: the
// backend is there, it just does not serve that route.
type statusError struct {
	method, path string
	status       int
}

func (e *statusError) Error() string {
	return fmt.Sprintf("%s %s: HTTP %d", e.method, e.path, e.status)
}

// answered reports whether a probe's error still means the backend
// answered.
func answered(err error) bool {
	var se *statusError
	return err == nil || errors.As(err, &se)
}

// rawJSON is a request or answer body call passes as it is: counting
// requests carry a whole conversation, and their answers a token list,
// neither of which needs decoding.
type rawJSON []byte

// rawObject builds a JSON object from keys and raw values, in order,
// skipping nil values. The values are the client's own bytes.
func rawObject(kv ...any) rawJSON {
	out := []byte{'{'}
	for i := 0; i+1 < len(kv); i += 2 {
		var v []byte
		switch x := kv[i+1].(type) {
		case []byte:
			v = x
		case json.RawMessage:
			v = x
		case string:
			v = []byte(x)
		}
		if v == nil {
			continue
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = strconv.AppendQuote(out, kv[i].(string))
		out = append(out, ':')
		out = append(out, v...)
	}
	return append(out, '}')
}

// countMember counts the elements of the array value of key in the JSON
// object b, without decoding them.
func countMember(b []byte, key string) (int, bool) {
	ms, ok := scanObject(b)
	if !ok {
		return 0, false
	}
	n := 0
	if jsonscan.Elems(findMember(b, ms, key), func([]byte) bool { n++; return true }) != jsonscan.OK {
		return 0, false
	}
	return n, true
}

// Kind returns the backend kind, detecting it on first use: llama.cpp
// answers /props, Ollama /api/version, vLLM /v1/models with max_model_len.
// Anything else is a generic OpenAI-compatible server. The probes carry
// the client's credentials (auth) and run detached from ctx's
// cancellation (see detectTimeout); a generic result is asked again after
// 10 minutes, or after 30 seconds when no probe got an answer at all.
func (u *upstream) Kind(ctx context.Context, auth http.Header) string {
	u.mu.Lock()
	if u.kind != "" && (u.conf != "auto" || u.kind != kindOpenAI || time.Since(u.detected) < u.kindTTL) {
		k := u.kind
		u.mu.Unlock()
		return k
	}
	u.mu.Unlock()
	ctx, cancel := detachedContext(ctx)
	defer cancel()

	type answer struct {
		kind    string
		ok      bool
		reached bool
	}
	ch := make(chan answer, 3)
	go func() {
		var p struct {
			DGS *struct {
				NCtx int `json:"n_ctx"`
			} `json:"default_generation_settings"`
		}
		err := u.call(ctx, "GET", "/props", auth, nil, &p)
		ch <- answer{kindLlamaCpp, err == nil && p.DGS != nil, answered(err)}
	}()
	go func() {
		var v struct {
			Version string `json:"version"`
		}
		err := u.call(ctx, "GET", "/api/version", auth, nil, &v)
		ch <- answer{kindOllama, err == nil && v.Version != "", answered(err)}
	}()
	go func() {
		var m modelList
		err := u.call(ctx, "GET", "/v1/models", auth, nil, &m)
		ok := false
		kind := kindVLLM
		if err == nil {
			for _, d := range m.Data {
				if d.MaxModelLen > 0 {
					ok = true
				}
				if d.OwnedBy == "llamacpp" {
					ok, kind = true, kindLlamaCpp
				}
			}
		}
		ch <- answer{kind, ok, answered(err)}
	}()
	found := map[string]bool{}
	reached := false
	for i := 0; i < 3; i++ {
		a := <-ch
		if a.ok {
			found[a.kind] = true
		}
		reached = reached || a.reached
	}
	kind := kindOpenAI
	for _, k := range []string{kindLlamaCpp, kindOllama, kindVLLM} {
		if found[k] {
			kind = k
			break
		}
	}
	ttl := 10 * time.Minute
	if !reached {
		ttl = 30 * time.Second // the backend is down or unreachable: not an answer
	}
	u.mu.Lock()
	u.kind, u.detected, u.kindTTL = kind, time.Now(), ttl
	u.mu.Unlock()
	return kind
}

type modelList struct {
	Data []struct {
		ID          string `json:"id"`
		OwnedBy     string `json:"owned_by"`
		MaxModelLen int    `json:"max_model_len"`
	} `json:"data"`
}

// detectWindow asks the backend for model's runtime window, with the
// client's credentials (auth). It returns 0 when the backend does not say.
func (u *upstream) detectWindow(ctx context.Context, kind, model string, auth http.Header) (int, string) {
	switch kind {
	case kindLlamaCpp:
		var p struct {
			NCtx int `json:"n_ctx"`
			DGS  struct {
				NCtx int `json:"n_ctx"`
			} `json:"default_generation_settings"`
		}
		if u.call(ctx, "GET", "/props", auth, nil, &p) == nil {
			if p.DGS.NCtx > 0 {
				return p.DGS.NCtx, "llama.cpp /props"
			}
			if p.NCtx > 0 {
				return p.NCtx, "llama.cpp /props"
			}
		}
	case kindVLLM:
		var m modelList
		if u.call(ctx, "GET", "/v1/models", auth, nil, &m) == nil {
			for _, d := range m.Data {
				if d.ID == model && d.MaxModelLen > 0 {
					return d.MaxModelLen, "vLLM /v1/models"
				}
			}
			if len(m.Data) == 1 && m.Data[0].MaxModelLen > 0 {
				return m.Data[0].MaxModelLen, "vLLM /v1/models"
			}
		}
	case kindOllama:
		return u.ollamaWindow(ctx, model, auth)
	}
	return 0, ""
}

// ollamaDefaultWindow is Ollama's runtime window when neither the
// Modelfile nor OLLAMA_CONTEXT_LENGTH sets one (2026 builds).
const ollamaDefaultWindow = 4096

var numCtxRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^\s*num_ctx\s+(\d+)`) })

// ollamaWindow: the runtime window from /api/ps when the model is loaded,
// else num_ctx from the Modelfile, else (source "ollama default") the
// default, capped by the model's native window.
func (u *upstream) ollamaWindow(ctx context.Context, model string, auth http.Header) (int, string) {
	want := ollamaName(model)
	var ps struct {
		Models []struct {
			Name          string `json:"name"`
			Model         string `json:"model"`
			ContextLength int    `json:"context_length"`
		} `json:"models"`
	}
	if u.call(ctx, "GET", "/api/ps", auth, nil, &ps) == nil {
		for _, m := range ps.Models {
			if (ollamaName(m.Name) == want || ollamaName(m.Model) == want) && m.ContextLength > 0 {
				return m.ContextLength, "ollama /api/ps"
			}
		}
	}
	var show struct {
		Parameters string         `json:"parameters"`
		ModelInfo  map[string]any `json:"model_info"`
	}
	if u.call(ctx, "POST", "/api/show", auth, map[string]string{"model": model}, &show) != nil {
		return 0, ""
	}
	native := 0
	for k, v := range show.ModelInfo {
		if strings.HasSuffix(k, ".context_length") {
			if f, ok := v.(float64); ok && f > 0 {
				native = int(f)
			}
		}
	}
	if m := numCtxRe().FindStringSubmatch(show.Parameters); m != nil {
		n, _ := strconv.Atoi(m[1])
		if n > 0 {
			return n, "ollama /api/show num_ctx"
		}
	}
	w := ollamaDefaultWindow
	if native > 0 && native < w {
		w = native
	}
	return w, "ollama default"
}

func ollamaName(n string) string {
	if n != "" && !strings.Contains(n, ":") {
		return n + ":latest"
	}
	return n
}

// canCountExact reports whether kind counts dialect's requests exactly
// (and its counter has not failed lately).
func (u *upstream) canCountExact(kind string, d dialect) bool {
	switch {
	case kind == kindLlamaCpp, kind == kindVLLM && d == openAI, kind == kindAnthropic && d == anthropic:
	default:
		return false
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	down, isDown := u.exactDown[kind+"/"+d.String()]
	return !isDown || time.Since(down) >= 5*time.Minute
}

// countExact asks the backend's tokenizer for the request's prompt tokens
// with msgs (a JSON array) as its messages, with the client's credentials
// (auth, from authHeaders). ok is false when the backend cannot count;
// window is set when the answer also carries the window.
func (u *upstream) countExact(ctx context.Context, kind string, r *request, msgs []byte, auth http.Header) (n, window int, ok bool) {
	key := kind + "/" + r.d.String()
	u.mu.Lock()
	down, isDown := u.exactDown[key]
	u.mu.Unlock()
	if isDown && time.Since(down) < 5*time.Minute {
		return 0, 0, false
	}
	var err error
	switch {
	case kind == kindLlamaCpp && r.d == openAI:
		n, err = u.countLlama(ctx, r, msgs, auth)
	case kind == kindVLLM && r.d == openAI:
		n, window, err = u.countVLLM(ctx, r, msgs, auth)
	case (kind == kindLlamaCpp || kind == kindAnthropic) && r.d == anthropic:
		n, err = u.countAnthropic(ctx, r, msgs, auth)
	default:
		return 0, 0, false
	}
	if err != nil || n <= 0 {
		u.mu.Lock()
		u.exactDown[key] = time.Now()
		u.mu.Unlock()
		return 0, 0, false
	}
	return n, window, true
}

func (r *request) member(key string) json.RawMessage {
	if v := findMember(r.body, r.members, key); v != nil {
		return json.RawMessage(v)
	}
	return nil
}

func (u *upstream) countLlama(ctx context.Context, r *request, msgs []byte, auth http.Header) (int, error) {
	var tpl struct {
		Prompt *string `json:"prompt"`
	}
	if err := u.call(ctx, "POST", "/apply-template", auth, rawObject("messages", msgs, "tools", r.member("tools")), &tpl); err != nil {
		return 0, err
	}
	if tpl.Prompt == nil {
		return 0, errors.New("apply-template: no prompt")
	}
	var tok rawJSON
	err := u.call(ctx, "POST", "/tokenize", auth, map[string]any{"content": *tpl.Prompt, "add_special": false, "parse_special": true}, &tok)
	if err != nil {
		return 0, err
	}
	n, ok := countMember(tok, "tokens")
	if !ok {
		return 0, errors.New("tokenize: no tokens")
	}
	return n, nil
}

func (u *upstream) countVLLM(ctx context.Context, r *request, msgs []byte, auth http.Header) (int, int, error) {
	in := rawObject("model", r.member("model"), "messages", msgs, "add_generation_prompt", "true", "tools", r.member("tools"))
	var out rawJSON
	if err := u.call(ctx, "POST", "/tokenize", auth, in, &out); err != nil {
		return 0, 0, err
	}
	ms, ok := scanObject(out)
	if !ok {
		return 0, 0, errors.New("tokenize: not an object")
	}
	return intValue(findMember(out, ms, "count")), intValue(findMember(out, ms, "max_model_len")), nil
}

func (u *upstream) countAnthropic(ctx context.Context, r *request, msgs []byte, auth http.Header) (int, error) {
	in := rawObject("model", r.member("model"), "system", r.member("system"), "tools", r.member("tools"),
		"tool_choice", r.member("tool_choice"), "thinking", r.member("thinking"), "messages", msgs)
	var out struct {
		InputTokens int `json:"input_tokens"`
	}
	if err := u.call(ctx, "POST", "/v1/messages/count_tokens", auth, in, &out); err != nil {
		return 0, err
	}
	return out.InputTokens, nil
}

// overflow is what an upstream's context-overflow error says.
type overflow struct {
	window int // the backend's window, 0 when not stated
	prompt int // the prompt's tokens, 0 when not stated
}

var (
	reLlamaCtx    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`"n_ctx"\s*:\s*(\d+)`) })
	reLlamaPrompt = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`"n_prompt_tokens"\s*:\s*(\d+)`) })
	reLlamaText   = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`request \((\d+) tokens\) exceeds the available context size \((\d+) tokens\)`)
	})
	reOpenAIMax = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`maximum context length is (\d+) tokens`) })
	reOpenAIReq = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?:you requested|resulted in) (\d+) tokens(?: \((\d+) in the messages)?`)
	})
	reVLLMInput = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`input \((\d+) tokens\) is longer than the model's context length \((\d+) tokens\)`)
	})
	reAnthropic = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`prompt is too long: (\d+) tokens > (\d+) maximum`) })
	reGeneric   = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)context[_ ]length[_ ]exceeded|exceeds? (?:the )?(?:available |maximum )?context|context (?:window|length) (?:is )?exceeded|too many tokens`)
	})
)

// parseOverflow recognises a context-overflow error response.
func parseOverflow(status int, body []byte) (overflow, bool) {
	if status != http.StatusBadRequest && status != http.StatusRequestEntityTooLarge && status != http.StatusUnprocessableEntity && status != http.StatusInternalServerError {
		return overflow{}, false
	}
	num := func(s string) int { n, _ := strconv.Atoi(s); return n }
	if m := reLlamaText().FindSubmatch(body); m != nil {
		return overflow{prompt: num(string(m[1])), window: num(string(m[2]))}, true
	}
	if bytes.Contains(body, []byte("exceed_context_size_error")) {
		o := overflow{}
		if m := reLlamaCtx().FindSubmatch(body); m != nil {
			o.window = num(string(m[1]))
		}
		if m := reLlamaPrompt().FindSubmatch(body); m != nil {
			o.prompt = num(string(m[1]))
		}
		return o, true
	}
	if m := reVLLMInput().FindSubmatch(body); m != nil {
		return overflow{prompt: num(string(m[1])), window: num(string(m[2]))}, true
	}
	if m := reAnthropic().FindSubmatch(body); m != nil {
		return overflow{prompt: num(string(m[1])), window: num(string(m[2]))}, true
	}
	if m := reOpenAIMax().FindSubmatch(body); m != nil {
		o := overflow{window: num(string(m[1]))}
		if r := reOpenAIReq().FindSubmatch(body); r != nil {
			if len(r[2]) > 0 {
				o.prompt = num(string(r[2]))
			} else {
				o.prompt = num(string(r[1]))
			}
		}
		return o, true
	}
	if reGeneric().Match(body) {
		return overflow{}, true
	}
	return overflow{}, false
}

// authHeaders copies the client's credentials and API-version headers, for
// the proxy's own calls on the client's behalf (summaries, counts).
func authHeaders(h http.Header) http.Header {
	out := http.Header{}
	for _, k := range []string{"Authorization", "X-Api-Key", "Api-Key", "Anthropic-Version", "Anthropic-Beta", "Openai-Organization", "Openai-Project", "X-Goog-Api-Key"} {
		if v := h.Values(k); len(v) > 0 {
			out[k] = append([]string(nil), v...)
		}
	}
	return out
}

// modelState is what the proxy learned about one model: its window and
// how its tokenizer relates to bytes.
type modelState struct {
	mu sync.Mutex
	// detected: what the backend reports (props, models, ps, show); it
	// replaces an earlier detection, the runtime window can change.
	detected    int
	detectedSrc string
	detectedAt  time.Time
	detecting   bool
	// learned: from an overflow error or a silent truncation; only lowers.
	// A window inferred from a truncation (not stated by the backend)
	// expires after truncationTTL, or when /api/ps reports the runtime one.
	learned    int
	learnedSrc string
	learnedAt  time.Time
	// Calibration: tokens per estimated token, from reported usage and
	// exact counts.
	ratio   float64
	samples int
}

// window combines the configured window with the reported ones: the
// smallest wins, so a reported window can only lower a configured one.
// Ollama's assumed default does not lower a configured window (it is an
// assumption, not a report).
func (m *modelState) window(configured int) (int, string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	w, src := 0, ""
	take := func(n int, s string) {
		if n > 0 && (w == 0 || n < w) {
			w, src = n, s
		}
	}
	take(configured, "configured")
	if !(configured > 0 && m.detectedSrc == "ollama default") {
		take(m.detected, m.detectedSrc)
	}
	if m.learnedSrc == "truncation" && time.Since(m.learnedAt) > truncationTTL {
		m.learned, m.learnedSrc = 0, ""
	}
	take(m.learned, m.learnedSrc)
	return w, src
}

// setDetected records a detection result (n == 0: the backend said
// nothing).
func (m *modelState) setDetected(n int, src string, at time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.detectedAt, m.detecting = at, false
	if n > 0 {
		m.detected, m.detectedSrc = n, src
		if src == "ollama /api/ps" && m.learnedSrc == "truncation" {
			m.learned, m.learnedSrc = 0, "" // the runtime window, reported
		}
	}
}

// learn lowers the learned window; it reports whether it changed.
func (m *modelState) learn(n int, src string) bool {
	if n <= 0 {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.learned > 0 && n >= m.learned {
		return false
	}
	m.learned, m.learnedSrc, m.learnedAt = n, src, time.Now()
	return true
}

// truncationTTL is how long a window inferred from a silent truncation
// holds before the proxy trusts the configured or detected one again.
const truncationTTL = 30 * time.Minute

// unlearnTruncation drops a window inferred from a truncation once the
// backend reads more than it: the inference was wrong (a window from an
// overflow error is stated by the backend and stays).
func (m *modelState) unlearnTruncation(reported int) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.learnedSrc == "truncation" && reported > m.learned {
		m.learned, m.learnedSrc = 0, ""
		return true
	}
	return false
}

// perChar is tokens per estimate-basis char, calibrated, with margin.
func (m *modelState) perChar(margin float64) float64 {
	m.mu.Lock()
	r := m.ratio
	m.mu.Unlock()
	if r == 0 {
		r = 1
	}
	return r * margin / charsPerToken
}

// estimate converts estimate-basis chars to tokens.
func (m *modelState) estimate(chars int, margin float64) int {
	m.mu.Lock()
	r := m.ratio
	m.mu.Unlock()
	if r == 0 {
		r = 1
	}
	return int(math.Ceil(float64(chars) / charsPerToken * r * margin))
}

// calibMinChars: smaller requests, dominated by per-message overhead, do
// not calibrate.
const calibMinChars = 2000

// charsPerToken is the uncalibrated estimate: bytes of JSON per token.
const charsPerToken = 3.5

// observe calibrates from a request of chars (estimate basis) that the
// backend counted as tokens.
func (m *modelState) observe(chars, tokens int) {
	if chars < calibMinChars || tokens <= 0 {
		return
	}
	s := float64(tokens) / (float64(chars) / charsPerToken)
	s = math.Max(0.2, math.Min(10, s))
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.samples == 0 {
		m.ratio = s
	} else {
		m.ratio = 0.7*m.ratio + 0.3*s
	}
	m.samples++
}

func (m *modelState) calibration() (float64, int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.ratio
	if r == 0 {
		r = 1
	}
	return r, m.samples
}
