package gemini

import (
	"encoding/json"
	"fmt"
	"strings"
)

// DenyOutput is what a BeforeTool hook prints on stdout (exit 0) to block
// the call: {"decision":"deny","reason":...}. The CLI does not run the
// tool, fires no AfterTool, and sends the model the function response
// {"error":"Tool execution blocked: <reason>"}; the chat file records the
// call with status "error". The reason reaches the model unescaped.
func DenyOutput(reason string) []byte {
	b, _ := json.Marshal(struct {
		Decision string `json:"decision"`
		Reason   string `json:"reason"`
	}{"deny", reason})
	return append(b, '\n')
}

// ContextEvents are the events whose hookSpecificOutput.additionalContext
// the CLI puts in front of the model, and where:
//
//   - SessionStart: prepended to the first prompt as
//     "<hook_context>…</hook_context>\n\n" (headless), or added as a
//     user turn "<hook_context>…</hook_context>" (interactive). Fires at
//     process start only (source startup or resume, clear for /clear):
//     never after a compression.
//   - BeforeAgent: appended to the user's prompt as one more part
//     "<hook_context>…</hook_context>", every prompt.
//   - AfterTool: appended to the tool's result as
//     "\n\n<hook_context>…</hook_context>", within a turn.
//
// Other events ignore it.
func ContextEvents() []string { return []string{SessionStart, BeforeAgent, AfterTool} }

// ContextOutput is what a hook prints on stdout (exit 0) to put text in
// front of the model: {"hookSpecificOutput":{"hookEventName":event,
// "additionalContext":text}}. It is an error for an event that ignores
// the context. The model does not get text as written: see InjectedText.
func ContextOutput(event, text string) ([]byte, error) {
	ok := false
	for _, e := range ContextEvents() {
		ok = ok || e == event
	}
	if !ok {
		return nil, fmt.Errorf("gemini: %s does not take additional context", event)
	}
	b, err := json.Marshal(map[string]any{"hookSpecificOutput": map[string]string{
		"hookEventName": event, "additionalContext": text,
	}})
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// InjectedText is the text the model gets, inside the <hook_context>
// tags the CLI wraps it in, for an additionalContext: the CLI escapes
// every '<' as "&lt;" and every '>' as "&gt;" (and nothing else: a '&'
// stays). File contents handed back this way are not the files' bytes
// wherever they hold '<' or '>': what the model saw is this text.
func InjectedText(text string) string {
	return strings.NewReplacer("<", "&lt;", ">", "&gt;").Replace(text)
}
