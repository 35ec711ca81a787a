// Package claudetest drives the real Claude Code CLI (Version, 2.1.328)
// end to end against a scripted model on 127.0.0.1, for tests of
// git-lossless's Claude Code hooks and proxy. It imports testing: only
// _test.go files may import it, never code the binary links
// (internal/layoutcheck enforces that no production package does).
//
//	bin := claudetest.EnsureClaude(t)           // npm install, cached; skip (CI: fail) without npm
//	m := claudetest.NewModel(t, claudetest.Script{
//		"SCENARIO:edit": {
//			claudetest.Call("Read", map[string]any{"file_path": hello}),
//			claudetest.Call("Edit", map[string]any{"file_path": hello, "old_string": "world", "new_string": "there"}),
//			claudetest.Say("done"),
//		},
//	})
//	r := claudetest.NewRunner(t, bin, m)        // isolated HOME and CLAUDE_CONFIG_DIR
//	r.Settings = claudetest.WriteSettings(t, claudetest.Hook{Event: "PreToolUse", Command: hookCmd})
//	res, err := r.Run(ctx, repoDir, "SCENARIO:edit please")
//	// res.SessionID, r.TranscriptPath(res.SessionID), m.ToolResults("SCENARIO:edit"), ...
//
// The tool call at step n of scenario M has the id ToolUseID(M, n)
// ("toolu_<M with non [A-Za-z0-9_-] runs turned into ->_<n>"), so hook
// payloads and transcript lines can be matched to the script. Scripts,
// routing and step counting are described on Script; the Step.After field
// holds a step until a background subagent has reported.
//
// Environment knobs: CLAUDETEST_BIN names a claude binary to use instead
// of installing one (its --version must still be Version);
// CLAUDETEST_DUMP names a directory that receives every request the model
// gets, headers on the first line and the pretty JSON body after. On a
// failed test the model logs one line per request it served.
//
// # What was seen driving 2.1.328 this way (2 cores, Linux)
//
// Install: `npm install --prefix DIR @anthropic-ai/claude-code@2.1.328`
// takes 10-25 s and leaves a 373 MB native binary at
// DIR/node_modules/.bin/claude (npm 11 warns that the package's postinstall
// is not in allowScripts; the binary works regardless). `claude --version`
// prints "2.1.328 (Claude Code)". EnsureClaude installs into
// os.UserCacheDir()/git-lossless/npm/claude-code-2.1.328 under a flock and
// renames a finished temp install into place.
//
// A run: `claude -p PROMPT --permission-mode acceptEdits --output-format
// json [--settings F] [--resume ID]` with HOME, CLAUDE_CONFIG_DIR,
// ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY and the three DISABLE_* variables
// (see Runner.Environ) takes 1.5-4 s on an idle machine and 5-9 s under
// load; the four tests in this package take 10-25 s (two in parallel).
// Output is one JSON object: result, session_id, num_turns, is_error,
// subtype, permission_denials (one entry per hook-denied call, with
// tool_name, tool_use_id, tool_input), and much more. `claude -p /compact
// --resume ID` answers result "", num_turns 0, local_command "compact".
//
// Requests: with CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 only
// POST /v1/messages?beta=true arrived: one per assistant turn, streamed,
// model "claude-opus-5-5" (context window 1,000,000). No HEAD probe, no
// count_tokens, no title request was seen from -p (the server still
// answers them). Every request carries X-Claude-Code-Session-Id; a
// subagent's requests also carry X-Claude-Code-Agent-Id (Request.AgentID),
// the compaction request does not. The messages list holds messages with
// role "system" besides user and assistant: the environment block, the
// deferred-tool list and hook context. The first user message holds
// <system-reminder> text blocks (git status, commit attribution) and then
// the prompt. Tools offered to the main agent: Agent, Bash, Edit,
// ListAgents, Read, ReportFindings, ScheduleWakeup, Skill, ToolSearch,
// Workflow, DeferredToolPlaceholder, Write.
//
// Hooks, in order for a Read then an Edit: SessionStart(source startup),
// UserPromptSubmit, PreToolUse, PostToolUse, PreToolUse, PostToolUse,
// Stop, SessionEnd. Payload fields are as in
// shared/reference/claude-code.md; PreToolUse has tool_name, tool_input,
// tool_use_id; PostToolUse adds tool_response and duration_ms. Details the
// hook implementers must know:
//
//   - Transcript writes lag the hooks: when PreToolUse and PostToolUse run,
//     the transcript (the subagent's own file, for a subagent) already holds
//     the assistant line with the tool_use, but not yet the user line with
//     its tool_result. That line is written before the next model request.
//   - A call that fails Claude Code's own input validation (an Edit whose
//     old_string is not in the file) fires NO hook at all, not even
//     PreToolUse: the model gets an is_error tool_result
//     ("<tool_use_error>String to replace not found in file...") and only
//     the transcript shows the attempt.
//   - A PreToolUse deny (exit 0, hookSpecificOutput.permissionDecision
//     "deny") reaches the model as the next request's tool_result with
//     is_error true and text "PreToolUse:Edit hook error: <reason>"; the
//     tool does not run, no PostToolUse fires, and the run's
//     permission_denials lists the call.
//   - Subagent tool hooks carry agent_id and agent_type; their
//     transcript_path is the parent's; the subagent writes
//     <transcript without .jsonl>/subagents/agent-<agent_id>.jsonl (and
//     .meta.json). SubagentStart and SubagentStop fire around it.
//   - The Agent tool runs in the background by default: its PostToolUse
//     comes at once with tool_response {isAsync: true, status:
//     "async_launched", agentId}, and the main agent goes on concurrently
//     (main and subagent hooks interleave). If the main turn ends first,
//     `claude -p` waits for the subagent, then sends "<task-notification>…"
//     as a new user turn: UserPromptSubmit fires with it as the prompt
//     (new prompt_id) and Stop fires a second time. Use Step.After
//     "<task-notification>" on the main agent's next step for a fixed
//     order. With "run_in_background": false in the Agent input the call is
//     synchronous: SubagentStop fires before the Agent's PostToolUse, whose
//     tool_response has status "completed" and the report.
//   - SessionStart additionalContext does not go into the system prompt: it
//     arrives as a role "system" message in messages, text "SessionStart
//     hook additional context: <text>" (Request.MessageText sees it), and
//     the transcript records it as attachment lines hook_success and
//     hook_additional_context.
//
// Compaction, manual (`claude -p /compact --resume ID`): hooks
// SessionStart(resume), PreCompact(trigger manual, custom_instructions
// null), SubagentStop with agent_type "" (the summariser runs as an agent;
// no transcript file appears for it), SessionStart(compact), PostCompact,
// SessionEnd. The one model request carries the session's tools and the
// whole conversation, followed by a user message "CRITICAL: Respond with
// TEXT ONLY… Your task is to create a detailed summary of the
// conversation…"; the model must answer text with a <summary> block (an
// answer without one was asked twice). The same transcript then gets a
// system compact_boundary line, the isCompactSummary user line, and
// attachment lines re-attaching recently read files with their current
// content. No further request is made in that run, so the
// SessionStart(compact) additionalContext first reaches the model in the
// next run's first request (together with that run's
// SessionStart(resume) context), where the conversation is the summary, the
// re-attached files as "Called the Read tool…"/"Result of calling the Read
// tool…" reminders, and the new prompt. An Edit of a re-attached file
// then succeeds without a new Read.
//
// Compaction, auto: report input_tokens near the window (990,000, see
// Model.SetInputTokens) in the answer to a request, and after that answer's
// tool call has run Claude Code compacts in the middle of the turn:
// PreCompact(auto), the summary request as above, SessionStart(compact),
// PostCompact(auto), and the turn goes on with a request holding the
// summary, the last tool_use/tool_result pair (kept), and the re-attached
// files. The prompt, and so the marker, is gone; routing falls back to the
// scenario of the kept tool result, and the script goes on at the next
// step.
//
// Transcript paths: <CLAUDE_CONFIG_DIR>/projects/<slug>/<session>.jsonl,
// the slug being the working directory with "/" turned into "-"; find it
// by globbing for the session id (Runner.TranscriptPath).
package claudetest
