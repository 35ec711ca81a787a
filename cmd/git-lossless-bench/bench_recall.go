package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/git-lossless/git-lossless/internal/cli"
	sdkmcp "github.com/modelcontextprotocol/go-sdk/mcp"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/hooks"
	"github.com/git-lossless/git-lossless/hooks/claudecode"
	"github.com/git-lossless/git-lossless/internal/testkit/benchdata"
	"github.com/git-lossless/git-lossless/internal/testkit/transcriptgen"
	"github.com/git-lossless/git-lossless/recall"
)

// `git lossless bench recall`: the recall index over a corpus of
// generated Claude Code sessions swept into a repository as the hooks
// archive them, beside SQLite FTS5 on the same span texts in the same
// run: a full reindex (MB/s of span content), searches in a warm process
// and as a fresh process of this binary (`git lossless recall search Q
// --json`, or, where this binary has no recall command, the hidden
// `bench recall --recall-probe Q`), and the incremental update after one
// new batch. The peer is the sqlite3 command-line shell (FTS5, porter
// tokenizer), timed as processes; without sqlite3 on PATH (or with
// --sqlite3 -) its rows say so. FTS5 is also run in this process through
// modernc.org/sqlite (bench_recall_fts.go): its build and warm searches
// beside ours, and its bm25() top 10 beside ours on the same queries.

// recallBenchOpts configures `git lossless bench recall`.
type recallBenchOpts struct {
	dir    string // build the corpus here and keep it ("" = a temporary directory)
	spans  int    // spans the corpus holds at least
	bytes  int64  // span content bytes it holds at least
	rounds int    // measured runs of the query set (warm), and fresh processes per query
	sqlite string // sqlite3 binary; "" to look it up, "-" for none
}

// The sizes and targets the bench states.
const (
	recallTargetSpans       = 10_000
	recallTargetMB          = 20
	recallTargetReindex     = 100 // MB/s
	recallTargetWarm        = 20 * time.Millisecond
	recallTargetFresh       = 60 * time.Millisecond
	recallTargetIncremental = 5 * time.Millisecond
)

// benchRecallFlags registers the flags of `git lossless bench recall` on
// the bench command's flag set and returns its dispatcher.
func benchRecallFlags(fs *pflag.FlagSet) func(ctx context.Context, e *env, args []string) (handled bool, err error) {
	spans := fs.Int("recall-spans", recallTargetSpans, "bench recall: spans in the corpus (at least)")
	mb := fs.Int("recall-mb", recallTargetMB, "bench recall: megabytes of span content in the corpus (at least)")
	rounds := fs.Int("recall-rounds", 5, "bench recall: runs of the query set in a warm process; fresh processes per query")
	sqlite := fs.String("sqlite3", "", "bench recall: sqlite3 binary for the FTS5 peer (default: sqlite3 on PATH; - for none)")
	probe := fs.String("recall-probe", "", "bench recall: search QUERY in a fresh process (internal)")
	_ = fs.MarkHidden("recall-probe")
	return func(ctx context.Context, e *env, args []string) (bool, error) {
		if len(args) != 1 || args[0] != "recall" {
			return false, nil
		}
		if *probe != "" {
			return true, recallProbe(ctx, e, *probe)
		}
		o := recallBenchOpts{spans: *spans, bytes: int64(*mb) * 1_000_000, rounds: *rounds, sqlite: *sqlite}
		if f := fs.Lookup("keep"); f != nil {
			o.dir = f.Value.String()
		}
		switch {
		case o.spans < 10:
			return true, cli.Usagef("--recall-spans must be at least 10")
		case *mb < 0:
			return true, cli.Usagef("--recall-mb must not be negative")
		case o.rounds < 1:
			return true, cli.Usagef("--recall-rounds must be at least 1")
		}
		return true, runBenchRecall(ctx, e, o)
	}
}

