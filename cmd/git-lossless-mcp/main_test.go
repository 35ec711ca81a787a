package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/git-lossless/git-lossless/internal/cli"

	"github.com/git-lossless/git-lossless/internal/testkit"
)

// TestDocumentedMCPFlagsExist: every `git lossless mcp ...` in README.md
// and docs/ (fenced sh blocks and table cells alike) names flags this
// program's mcp command has (git-lossless's docs test leaves mcp to this
// one, as it leaves bench and demo to git-lossless-bench's).
func TestDocumentedMCPFlagsExist(t *testing.T) {
	var files []string
	for _, rel := range testkit.DocFiles(t, "../..") {
		files = append(files, filepath.Join("../..", rel))
	}
	use := regexp.MustCompile("git lossless mcp((?: [^`\\n#]*)?)")
	flag := regexp.MustCompile(`(?:^|[\s\[|])(--[a-z][a-z0-9-]*)`)
	fs := pflag.NewFlagSet("mcp", pflag.ContinueOnError)
	mcpCmd().Flags(fs)
	seen := 0
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range use.FindAllStringSubmatch(string(src), -1) {
			seen++
			for _, fm := range flag.FindAllStringSubmatch(m[1], -1) {
				if fm[1] != "--help" && fs.Lookup(fm[1][2:]) == nil {
					t.Errorf("%s: `git lossless mcp%s`: no flag %s", f, m[1], fm[1])
				}
			}
		}
	}
	if seen < 3 {
		t.Errorf("found %d documented mcp lines: the scan is broken", seen)
	}
}

// TestCommandLine: --version prints git-lossless's line (install and the
// doctor compare it), --help and no arguments say how to run it, a
// command other than mcp and a bad flag are usage errors, and -C to a
// missing directory too.
func TestCommandLine(t *testing.T) {
	run1 := func(args ...string) (int, string, string) {
		var o, e bytes.Buffer
		code := run(context.Background(), args, &env{Stdin: strings.NewReader(""), Stdout: &o, Stderr: &e, Getenv: func(string) string { return "" }, Dir: t.TempDir()})
		return code, o.String(), e.String()
	}
	if code, out, _ := run1("--version"); code != cli.ExitOK || out != "git-lossless version "+version+"\n" {
		t.Errorf("--version: %d %q", code, out)
	}
	if code, out, _ := run1("--help"); code != cli.ExitOK || !strings.Contains(out, "usage: git-lossless-mcp [-C DIR] mcp [FLAGS]") {
		t.Errorf("--help: %d %q", code, out)
	}
	if code, out, errOut := run1(); code != cli.ExitUsage || out != "" || !strings.Contains(errOut, "usage: git-lossless-mcp") {
		t.Errorf("no arguments: %d %q %q", code, out, errOut)
	}
	if code, _, errOut := run1("log"); code != cli.ExitUsage || !strings.Contains(errOut, `"log" is not a git-lossless-mcp command`) {
		t.Errorf("log: %d %q", code, errOut)
	}
	if code, _, errOut := run1("mcp", "--no-such-flag"); code != cli.ExitUsage || !strings.Contains(errOut, "--no-such-flag") {
		t.Errorf("mcp --no-such-flag: %d %q", code, errOut)
	}
	if code, _, errOut := run1("-C", "no/such/dir", "mcp"); code != cli.ExitUsage || !strings.Contains(errOut, "cannot change to") {
		t.Errorf("-C no/such/dir mcp: %d %q", code, errOut)
	}
	if code, out, _ := run1("mcp", "--help"); code != cli.ExitOK || !strings.HasPrefix(out, "usage: git lossless mcp [--harness NAME]") {
		t.Errorf("mcp --help: %d %q", code, out)
	}
}
