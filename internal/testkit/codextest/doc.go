// Package codextest drives the real OpenAI Codex CLI (Version, 0.169.0)
// end to end against a scripted Responses API model on 127.0.0.1, for
// tests of git-lossless's Codex hooks. It imports testing: only _test.go
// files may import it (internal/layoutcheck keeps production code off
// internal/testkit).
//
//	bin := codextest.EnsureCodex(t)             // npm install, cached; skip (CI: fail) without npm
//	m := codextest.NewModel(t, codextest.Script{
//		"SCENARIO:edit": {
//			codextest.Shell("cat hello.txt"),
//			codextest.Patch(codextest.UpdateFile("hello.txt", "hello world", "hello codex")),
//			codextest.Say("done"),
//		},
//	})
//	r := codextest.NewRunner(t, bin, m)         // isolated HOME and CODEX_HOME, config.toml
//	r.InstallHooks(t, codextest.Hook{Event: "PreToolUse", Matcher: "*", Command: cmd})
//	res, err := r.Run(ctx, repoDir, "SCENARIO:edit please")
//	// res.ThreadID (the hooks' session_id), r.RolloutPath(res.ThreadID),
//	// m.ToolOutputs("SCENARIO:edit"), m.Requests()[i].MessageText(), ...
//
// The tool call at step n of scenario M has the call id CallID(M, n)
// ("call_<M with non [A-Za-z0-9_-] runs turned into ->_<n>"), which Codex
// passes to hooks as tool_use_id. Routing and step counting are on
// Script: the model decides from the request alone, and a compaction
// summary it writes records the next step, because Codex drops the tool
// calls from the history when it compacts. The model answers at most
// Model.MaxRequests (100) requests (later ones get HTTP 400, which ends
// the run) and closes after 5 minutes; a Run is killed after
// Runner.Timeout (120 s).
//
// Environment knobs: CODEXTEST_BIN names a codex binary to use instead of
// installing one (its --version must print Version); CODEXTEST_DUMP names
// a directory that receives every request (headers on the first line,
// the pretty JSON body after). On a failed test the model logs one line
// per request.
//
// # What was seen driving 0.169.0 this way (2 cores, Linux, node 20)
//
// Install: `npm install @openai/codex@0.169.0` takes about 7 s and 404 MB:
// node_modules/.bin/codex is a node launcher that execs the static musl
// binary in the optional dependency @openai/codex-linux-x64 (vendor/
// x86_64-unknown-linux-musl/bin/codex, 294 MB, plus bundled rg and
// bwrap). `codex --version` prints "codex-cli 0.169.0". With HOME under
// /tmp Codex warns "Refusing to create helper binaries under temporary
// dir" and goes on; with no bwrap on PATH it warns and uses the bundled
// one, and sandbox_mode workspace-write works.
//
// Config (Runner.WriteConfig): model "gpt-5.5" (see ModelSlug),
// model_provider "codextest" with base_url http://127.0.0.1:PORT/v1,
// wire_api "responses" (wire_api "chat" is rejected), env_key naming a
// variable that must merely be set, request_max_retries and
// stream_max_retries 0; approval_policy never; sandbox_mode
// workspace-write. A run: `codex exec --dangerously-bypass-hook-trust
// --json --skip-git-repo-check -C DIR [-c k=v] PROMPT </dev/null` takes
// 0.5-1.1 s for three or four model requests. --json prints
// thread.started {thread_id}, turn.started, item.started/item.completed
// (command_execution, file_change, agent_message, collab_tool_call,
// error: hook config warnings arrive as error items), turn.completed
// {usage}. stderr ends with "Reading additional input from stdin...".
//
// Requests: only POST /v1/responses, streamed. The system prompt is a
// developer message (no "instructions" field); the input holds developer
// messages (instructions, skills), a user <environment_context> message,
// the prompt, then function_call/function_call_output (exec_command) and
// custom_tool_call/custom_tool_call_output (apply_patch) items. Ten
// tools are offered to gpt-5.5 (exec_command, write_stdin, apply_patch,
// view_image, tool_search, web_search, goal tools; multi_agent_v1 sits
// behind tool_search but may be called directly). client_metadata
// carries session_id, thread_id (a subagent's own), turn_id and
// x-codex-turn-metadata, a JSON string whose request_kind is "turn" or
// "compaction" (Request.RequestKind). Headers: Session-Id, Thread-Id,
// Originator codex_exec, Authorization "Bearer <env_key value>".
//
// Hooks (hooks.json in CODEX_HOME, Claude Code's schema; Runner.
// InstallHooks): for a cat, a patch and a denied patch they fire
// SessionStart(startup), UserPromptSubmit, PreModelRequest, PreToolUse
// (tool_name "Bash", tool_input.command), PostToolUse (tool_response the
// command's output), PreModelRequest, PreToolUse/PostToolUse
// (tool_name "apply_patch", tool_input.command the patch), PreModelRequest,
// PreToolUse (denied: no PostToolUse), PreModelRequest, Stop,
// SessionEnd(reason "other"). Every payload has session_id (= the
// thread id), transcript_path (the rollout), cwd, hook_event_name; tool
// hooks have tool_use_id = the call id. A PreToolUse deny is stdout
// {"hookSpecificOutput":{"hookEventName":"PreToolUse",
// "permissionDecision":"deny","permissionDecisionReason":R}} with exit
// 0; the file stays unchanged and the next request carries the
// custom_tool_call_output "Command blocked by PreToolUse hook: R. Command:
// <the patch>". Codex turns hook config warnings ("clamping SessionEnd
// hook timeout to 3s in <path>") into --json error items.
//
// Compaction (TestCompact): with -c model_auto_compact_token_limit=1000
// and usage.input_tokens 5000 reported in the answer to a request, Codex
// runs that answer's tool call and then, before the next model request,
// fires PreCompact {trigger:"auto"}, sends the compaction request (no
// tools; the whole history ending in a user message "You are performing a
// CONTEXT CHECKPOINT COMPACTION. Create a handoff summary..."; request_kind
// "compaction"), fires PostCompact {trigger:"auto"} and SessionStart
// {source:"compact"}, and goes on in the same turn. The next request
// holds the developer messages, <environment_context>, the user prompt,
// a user message "Another language model started to solve this
// problem... <summary>" and, last, the SessionStart hook's
// additionalContext as a developer message; the tool calls and outputs
// are gone. The rollout gets a "compacted" line {message,
// replacement_history}.
//
// Subagents (TestSubagent): function_call spawn_agent with namespace
// "multi_agent_v1" {message} answers {"agent_id","nickname"}; wait_agent
// {targets:[agent_id], timeout_ms} waits (the parent's hook sees tool_name
// "multi_agent_v1wait_agent"). SubagentStart {agent_id, agent_type
// "default", transcript_path the child's rollout}; the child's tool hooks
// carry agent_id and the parent's session_id; SubagentStop {agent_id,
// agent_transcript_path, last_assistant_message, transcript_path the
// parent's}. The child's requests carry client_metadata.thread_id =
// agent_id and only the spawn message as prompt; its rollout is
// rollout-*-<agent_id>.jsonl.
//
// # Hook trust (TestHookTrust)
//
// Without --dangerously-bypass-hook-trust Codex runs no hook it has no
// persisted trust for, and says nothing about it (no warning in stdout or
// stderr; the denied patch goes through). Persisted trust is one TOML
// table per handler in the USER config.toml ($CODEX_HOME/config.toml):
//
//	[hooks.state."/abs/path/hooks.json:pre_tool_use:0:0"]
//	trusted_hash = "sha256:<64 hex>"
//
// The key is "<absolute path of the hooks file>:<event label>:<group
// index>:<handler index>", the label being the event in snake_case
// (pre_tool_use, session_start, user_prompt_submit, pre_model_request,
// ...), indices counting from 0 within that event's list in the file.
// The hash (HookTrust, hookHash) is sha256, hex, prefixed "sha256:", of the
// compact JSON with keys sorted at every level of
//
//	{"event_name": label,
//	 "matcher": m,              // only if set, and never for UserPromptSubmit, Stop, PreModelRequest, Interrupt
//	 "hooks": [{"type": "command", "command": c, "timeout": n, "async": false,
//	            "statusMessage": s}]}  // statusMessage only if set
//
// with timeout made explicit: 600 when absent (at least 1), and for
// SessionEnd and Interrupt 1 when absent, clamped to 1..3. The command is
// hashed as written (a changed command, timeout or matcher makes the hook
// "modified": skipped again). This was checked against Codex's own
// numbers for all 13 events, with and without matcher and timeout, and a
// statusMessage: `codex app-server` (JSON-RPC on stdio: initialize,
// initialized, hooks/list {cwds:[dir]}; Runner.ListHooks) lists every hook
// with key, currentHash and trustStatus ("untrusted", "trusted",
// "modified"; "managed" for admin layers), which a doctor can use to tell
// installed-but-untrusted hooks apart without running a session. With the
// tables written, a plain `codex exec` (no bypass flag) runs the hooks and
// the deny holds. The same works for project scope: <repo>/.codex/
// hooks.json needs the project trusted ([projects."<repo>"] trust_level =
// "trusted", Runner.TrustProject; what `codex exec --trust` writes) and
// its trust tables in the user config.toml, keyed by the project file's
// absolute path; Codex reads hook state from user-controlled layers only
// (the user config.toml and session flags), never from project config.
// Per invocation, `-c 'hooks.state={"<key>"={trusted_hash="sha256:..."}}'`
// (an inline table; a dotted -c path cannot hold the key's dots) also
// trusts a hook (tried by hand with a SessionStart hook). Codex writes no
// trust file of its own for hooks.json hooks: no file named *trust*
// appears under HOME after trusted runs, and strace of a trusted `codex
// exec` whose SessionStart hook ran shows no access to any path holding
// "hook-trust". The binary's ".hook-trust" string sits next to "hook
// trust baseline has no parent" among the hooks engine's strings; what
// it names was not found (plugin-delivered hooks have their own trust
// code, hooks/src/engine/plugin_trust.rs).
package codextest