// recallProbe is the fresh process the bench times when this binary has
// no recall command: open the index of the repository in the working
// directory, search, print the hits as JSON.
func recallProbe(ctx context.Context, e *env, query string) error {
	st, err := cli.OpenStore(e)
	if err != nil {
		return err
	}
	ix, err := recall.Open(ctx, st, recall.Options{})
	if err != nil {
		return err
	}
	defer ix.Close()
	res, err := ix.Search(ctx, recall.Query{Text: query, Limit: 10})
	if err != nil {
		return err
	}
	for i := range res.Hits {
		res.Hits[i].Snippet = recall.Mask(res.Hits[i].Snippet)
	}
	return json.NewEncoder(e.Stdout).Encode(res)
}

// recallQuery is one query of the set, with its FTS5 form for the peer
// (FTS5 has the porter stemmer and prefix queries, not fragments inside a
// word nor typos: those queries find nothing there, which is the point of
// them).
type recallQuery struct {
	text, fts string
}

var recallQueries = []recallQuery{
	{"summary", `"summary"`},                                              // a word
	{"reviewing changes", `"reviewing" OR "changes"`},                     // stems
	{"commits archived", `"commits" OR "archived"`},                       // stems
	{"guard history", `"guard" OR "history"`},                             // two words
	{"internal/store", `"internal" OR "store"`},                           // a path
	{"file_12.go", `"file_12" OR "go"`},                                   // a file name
	{"ile_12.g", `"ile_12" OR "g"`},                                       // a fragment of it
	{"ndex", `"ndex"`},                                                    // a fragment inside a word
	{"stor", `"stor"*`},                                                   // a prefix
	{"sesion", `"sesion"`},                                                // a typo
	{"archve", `"archve"`},                                                // a typo
	{"TaskCreate", `"taskcreate"`},                                        // a tool name
	{"return err", `"return" OR "err"`},                                   // code
	{"shell command output", `"shell" OR "command" OR "output"`},          // prose
	{"the agent should never", `"the" OR "agent" OR "should" OR "never"`}, // common words
	{"func", `"func"`},                                                    // a keyword
}

type recallBench struct {
	o      recallBenchOpts
	e      *env
	exe    string
	root   string
	repo   string
	st     *gitstore.Store
	spans  int
	bytes  int64
	swept  int         // sessions swept by this run
	texts  [][2]string // id, text: the peer's rows
	rows   []row
	notes  []string
	start  time.Time
	sqlite string
	db     string
	// for the pure-Go peer (bench_recall_fts.go)
	reindex     time.Duration // our full reindex, median
	disk        int64         // our index's bytes
	warm        samples       // our warm searches
	textTime    time.Duration // taking the peer's texts out of the archive
	rankTop     int           // ranking queries whose first hits agree
	rankTopTies int           // the same, counting ties
}

func (b *recallBench) logf(format string, a ...any) {
	fmt.Fprintf(b.e.Stderr, "  [%6.1fs] %s\n", time.Since(b.start).Seconds(), fmt.Sprintf(format, a...))
}

