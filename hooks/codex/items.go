package codex

import (
	"encoding/json"
	"strings"

	"github.com/git-lossless/git-lossless/hooks/transcript"
	"github.com/git-lossless/git-lossless/internal/jsonscan"
)

// item holds the members of a response_item payload we read.
type item struct {
	typ, role, content, meta, summary                 []byte
	name, namespace, arguments, input, callID, output []byte
	action                                            []byte
}

func (r *Reader) responseItem(l *Line, payload []byte) {
	var it item
	jsonscan.Members(payload, func(k, v []byte) bool {
		switch string(k) {
		case "type":
			it.typ = v
		case "role":
			it.role = v
		case "content":
			it.content = v
		case "internal_chat_message_metadata_passthrough":
			it.meta = v
		case "summary":
			it.summary = v
		case "name":
			it.name = v
		case "namespace":
			it.namespace = v
		case "arguments":
			it.arguments = v
		case "input":
			it.input = v
		case "call_id":
			it.callID = v
		case "output":
			it.output = v
		case "action":
			it.action = v
		}
		return true
	})
	l.Payload, _ = jsonscan.String(it.typ)
	switch l.Payload {
	case "message":
		r.message(l, &it)
	case "reasoning":
		r.reasoning(l, &it)
	case "function_call", "custom_tool_call", "local_shell_call":
		r.toolCall(l, &it)
	case "function_call_output", "custom_tool_call_output":
		r.toolOutput(l, &it)
	default:
		l.Skipped = true
		return
	}
	r.spanKeys(l)
}

// harnessPrefixes open the user-role blocks Codex writes itself
// (environment, AGENTS.md, skills, subagent notices...): in rollouts
// without provenance metadata they are told from the user's text by
// these.
var harnessPrefixes = []string{
	"<environment_context>", "<user_instructions>", "# AGENTS.md instructions for ", "<INSTRUCTIONS>",
	"<skill>", "<subagent_notification>", "<turn_aborted>", "<permissions instructions>",
	"<collaboration_mode>", "<personality>",
}

// message makes a TextSpan per text block of a user or assistant
// message. A user message's block is the user's only when its
// provenance says "user" (Codex 0.169.0 writes one per block); without
// provenance, blocks that open with a harness tag are Codex's own.
func (r *Reader) message(l *Line, it *item) {
	role, _ := jsonscan.String(it.role)
	if role != "user" && role != "assistant" {
		l.Skipped = true // developer, system: Codex's instructions
		return
	}
	var prov []string
	hasProv := false
	if role == "user" && it.meta != nil {
		if cim := jsonscan.Field(it.meta, "content_item_metadata"); cim != nil && cim[0] == '[' {
			hasProv = true
			jsonscan.Elems(cim, func(v []byte) bool {
				t, _ := jsonscan.String(jsonscan.Field(jsonscan.Field(v, "provenance"), "type"))
				prov = append(prov, t)
				return true
			})
		}
	}
	i := 0
	jsonscan.Elems(it.content, func(v []byte) bool {
		block := i
		i++
		var typ, text []byte
		jsonscan.Members(v, func(k, v []byte) bool {
			switch string(k) {
			case "type":
				typ = v
			case "text":
				text = v
			}
			return true
		})
		t, _ := jsonscan.String(typ)
		if (t != "input_text" && t != "output_text") || text == nil || text[0] != '"' || emptyString(text) {
			return true
		}
		if role == "user" {
			if hasProv && block < len(prov) {
				if prov[block] != "user" {
					return true
				}
			} else if harnessText(text) {
				return true
			}
		}
		l.Items = append(l.Items, &transcript.TextSpan{LineMeta: l.LineMeta, Kind: role, Role: role, Block: block, TextJSON: clone(text)})
		return true
	})
	if len(l.Items) == 0 {
		l.Skipped = true
	}
}

