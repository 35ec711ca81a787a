package main

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/git-lossless/git-lossless/proxy"
)

// TestEveryVariableDocumented: every environment variable and git config
// key that code outside the tests reads is in the table `help
// environment` prints, and every entry of the table is read somewhere.
func TestEveryVariableDocumented(t *testing.T) {
	documented := map[string]bool{}
	for _, s := range knownSettings {
		documented[s.name] = true
	}
	for _, s := range proxy.Settings {
		if s.Git != "" {
			documented[s.Git] = true
		}
		if s.Env != "" {
			documented[s.Env] = true
		}
	}
	reads := []*regexp.Regexp{
		regexp.MustCompile(`(?:Getenv|LookupEnv|getenv)\("([A-Z][A-Z0-9_]*)"\)`),
		regexp.MustCompile(`"(LOSSLESS_[A-Z0-9_]+)"`),
		regexp.MustCompile(`"(lossless\.[a-zA-Z][a-zA-Z0-9.-]*)"`),
	}
	// Strings shaped like a key that are not one: a lock file's name,
	// the proxy's config section.
	notKeys := map[string]bool{"lossless.lock": true, "lossless.proxy": true}
	read := map[string]string{}
	err := filepath.WalkDir("../..", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("../..", p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") && rel != "." || rel == "internal/testkit" || rel == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for n := 1; sc.Scan(); n++ {
			line := strings.TrimSpace(sc.Text())
			if strings.HasPrefix(line, "//") {
				continue
			}
			if i := strings.Index(line, " // "); i >= 0 {
				line = line[:i] // a trailing comment (no code here puts " // " in a string)
			}
			for _, re := range reads {
				for _, m := range re.FindAllStringSubmatch(line, -1) {
					if !notKeys[m[1]] {
						if _, ok := read[m[1]]; !ok {
							read[m[1]] = rel + ":" + strconv.Itoa(n)
						}
					}
				}
			}
		}
		return sc.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(read) < 40 {
		t.Fatalf("found %d variables and keys read: the scan is broken", len(read))
	}
	for name, where := range read {
		if !documented[name] {
			t.Errorf("%s is read (%s) but not documented in `git lossless help environment` (cmd/git-lossless/environment.go)", name, where)
		}
	}
	for name := range documented {
		if _, ok := read[name]; !ok {
			t.Errorf("%s is documented but no code reads it", name)
		}
	}
	// And help prints every one.
	code, out, _ := runCLI(t, "help", "environment")
	if code != 0 {
		t.Fatalf("help environment: exit %d", code)
	}
	for name := range documented {
		if !strings.Contains(out, name) {
			t.Errorf("help environment does not print %s", name)
		}
	}
}

// TestHelpGroupsEveryCommand: help lists every command once, in a group,
// its summary aligned with the others whatever the name's length.
func TestHelpGroupsEveryCommand(t *testing.T) {
	seen := map[string]int{}
	for _, g := range commandGroups {
		for _, n := range g.names {
			seen[n]++
		}
	}
	width := 0
	for _, c := range commands() {
		if seen[c.Name] != 1 {
			t.Errorf("command %s is in %d help groups, want 1", c.Name, seen[c.Name])
		}
		delete(seen, c.Name)
		width = max(width, len(c.Name))
	}
	for n := range seen {
		t.Errorf("help group names %s, which is no command", n)
	}
	code, out, _ := runCLI(t, "help")
	if code != 0 {
		t.Fatalf("help: exit %d", code)
	}
	col := -1
	for _, c := range commands() {
		re := regexp.MustCompile(`(?m)^    ` + regexp.QuoteMeta(c.Name) + ` +(\S)`)
		loc := re.FindStringSubmatchIndex(out)
		if loc == nil {
			t.Errorf("help does not list %s", c.Name)
			continue
		}
		lineStart := strings.LastIndexByte(out[:loc[2]], '\n') + 1
		if at := loc[2] - lineStart; col < 0 {
			col = at
		} else if at != col {
			t.Errorf("%s's summary starts at column %d, others at %d", c.Name, at, col)
		}
	}
	if col != 4+width+2 {
		t.Errorf("summaries start at column %d, want %d", col, 4+width+2)
	}
}
