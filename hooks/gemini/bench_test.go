package gemini

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

// benchChat is a session of turns as the CLI records them: a prompt, the
// model's message (first without, then with its completed read_file call
// and result), the result sent back, an answer; about 19 KB a turn, most
// of it the file read (twice: in the call and in the message sent back).
func benchChat(turns int) []byte {
	var c chat
	c.add(headerLine("bench")).add(set(sessionContext))
	file := strings.Repeat("func f() { return x < y && y > z }\n", 8<<10/36)
	for i := range turns {
		id := func(s string) string { return fmt.Sprintf("%s-%d", s, i) }
		call := id("read_file__read_file_1796480311391")
		c.add(userText(id("u"), fmt.Sprintf("Look at file %d and tell me what it does; keep it short.", i)))
		c.add(obj{"$set": obj{"lastUpdated": ts}})
		m := modelText(id("m"), "")
		m["tokens"] = obj{"input": 5000, "output": 10, "total": 5010}
		c.add(m).add(obj{"$set": obj{"lastUpdated": ts}})
		c.add(modelCalls(id("m"), toolCall(call, "read_file", readArgs(fmt.Sprintf("/p/f%d.go", i)), file, "")))
		c.add(response(id("r"), call, "read_file", file)).add(obj{"$set": obj{"lastUpdated": ts}})
		c.add(modelText(id("a"), strings.Repeat("It compares x, y and z. ", 20))).add(obj{"$set": obj{"lastUpdated": ts}})
	}
	return c.bytes()
}

// BenchmarkChatReader reads a whole chat (an import): report MB/s.
func BenchmarkChatReader(b *testing.B) {
	data := benchChat(500)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		c := NewChatReader(bytes.NewReader(data), 0, nil, ChatOptions{Cwd: "/p"})
		n := 0
		for {
			tl, err := c.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			n += len(tl.Items)
		}
		if n != 500*5+1 {
			b.Fatalf("%d items", n)
		}
	}
}

// BenchmarkChatReaderTail is a hook's read: the state stored after 500
// turns decoded, the last turn read, the state encoded again.
func BenchmarkChatReaderTail(b *testing.B) {
	data := benchChat(501)
	cut := bytes.LastIndexByte(data[:bytes.Index(data, []byte(`"id":"u-500"`))], '\n') + 1
	c := NewChatReader(bytes.NewReader(data[:cut]), 0, nil, ChatOptions{Cwd: "/p"})
	for {
		if _, err := c.Next(); err != nil {
			break
		}
	}
	state, err := json.Marshal(c.State())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		var st ChatState
		if err := json.Unmarshal(state, &st); err != nil {
			b.Fatal(err)
		}
		c := NewChatReader(bytes.NewReader(data[cut:]), int64(cut), &st, ChatOptions{Cwd: "/p"})
		n := 0
		for {
			tl, err := c.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			n += len(tl.Items)
		}
		if n != 5 {
			b.Fatalf("%d items", n)
		}
		if _, err := json.Marshal(c.State()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(state)), "state-bytes")
}
