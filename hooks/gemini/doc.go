// Package gemini is Gemini CLI's adapter to the hook runtime (Harness,
// registered in hooks/harnesses; name "gemini", writers gemini-<session>),
// and the readers it is made of: Gemini CLI's hook payloads, the results
// of its file tools, and its chat files, turned into the harness-neutral
// items of hooks/transcript (spans, file evidence, compaction
// boundaries), so that the hook runtime, the guard and the import treat
// a Gemini session like any other. The readers import only the standard
// library, internal/jsonscan and hooks/transcript; the adapter
// (harness.go, install.go, sample.go) adds hooks, hooks/settings and
// gitstore (to find a repository's top). It decides nothing (the guard
// does) and stores nothing (the runtime does). Everything below was
// checked against Gemini CLI 0.61.0, its bundled source and real runs
// against a scripted model (testdata/gemini-cli-0.61.0; TestGeminiEndToEnd
// drives the real CLI with the hooks `git lossless install gemini` writes).
//
// # The adapter
//
// Install (HookSpecs) writes into settings.json (user ~/.gemini, or the
// repository's .gemini) BeforeTool (write_file|replace: the guard),
// AfterTool (every tool: the record, and a sweep of the chat), BeforeAgent
// (a sweep of the session) and SessionEnd (a sweep), each `<bin> hook
// gemini <runtime event>` with a name and a timeout in ms, and our MCP
// server under mcpServers (`<bin> mcp --harness gemini`: its tools are
// mcp_git-lossless_<tool>, MCPToolName, and what they show counts as seen
// for the session's context). The sweep keeps the ChatReader's ChatState
// in the transcript's cursor (hooks.TranscriptStater): each sweep reads
// only the lines added since. A compression is known only from the chat:
// AfterTool and BeforeAgent ask the runtime (Call.HandBack) to hand the
// working set back, once per boundary, as a short notice (file names and
// states, the MCP tools, `git lossless restore`): additionalContext is
// HTML-escaped by the CLI, so contents are never handed back that way.
//
// # Hooks
//
// settings.json (user ~/.gemini, or the project's .gemini once the
// folder is trusted) names a command per event: SessionStart,
// BeforeAgent, PreCompress, BeforeModel, BeforeToolSelection, AfterModel,
// BeforeTool, AfterTool, AfterAgent, Notification, SessionEnd (Events).
// Each call gets one JSON object on stdin: session_id, transcript_path
// (the main chat file), cwd, hook_event_name, timestamp, and the event's
// members — tool_name, tool_input, tool_response {llmContent,
// returnDisplay, error} for the tool events; prompt (and prompt_response,
// stop_hook_active) for the agent events; source (startup, resume,
// clear), reason, trigger (auto, manual); llm_request and llm_response
// for the model events. DecodePayload reads them with strict types: a
// member of another JSON type is a *FieldError naming it, null is absent,
// and llm_request (the whole history, on every model call) is skipped
// with the cheapest scan unless asked for.
//
// What a payload does not give: a tool call id (the chat file's ids are
// written after the hooks ran: HookKey is the dedupe key a hook's record
// can have, and it never equals the chat reader's key for the same
// result), and any mark of a subagent (its calls carry the parent's
// session_id and transcript_path).
//
// Output: a BeforeTool hook denies with DenyOutput; the CLI does not run
// the tool, fires no AfterTool, and the model receives "Tool execution
// blocked: <reason>". ContextOutput puts text in front of the model from
// the three events that take it (SessionStart, BeforeAgent, AfterTool;
// see ContextEvents for where each lands), escaped: every '<' and '>'
// becomes "&lt;" and "&gt;" (InjectedText), so file contents handed back
// that way are not the files' bytes. With nothing on stdout the CLI
// parses stderr instead: our one fail-open line becomes a "system
// message" the user sees (exit 0 never blocks).
//
// # Evidence from tool results
//
// Payload.Seen (AfterTool) and the chat reader derive the same evidence
// (Seen, FileSeen) from a successful call's arguments, its output (the
// text the model received) and its returnDisplay:
//
//   - read_file: the file's text without line numbers, lines split at
//     \r?\n and joined with \n. Whole ("full"; returnDisplay "") or behind
//     a notice "Showing lines A-B of N total lines" ("lines:A-B"), which
//     must agree with start_line/end_line (2000 lines by default), with
//     the display and with the lines shown; a line cut at 2000 characters
//     ("... [truncated]", "(some lines were shortened)") makes the read
//     not the file. Text the CLI appends (a hook's <hook_context>, a
//     discovered project context) is taken off. Binary files, images and
//     PDFs have no text. A read that is not exactly the file names it
//     without content (Seen.Why) for the hook, and yields no FileSeen from
//     the chat (as for Claude Code's non-text reads).
//   - read_many_files: one read per file, split exactly at the CLI's
//     "--- <path> ---" parts using the display's file list, or refused
//     whole. Gemini CLI 0.61 does not offer this tool to the model (only
//     older chats hold its results); its @-mentions use it, but put the
//     files' text, trimmed, into the user's message: no evidence.
//   - write_file: the content the model wrote (tool_input.content; the
//     CLI may correct it, and writes CRLF into a CRLF file: the disk then
//     differs, which the guard sees as drift).
//   - replace: the whole new file from returnDisplay.newContent; without
//     it (a result the chat holds only in the model's form) evidence
//     without content. The CLI's fuzzy matching makes replaying
//     old_string/new_string unsafe, so it is never done.
//
// Paths are tool_input.file_path made absolute against the cwd, as the
// CLI's tools make them (Payload.EditTarget also drops NUL bytes and
// reads an "@"-prefixed path without the "@" when it does not exist, as
// the CLI does; the chat reader, without the disk of then, leaves such a
// path unplaced). The guard's question before a write_file or replace —
// which file, does it exist — is EditTarget and a stat; creating a file
// is allowed.
//
// # Chat files
//
// The CLI keeps a session in <Dir>/tmp/<project>/chats/
// session-<time>-<id8>.jsonl (transcript_path), JSON lines written
// last-write-wins: a header {sessionId, projectHash, startTime, kind};
// message records {id, timestamp, type: user|gemini|info|error|warning,
// content, thoughts, toolCalls, tokens, model}, appended when created and
// appended again, whole, each time they change; {"$set":{...}} patches of
// the session's state, among them "messages", which replaces the whole
// list (at a resume, a compression, a rollback, tool output masking);
// {"$rewindTo": id}, which drops a message and every later one. A
// completed tool call is recorded in its model message's toolCalls (name,
// args, status success|error|cancelled, result parts, resultDisplay), and
// the result is recorded again as the user message sent back to the model.
//
// ChatReader reads complete lines from an offset, with the ChatState a
// previous reader left there, and yields each line's items:
//
//   - user message: a TextSpan (kind user) per text part; per
//     functionResponse part the call's result (see below).
//   - gemini message: a TextSpan (thinking) per thought, a TextSpan
//     (assistant, or thinking for a thought part) per text, a ToolUse per
//     call (functionCall part or toolCalls entry), and per completed
//     toolCalls entry its result.
//   - a result: a ToolResult (IsError for any status but success; a
//     hook's deny is status error) and, for a successful file tool, its
//     evidence (FileSeen).
//   - $set of the messages: a compression, a rewrite or nothing (below).
//   - $rewindTo: a CompactBoundary (trigger "rewind").
//   - header, other $set, info/error/warning messages: nothing.
//
// When a part is final. Only the last message is ever rewritten, and only
// by adding to it (its tokens; its tool calls, each recorded once it
// completed, with its result). So a message's parts are final when they
// first appear: the reader yields each part once, the first time it sees
// it, and remembers which parts of the last message it yielded. Nothing
// waits for a later line.
//
// Once per epoch. The CLI records a result twice (toolCalls and the
// message sent back; at a resume a third time, "<id>_response"), and
// rewrites its history in new messages: tool output masking records
// every turn again under new ids, then lists them. Within an epoch (the
// span between two boundaries) the reader yields a call's ToolUse once,
// its result once (the first record of it), and a model text that comes
// in the copy form (parts, where the model's own text is a string) once.
// A user message whose every text was already said in the epoch is held
// back: dropped if the next $set lists it (a copy), yielded as soon as
// anything else yields (the user said it again). Messages yielded before
// are not yielded again when a $set lists them.
//
// Compression. Gemini fires PreCompress before every model turn, whether
// or not it compresses, and has no hook after it; the chat file is the
// only witness. A $set of the messages whose first message after the
// <session_context> one is a user message starting with
// "<state_snapshot>", with an id not read before, is a compression:
// CompactBoundary (key "compact:<snapshot id>", trigger "compress") and
// CompactSummary (the snapshot's text). The same snapshot listed again (a
// resume) is not. A $set that drops or changes a result that gave
// evidence in the epoch (a rollback of a cancelled turn, masked or cut
// outputs) is a boundary too (key "compact:rewrite:<digest of the
// list>", trigger "rewrite"): the model no longer holds what it showed.
// After a boundary the messages the list keeps that were read before give
// their evidence again, in the new epoch; new ones (a compression's kept
// turns, re-numbered) give everything. A rewind gives no evidence again:
// the reader keeps no copy of the messages that survive it.
//
// Keys, identical on every read and import of the file, distinct
// otherwise: spans "span:<message id>:<part>" with part c<i> (content
// part), t<i> (thought), call:<call id>, result:<call id> (the message
// that holds the result), summary; evidence "seen:<message id>:<call id>"
// (":<n>" per file of read_many_files; "@<boundary>" when given again
// after a boundary); boundaries as above. LineMeta.UUID is the message id.
//
// The state is what the reader knows of the lines before its offset: the
// messages read, the last message's parts, the epoch's calls, results
// and texts, the calls still without a result, the held texts. It is JSON
// and bounded (16384 message ids, 4096 calls and texts per epoch): a
// reader that forgot a message yields it again under the same keys. A
// reader given no state at an offset past 0 yields what the lines after
// it hold, and what a later $set lists again.
//
// # Subagents
//
// invoke_agent runs a subagent in the same process: its chat is
// chats/<parent session id>/<subagent id>.jsonl (header kind "subagent"),
// read with ChatOptions{SessionID: parent, Agent: subagent id}
// (ChatFile.Options): its items carry the subagent as Agent, a context of
// its own. Its tool calls fire the hooks with the parent's session_id and
// transcript_path and nothing that tells them apart; the subagent's id
// reaches a hook only in the AfterTool of invoke_agent (SubagentID), after
// it finished. So a hook cannot place a call inside the bracket of an
// invoke_agent (BeforeTool to AfterTool) in either context for sure; only
// the chat files separate them.
//
// # Discovery
//
// Dir is ~/.gemini ($GEMINI_CLI_HOME for the home when set; the macOS
// sandbox keeps it in ~/.cache/.gemini). FindChats lists the main and
// subagent chats under Dir/tmp/*/chats with the session, agent and
// project directory of each: the projects.json entry whose sha256 is the
// chat's projectHash, else the one its short name maps to, else the
// .project_root marker of its directory.
//
// # What cannot be done
//
//   - No hook fires after a compression: it is known when its $set lands
//     in the chat file, and the working set can be handed back only on
//     the next event that takes context (AfterTool within the turn,
//     BeforeAgent at the next prompt; SessionStart fires at process start
//     only).
//   - PreCompress is no compaction signal (it fires every turn).
//   - Text handed back through additionalContext is escaped ('<', '>'),
//     so it is not the files' bytes.
//   - A hook cannot tell a subagent's tool call from the parent's.
//   - A hook's record and the chat's record of one result have different
//     keys (no call id in the payload; at AfterTool the chat holds the
//     model's message but not yet the call's id, which the CLI writes
//     with the result): both are stored. The content is one blob; the
//     cost is one event line per result.
//   - The guard takes every hook call as the main context's (a subagent's
//     calls carry the parent's session and chat): a subagent's read
//     vouches for the parent's edit and the other way round until the
//     sweep files the subagent's evidence under its own context.
//   - Reads in @-mentions (trimmed text) and reads the CLI shortened are
//     no evidence; a rewind drops all earlier evidence.
//   - Plan mode (write_file into the plans directory) is not modelled:
//     EditTarget names the workspace path.
package gemini
