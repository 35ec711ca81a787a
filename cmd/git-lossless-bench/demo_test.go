package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// demoTestEnv isolates a demo run: its own TMPDIR (so the test can see
// what is left behind), its own HOME and XDG_DATA_HOME (so a write to the
// embedded archive would show), and no machine git configuration.
func demoTestEnv(t *testing.T) (tmp, data string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not on PATH")
	}
	base := t.TempDir()
	tmp, data = filepath.Join(base, "tmp"), filepath.Join(base, "data")
	for _, d := range []string{tmp, data, filepath.Join(base, "home")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("TMPDIR", tmp)
	t.Setenv("XDG_DATA_HOME", data)
	t.Setenv("HOME", filepath.Join(base, "home"))
	t.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("LOSSLESS_ARCHIVE_EXCLUDE", "")
	return tmp, data
}

func demoRunCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), args, &env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: os.Getenv})
	return code, out.String(), errb.String()
}

// productRun runs the built git-lossless (e2eBin) as a process, for the
// product's own commands on what the demo left.
func productRun(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(e2eBin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("git-lossless %v: %v", args, err)
	}
	return code, out.String(), errb.String()
}

func TestDemo(t *testing.T) {
	tmp, data := demoTestEnv(t)
	// A repository the demo must not touch even when GIT_DIR names it.
	decoy := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", decoy).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	t.Setenv("GIT_DIR", filepath.Join(decoy, ".git"))

	code, out, errOut := demoRunCLI(t, "demo")
	if code != 0 {
		t.Fatalf("demo exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^  OK     cli-demo-session-1: 7 entries in 7 batches, 5 blobs checked, seal [0-9a-f]{16}$`),
		regexp.MustCompile(`(?m)^  BREAK  cli-demo-session-1: content-changed at entry 1 `),
		regexp.MustCompile(`(?m)^  caught: content-changed at entry 1 `),
		regexp.MustCompile(`(?m)^    recorded read \.env \(excluded: content withheld by the deny list\) as cli-demo-session-1#6$`),
		regexp.MustCompile(`(?m)^  6 +read +full +main +\.env +\(excluded\) +0$`),
		regexp.MustCompile(`(?m)^  2 +read +lines:5-9 +main +src/app\.go `),
		regexp.MustCompile(`(?m)^  7 +read +full +explore-1 +src/util\.go `),
		regexp.MustCompile(`(?m)^    recorded edit src/app\.go blob [0-9a-f]{40} `),
		regexp.MustCompile(`(?m)^    recorded write src/report\.go blob [0-9a-f]{40} `),
		regexp.MustCompile(`(?m)^    skipped 1 already recorded \(same key\)$`),
		regexp.MustCompile(`(?m)^    [0-9a-f]{40} commit\trefs/lossless/cli-demo-session-1$`),
		regexp.MustCompile(`(?m)^  \$ git fsck --strict\n    clean$`),
		regexp.MustCompile(`(?m)^    0 \(the secret is in none of the repository's [0-9]+ objects`),
		regexp.MustCompile(`(?m)^Demo OK\.$`),
	} {
		if !want.MatchString(out) {
			t.Errorf("demo output lacks %s\n%s", want, out)
		}
	}
	demoReceiptStep(t, out)
	if strings.Contains(out, "UNEXPECTED") || errOut != "" {
		t.Errorf("demo reported a problem:\n%s\nstderr:\n%s", out, errOut)
	}
	// Nothing left behind, nothing written elsewhere.
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("demo left %d entries in TMPDIR (first: %s)", len(ents), ents[0].Name())
	}
	if _, err := os.Stat(filepath.Join(data, "git-lossless")); err == nil {
		t.Error("demo created the embedded archive")
	}
	for _, p := range []string{"refs/lossless", "lossless"} {
		if _, err := os.Stat(filepath.Join(decoy, ".git", p)); err == nil {
			t.Errorf("demo wrote %s into the repository GIT_DIR names", p)
		}
	}
}

