package gemini

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-lossless/git-lossless/hooks/transcript"
)

// sampleDir is the Gemini CLI 0.61.0 sample tree (see its README).
var sampleDir = filepath.Join("..", "..", "testdata", "gemini-cli-0.61.0")

var chatsDir = filepath.Join(sampleDir, "home", ".gemini", "tmp", "ws", "chats")

// The sample chats.
var (
	chatRun1     = filepath.Join(chatsDir, "session-2026-12-05T14-18-bc53530f.jsonl")
	chatCompress = filepath.Join(chatsDir, "session-2026-12-05T14-20-08c76717.jsonl")
	chatParent   = filepath.Join(chatsDir, "session-2026-12-05T15-14-cc106cda.jsonl")
	chatChild    = filepath.Join(chatsDir, "cc106cda-29a0-4431-b783-fe844bfef7e2", "6fdbd512-609c-493b-aadc-22b51e047dc6.jsonl")
	chatNearMiss = filepath.Join(chatsDir, "session-2026-12-06T02-51-bf202774.jsonl")
	chatMask     = filepath.Join(chatsDir, "session-2026-12-06T02-52-79fc6120.jsonl")
)

const sampleCwd = "/home/dev/project"

// readItems reads a whole chat in one pass.
func readItems(t testing.TB, data []byte, opt ChatOptions) []transcript.Item {
	t.Helper()
	c := NewChatReader(strings.NewReader(string(data)), 0, nil, opt)
	var out []transcript.Item
	for {
		tl, err := c.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tl.Items...)
	}
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func short(s string, n int) string {
	if len(s) > n {
		return fmt.Sprintf("%q+%d", s[:n], len(s)-n)
	}
	return fmt.Sprintf("%q", s)
}

// render is one line per item: what it is, its key and what it holds.
func render(it transcript.Item) string {
	switch x := it.(type) {
	case *transcript.TextSpan:
		return fmt.Sprintf("%s %s %s", x.Kind, x.Key, short(x.Text(), 40))
	case *transcript.ToolUse:
		return fmt.Sprintf("use %s %s %s", x.SpanKey, x.Name, x.Path)
	case *transcript.ToolResult:
		return fmt.Sprintf("result %s %s err=%v path=%s %s", x.SpanKey, x.Tool, x.IsError, x.Path, short(x.Text(), 30))
	case *transcript.FileSeen:
		c := "-"
		if x.HasContent {
			c = short(string(x.Content), 30)
		}
		return fmt.Sprintf("seen %s %s %s %s %s %s", x.Key, x.Op, x.Tool, x.Path, x.View, c)
	case *transcript.CompactBoundary:
		return fmt.Sprintf("boundary %s %s", x.Key, x.Trigger)
	case *transcript.CompactSummary:
		return fmt.Sprintf("summary %s %s", x.Key, short(x.Text(), 60))
	}
	return fmt.Sprintf("unknown %T", it)
}

func renderAll(items []transcript.Item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = render(it)
	}
	return out
}
