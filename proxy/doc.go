// Package proxy is git-lossless's compacting proxy for local models behind
// OpenAI-compatible servers (Ollama, llama.cpp, vLLM, LM Studio, LiteLLM)
// and for the Anthropic Messages route.
//
// It sits between a coding client and its backend, counts each request's
// tokens, and when a conversation would outgrow the window it folds the
// older turns into a summary written by the same backend, keeps the
// recent turns verbatim, and forwards a request that fits. Every original
// it folds away is archived first, as a span in the git archive (package
// gitstore), sealed like everything else and optionally age-encrypted.
//
// # Routes
//
// POST /v1/chat/completions (OpenAI), POST /v1/messages (Anthropic) and
// POST /v1/responses (OpenAI's Responses API: Codex CLI, and vLLM, LM
// Studio and Ollama for local models; see responses.go for its items,
// units and limits) are compacted; every other route (other /v1/* routes, Ollama's /api/*, the
// backend's own routes) passes through unchanged, streamed both ways.
// GET /lossless/usage, /lossless/stats, /lossless/events and
// /lossless/health (a live HTML dashboard) are the proxy's own.
//
// # Compaction
//
// budget = min(window × threshold, window − reserve). A request within the
// budget goes upstream as the client's exact bytes. Otherwise system
// messages stay in place, a recent tail (about TailShare of the budget, at
// least MinTail messages, never splitting a tool call from its results)
// stays verbatim, and the messages before it are replaced by one summary
// message naming the spans that hold them. The summary is asked of the
// same backend with the client's credentials, a max_tokens, and the old
// turns fenced as data. Summaries are memoised per session and extended
// with only the newly folded messages; the memo is recognised by a hash
// chain over the messages it covers, never by text a client could forge.
// Pinned facts (user sentences with keep phrases, the summary's "## Must
// Keep" bullets) are forwarded verbatim in every later compacted request.
// A message too large to fit alone is archived whole and forwarded as head
// and tail around a pointer line. On every failure the proxy fails open:
// the client's exact bytes go upstream.
//
// # Full capture
//
// With Config.Capture CaptureJournal (lossless.proxy.capture journal; off
// by default, because it grows with every session) every message of
// every session is archived as it arrives, whether or not it is ever
// compacted: one journal span (kind "journal") per message, stored once
// per session however often the client resends its history (the span id
// is a hash of session, index and message, and the dedupe key), redacted
// and encrypted like every span, found by recall. The request path only
// hashes the messages in memory and copies the new ones; a background
// writer batches them into appends, Close flushes it, FlushJournal waits
// for it, and a failure is counted (Stats.Journal) and retried by the
// session's next turn, never seen by the client. An Anthropic request's
// top-level system is journaled as message -1. Bodies over MaxBody pass
// through unread and are not journaled; answers are never archived. See
// journal.go.
//
// # Tool budget
//
// Tool definitions take window space and are counted with the request
// (in the estimate's basis, and sent to the backend's tokenizer with the
// messages). Compaction rewrites the messages array only: tools, system
// and every other member go upstream as the client's bytes. A session
// whose fixed floor (leading system messages or Anthropic's system, plus
// tools and the other members outside messages) alone exceeds ToolShare
// of the budget is noted once: a tool_budget event naming the floor and
// the largest tool schemas, a log line, Stats.ToolBudgetSessions, and an
// advice box on the dashboard. See toolbudget.go.
//
// # Stale recall
//
// A summary keeps what its writer thought mattered. When the new user
// message of a compacted request names a distinctive word (an
// identifier, a path component, a number, an uncommon word) that the
// session's archived spans hold but the forwarded request does not, one
// labelled user message is placed before it quoting up to three of the
// original lines, each with its span id, masked (recall.Mask) and fenced
// as archived data with a random tag ("data, not instructions"), then a
// one-line assistant acknowledgement so turns still alternate; within
// Config.RecallBudget tokens and the room the budget leaves. Matching is
// package recall's analysis (stems, compounds, trigram fragments) over
// lines, in a recall.LineIndex per session fed each span once it is
// durable: in memory, so encrypted spans are matched without their
// plaintext reaching the disk, and never across sessions. A line the
// request already holds is not repeated. It runs only on compacted
// requests and fails open: an error or panic leaves the recall out
// (Stats.RecallErrors) and the compacted request goes on. Counted as
// recalls and recall_lines in Stats, the savings log and Report, and on
// the compaction's event. See recall.go.
//
// # Cuts
//
// Answers are relayed byte for byte, flushed per chunk, with the
// backend's Content-Length (the proxy never rewrites an answer). When the
// backend breaks an answer off — the connection closes or fails inside a
// chunked answer, or before the Content-Length it announced — everything
// that arrived is relayed first, and then the client's response is
// aborted: its connection is closed without the terminating chunk, or
// with its Content-Length unmet (abortCut; net/http's
// http.ErrAbortHandler). Ending it cleanly would tell the client that a
// truncated answer was complete; aborted, the client sees what it would
// straight from the backend (curl exits 18, Go's client reads
// io.ErrUnexpectedEOF). This holds on every route: compacted, failed
// open, passed through, error answers. Each cut is counted
// (Stats.UpstreamCuts, upstream_cuts), noted as an upstream-cut event,
// logged, and marked upstream_cut on the request's savings log line. A
// panic in the proxy while it relays an answer ends it the same way
// (counted as fail-open internal-after-answer). A client that speaks
// HTTP/1.0 gets an answer of unknown length
// close-delimited, where a cut cannot be told from an end; only the
// backend's Content-Length, which the proxy forwards, tells it.
//
// What is archived for a cut answer: nothing of the answer, as for every
// answer. Spans hold what the proxy folded away from the request and the
// summary standing in for it, written durably before the request went
// upstream, so they are complete whatever happens to the answer. A
// summary call whose answer is cut fails open (reason summary-cut): no
// span and no memo are made from it, and the client's exact bytes go
// upstream.
//
// # Loops
//
// An upstream that leads back to the proxy is refused at start when it
// is the proxy's own listener in any spelling (ErrUpstreamIsSelf), and
// per request through HopHeader (X-Git-Lossless-Hop): every request the
// proxy sends upstream lists the proxies it has passed through, this
// one's random per-process id last; a request arriving with this proxy's
// id, or through more than maxHops proxies, is answered 508 Loop
// Detected before its body is read and counted (Stats.LoopsRefused). The
// check is per request and keeps no state; only well-formed ids from a
// client's header go on; the header never reaches a client. See loop.go.
//
// # Embedding
//
// New returns the proxy as an http.Handler; Run binds an address (port 0
// picks one) and serves until its context ends:
//
//	cfg := proxy.DefaultConfig()
//	cfg.Listen = "127.0.0.1:0"
//	cfg.Upstream = backendURL
//	cfg.Store = store // or cfg.Archive = &proxy.MemoryArchive{}
//	srv, err := proxy.Run(ctx, cfg) // srv.Addr
//	...
//	cancel()
//	err = srv.Wait() // every answered request recorded, the log closed
//
// A client has its answer before the proxy has recorded the exchange:
// Proxy.Idle waits for the requests in flight, Server.Wait for a stopped
// proxy to finish; read Stats, Usage or the savings log after them.
//
// Package internal/testkit/stubbackend has scripted backends (llama.cpp,
// vLLM, Ollama, generic OpenAI, Anthropic) for tests, the demo and the
// benchmark.
package proxy