// demoReceiptStep checks step 6: the receipt's statuses and read set as
// printed, our verify's OK line, and plain gpg's and git's good signatures
// (which CI must not skip: without gpg the demo prints a skip line, which
// fails here under CI=true).
func demoReceiptStep(t *testing.T, out string) {
	t.Helper()
	i := strings.Index(out, "[6/6] Commit, and the commit's signed receipt")
	if i < 0 {
		t.Fatalf("demo has no receipt step:\n%s", out)
	}
	step := out[i:]
	key := regexp.MustCompile(`(?m)^  \$ git lossless receipt   \(signed with a throwaway Ed25519 key ([0-9A-F]{16})\)$`).FindStringSubmatch(step)
	if key == nil {
		t.Fatalf("receipt step names no key:\n%s", step)
	}
	id := key[1]
	ref := "refs/notes/lossless/receipts-" + strings.ToLower(id)
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^    Receipt for commit [0-9a-f]{40}$`),
		regexp.MustCompile(`(?m)^      issued .*, built and stored in notes commit [0-9a-f]{12} on ` + regexp.QuoteMeta(ref) + `$`),
		regexp.MustCompile(`(?m)^    Changed paths \(3\): 2 written, 0 seen, 1 changed-after, 0 unseen, 0 excluded$`),
		regexp.MustCompile(`(?m)^      changed-after +M +[0-9a-f]{12} +w1#1 +README\.md$`),
		regexp.MustCompile(`(?m)^      written +M +[0-9a-f]{12} +w1#4 +src/app\.go$`),
		regexp.MustCompile(`(?m)^      written +A +[0-9a-f]{12} +w1#5 +src/report\.go$`),
		regexp.MustCompile(`(?m)^      c1 +excluded +read +\(withheld\) +full +w1#6 +\.env$`),
		regexp.MustCompile(`(?m)^      c1 +stale +read +[0-9a-f]{40} +full +w1#1 +README\.md$`),
		regexp.MustCompile(`(?m)^      c1 +partial +read +[0-9a-f]{40} +lines:5-9 +w1#2 +src/app\.go$`),
		regexp.MustCompile(`(?m)^      c1 +current +edit +[0-9a-f]{40} +full +w1#4 +src/app\.go$`),
		regexp.MustCompile(`(?m)^      o200k tokens in total: [1-9][0-9]* of file versions, 0 of conversation spans$`),
		regexp.MustCompile(`(?m)^    OK    [0-9a-f]{12} ` + regexp.QuoteMeta(ref) + `: signed by ` + id + ` \(git-lossless demo \(git-lossless receipts\) <demo@git-lossless\.invalid>\); 3 paths, [1-9][0-9]* events in 1 writer, [1-9][0-9]* blobs checked$`),
	} {
		if !want.MatchString(step) {
			t.Errorf("receipt step lacks %s\n%s", want, step)
		}
	}
	if _, err := exec.LookPath("gpg"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("gpg is not on PATH: CI checks the demo's receipt with plain gpg (install gnupg)\n%s", step)
		}
		if !strings.Contains(step, "(gpg is not on PATH: skipped)") {
			t.Errorf("without gpg the receipt step does not say it skipped the plain check:\n%s", step)
		}
		return
	}
	good := regexp.MustCompile(`(?m)^      gpg: Good signature from "git-lossless demo \(git-lossless receipts\) <demo@git-lossless\.invalid>"`)
	for _, after := range []string{"| gpg --verify\n", "$ git verify-commit " + ref + "\n"} {
		j := strings.Index(step, after)
		if j < 0 || !good.MatchString(firstLine(step[j+len(after):])) {
			t.Errorf("no good signature right after %q:\n%s", after, step)
		}
	}
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// TestDemoKeep keeps the repositories and checks them with the CLI and
// plain git, independently of what the demo printed.
func TestDemoKeep(t *testing.T) {
	demoTestEnv(t)
	code, out, errOut := demoRunCLI(t, "demo", "--keep")
	if code != 0 {
		t.Fatalf("demo --keep exit %d\n%s%s", code, out, errOut)
	}
	m := regexp.MustCompile(`(?m)^Kept (\S+) `).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("demo --keep printed no path:\n%s", out)
	}
	root := m[1]
	t.Cleanup(func() { os.RemoveAll(root) })
	project, tampered := filepath.Join(root, "project"), filepath.Join(root, "tampered")

	if code, out, errOut := productRun(t, "-C", project, "verify"); code != 0 || !strings.Contains(out, "OK     cli-demo-session-1: 7 entries") {
		t.Errorf("verify on the kept project: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, _ := productRun(t, "-C", tampered, "verify", "--json"); code != exitFailed || !strings.Contains(out, `"kind":"content-changed"`) {
		t.Errorf("verify on the tampered copy: exit %d\n%s", code, out)
	}
	git := func(args ...string) []byte {
		t.Helper()
		out, err := exec.Command("git", append([]string{"-C", project}, args...)...).Output()
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		return out
	}
	git("fsck", "--strict", "--no-progress")
	if all := git("cat-file", "--batch-all-objects", "--batch"); bytes.Contains(all, []byte(demoSecret)) {
		t.Error("the planted secret is in an object of the kept project")
	}
	if env, _ := os.ReadFile(filepath.Join(project, ".env")); !bytes.Contains(env, []byte(demoSecret)) {
		t.Error("the kept project's .env lost its planted secret: the check above proved nothing")
	}
	if got := strings.TrimSpace(string(git("for-each-ref", "--format=%(refname)", "refs/lossless"))); got != "refs/lossless/cli-demo-session-1" {
		t.Errorf("refs/lossless = %q", got)
	}
	// The edit is archived byte for byte.
	code, logOut, _ := productRun(t, "-C", project, "log", "--op", "edit", "--json")
	blob := regexp.MustCompile(`"blob":"([0-9a-f]{40})"`).FindStringSubmatch(logOut)
	if code != 0 || blob == nil {
		t.Fatalf("log --op edit: exit %d %s", code, logOut)
	}
	disk, _ := os.ReadFile(filepath.Join(project, "src", "app.go"))
	if got := git("cat-file", "-p", blob[1]); !bytes.Equal(got, disk) || !bytes.Contains(got, []byte("lowStock(it)")) {
		t.Errorf("archived edit differs from src/app.go on disk")
	}
}

