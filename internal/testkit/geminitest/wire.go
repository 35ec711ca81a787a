package geminitest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// apiRequest is the part of a generateContent request the model reads.
type apiRequest struct {
	Contents          []apiContent      `json:"contents"`
	SystemInstruction *apiContent       `json:"systemInstruction"`
	Tools             []json.RawMessage `json:"tools"`
	GenerationConfig  struct {
		ResponseMimeType   string          `json:"responseMimeType"`
		ResponseSchema     json.RawMessage `json:"responseSchema"`
		ResponseJSONSchema json.RawMessage `json:"responseJsonSchema"`
	} `json:"generationConfig"`
}

type apiContent struct {
	Role  string    `json:"role"`
	Parts []apiPart `json:"parts"`
}

type apiPart struct {
	Text             string          `json:"text,omitempty"`
	FunctionCall     *functionCall   `json:"functionCall,omitempty"`
	FunctionResponse *functionResult `json:"functionResponse,omitempty"`
}

type functionCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

type functionResult struct {
	ID       string          `json:"id,omitempty"`
	Name     string          `json:"name"`
	Response json.RawMessage `json:"response"`
}

// text joins the content's text parts.
func (c apiContent) text() string {
	var b strings.Builder
	for _, p := range c.Parts {
		if p.Text != "" {
			b.WriteString(p.Text)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// reply is one model answer: a function call or a text.
type reply struct {
	Text string
	Call *functionCall
}

func (r reply) candidate() map[string]any {
	var part map[string]any
	if r.Call != nil {
		part = map[string]any{"functionCall": r.Call}
	} else {
		part = map[string]any{"text": r.Text}
	}
	return map[string]any{
		"content":      map[string]any{"role": "model", "parts": []any{part}},
		"finishReason": "STOP",
		"index":        0,
	}
}

func response(r reply, seq, promptTokens int) map[string]any {
	out := 1 + len(r.Text)/4
	if r.Call != nil {
		out += len(r.Call.Args) / 4
	}
	return map[string]any{
		"candidates": []any{r.candidate()},
		"usageMetadata": map[string]any{
			"promptTokenCount": promptTokens, "candidatesTokenCount": out, "totalTokenCount": promptTokens + out,
		},
		"modelVersion": "geminitest",
		"responseId":   fmt.Sprintf("geminitest-%d", seq),
	}
}

// writeSSE answers streamGenerateContent?alt=sse with one data event.
func writeSSE(w http.ResponseWriter, body map[string]any) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	b, _ := json.Marshal(body)
	fmt.Fprintf(w, "data: %s\r\n\r\n", b)
	if fl, ok := w.(http.Flusher); ok {
		fl.Flush()
	}
}

func writeJSON(w http.ResponseWriter, body any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(body)
}

// fillSchema makes a value matching an OpenAPI/JSON schema, for requests
// that want a JSON answer (next-speaker checks, loop detection, routing
// classifiers): every property present, enums answered with "user" when
// allowed (so a next-speaker check hands the turn back) or their first
// value, numbers 0, booleans false.
func fillSchema(raw json.RawMessage) any {
	var s struct {
		Type       any                        `json:"type"`
		Enum       []any                      `json:"enum"`
		Properties map[string]json.RawMessage `json:"properties"`
		Items      json.RawMessage            `json:"items"`
	}
	if json.Unmarshal(raw, &s) != nil {
		return map[string]any{}
	}
	if len(s.Enum) > 0 {
		for _, e := range s.Enum {
			if e == "user" {
				return e
			}
		}
		return s.Enum[0]
	}
	typ := strings.ToLower(fmt.Sprint(s.Type))
	switch {
	case strings.Contains(typ, "object") || len(s.Properties) > 0:
		out := map[string]any{}
		for k, v := range s.Properties {
			out[k] = fillSchema(v)
		}
		return out
	case strings.Contains(typ, "array"):
		return []any{}
	case strings.Contains(typ, "integer"), strings.Contains(typ, "number"):
		return 0
	case strings.Contains(typ, "boolean"):
		return false
	}
	return "geminitest"
}
