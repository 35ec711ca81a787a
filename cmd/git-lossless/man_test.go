package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// needTool returns the path of a program the test drives, skipping the
// test without it locally and failing it under CI=true.
func needTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not installed (CI=true: the man page tests need man-db and groff)", name)
		}
		t.Skipf("%s not installed", name)
	}
	return p
}

func manPageText(t *testing.T) string {
	t.Helper()
	var b bytes.Buffer
	if err := writeManPage(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestRoffText(t *testing.T) {
	for in, want := range map[string]string{
		".starts with a dot":      `\&.starts with a dot`,
		"'starts with a quote":    `\(aqstarts with a quote`,
		`a\b`:                     `a\eb`,
		"--dir -C":                `\-\-dir \-C`,
		"`git help`":              `\(gagit help\(ga`,
		"a — b ≤ c":               `a \[u2014] b \[u2264] c`,
		"pre-tool-use|post":       `pre\-tool\-use|\:post`,
		"middle . dot and ' mark": `middle . dot and \(aq mark`,
	} {
		if got := roffText(in); got != want {
			t.Errorf("roffText(%q) = %q, want %q", in, got, want)
		}
	}
	if got, want := roffArg(`say "hi"`), `"say \(dqhi\(dq"`; got != want {
		t.Errorf("roffArg = %q, want %q", got, want)
	}
}

// TestManPageSource checks the generated roff itself: only known macros
// start a line, nothing outside ASCII or unescaped is left, and every
// command with every flag `help COMMAND` lists is on the page.
func TestManPageSource(t *testing.T) {
	page := manPageText(t)
	macros := map[string]bool{`.\"`: true, ".TH": true, ".SH": true, ".SS": true, ".PP": true, ".TP": true,
		".B": true, ".BR": true, ".nf": true, ".fi": true, ".br": true, ".nh": true, ".ad": true}
	for i, l := range strings.Split(strings.TrimSuffix(page, "\n"), "\n") {
		if l == "" {
			t.Errorf("line %d is blank (a blank line is a paragraph break only by accident)", i+1)
		}
		if strings.HasPrefix(l, ".") || strings.HasPrefix(l, "'") {
			name, _, _ := strings.Cut(l, " ")
			if !macros[name] {
				t.Errorf("line %d starts a request that is not one of ours: %q", i+1, l)
			}
		}
		for _, r := range l {
			if r > 0x7e || (r < ' ' && r != '\t') {
				t.Errorf("line %d holds %q unescaped: %q", i+1, r, l)
				break
			}
		}
		if !strings.HasPrefix(l, `.\"`) && regexp.MustCompile(`(^|[^\\])-`).MatchString(l) {
			t.Errorf("line %d holds a bare hyphen: %q", i+1, l)
		}
	}
	for _, c := range commands() {
		if !strings.Contains(page, ".SS \"git lossless "+c.Name+"\"\n") {
			t.Errorf("no section for %s", c.Name)
		}
		if !strings.Contains(page, roffText(c.Summary)) {
			t.Errorf("%s: summary missing", c.Name)
		}
		fs := pflag.NewFlagSet(c.Name, pflag.ContinueOnError)
		c.Flags(fs)
		fs.VisitAll(func(f *pflag.Flag) {
			if !f.Hidden && !strings.Contains(page, `\fB`+roffText("--"+f.Name)) && !strings.Contains(page, roffText(", --"+f.Name)) {
				t.Errorf("%s: flag --%s missing", c.Name, f.Name)
			}
		})
	}
	if !strings.Contains(page, roffText("install man")) && !strings.Contains(page, "\nman writes") {
		t.Error("the page does not describe install man")
	}
}

// TestManPageRenders renders the page with the real man (man-db) and
// groff, with every groff warning on: none may be printed.
func TestManPageRenders(t *testing.T) {
	man := needTool(t, "man")
	groff := needTool(t, "groff")
	path := filepath.Join(t.TempDir(), manName)
	if err := os.WriteFile(path, []byte(manPageText(t)), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	cmd := exec.CommandContext(ctx, groff, "-man", "-ww", "-z", "-Tutf8", path)
	if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
		t.Errorf("groff -man -ww -z: %v\n%s", err, out)
	}

	cmd = exec.CommandContext(ctx, man, "--warnings=w", "-l", path)
	cmd.Env = append(os.Environ(), "MANWIDTH=80", "MANPAGER=cat", "PAGER=cat", "MAN_KEEP_FORMATTING=")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("man -l: %v\n%s", err, stderr.String())
	}
	if stderr.Len() > 0 {
		t.Errorf("man -l warns:\n%s", stderr.String())
	}
	out := stdout.String()
	if !strings.HasPrefix(strings.TrimSpace(out), "GIT-LOSSLESS(1)") {
		t.Fatalf("man -l output does not start with the page header:\n%.400s", out)
	}
	words := strings.Join(strings.Fields(out), " ")
	for _, c := range commands() {
		for _, want := range []string{"git lossless " + c.Name, strings.Join(strings.Fields(c.Summary), " ")} {
			if !strings.Contains(words, want) {
				t.Errorf("rendered page lacks %q", want)
			}
		}
	}
	for _, want := range []string{"--dir string", "EXIT STATUS", "LOSSLESS_ARCHIVE_EXCLUDE", "lossless.redact"} {
		if !strings.Contains(words, want) {
			t.Errorf("rendered page lacks %q", want)
		}
	}
	for i, l := range strings.Split(out, "\n") {
		if strings.ContainsAny(l, "\u2010\u2212\u2018\u2019") {
			t.Errorf("rendered line %d has typographic hyphens or quotes (options would not copy): %q", i+1, l)
		}
	}
}

// TestGitLosslessHelpOpensManPage is `git lossless --help` as a git user
// types it: the real git, finding git-lossless on PATH, turns it into
// `git help lossless`, which runs the real man on the page `install man
// --dir` wrote, found through MANPATH.
func TestGitLosslessHelpOpensManPage(t *testing.T) {
	needTool(t, "git")
	needTool(t, "man")
	needTool(t, "groff")
	sb := newSandbox(t)
	sb.setenv("PATH", filepath.Dir(e2eBin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	for k, v := range map[string]string{"MANPAGER": "cat", "PAGER": "cat", "GIT_PAGER": "cat", "MANWIDTH": "80",
		"MANOPT": "", "MAN_KEEP_FORMATTING": "", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"} {
		sb.setenv(k, v)
	}
	mandir := filepath.Join(sb.root, "man")
	empty := filepath.Join(sb.root, "no-man")
	if err := os.Mkdir(empty, 0o700); err != nil {
		t.Fatal(err)
	}
	gitHelp := func() (string, string, error) {
		out, errOut, err := sb.gitRaw(sb.root, nil, "-c", "help.format=man", "lossless", "--help")
		return string(out), string(errOut), err
	}

	// Before the install, and with MANPATH elsewhere, there is no page:
	// the check below can fail.
	sb.setenv("MANPATH", empty)
	if out, _, err := gitHelp(); err == nil && strings.Contains(out, "GIT-LOSSLESS(1)") {
		t.Fatalf("git lossless --help shows a page before install man:\n%.300s", out)
	}
	// help COMMAND works without the page.
	if r := sb.run(sb.root, "help", "install"); r.code != 0 || !strings.Contains(r.stdout, "usage: git lossless install") {
		t.Fatalf("help install without the page: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	r := sb.run(sb.root, "install", "man", "--dir", mandir)
	if r.code != 0 {
		t.Fatalf("install man: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	page := filepath.Join(mandir, "man1", manName)
	if !strings.Contains(r.stdout, "wrote "+page+"\n") {
		t.Errorf("install man does not say where it wrote:\n%s", r.stdout)
	}
	if !strings.Contains(r.stdout, "is not on the man path") || !strings.Contains(r.stdout, "export MANPATH=") {
		t.Errorf("install man with %s off the man path does not say how to add it:\n%s", mandir, r.stdout)
	}
	for p, want := range map[string]os.FileMode{page: 0o600, filepath.Dir(page): 0o700, mandir: 0o700} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", p, st.Mode().Perm(), want)
		}
	}

	sb.setenv("MANPATH", mandir)
	out, errOut, err := gitHelp()
	if err != nil {
		t.Fatalf("git lossless --help: %v\n%s%s", err, out, errOut)
	}
	if !strings.HasPrefix(strings.TrimSpace(out), "GIT-LOSSLESS(1)") {
		t.Fatalf("git lossless --help does not show the page:\nstdout: %.400s\nstderr: %s", out, errOut)
	}
	words := strings.Join(strings.Fields(out), " ")
	for _, want := range []string{"git lossless install", "git lossless recall", "man writes the git-lossless(1) man page"} {
		if !strings.Contains(words, want) {
			t.Errorf("the page git showed lacks %q", want)
		}
	}

	// Installed again with its directory on the man path, it says so.
	r = sb.run(sb.root, "install", "man", "--dir", mandir)
	if r.code != 0 || !strings.Contains(r.stdout, "is on the man path") {
		t.Errorf("install man with MANPATH=%s: code %d\n%s%s", mandir, r.code, r.stdout, r.stderr)
	}
}

func TestInstallManUsage(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"install", "man", "--apply"},
		{"install", "claude-code", "--dir", dir},
		{"uninstall", "man"},
		{"install", "manual"},
	} {
		var out, errb bytes.Buffer
		code := run(context.Background(), append([]string{"-C", dir}, args...), &env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }})
		if code != exitUsage {
			t.Errorf("%v: code %d, want %d\n%s%s", args, code, exitUsage, out.String(), errb.String())
		}
	}
}
