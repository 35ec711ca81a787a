package testkit

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// The real session Claude Code 2.1.328 wrote, kept in
// testdata/claude-code-2.1.328 (its README tells the scenario): a main
// transcript, one subagent's transcript and its meta file, naming files
// under SampleProject.
const (
	SampleSession = "9e33e208-2b1c-4064-b54f-efdf0f79781b"
	SampleAgent   = "ab8f45f825081b44d"
	SampleProject = "/home/dev/project"
)

// SampleDir is the directory holding the sample session (as Claude Code's
// projects/<slug> holds one), found from this file's own place in the
// module, so that it is right from any package's tests.
func SampleDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "testdata", "claude-code-2.1.328", "transcripts", "-home-dev-project")
}

// CopySample writes the sample session into dst as Claude Code lays a
// session out — dst/<session>.jsonl, dst/<session>/subagents/agent-<agent>.jsonl
// and its .meta.json — with SampleProject rewritten to cwd and the
// session id to session (each kept when ""), and returns the main
// transcript's path. Tests rewrite the project so that the files the
// session names are inside their own repository.
func CopySample(t testing.TB, dst, cwd, session string) string {
	t.Helper()
	sess := SampleSession
	if session != "" {
		sess = session
	}
	sub := filepath.Join(SampleSession, "subagents", "agent-"+SampleAgent)
	for _, rel := range []string{SampleSession + ".jsonl", sub + ".jsonl", sub + ".meta.json"} {
		b, err := os.ReadFile(filepath.Join(SampleDir(), rel))
		if err != nil {
			t.Fatal(err)
		}
		if cwd != "" {
			b = bytes.ReplaceAll(b, []byte(SampleProject), []byte(cwd))
		}
		b = bytes.ReplaceAll(b, []byte(SampleSession), []byte(sess))
		p := filepath.Join(dst, strings.ReplaceAll(rel, SampleSession, sess))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dst, sess+".jsonl")
}
