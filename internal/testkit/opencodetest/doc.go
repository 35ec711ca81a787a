// Package opencodetest drives the real opencode CLI (Version, 1.18.33)
// end to end against a scripted OpenAI chat completions model on
// 127.0.0.1, for tests of git-lossless's opencode plugin. It imports
// testing: only _test.go files may import it.
//
//	bin, deps := opencodetest.EnsureOpencode(t), opencodetest.EnsurePluginDeps(t)
//	opencodetest.WritePlugin(t, repoDir, opencodetest.Plugin{LogDir: dir}) // or the real plugin
//	m := opencodetest.NewModel(t, opencodetest.Script{
//		"SCENARIO:edit": {
//			opencodetest.Read(hello),
//			opencodetest.Edit(hello, "hello world", "hello opencode"),
//			opencodetest.Say("done"),
//		},
//	})
//	r := opencodetest.NewRunner(t, bin, m)      // isolated HOME and XDG dirs; config in the environment
//	r.PluginDeps = deps                         // no 64 MB npm install at run time
//	res, err := r.Run(ctx, repoDir, "SCENARIO:edit please")
//	// res.SessionID, r.Export(ctx, repoDir, res.SessionID), m.ToolResults("SCENARIO:edit"), ...
//
// The tool call at step n of scenario M has the id CallID(M, n)
// ("call_<M with non [A-Za-z0-9_-] runs turned into ->_<n>"), which
// opencode passes on as the plugin hooks' callID and the stored part's
// callID. Routing and step counting are on Script; the model decides
// from the request alone, and the summary it writes for a compaction
// records the next step. It answers at most Model.MaxRequests (60)
// requests (later ones get HTTP 400) and closes after 5 minutes; a Run is
// killed after Runner.Timeout (120 s).
//
// Environment knobs: OPENCODETEST_BIN names an opencode binary to use
// instead of installing one; OPENCODETEST_DUMP names a directory that
// receives every request (headers on the first line, the pretty JSON
// body after). On a failed test the model logs one line per request.
//
// # What was seen driving 1.18.33 this way (2 cores, Linux)
//
// Install: `npm install opencode-ai@1.18.33` takes about 15 s and 354 MB;
// npm 11 skips the postinstall (not in allowScripts), which is not
// needed: bin/opencode.exe is a 185 MB bun binary hard-linked from the
// optional dependency opencode-linux-x64 (the -baseline variant comes
// too). `opencode --version` prints "1.18.33".
//
// Plugin SDK: on every run opencode makes sure each config directory it
// reads (~/.config/opencode and, when it exists, <work tree>/.opencode)
// has @opencode-ai/plugin@<its version> installed, in the background
// (Npm.install, arborist, registry npmjs.org, ignoreScripts): it installs
// when node_modules is missing, or when package.json names a dependency
// that package-lock.json's root ("packages"."") lacks; it skips a
// directory it cannot write. Without help the first run in a fresh HOME
// and work tree downloads it twice (64 MB, 26 packages, each time) and
// took 32 s instead of 9 s on the loaded test machine, and needs the
// registry. EnsurePluginDeps installs the SDK once into the npm cache
// (plugin-1.18.33, about 4 s); Run seeds both config dirs from it when
// Runner.PluginDeps is set (SeedPluginDeps: package.json and
// package-lock.json copied, node_modules a symlink), and opencode then
// installs nothing (the symlink is still there after the run). opencode
// also writes <dir>/.gitignore ("node_modules", "package.json",
// "package-lock.json", "bun.lock", ".gitignore") into each config dir, so
// a work tree's .opencode/ shows only the plugin to git.
//
// Config (Runner.Config, passed as OPENCODE_CONFIG_CONTENT so no
// opencode.json lands in the work tree): model and small_model
// "opencodetest/mock-model" from a provider with npm
// "@ai-sdk/openai-compatible" (bundled; nothing fetched), options.baseURL
// http://127.0.0.1:PORT/v1 and apiKey, the model's tool_call true and
// limit {context, output}; permission edit/bash/webfetch allow;
// autoupdate false; share disabled. Environment: HOME and the XDG dirs
// under it, OPENCODE_DISABLE_AUTOUPDATE, _MODELS_FETCH, _LSP_DOWNLOAD,
// _CLAUDE_CODE, _SHARE. A run: `opencode run --format json --print-logs
// --log-level WARN PROMPT </dev/null` in the work tree takes 3-5 s for a
// title request and four model requests (8-10 s under load). --format
// json prints step_start, tool_use {part: the stored tool part with
// state}, step_finish, text {part.text}, each with sessionID. Data lives
// in ~/.local/share/opencode (opencode.db SQLite with WAL, log/,
// snapshot/); `opencode export <session>` prints {info, messages:
// [{info, parts}]} (Runner.Export).
//
// Requests: POST /v1/chat/completions, stream true. The first is the
// title request (agent "title", no tools), answered with text (Kind
// "title") without advancing the script. Then one request per step with
// ten tools (bash, edit, glob, grep, read, skill, task, todowrite,
// webfetch, write), a system message, the user prompt (in quotes:
// "\"PROMPT\""), assistant tool_calls and role "tool" results.
//
// Plugin hooks (Plugin writes <work tree>/.opencode/plugin/
// opencodetest.js, loaded without config): tool.execute.before {tool,
// sessionID, callID} {args}, tool.execute.after {tool, sessionID, callID,
// args} {title, output, metadata}, event (session.created, message.*,
// session.idle at the end; no session-end hook), chat.message,
// chat.params, experimental.*. A throw from tool.execute.before denies:
// the file stays unchanged, no tool.execute.after fires, the next request
// carries {"role":"tool","tool_call_id":id,"content":<the error message,
// verbatim>}, and the stored part has state.status "error" and
// state.error the message. A read's result is "<path>P</path>\n<type>
// file</type>\n<content>\n1: hello world\n\n(End of file - total 1 lines)
// \n</content>"; an edit's "Edit applied successfully.".
//
// Subagents (TestSubagent): the task tool {description, prompt,
// subagent_type "general"} creates a child session (event session.created
// with info.parentID the parent's id); the child's requests carry only its
// prompt, its tool hooks carry the child's sessionID, and the parent's
// task result is "<task id=\"<child id>\" state=\"completed\">\n
// <task_result>\n<the child's last text>\n</task_result>\n</task>".
//
// Compaction (TestCompact): with limit {context 8000, output 1000} and
// usage.prompt_tokens 9000 reported in the answer calling a tool, opencode
// runs that tool, finds the step over context - output, and compacts:
// experimental.session.compacting {sessionID} {context: []}, a request
// without tools whose system message starts "You are a context
// summarization agent" and whose user message is "Here is the
// conversation so far:\n\n<conversation>\n[User]: ...\n\n[Assistant tool
// call]: read({...})\n[Tool result]: ...</conversation>" and a template,
// with whatever the plugin pushed into output.context appended at its
// very end; then experimental.compaction.autocontinue, the bus event
// session.compacted {sessionID}, and the continuation request holding
// [system, user "What did we do so far?", assistant <the summary>, user
// "Continue if you have next steps, or stop and ask for clarification if
// you are unsure how to proceed."]: the prompt and the tool calls are
// gone. Context pushed by the compacting hook reaches later turns only
// through the summary. What does reach them: a plugin that remembers
// session.compacted and pushes text into output.system in
// experimental.chat.system.transform (Plugin.SystemAfterCompact) has it
// in the system message of every later request of that session and in
// none before. If limit.context <= limit.output every step counts as an
// overflow and opencode loops compact, continue, compact (the request cap
// ends that).
package opencodetest
