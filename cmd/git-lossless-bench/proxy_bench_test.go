package main

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestDemoProxy(t *testing.T) {
	proxyTestEnv(t)
	code, out, errOut := runCLI(t, "demo", "proxy")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^ +1 +1,\d{3} +200 answered +200 answered +1,\d{3} +forwarded as sent$`),
		regexp.MustCompile(`(?m)^ +7 +7,\d{3} +200 answered +200 answered +\d,\d{3} +compacted: new summary, originals in sp-[a-z2-7]{16}$`),
		regexp.MustCompile(`(?m)^ +8 +8,\d{3} +400 too long +200 answered +\d,\d{3} +compacted`),
		regexp.MustCompile(`(?m)^ +12 +12,\d{3} +400 too long +200 answered +\d,\d{3} +compacted`),
		regexp.MustCompile(`(?m)^direct: +7/12 answered; rejected from turn 8 on \(over the 8,192-token window\)$`),
		regexp.MustCompile(`(?m)^via proxy: +12/12 answered; \d+ requests compacted \(\d+ new summaries, \d+ from the memo\), \d+ originals archived in \d+ spans$`),
		regexp.MustCompile(`(?m)^archive: +OK proxy-demo: \d+ entries`),
		regexp.MustCompile(`(?m)^pinned: +"the release branch is called lossless-2026 and must not be force-pushed" kept verbatim`),
		regexp.MustCompile(`(?m)^Demo OK\.$`),
	} {
		if !want.MatchString(out) {
			t.Errorf("demo proxy output lacks %s\n%s", want, out)
		}
	}
	if strings.Contains(out, "UNEXPECTED") || strings.Contains(out, "FAILED") {
		t.Errorf("demo reported a problem:\n%s", out)
	}
}

func TestBenchProxySmall(t *testing.T) {
	proxyTestEnv(t)
	var out bytes.Buffer
	o := defaultBenchProxyOpts()
	o.turns, o.duration, o.clients, o.pairs = 12, 200*time.Millisecond, 4, 20
	if err := runBenchProxy(context.Background(), &env{Stdout: &out, Stderr: &out, Getenv: os.Getenv}, o); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	num := `-?[\d.]+`
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^tokens_before=\d+ tokens_after=\d+ compactions=[1-9]\d* p50_added_ms=[\d.]+ p95_added_ms=[\d.]+$`),
		regexp.MustCompile(`(?m)^non-compacting, session turns +[1-9]\d* +` + num + ` +` + num + ` +` + num + ` +p50 <= 0\.5 ms: (MET|MISSED)$`),
		regexp.MustCompile(`(?m)^non-compacting, paired repeats +20 +` + num + ` +` + num + ` +p50 <= 0\.5 ms: (MET|MISSED)$`),
		regexp.MustCompile(`(?m)^compacting, all +[1-9]\d* +` + num + ` +` + num + ` +` + num + ` +p50 <= 3 ms incl\. the durable span write: (MET|MISSED)$`),
		regexp.MustCompile(`(?m)^compacting, writing a span +[1-9]\d* +` + num + ` +` + num + ` +` + num + ` +p50 <= 3 ms incl\. the durable span write: (MET|MISSED)$`),
		regexp.MustCompile(`(?m)^  the span write alone +[1-9]\d* +[\d.]+ +[\d.]+`),
		regexp.MustCompile(`(?m)^compacting, summary from the memo +\d+ `),
		regexp.MustCompile(`(?m)^compacted, stale recall on +20 +` + num + ` +` + num + ` +\(summary from the memo\)$`),
		regexp.MustCompile(`(?m)^compacted, same request, recall off +20 +` + num + ` +` + num + ` +\(summary from the memo\)$`),
		regexp.MustCompile(`(?m)^  recall on - off, paired +20 +` + num + ` +` + num + ` +p50 <= 1 ms: (MET|MISSED)$`),
		// Every request through the recall proxy quoted lines: the
		// paired figure measures a recall, not a request without one.
		regexp.MustCompile(`(?m)^  stale recall: 23 of 23 requests through the recall proxy quoted archived lines \([1-9]\d* lines\)$`),
		regexp.MustCompile(`(?m)^  12/12 turns answered; `),
		regexp.MustCompile(`(?m)^  pass-through, 4 concurrent clients, 200ms: [\d,]+ req/s through the proxy, [\d,]+ req/s direct$`),
		regexp.MustCompile(`(?m)^  under that load: p50 latency [\d.]+ ms through the proxy, [\d.]+ ms direct \([1-9]\d* and [1-9]\d* requests\)$`),
	} {
		if !want.MatchString(out.String()) {
			t.Errorf("bench output lacks %s\n%s", want, out.String())
		}
	}
}
