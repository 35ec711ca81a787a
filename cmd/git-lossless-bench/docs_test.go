package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/git-lossless/git-lossless/internal/testkit"
)

// TestDocumentedBenchFlagsExist: every `git lossless bench ...` and `git
// lossless demo ...` line in a fenced sh block of README.md and docs/
// names flags this program has (the shipping program's docs test checks
// every other command).
func TestDocumentedBenchFlagsExist(t *testing.T) {
	var files []string
	for _, rel := range testkit.DocFiles(t, "../..") {
		files = append(files, filepath.Join("../..", rel))
	}
	line := regexp.MustCompile(`^git lossless (bench|demo)\b(.*)$`)
	flag := regexp.MustCompile(`(?:^|[\s\[|])(--[a-z][a-z0-9-]*)`)
	seen := 0
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		in := false
		for _, l := range strings.Split(string(src), "\n") {
			if strings.HasPrefix(l, "```") {
				in = strings.HasPrefix(l, "```sh") && !in
				continue
			}
			m := line.FindStringSubmatch(strings.TrimSpace(l))
			if !in || m == nil {
				continue
			}
			seen++
			text := m[2]
			if i := strings.Index(text, " #"); i >= 0 {
				text = text[:i]
			}
			var c *command
			for _, cc := range commands() {
				if cc.Name == m[1] {
					c = cc
				}
			}
			fs := pflag.NewFlagSet(m[1], pflag.ContinueOnError)
			c.Flags(fs)
			for _, fm := range flag.FindAllStringSubmatch(text, -1) {
				if fm[1] != "--help" && fs.Lookup(fm[1][2:]) == nil {
					t.Errorf("%s: `git lossless %s%s`: no flag %s", f, m[1], m[2], fm[1])
				}
			}
		}
	}
	if seen < 2 {
		t.Errorf("found %d documented bench and demo lines: the scan is broken", seen)
	}
}
