package gemini

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/git-lossless/git-lossless/hooks/transcript"
)

// FuzzChatReader reads arbitrary chat files: no panic, every item keyed
// and its span document valid JSON, the state always storable; and for a
// file of strict JSON lines (what the CLI writes), reading it in two
// pieces with the state saved between them gives the items of one pass.
func FuzzChatReader(f *testing.F) {
	// The small sample chats (the fuzzer minimizes large inputs slowly).
	for _, path := range []string{chatRun1, chatCompress, chatParent, chatChild} {
		data := readFile(f, path)
		f.Add(data, uint16(len(data)/2))
	}
	var c chat
	c.add(headerLine("s")).add(set(sessionContext)).add(userText("u1", "yes")).add(modelText("m1", "ok"))
	c.add(modelCalls("m2", toolCall("c1", "read_file", obj{"file_path": "/p/a", "start_line": 2, "end_line": 3}, truncatedHeader(2, 3, 9)+"b\nc", "Read lines 2-3 of 9 from a")))
	c.add(userText("u2", "yes")).add(response("r1", "c1", "read_file", "x")).add(obj{"$rewindTo": "u2"})
	c.add(set(sessionContext, obj{"id": "s", "type": "user", "content": "<state_snapshot>s</state_snapshot>"}, userText("u3", "yes")))
	f.Add(c.bytes(), uint16(100))
	f.Add([]byte("{\"id\":\"a\",\"type\":\"user\",\"content\":\"\\u0001\x01\"}\n{\"$set\":{\"messages\":[{\"id\":\"a\"}]}}\n"), uint16(3))
	f.Fuzz(func(t *testing.T, data []byte, cut uint16) {
		one := fuzzRead(t, data, nil)
		strict := true
		for _, l := range bytes.Split(data, []byte("\n")) {
			if len(bytes.TrimSpace(l)) > 0 && !json.Valid(l) {
				strict = false
			}
		}
		if !strict {
			return
		}
		at := min(int(cut), len(data))
		two := fuzzRead(t, data, []int{at})
		if a, b := renderAll(one), renderAll(two); !slices.Equal(a, b) {
			t.Fatalf("split at %d:\n%s", at, diffLines(a, b))
		}
	})
}

// fuzzRead reads data in pieces (see readSplit) and checks every item and
// every state on the way.
func fuzzRead(t *testing.T, data []byte, cuts []int) []transcript.Item {
	var out []transcript.Item
	off := int64(0)
	var st *ChatState
	for _, cut := range append(cuts, len(data)) {
		if int64(cut) < off {
			continue
		}
		c := NewChatReader(bytes.NewReader(data[off:cut]), off, st, ChatOptions{Cwd: "/p"})
		for {
			tl, err := c.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range tl.Items {
				if itemKey(it) == "" {
					t.Fatalf("no key: %s", render(it))
				}
				if sp := transcript.SpanJSON(it); sp != nil && !json.Valid(sp) {
					t.Fatalf("span JSON not valid: %q", sp)
				}
				if fs, ok := it.(*transcript.FileSeen); ok && (fs.Path == "" || (fs.HasContent && !strings.HasPrefix(fs.View, "full") && !strings.HasPrefix(fs.View, "lines:"))) {
					t.Fatalf("evidence %s", render(it))
				}
			}
			out = append(out, tl.Items...)
		}
		off = c.Offset()
		b, err := json.Marshal(c.State())
		if err != nil {
			t.Fatalf("state cannot be stored: %v", err)
		}
		st = new(ChatState)
		if err := json.Unmarshal(b, st); err != nil {
			t.Fatal(err)
		}
	}
	return out
}
