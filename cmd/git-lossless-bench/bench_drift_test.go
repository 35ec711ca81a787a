package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/git-lossless/git-lossless/internal/testkit/stubbackend"
)

// TestBenchDriftDropsFacts runs `bench drift` against the stub with a
// summariser that keeps facts 1, 3 and 5 and drops 2 and 4 on purpose:
// every summary and the last forwarded request say so, the memo makes
// fewer summariser calls or sends fewer input characters than no memo,
// and the temporary archive is gone afterwards.
func TestBenchDriftDropsFacts(t *testing.T) {
	base := t.TempDir()
	cache := filepath.Join(base, "cache")
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Setenv("HOME", filepath.Join(base, "home"))
	t.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	backend := &stubbackend.Server{Kind: stubbackend.OpenAI, Window: 6000, Model: "drift-model",
		Summary: func(_ *stubbackend.Request, prompt string) string {
			var b strings.Builder
			b.WriteString("The user is fixing a ledger bug in a Go repository and reading files one by one; work continues with the next file.\n")
			var keep []string
			for _, i := range []int{0, 2, 4} { // facts 1, 3 and 5; 2 and 4 dropped
				if strings.Contains(prompt, driftFacts[i].token) {
					b.WriteString(driftFacts[i].sentence + "\n")
					keep = append(keep, "- "+driftFacts[i].sentence)
				}
			}
			b.WriteString("\n## Must Keep\n" + strings.Join(keep, "\n") + "\n")
			return b.String()
		}}
	url, err := backend.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer backend.Close()
	var out, errb bytes.Buffer
	o := driftOpts{upstream: url, model: "drift-model", turns: 30, window: 6000}
	if err := runBenchDrift(context.Background(), &env{Stdout: &out, Stderr: &errb, Getenv: os.Getenv}, o); err != nil {
		t.Fatalf("%v\n%s\n%s", err, out.String(), errb.String())
	}
	s := out.String()
	rows := regexp.MustCompile(`(?m)^([0-9]+) +([0-9]+) +([0-9]) of 5 +(\S+)$`).FindAllStringSubmatch(s, -1)
	if len(rows) == 0 {
		t.Fatalf("no summary rows\n%s", s)
	}
	for _, r := range rows {
		if r[4] != "1,3,5" {
			t.Errorf("summary %s kept %s, want 1,3,5\n%s", r[1], r[4], s)
		}
	}
	if n := strings.Count(s, "last forwarded request: 3 of 5 facts survive (1,3,5)"); n != 2 {
		t.Errorf("last forwarded request lines with facts 1,3,5: %d, want 2\n%s", n, s)
	}
	tot := regexp.MustCompile(`(?m)^memo (on|off) +([0-9]+) +([0-9]+) +3 of 5 \(1,3,5\) +30/30$`).FindAllStringSubmatch(s, -1)
	if len(tot) != 2 || tot[0][1] != "on" || tot[1][1] != "off" {
		t.Fatalf("totals rows: %v\n%s", tot, s)
	}
	onCalls, _ := strconv.Atoi(tot[0][2])
	onChars, _ := strconv.Atoi(tot[0][3])
	offCalls, _ := strconv.Atoi(tot[1][2])
	offChars, _ := strconv.Atoi(tot[1][3])
	if onCalls == 0 || !(onCalls < offCalls || onChars < offChars) {
		t.Errorf("memo on: %d calls %d chars; off: %d calls %d chars: the memo saved nothing\n%s", onCalls, onChars, offCalls, offChars, s)
	}
	if got := len(backend.Summaries()); got != onCalls+offCalls {
		t.Errorf("the stub saw %d summary calls, the report %d", got, onCalls+offCalls)
	}
	if left, _ := filepath.Glob(filepath.Join(cache, "git-lossless", "bench", "drift-*")); len(left) != 0 {
		t.Errorf("bench drift left %v behind", left)
	}
}

// The bench command dispatches `bench drift` and checks its flags.
func TestBenchDriftFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "drift", "--model", "m"}, "--upstream URL is required"},
		{[]string{"bench", "drift", "--upstream", "http://127.0.0.1:1"}, "--model is required"},
		{[]string{"bench", "drift", "--upstream", "http://127.0.0.1:1", "--model", "m", "--turns", "4"}, "--turns must be at least 5"},
		{[]string{"bench", "drift", "--upstream", "127.0.0.1:1", "--model", "m"}, "give an http:// or https:// URL"},
	} {
		var out bytes.Buffer
		code := run(context.Background(), c.args, &env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &out, Getenv: os.Getenv})
		if code != exitUsage || !strings.Contains(out.String(), c.want) {
			t.Errorf("%v: exit %d\n%s", c.args, code, out.String())
		}
	}
}
