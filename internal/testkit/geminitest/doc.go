// Package geminitest drives the real Gemini CLI (Version, 0.61.0) end to
// end against a scripted Gemini API model on 127.0.0.1, for tests of
// git-lossless's Gemini CLI hooks. It imports testing: only _test.go
// files may import it.
//
//	bin := geminitest.EnsureGemini(t)           // npm install, cached; skip (CI: fail) without npm
//	m := geminitest.NewModel(t, geminitest.Script{
//		"SCENARIO:edit": {
//			geminitest.ReadFile(hello),
//			geminitest.Replace(hello, "hello world", "hello gemini"),
//			geminitest.Say("done"),
//		},
//	})
//	r := geminitest.NewRunner(t, bin, m)        // isolated HOME, settings.json, trusted folder
//	r.SetHooks(geminitest.Hook{Event: "BeforeTool", Matcher: "*", Command: cmd})
//	res, err := r.Run(ctx, repoDir, "SCENARIO:edit please")
//	// res.SessionID, r.ChatPath(res.SessionID), m.ToolResults("SCENARIO:edit"), ...
//
// The function call at step n of scenario M carries the id CallID(M, n)
// ("gt_<M with non [A-Za-z0-9_-] runs turned into ->_<n>"); the CLI
// prefixes the tool name ("replace__gt_..._1") and sends that id back on
// the functionResponse and as the stream-json tool_id. Hooks get no call
// id. Routing and step counting are on Script; the model decides from the
// request alone, and the <state_snapshot> it writes for a compression
// records the next step. It answers at most Model.MaxRequests (100)
// requests (later ones get HTTP 400) and closes after 5 minutes; a Run is
// killed after Runner.Timeout (120 s).
//
// Environment knobs: GEMINITEST_BIN names a gemini binary to use instead
// of installing one; GEMINITEST_DUMP names a directory that receives every
// request (path and headers on the first line, the pretty JSON body
// after). On a failed test the model logs one line per request.
//
// # What was seen driving 0.61.0 this way (2 cores, Linux, node 20)
//
// Install: `npm install @google/gemini-cli@0.61.0` takes about 8 s and
// 100 MB (7 packages; bundle/gemini.js and chunks, optional node-pty and
// keytar). `gemini --version` prints "0.61.0".
//
// Setup (NewRunner, Run): HOME a temp dir; HOME/.gemini/settings.json with
// security.auth.selectedType "gemini-api-key" (with GOOGLE_GEMINI_BASE_URL
// set and no auth type the CLI picks "gateway" and exits 41 with "Invalid
// auth method selected."), general.enableAutoUpdate and
// enableAutoUpdateNotification false, privacy.usageStatisticsEnabled
// false, telemetry.enabled false, and the hooks; HOME/.gemini/
// trustedFolders.json {"<dir>": "TRUST_FOLDER"} (else --yolo is
// downgraded: "Approval mode overridden to "default" because the current
// folder is not trusted."); environment GOOGLE_GEMINI_BASE_URL=
// http://127.0.0.1:PORT, GEMINI_API_KEY (any value; sent as
// X-Goog-Api-Key), GEMINI_CLI_NO_RELAUNCH=true (no second node process).
// A run: `gemini -m gemini-2.5-flash --yolo -p PROMPT --output-format
// stream-json [--resume latest] </dev/null` in the work tree takes 1.5-4 s
// for four model requests (10 s under load). stream-json prints init
// {session_id, model}, message {role, content, delta}, tool_use
// {tool_name, tool_id, parameters}, tool_result {tool_id, status,
// output, error{type:"policy_violation", message} for a hook deny},
// result {status, stats}.
//
// Requests: POST /v1beta/models/gemini-2.5-flash:streamGenerateContent
// ?alt=sse for every turn (one SSE data event answers it), with
// systemInstruction, 16 function declarations (update_topic,
// list_directory, read_file, grep_search, glob, replace, write_file,
// web_fetch, run_shell_command, list_background_processes,
// read_background_output, google_web_search, write_todos,
// enter_plan_mode, invoke_agent, activate_skill: no read_many_files for
// the main agent in 0.61.0) and generationConfig {temperature, topP,
// topK, thinkingConfig}. The first user content is the <session_context>
// (date, OS, workspace, directory tree), then the prompt. No countTokens,
// no JSON-mode (next speaker, loop detection, routing) call was seen in
// these runs; the model answers them anyway (schema-shaped JSON, enums
// "user" when allowed).
//
// Hooks (settings "hooks", timeouts in ms; SetHooks): for a read, a
// replace and a denied replace they fire SessionStart(source startup),
// BeforeAgent {prompt}, then before every model turn PreCompress
// {trigger:"auto"} (whether or not anything is compressed) with
// BeforeModel/BeforeToolSelection/AfterModel, BeforeTool {tool_name,
// tool_input{file_path,...}} / AfterTool {tool_response{llmContent,
// returnDisplay}} per call (no AfterTool for the denied one), AfterAgent
// {prompt, prompt_response}, SessionEnd {reason:"exit"}. Every payload has
// session_id, transcript_path (the chat file), cwd, hook_event_name,
// timestamp. A BeforeTool deny is stdout {"decision":"deny","reason":R};
// the file stays unchanged and the next request carries functionResponse
// {name:"replace", response:{error:"Tool execution blocked: R"}}.
// SessionStart hookSpecificOutput.additionalContext is prepended to the
// prompt as "<hook_context>C</hook_context>\n\n"; BeforeAgent's
// additionalContext arrives as a separate user content
// "<hook_context>C</hook_context>" right after the prompt (on every run).
//
// Compression (TestCompress): run one prompt, then set
// model.compressionThreshold 0.001 and run `--resume latest` with a
// second prompt (SessionStart source "resume"). With promptTokenCount
// about 12,000 (a token per 4 bytes of body) the CLI compresses after the
// second run's first model turn: PreCompress, then :generateContent
// (not streamed, no tools) with the system instruction "You are a
// specialized system component responsible for distilling chat history
// into a structured XML <state_snapshot>..." and the history ending
// "Generate a new <state_snapshot> based on the provided history.",
// answered with a <state_snapshot> block; then a second :generateContent
// whose instruction says "Critically evaluate the <state_snapshot>...",
// answered with the same block. The next request's contents are
// [user <session_context>, user "<state_snapshot>...</state_snapshot>",
// model "Got it. Thanks for the additional context!", then the kept turns:
// the second prompt with its hook context, the call and its response].
// There is no hook after compression. What hooks can see: the next
// BeforeModel's llm_request.messages hold the snapshot (the earlier ones
// do not), and the chat file (same file, same session id) gets a line
// {"$set":{"messages":[...the compressed list with the <state_snapshot>...]}}.
//
// Subagents (TestSubagent): invoke_agent {agent_name:
// "codebase_investigator", prompt} runs a child on gemini-2.5-pro whose
// requests carry only its own prompt; it ends by calling complete_task
// {report:{SummaryOfFindings, ExplorationTrace, RelevantLocations}}. Its
// BeforeTool/AfterTool hooks carry the parent's session_id and
// transcript_path and nothing that marks the child; only the surrounding
// BeforeTool/AfterTool(invoke_agent) pair brackets them. The parent gets
// the functionResponse "Subagent 'codebase_investigator' finished.\n
// Termination Reason: GOAL\nResult:\n{...}". The child writes
// chats/<session id>/<child id>.jsonl with header kind "subagent". A call
// of read_many_files (not offered) fires no hook and returns {"error":
// "Tool \"read_many_files\" not found. Did you mean one of: ..."}.
//
// Chat file: HOME/.gemini/tmp/<project short name>/chats/
// session-<YYYY-MM-DDTHH-MM>-<first 8 of session id>.jsonl (ChatPath);
// last-write-wins JSONL: a header {sessionId, projectHash, startTime,
// kind:"main"} per process, messages by id (a later line with the same id
// adds toolCalls with results), and {"$set":{...}} lines patching
// top-level state (messages, lastUpdated, sessionId).
package geminitest