func TestDemoRejectsArguments(t *testing.T) {
	if code, _, errOut := demoRunCLI(t, "demo", "extra"); code != exitUsage || !strings.Contains(errOut, "demo takes no arguments") {
		t.Errorf("demo extra: exit %d %q", code, errOut)
	}
}

// TestDemoReadmeQuickStart keeps the README's two quick-start commands
// and .ci/run in step: the demo command exists, and .ci/run runs exactly
// the README's test command.
func TestDemoReadmeQuickStart(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	ci, err := os.ReadFile("../../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)## Quick start.*?```sh\n(.*?)```").FindSubmatch(readme)
	if m == nil {
		t.Fatal("README has no quick start block")
	}
	var cmds []string
	for _, l := range strings.Split(strings.TrimSpace(string(m[1])), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			cmds = append(cmds, l)
		}
	}
	if len(cmds) != 2 || cmds[0] != "go run ./cmd/git-lossless-bench demo" {
		t.Fatalf("quick start commands = %q, want the demo and the tests", cmds)
	}
	found := false
	for _, l := range strings.Split(string(ci), "\n") {
		if strings.TrimSpace(l) == cmds[1] {
			found = true
		}
	}
	if !found {
		t.Errorf(".ci/run does not run the README's test command %q", cmds[1])
	}
	if st, err := os.Stat("../../.ci/run"); err != nil || st.Mode()&0o111 == 0 {
		t.Errorf(".ci/run is not executable")
	}
}