func harnessText(raw []byte) bool {
	// The prefixes are plain ASCII: compare the raw JSON after the quote.
	s := string(raw[1:min(len(raw), 64)])
	for _, p := range harnessPrefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// reasoning makes a "thinking" TextSpan per summary text, then per
// reasoning text of content (blocks numbered on across both).
func (r *Reader) reasoning(l *Line, it *item) {
	n := 0
	add := func(arr []byte) {
		jsonscan.Elems(arr, func(v []byte) bool {
			block := n
			n++
			text := jsonscan.Field(v, "text")
			if text != nil && text[0] == '"' && !emptyString(text) {
				l.Items = append(l.Items, &transcript.TextSpan{LineMeta: l.LineMeta, Kind: "thinking", Role: "assistant", Block: block, TextJSON: clone(text)})
			}
			return true
		})
	}
	if it.summary != nil && it.summary[0] == '[' {
		add(it.summary)
	}
	if it.content != nil && it.content[0] == '[' {
		add(it.content)
	}
	if len(l.Items) == 0 {
		l.Skipped = true // encrypted only
	}
}

// callInput is a call's input as the span shows it: a function call's
// arguments decoded when they are JSON (else the string), a custom
// tool's input string, a local shell call's action.
func callInput(l *Line, it *item) json.RawMessage {
	switch l.Payload {
	case "function_call":
		if s, ok := jsonscan.Unquote(it.arguments); ok && jsonscan.Valid(s) {
			return s
		}
		if it.arguments != nil {
			return clone(it.arguments)
		}
	case "custom_tool_call":
		if it.input != nil {
			return clone(it.input)
		}
	case "local_shell_call":
		if it.action != nil {
			return clone(it.action)
		}
	}
	return json.RawMessage("{}")
}

func (r *Reader) toolCall(l *Line, it *item) {
	id, _ := jsonscan.String(it.callID)
	if id == "" {
		l.Skipped = true
		return
	}
	name, _ := jsonscan.String(it.name)
	if l.Payload == "local_shell_call" {
		name = ToolLocalShell
	}
	tu := &transcript.ToolUse{LineMeta: l.LineMeta, ID: id, Name: name, Input: callInput(l, it)}
	c := &Call{ID: id, Name: name, Use: tu, Known: true}
	c.Namespace, _ = jsonscan.String(it.namespace)
	classify(c, tu.Input)
	pt := transcript.PendingToolUse{ID: id, Name: name}
	if c.Kind != CallOther {
		pt.Input = tu.Input
	}
	r.remember(pt)
	l.Call = c
	l.Items = append(l.Items, tu)
}

// classify sets a call's kind, command and patch from its name and input.
func classify(c *Call, input []byte) {
	switch c.Name {
	case ToolApplyPatch:
		c.Kind = CallPatch
		if s, ok := jsonscan.String(input); ok {
			c.Patch = s // the custom tool: the input is the patch
		} else if s, ok := jsonscan.String(jsonscan.Field(input, "input")); ok {
			c.Patch = s // the function variant: {"input": patch}
		}
	case ToolExecCommand, ToolShellCommand, ToolShell, ToolLocalShell:
		cmd, wd, ok := ShellCommand(c.Name, input)
		if !ok {
			return
		}
		c.Kind, c.Command, c.Workdir = CallShell, cmd, wd
		if p, dir, ok := ShellPatch(cmd); ok {
			c.Kind, c.Patch = CallPatch, p
			if dir != "" {
				c.Workdir = ResolvePath(c.Workdir, dir)
				if c.Workdir == "" {
					c.Workdir = dir
				}
			}
		}
	}
}

func (r *Reader) toolOutput(l *Line, it *item) {
	id, _ := jsonscan.String(it.callID)
	res := &transcript.ToolResult{LineMeta: l.LineMeta, ToolUseID: id}
	out := it.output
	if out != nil && out[0] == '{' {
		// An object output: {"content": ..., "success": false}.
		if c := jsonscan.Field(out, "content"); c != nil {
			res.IsError = string(jsonscan.Field(out, "success")) == "false"
			out = c
		}
	}
	if out == nil || string(out) == "null" {
		res.ContentJSON = json.RawMessage(`""`)
	} else {
		res.ContentJSON = clone(out)
	}
	c := &Call{ID: id, Result: res}
	if p := r.pending[id]; id != "" && p != nil {
		delete(r.pending, id)
		c.Name, c.Known = p.Name, true
		res.Tool = p.Name
		classify(c, p.Input)
	}
	c.Output = ParseExecOutput(res.Text())
	l.Call = c
	l.Items = append(l.Items, res)
}
