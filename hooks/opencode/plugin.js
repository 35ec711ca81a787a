// git-lossless's opencode plugin, written by `git lossless install opencode`
// (a reinstall overwrites it; `git lossless uninstall opencode` removes it).
// It hands opencode's tool calls, compactions and idle sessions to the
// git-lossless hook program, and keeps the session log git-lossless sweeps
// for spans (opencode keeps no transcript file). Our failures never break
// opencode: everything is caught, the hook program is time-boxed, and one
// line goes to stderr. The one deliberate block is the edit guard's deny,
// which this plugin throws from tool.execute.before.
import { spawn } from "node:child_process"
import fs from "node:fs"
import os from "node:os"
import path from "node:path"

const HOOK = __GIT_LOSSLESS_HOOK__
const TIMEOUT_MS = 10000
const SWEEP_TIMEOUT_MS = 30000
// Tools whose calls the guard decides, and tools whose results are evidence.
const GUARDED = new Set(["edit", "write", "multiedit", "apply_patch"])
const RECORDED = new Set(["read", "edit", "write", "multiedit", "apply_patch", "bash"])

function warn(what, err) {
  try { process.stderr.write("git-lossless: opencode plugin: " + what + ": " + String((err && err.message) || err).split("\n")[0] + " (ignored)\n") } catch (e) {}
}

function logDir() {
  const base = process.env.XDG_STATE_HOME || path.join(process.env.HOME || os.homedir(), ".local", "state")
  return path.join(base, "git-lossless", "opencode")
}

// runHook runs `<hook program> hook opencode <event>` with the payload on
// stdin and resolves to its parsed reply ({} when it printed nothing, failed
// or ran out of time).
function runHook(event, payload, timeout) {
  return new Promise((resolve) => {
    let done = false
    const finish = (v) => { if (!done) { done = true; resolve(v) } }
    let child
    try {
      child = spawn(HOOK.bin, [...HOOK.args, event], { stdio: ["pipe", "pipe", "pipe"] })
    } catch (e) { warn(event, e); return finish({}) }
    const out = [], errs = []
    let outLen = 0
    const timer = setTimeout(() => { warn(event, "hook program timed out"); try { child.kill("SIGKILL") } catch (e) {} ; finish({}) }, timeout || TIMEOUT_MS)
    child.stdout.on("data", (b) => { if (outLen < (4 << 20)) { out.push(b); outLen += b.length } })
    child.stderr.on("data", (b) => { if (errs.length < 64) errs.push(b) })
    child.on("error", (e) => { clearTimeout(timer); warn(event, e); finish({}) })
    child.on("close", () => {
      clearTimeout(timer)
      const err = Buffer.concat(errs).toString().trim()
      if (err) { try { process.stderr.write(err.split("\n")[0] + "\n") } catch (e) {} }
      const s = Buffer.concat(out).toString().trim()
      if (!s) return finish({})
      try { finish(JSON.parse(s)) } catch (e) { warn(event, "unreadable reply"); finish({}) }
    })
    child.stdin.on("error", () => {})
    child.stdin.end(JSON.stringify(payload))
  })
}

