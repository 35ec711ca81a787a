// Drives `git-lossless -C REPO mcp` over stdio with the official
// TypeScript MCP client (@modelcontextprotocol/sdk), for
// mcp/tsclient_test.go. It takes one JSON argument:
//
//	{"bin": "...", "repo": "...", "session": "...", "file": "note.txt", "outside": "/abs/file/outside/the/repo"}
//
// and prints one JSON summary on stdout: the server's name, version and
// instructions, the tools/list result as it came over the wire, and every
// tools/call made (label, tool, arguments, isError, text, or the JSON-RPC
// error code and message it threw). It judges nothing: the Go test does.
// It exits non-zero only when it could not connect at all (the summary
// then says why in "fatal").

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const cfg = JSON.parse(process.argv[2]);
const summary = { sdkVersion: null, server: null, instructions: null, capabilities: null, toolsList: null, toolsListError: null, calls: [], closedEarly: false, stderr: '', fatal: null };

// The SDK's version, from the package.json above the module node resolves.
try {
  let dir = dirname(fileURLToPath(import.meta.resolve('@modelcontextprotocol/sdk/client/index.js')));
  for (; dir !== dirname(dir); dir = dirname(dir)) {
    const p = join(dir, 'package.json');
    if (existsSync(p)) {
      const pkg = JSON.parse(readFileSync(p, 'utf8'));
      if (pkg.name === '@modelcontextprotocol/sdk') {
        summary.sdkVersion = pkg.version;
        break;
      }
    }
  }
} catch {
  // The Go test reports the missing version.
}

const transport = new StdioClientTransport({
  command: cfg.bin,
  args: ['-C', cfg.repo, 'mcp'],
  env: process.env, // HOME, XDG_CONFIG_HOME, CLAUDE_CONFIG_DIR are the test's
  stderr: 'pipe',
});
transport.stderr?.on('data', (d) => { summary.stderr += d.toString(); });

const client = new Client({ name: 'git-lossless-tsclient-test', version: '1.0.0' });
let done = false;
client.onclose = () => { if (!done) summary.closedEarly = true; };

// The raw tools/list result as it came over the wire (the SDK's parsed
// copy may drop fields the schema does not know; the budget counts all).
let rawToolsList = null;
const listIDs = new Set();
const origSend = transport.send.bind(transport);
transport.send = (msg, opts) => {
  if (msg && msg.method === 'tools/list') listIDs.add(msg.id);
  return origSend(msg, opts);
};

const timeout = { timeout: 20000 };

async function call(label, tool, args) {
  const rec = { label, tool, args, isError: null, text: null, errorCode: null, errorMessage: null };
  try {
    const res = await client.callTool({ name: tool, arguments: args }, undefined, timeout);
    rec.isError = res.isError === true;
    rec.text = (res.content || []).filter((c) => c.type === 'text').map((c) => c.text).join('');
  } catch (e) {
    rec.errorCode = typeof e.code === 'number' ? e.code : null;
    rec.errorMessage = String(e && e.message ? e.message : e);
  }
  summary.calls.push(rec);
  return rec;
}

function finish(code) {
  done = true;
  process.stdout.write(JSON.stringify(summary) + '\n', () => process.exit(code));
}

try {
  await client.connect(transport, timeout);
  const origOnMessage = transport.onmessage;
  transport.onmessage = (msg, extra) => {
    if (msg && listIDs.has(msg.id) && msg.result) rawToolsList = msg.result;
    origOnMessage?.(msg, extra);
  };
} catch (e) {
  summary.fatal = 'connect: ' + String(e && e.stack ? e.stack : e);
}