func runBenchRecall(ctx context.Context, e *env, o recallBenchOpts) error {
	exe, err := productExe()
	if err != nil {
		return fmt.Errorf("bench recall: locate own binary: %w", err)
	}
	b := &recallBench{o: o, e: e, exe: exe, start: time.Now()}
	var cleanup func()
	b.root, cleanup, err = benchDir(o.dir, "recall-", false)
	defer cleanup()
	if err != nil {
		return fmt.Errorf("bench recall: %w", err)
	}
	b.repo = filepath.Join(b.root, "corpus")
	switch {
	case o.sqlite == "-":
	case o.sqlite != "":
		b.sqlite = o.sqlite
	default:
		b.sqlite, _ = exec.LookPath("sqlite3")
	}
	fmt.Fprintf(e.Stdout, "git lossless bench recall\n")
	fmt.Fprintf(e.Stdout, "  machine  %s/%s, %d CPUs, %s\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())
	fmt.Fprintf(e.Stdout, "  load     %s at start (other processes share these CPUs and disk)\n", loadAvg())

	t0 := time.Now()
	if err := b.corpus(ctx); err != nil {
		return fmt.Errorf("bench recall: corpus: %w", err)
	}
	how := "swept in " + ms(time.Since(t0))
	if b.swept == 0 {
		how = "kept from an earlier run"
	}
	fmt.Fprintf(e.Stdout, "  corpus   %d spans, %.1f MB of span content, from generated Claude Code sessions (transcriptgen.GenerateWith, hooks.SweepSession), %s\n",
		b.spans, mb(int(b.bytes)), how)
	fmt.Fprintf(e.Stdout, "  repo     %s%s\n\n", b.repo, map[bool]string{true: " (kept)", false: " (removed afterwards)"}[o.dir != ""])

	steps := []benchStep{
		{"reindex", b.benchReindex},
		{"warm search", b.benchWarm},
		{"pure-Go FTS5", b.benchGoPeer},
		{"fresh-process search", b.benchFresh},
		{"incremental update", b.benchIncremental},
		{"mcp round trip", b.benchMCP},
	}
	if err := runBenchSteps(ctx, "bench recall", steps, b.logf); err != nil {
		return err
	}
	skipped := ""
	if b.sqlite == "" {
		skipped = "the SQLite FTS5 peer was not measured: no sqlite3 (apt-get install sqlite3, or --sqlite3 PATH)\n"
	}
	printBenchTable(e.Stdout, "PEER (sqlite3 FTS5, this run)", b.rows, skipped, append(b.notes,
		"span content: the archived span documents' bytes; the peers get the same spans' text as our index reads it (JSON string values but ids, kinds and base64 payloads, then tool name and path) in one FTS5 table (tokenize 'porter unicode61')",
		"queries: words, stems, paths, fragments (ile_12.g, ndex), a prefix (stor) and typos (sesion, archve); FTS5 answers words, stems and prefixes, not fragments inside words nor typos",
	), b.start)
	return nil
}

// corpus sweeps generated sessions into a new repository until it holds
// the spans and bytes asked for (reusing one --keep left).
func (b *recallBench) corpus(ctx context.Context) error {
	if _, err := os.Stat(filepath.Join(b.repo, ".git")); err != nil {
		if err := os.RemoveAll(b.repo); err != nil {
			return err
		}
		if err := benchdata.GitInit(b.repo); err != nil {
			return err
		}
		if err := benchdata.Fanout(b.repo); err != nil {
			return err
		}
		// No secrets are generated; redaction off keeps the bench from
		// creating a local identity should the scanner see one anyway.
		cfg, err := os.OpenFile(filepath.Join(b.repo, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		_, err = cfg.WriteString("[lossless]\n\tredact = off\n")
		if cerr := cfg.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	st, err := gitstore.OpenDir(b.repo, gitstore.Options{})
	if err != nil {
		return err
	}
	b.st = st
	if err := b.count(ctx); err != nil {
		return err
	}
	tdir, err := os.MkdirTemp(b.root, "transcripts-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tdir)
	// About one span per 7 KB of transcript (tool calls, results, file
	// bodies, request snapshots): sessions of that size, up to 8 MiB.
	size := int(min(8<<20, max(256<<10, int64(b.o.spans)*7000)))
	for seed := int64(1); b.spans < b.o.spans || b.bytes < b.o.bytes; seed++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		sid := fmt.Sprintf("recall-bench-%04d", seed)
		if n, _ := st.Events(ctx, gitstore.Query{Session: sid, Limit: 1}); len(n) > 0 {
			continue // kept from an earlier run
		}
		p := filepath.Join(tdir, sid+".jsonl")
		main, err := os.Create(p)
		if err != nil {
			return err
		}
		subDir := filepath.Join(tdir, sid, "subagents")
		if err := os.MkdirAll(subDir, 0o700); err != nil {
			return err
		}
		sub, err := os.Create(filepath.Join(subDir, "agent-"+transcriptgen.SubagentID(seed)+".jsonl"))
		if err != nil {
			main.Close()
			return err
		}
		err = transcriptgen.GenerateWith(main, transcriptgen.Options{Seed: seed, TargetBytes: size, Root: b.repo, SessionID: sid, Subagent: sub})
		main.Close()
		sub.Close()
		if err != nil {
			return err
		}
		if _, err := hooks.SweepSession(ctx, st, claudecode.New(), p, hooks.SweepOptions{}); err != nil {
			return err
		}
		b.swept++
		if err := b.count(ctx); err != nil {
			return err
		}
		b.logf("corpus: session %d swept: %d spans, %.1f MB", seed, b.spans, mb(int(b.bytes)))
	}
	return nil
}

func (b *recallBench) count(ctx context.Context) error {
	evs, err := b.st.Events(ctx, gitstore.Query{Op: gitstore.OpSpan})
	if err != nil {
		return err
	}
	b.spans, b.bytes = 0, 0
	for _, e := range evs {
		b.spans++
		b.bytes += e.Bytes
	}
	return nil
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchReindex: recall.Reindex in this process, beside loading the same
// texts into an FTS5 table with sqlite3.
func (b *recallBench) benchReindex(ctx context.Context) error {
	const rounds = 3
	var wall, cpu samples
	for range rounds {
		c0, t0 := cpuTime(), time.Now()
		if err := recall.Reindex(ctx, b.st); err != nil {
			return err
		}
		wall = append(wall, time.Since(t0))
		cpu = append(cpu, cpuTime()-c0)
	}
	rate := mb(int(b.bytes)) / wall.pct(50).Seconds()
	var disk int64
	if dir, err := b.st.StateDir(ctx, "recall"); err == nil {
		disk = dirSize(dir)
	}
	b.reindex, b.disk = wall.pct(50), disk
	peer := "-"
	if b.sqlite != "" {
		d, size, err := b.loadPeer(ctx)
		if err != nil {
			return err
		}
		peer = fmt.Sprintf("FTS5 load: %.0f MB/s (%s), db %.1f MB", mb(int(b.bytes))/d.Seconds(), ms(d), mb(int(size)))
		b.logf("reindex: peer load %s", ms(d))
	}
	b.rows = append(b.rows, row{
		what: fmt.Sprintf("full reindex, %d spans, %.1f MB (median of %d)", b.spans, mb(int(b.bytes)), rounds),
		ours: fmt.Sprintf("%.0f MB/s (%s, %.2f CPU-s), index %.1f MB", rate, ms(wall.pct(50)), cpu.pct(50).Seconds(), mb(int(disk))),
		peer: peer, target: fmt.Sprintf(">= %d MB/s", recallTargetReindex), met: yes(rate >= recallTargetReindex),
	})
	b.logf("reindex: %s, %.0f MB/s", ms(wall.pct(50)), rate)
	return nil
}

func dirSize(dir string) int64 {
	var n int64
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if fi, err := e.Info(); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// loadPeer writes the span texts as SQL and times sqlite3 loading them
// into an FTS5 table.
func (b *recallBench) loadPeer(ctx context.Context) (time.Duration, int64, error) {
	if b.texts == nil {
		t0 := time.Now()
		if err := b.peerTexts(ctx); err != nil {
			return 0, 0, err
		}
		b.textTime = time.Since(t0)
	}
	var sql bytes.Buffer
	sql.WriteString("CREATE VIRTUAL TABLE spans USING fts5(id UNINDEXED, body, tokenize='porter unicode61');\nBEGIN;\n")
	for _, t := range b.texts {
		fmt.Fprintf(&sql, "INSERT INTO spans VALUES('%s','%s');\n", sqlQuote(t[0]), sqlQuote(t[1]))
	}
	sql.WriteString("COMMIT;\n")
	b.db = filepath.Join(b.root, "peer.sqlite")
	os.Remove(b.db)
	d, _, err := runProc(ctx, b.root, sql.Bytes(), b.sqlite, b.db)
	if err != nil {
		return 0, 0, err
	}
	fi, err := os.Stat(b.db)
	if err != nil {
		return 0, 0, err
	}
	return d, fi.Size(), nil
}

func sqlQuote(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\x00", ""), "'", "''")
}

// peerTexts collects each span's text for the peers: what our index
// reads of it (its JSON string values but those of the members it skips,
// then its tool name and path), so that a difference in ranking is the
// engines', not their inputs'.
func (b *recallBench) peerTexts(ctx context.Context) error {
	evs, err := b.st.Events(ctx, gitstore.Query{Op: gitstore.OpSpan})
	if err != nil {
		return err
	}
	for _, ev := range evs {
		data, err := b.st.Objects().Blob(ctx, ev.Blob)
		if err != nil {
			continue
		}
		var v any
		var text strings.Builder
		if json.Unmarshal(data, &v) == nil {
			jsonStrings(v, &text)
		} else {
			text.Write(data)
		}
		for _, x := range []string{ev.Tool, ev.Path} {
			if x != "" {
				text.WriteString(x)
				text.WriteByte('\n')
			}
		}
		b.texts = append(b.texts, [2]string{fmt.Sprintf("%s#%d", ev.Writer, ev.Seq), text.String()})
	}
	return nil
}

func jsonStrings(v any, out *strings.Builder) {
	switch x := v.(type) {
	case string:
		out.WriteString(x)
		out.WriteByte('\n')
	case []any:
		for _, e := range x {
			jsonStrings(e, out)
		}
	case map[string]any:
		for k, e := range x {
			if !peerSkipKeys[k] {
				jsonStrings(e, out)
			}
		}
	}
}

// peerSkipKeys are the members whose string values our index does not
// read (recall's skipKeys, text.go): kinds, roles, ids, bookkeeping,
// base64 payloads.
var peerSkipKeys = map[string]bool{
	"kind": true, "role": true, "id": true, "tool_use_id": true, "type": true,
	"format": true, "session": true, "model": true, "route": true, "ts": true,
	"count_source": true, "extends": true, "archived_in": true, "span": true,
	"uuid": true, "signature": true, "data": true, "media_type": true,
	"cache_control": true,
}

// benchWarm: the query set in this process on an open index, beside one
// sqlite3 process running the same queries.
func (b *recallBench) benchWarm(ctx context.Context) error {
	ix, err := recall.Open(ctx, b.st, recall.Options{})
	if err != nil {
		return err
	}
	defer ix.Close()
	var lat samples
	found := 0
	for r := range b.o.rounds + 1 {
		for _, q := range recallQueries {
			t0 := time.Now()
			res, err := ix.Search(ctx, recall.Query{Text: q.text, Limit: 10})
			if err != nil {
				return err
			}
			if r > 0 { // the first round warms the page cache
				lat = append(lat, time.Since(t0))
			} else if res.Total > 0 {
				found++
			}
		}
	}
	b.warm = lat
	peer := "-"
	if b.sqlite != "" {
		var script bytes.Buffer
		n := 0
		for range b.o.rounds {
			for _, q := range recallQueries {
				fmt.Fprintf(&script, "SELECT id, snippet(spans, 1, '[', ']', '…', 12) FROM spans WHERE spans MATCH '%s' ORDER BY rank LIMIT 10;\n", sqlQuote(q.fts))
				n++
			}
		}
		d, _, err := runProc(ctx, b.root, script.Bytes(), b.sqlite, b.db)
		if err != nil {
			return err
		}
		peer = fmt.Sprintf("one sqlite3 process, %d queries: mean %s", n, ms(d/time.Duration(n)))
	}
	b.rows = append(b.rows, row{
		what: fmt.Sprintf("search, warm process, %d queries x %d (snippets of the first page included)", len(recallQueries), b.o.rounds),
		ours: lat.String(), peer: peer, target: fmt.Sprintf("p50 <= %d ms", recallTargetWarm.Milliseconds()), met: yes(lat.pct(50) <= recallTargetWarm),
	})
	b.notes = append(b.notes, fmt.Sprintf("warm search: %d of %d queries have hits here", found, len(recallQueries)))
	b.logf("warm search: %s", lat)
	return nil
}

// benchFresh: each query as a fresh process of this binary, beside a
// fresh sqlite3 process per query and this binary doing nothing.
func (b *recallBench) benchFresh(ctx context.Context) error {
	args := func(q string) []string { return []string{"recall", "search", q, "--json"} }
	how := "`git lossless recall search Q --json`"
	if _, _, err := runProc(ctx, b.repo, nil, b.exe, args("summary")...); err != nil {
		args = func(q string) []string { return []string{"bench", "recall", "--recall-probe", q} }
		how = "`git lossless bench recall --recall-probe Q` (this binary has no recall command)"
		if _, _, err := runProc(ctx, b.repo, nil, b.exe, args("summary")...); err != nil {
			return err
		}
	}
	var ours, peer, floor samples
	hits := 0
	for range b.o.rounds {
		for _, q := range recallQueries {
			d, out, err := runProc(ctx, b.repo, nil, b.exe, args(q.text)...)
			if err != nil {
				return err
			}
			ours = append(ours, d)
			var res struct {
				Total int `json:"total"`
			}
			if json.Unmarshal(out, &res) != nil {
				return fmt.Errorf("%s: not JSON: %.200s", how, out)
			}
			if res.Total > 0 {
				hits++
			}
			if b.sqlite != "" {
				sql := fmt.Sprintf("SELECT id, snippet(spans, 1, '[', ']', '…', 12) FROM spans WHERE spans MATCH '%s' ORDER BY rank LIMIT 10;", sqlQuote(q.fts))
				d, _, err := runProc(ctx, b.root, nil, b.sqlite, b.db, sql)
				if err != nil {
					return err
				}
				peer = append(peer, d)
			}
		}
		d, _, err := runProc(ctx, b.repo, nil, b.exe, "--version")
		if err != nil {
			return err
		}
		floor = append(floor, d)
	}
	if hits == 0 {
		return errors.New("no fresh-process search found anything")
	}
	peerCol := "-"
	if len(peer) > 0 {
		peerCol = "`sqlite3 DB 'SELECT ... MATCH ...'`: " + peer.String()
	}
	b.rows = append(b.rows, row{
		what: fmt.Sprintf("search, fresh process, %d queries x %d", len(recallQueries), b.o.rounds),
		ours: ours.String(), peer: peerCol, target: fmt.Sprintf("p50 <= %d ms", recallTargetFresh.Milliseconds()), met: yes(ours.pct(50) <= recallTargetFresh),
	}, row{what: "`git-lossless --version` process: the floor under the row above", ours: floor.String(), peer: "-", target: "-"})
	b.notes = append(b.notes, "fresh process: "+how+" in the corpus repository: start, open the store, check the heads against the index, map it, search, read the first page's snippets, print JSON")
	b.logf("fresh search: %s, peer %s", ours, peer)
	return nil
}

// benchIncremental: one new batch (a prompt and an answer) on a writer,
// then recall.Open, which reads that batch only and adds a segment.
func (b *recallBench) benchIncremental(ctx context.Context) error {
	if ix, err := recall.Open(ctx, b.st, recall.Options{}); err == nil {
		ix.Close()
	}
	var lat samples
	ts := time.Now().UTC()
	for i := range 23 {
		recs := []gitstore.Record{
			benchSpan(ts, "user", fmt.Sprintf("incremental prompt %d: where does the pelican nest", i)),
			benchSpan(ts, "assistant", "the pelican nests on the island; the answer is archived"),
		}
		if _, err := b.st.Append(ctx, gitstore.WriterName(claudecode.Prefix, "recall-bench-incremental"), recs); err != nil {
			return err
		}
		t0 := time.Now()
		ix, err := recall.Open(ctx, b.st, recall.Options{})
		if err != nil {
			return err
		}
		d := time.Since(t0)
		st := ix.Stats()
		ix.Close()
		if st.DocsAdded != 2 || len(st.WritersRead) != 1 {
			return fmt.Errorf("incremental update read %v and added %d documents, want 1 writer and 2", st.WritersRead, st.DocsAdded)
		}
		if i >= 3 {
			lat = append(lat, d)
		}
	}
	b.rows = append(b.rows, row{
		what: fmt.Sprintf("incremental update after one new batch (Open, in process; %d)", len(lat)),
		ours: lat.String(), peer: "-", target: fmt.Sprintf("p50 <= %d ms", recallTargetIncremental.Milliseconds()), met: yes(lat.pct(50) <= recallTargetIncremental),
	})
	b.logf("incremental: %s", lat)
	return nil
}

func benchSpan(ts time.Time, kind, text string) gitstore.Record {
	doc, _ := json.Marshal(map[string]string{"kind": kind, "role": kind, "text": text})
	k, _ := json.Marshal(kind)
	return gitstore.Record{Event: gitstore.Event{TS: ts, Session: "recall-bench-incremental", Source: "sweep", Op: gitstore.OpSpan,
		Extra: map[string]json.RawMessage{"kind": k}}, Content: doc, HasContent: true}
}

// MCP round-trip targets: a warm server over stdio.
const (
	mcpTargetReadSpan = 2 * time.Millisecond
	mcpTargetSearch   = 25 * time.Millisecond
)

// benchMCP: `git lossless mcp` as a process over stdio, driven by the
// official Go SDK's client (the transport a client such as Claude Code
// uses), warmed by one call of each tool, then read_span and search
// round trips timed one after another.
func (b *recallBench) benchMCP(ctx context.Context) error {
	cmd := exec.Command(b.exe, "-C", b.repo, "mcp")
	cmd.Env = childEnv()
	client := sdkmcp.NewClient(&sdkmcp.Implementation{Name: "bench", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &sdkmcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return fmt.Errorf("start the MCP server: %w", err)
	}
	defer cs.Close()
	call := func(name string, args map[string]any) (string, error) {
		res, err := cs.CallTool(ctx, &sdkmcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			return "", err
		}
		var out strings.Builder
		for _, c := range res.Content {
			if t, ok := c.(*sdkmcp.TextContent); ok {
				out.WriteString(t.Text)
			}
		}
		if res.IsError {
			return "", fmt.Errorf("%s: %s", name, out.String())
		}
		return out.String(), nil
	}
	// An id to read: the first hit of a warm-up search.
	out, err := call("search", map[string]any{"query": "archive", "limit": 1})
	if err != nil {
		return err
	}
	id := ""
	if i := strings.Index(out, ">>>\n"); i >= 0 {
		if f := strings.Fields(out[i+4:]); len(f) > 0 {
			id = f[0]
		}
	}
	if id == "" {
		return fmt.Errorf("mcp search found nothing to read:\n%s", out)
	}
	if _, err := call("read_span", map[string]any{"id": id}); err != nil {
		return err
	}
	var read, search samples
	for range b.o.rounds {
		for _, q := range recallQueries {
			t0 := time.Now()
			if _, err := call("read_span", map[string]any{"id": id, "lines": "1-40"}); err != nil {
				return err
			}
			read = append(read, time.Since(t0))
			t0 = time.Now()
			if _, err := call("search", map[string]any{"query": q.text}); err != nil {
				return err
			}
			search = append(search, time.Since(t0))
		}
	}
	b.rows = append(b.rows, row{
		what: fmt.Sprintf("MCP read_span round trip, stdio, warm server (%d)", len(read)),
		ours: read.String(), peer: "-", target: fmt.Sprintf("p50 <= %d ms", mcpTargetReadSpan.Milliseconds()), met: yes(read.pct(50) <= mcpTargetReadSpan),
	}, row{
		what: fmt.Sprintf("MCP search round trip, stdio, warm server (%d)", len(search)),
		ours: search.String(), peer: "-", target: fmt.Sprintf("p50 <= %d ms", mcpTargetSearch.Milliseconds()), met: yes(search.pct(50) <= mcpTargetSearch),
	})
	b.notes = append(b.notes, "MCP: `git lossless mcp` started once as a process; the official Go SDK client calls it over stdio; the writers' heads are compared with the archive at most every 500 ms (the index is reopened only when the archive moved)")
	b.logf("mcp: read_span %s, search %s", read, search)
	return nil
}