export const GitLossless = async (ctx) => {
  const cwd = ctx.directory || process.cwd()
  const worktree = ctx.worktree || ""
  // Installed for the user and for the project, opencode loads two copies:
  // only the first hooks a directory (else every call would run twice).
  const loaded = (globalThis.__gitLosslessDirs = globalThis.__gitLosslessDirs || new Set())
  if (loaded.has(cwd)) return {}
  loaded.add(cwd)
  const parents = new Map()    // session id -> parent session id
  const roles = new Map()      // message id -> role / "summary"
  const written = new Set()    // part ids already in the log
  const pending = new Set()    // sessions compacted, working set not fetched yet
  const restored = new Map()   // session id -> the text handed back after its last compaction
  const compactions = new Map() // session id -> its compaction part's id (the boundary's key, as in an export)
  const models = new Map()     // assistant message id -> its model, providerID/modelID
  const current = new Map()    // session id -> the model of its latest assistant message (its tool calls')

  const root = (sid) => {
    let s = sid
    for (let i = 0; i < 64 && parents.get(s); i++) s = parents.get(s)
    return s
  }
  const logOf = (sid) => {
    const r = root(sid)
    return r === sid ? path.join(logDir(), r + ".jsonl") : path.join(logDir(), r, sid + ".jsonl")
  }
  // Session ids name log files: only plain ids (opencode's are ses_...).
  const okID = (s) => typeof s === "string" && /^[A-Za-z0-9_-]{1,200}$/.test(s)
  const log = (sid, line) => {
    try {
      if (!okID(sid) || !okID(root(sid))) return
      const p = logOf(sid)
      fs.mkdirSync(path.dirname(p), { recursive: true, mode: 0o700 })
      line.v = 1
      line.session = root(sid)
      if (line.session !== sid) line.agent = sid
      line.ts = Date.now()
      line.cwd = cwd
      fs.appendFileSync(p, JSON.stringify(line) + "\n", { mode: 0o600 })
    } catch (e) { warn("session log", e) }
  }
  const payload = (event, sid, more) => {
    const r = root(sid)
    const ok = okID(sid) && okID(r)
    return Object.assign({
      v: 1, event, session: r, agent: r === sid ? "" : sid, session_id: sid, parent_id: parents.get(sid) || "",
      cwd, worktree, transcript: ok ? path.join(logDir(), r + ".jsonl") : "", context_transcript: ok ? logOf(sid) : "",
    }, more || {})
  }
  const learn = (info) => {
    if (info && info.id && info.parentID) parents.set(info.id, info.parentID)
  }

  return {
    "tool.execute.before": async (input, output) => {
      let reply = {}
      try {
        if (!input || !GUARDED.has(input.tool)) return
        reply = await runHook("pre-tool-use", payload("tool.execute.before", input.sessionID,
          { tool: input.tool, call_id: input.callID || "", args: (output && output.args) || {} }))
      } catch (e) { warn("tool.execute.before", e); return }
      if (reply && typeof reply.deny === "string" && reply.deny) throw new Error(reply.deny)
    },
    "tool.execute.after": async (input, output) => {
      try {
        if (!input) return
        const text = output && typeof output.output === "string" ? output.output : null
        log(input.sessionID, { type: "tool", id: input.callID || "", tool: input.tool, args: input.args || {}, output: text, model: current.get(input.sessionID) })
        if (!RECORDED.has(input.tool)) return
        await runHook("post-tool-use", payload("tool.execute.after", input.sessionID,
          { tool: input.tool, call_id: input.callID || "", args: input.args || {}, output: text, model: current.get(input.sessionID) || "" }))
      } catch (e) { warn("tool.execute.after", e) }
    },
    "chat.message": async (input, output) => {
      try {
        const msg = output && output.message
        const sid = (input && input.sessionID) || (msg && msg.sessionID)
        if (!sid || !output || !Array.isArray(output.parts)) return
        for (const p of output.parts) {
          if (p && p.type === "text" && !p.synthetic && typeof p.text === "string" && !written.has(p.id)) {
            written.add(p.id)
            log(sid, { type: "user", id: p.id, message: (msg && msg.id) || "", text: p.text })
          }
        }
      } catch (e) { warn("chat.message", e) }
    },
    "experimental.chat.system.transform": async (input, output) => {
      try {
        const sid = input && input.sessionID
        if (!sid || !output || !Array.isArray(output.system)) return
        if (pending.has(sid)) {
          pending.delete(sid)
          const reply = await runHook("session-start", payload("session.compacted", sid, { source: "compact" }), SWEEP_TIMEOUT_MS)
          if (reply && typeof reply.context === "string" && reply.context) restored.set(sid, reply.context)
          else restored.delete(sid)
        }
        if (restored.has(sid)) output.system.push(restored.get(sid))
      } catch (e) { warn("experimental.chat.system.transform", e) }
    },
    event: async ({ event }) => {
      try {
        if (!event || !event.properties) return
        const pr = event.properties
        switch (event.type) {
          case "session.created":
          case "session.updated":
            learn(pr.info)
            break
          case "message.updated": {
            const info = pr.info
            if (!info || !info.id) break
            roles.set(info.id, info.summary === true ? "summary" : info.role)
            // The model that writes the message (and its tool calls).
            if (info.role === "assistant" && info.modelID) {
              const m = (info.providerID || "") + "/" + info.modelID
              models.set(info.id, m)
              if (info.sessionID) current.set(info.sessionID, m)
            }
            // A finished model turn's token counts: how full the context is.
            const tk = info.tokens
            if (info.role === "assistant" && info.summary !== true && info.time && info.time.completed && tk && !written.has("usage:" + info.id)) {
              written.add("usage:" + info.id)
              log(info.sessionID, { type: "usage", id: info.id, model: (info.providerID || "") + "/" + (info.modelID || ""),
                tokens: { input: tk.input || 0, output: tk.output || 0, cache_read: (tk.cache && tk.cache.read) || 0, cache_write: (tk.cache && tk.cache.write) || 0 } })
            }
            break
          }
          case "message.part.updated": {
            const p = pr.part
            if (p && p.type === "compaction" && p.id && p.sessionID) compactions.set(p.sessionID, p.id)
            const role = p && roles.get(p.messageID)
            if (!p || p.type !== "text" || p.synthetic || !(p.time && p.time.end) || written.has(p.id)) break
            if (role !== "assistant" && role !== "summary") break
            written.add(p.id)
            log(p.sessionID, { type: role, id: p.id, message: p.messageID, text: p.text || "", model: role === "assistant" ? models.get(p.messageID) : undefined })
            break
          }
          case "session.compacted":
            if (!pr.sessionID) break
            log(pr.sessionID, { type: "compacted", id: compactions.get(pr.sessionID) || event.id || pr.sessionID + "-" + Date.now() })
            compactions.delete(pr.sessionID)
            pending.add(pr.sessionID)
            break
          case "session.idle":
            if (!pr.sessionID) break
            await runHook("session-end", payload("session.idle", pr.sessionID), SWEEP_TIMEOUT_MS)
            break
        }
      } catch (e) { warn("event", e) }
    },
  }
}