if (!summary.fatal) {
  summary.server = client.getServerVersion() ?? null;
  summary.instructions = client.getInstructions() ?? null;
  summary.capabilities = client.getServerCapabilities() ?? null;
  try {
    await client.listTools(undefined, timeout);
    summary.toolsList = rawToolsList;
  } catch (e) {
    summary.toolsListError = String(e && e.stack ? e.stack : e);
  }

  const s = cfg.session;
  const f = cfg.file;

  // Good arguments, one or more calls per tool. read_file comes before
  // file_history and restore_context, which then see its record.
  const search = await call('search', 'search', { query: 'edit' });
  const m = /\b(cc-[A-Za-z0-9._-]+#\d+)/.exec(search.text || '');
  const spanID = m ? m[1] : null;
  summary.spanID = spanID;
  if (spanID) {
    await call('read_span', 'read_span', { id: spanID });
    await call('read_span lines 1-1', 'read_span', { id: spanID, lines: '1-1' });
  }
  await call('search with limit and session', 'search', { query: 'hello', limit: 2, session: s });
  await call('digests', 'digests', {});
  await call('digests of the session', 'digests', { session: s, limit: 5 });
  await call('read_file', 'read_file', { path: f, session: s });
  await call('read_file lines 2-2', 'read_file', { path: f, lines: '2-2', session: s });
  await call('restore_context', 'restore_context', { session: s });
  await call('restore_context files', 'restore_context', { session: s, files: [f] });
  await call('file_history', 'file_history', { path: f });
  await call('seal_status full', 'seal_status', { full: true });
  await call('context_status', 'context_status', { session: s });
  await call('context_status latest', 'context_status', {});
  await call('receipt', 'receipt', {});
  await call('receipt HEAD~1 (none)', 'receipt', { commit: 'HEAD~1' });
  await call('who', 'who', { paths: ['note.txt'] });
  await call('blame', 'blame', { path: 'note.txt' });
  await call('blame line 1', 'blame', { path: 'note.txt', line: 1 });
  await call('handoff', 'handoff', {});
  await call('handoff of the session', 'handoff', { session: s });

  // Bad arguments: each must be a tool error (or a JSON-RPC invalid
  // params / unknown tool error), never a crash.
  const bad = [
    ['search: no query', 'search', {}],
    ['search: query is a number', 'search', { query: 42 }],
    ['search: empty query', 'search', { query: '' }],
    ['search: limit is a string', 'search', { query: 'edit', limit: 'ten' }],
    ['read_span: no id', 'read_span', {}],
    ['read_span: id is a number', 'read_span', { id: 7 }],
    ['read_span: unknown writer', 'read_span', { id: 'cc-no-such-session#1' }],
    ['read_span: unknown seq', 'read_span', { id: 'cc-' + s + '#99999' }],
    ['read_span: garbage id', 'read_span', { id: '../../etc/passwd' }],
    ['read_span: lines 9-2', 'read_span', { id: spanID || 'cc-' + s + '#1', lines: '9-2' }],
    ['read_span: bad cursor', 'read_span', { id: spanID || 'cc-' + s + '#1', cursor: 'x' }],
    ['digests: bad since', 'digests', { since: 'yesterday' }],
    ['digests: limit is a string', 'digests', { limit: 'ten' }],
    ['read_file: no path', 'read_file', {}],
    ['read_file: path is a number', 'read_file', { path: 12 }],
    ['read_file: relative path outside', 'read_file', { path: '../outside.txt' }],
    ['read_file: absolute path outside', 'read_file', { path: cfg.outside }],
    ['read_file: lines 9-2', 'read_file', { path: f, lines: '9-2' }],
    ['read_file: missing file', 'read_file', { path: 'no-such-file.txt', session: s }],
    ['read_file: bad session', 'read_file', { path: f, session: '../x' }],
    ['restore_context: bad session', 'restore_context', { session: '../x' }],
    ['restore_context: file outside', 'restore_context', { session: s, files: [cfg.outside] }],
    ['restore_context: files is a string', 'restore_context', { session: s, files: f }],
    ['file_history: no path', 'file_history', {}],
    ['file_history: path is a number', 'file_history', { path: 3 }],
    ['seal_status: full is a string', 'seal_status', { full: 'yes' }],
    ['context_status: unknown session', 'context_status', { session: 'nope' }],
    ['context_status: window is a string', 'context_status', { window: 'big' }],
    ['receipt: unknown revision', 'receipt', { commit: 'no-such-rev' }],
    ['receipt: commit is a number', 'receipt', { commit: 7 }],
    ['who: path outside the repository', 'who', { paths: ['../x'] }],
    ['who: paths is a string', 'who', { paths: 'note.txt' }],
    ['blame: no path', 'blame', {}],
    ['blame: line is a string', 'blame', { path: 'note.txt', line: '1' }],
    ['handoff: unknown session', 'handoff', { session: 'no-such-session' }],
    ['handoff: session is a number', 'handoff', { session: 7 }],
    ['unknown tool', 'no_such_tool', {}],
  ];
  for (const [label, tool, args] of bad) {
    await call('bad: ' + label, tool, args);
  }
  // Still serving after all of that.
  await call('seal_status', 'seal_status', {});
}

try {
  done = true;
  await client.close();
} catch {
  // The Go test sees the calls; a failing close adds nothing.
}
finish(summary.fatal ? 1 : 0);
