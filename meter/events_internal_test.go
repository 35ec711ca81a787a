package meter

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
)

// TestDecoderAgreesWithParseEvent: on every line the decoder accepts,
// the fields it decodes equal gitstore.ParseEvent's; lines it must leave
// to ParseEvent (escapes, an encrypted event, a nested unknown field) it
// refuses.
func TestDecoderAgreesWithParseEvent(t *testing.T) {
	ts := time.Date(2026, 11, 2, 9, 0, 0, 123456789, time.UTC)
	blob := "ce013625030ba8dba906f756967f9e9ca394464a"
	mk := func(e gitstore.Event) []byte {
		t.Helper()
		e.TS, e.Prev, e.Source = ts, "00", "hook"
		line, err := e.Canonical()
		if err != nil {
			t.Fatal(err)
		}
		return line
	}
	plain := []gitstore.Event{
		{Seq: 7, Session: "s1", Op: "read", Path: "a.go", Blob: blob, View: "full", Repo: "/r", Key: "k1"},
		{Seq: 8, Session: "s1", Agent: "agent-1", Sidechain: true, Op: "attach", Path: "dir/é.go", Blob: blob, View: "lines:1-9"},
		{Seq: 9, Session: "s1", Op: "read", Path: ".env", Excluded: true},
		{Seq: 10, Session: "s1", Op: "compact", Extra: map[string]json.RawMessage{"trigger": json.RawMessage(`"auto"`)}},
		{Seq: 11, Session: "s1", Op: "restore", Blob: blob, View: "full"},
	}
	var d decoder
	for _, e := range plain {
		e.SetPath(e.Path)
		line := mk(e)
		got, ok := d.decode(line)
		if !ok {
			t.Errorf("decoder refuses a plain line: %s", line)
			continue
		}
		want, err := gitstore.ParseEvent(line)
		if err != nil {
			t.Fatal(err)
		}
		if got.Seq != want.Seq || got.Session != want.Session || got.Agent != want.Agent || got.Op != want.Op ||
			got.Path != want.Path || got.Path64 != want.Path64 || got.Blob != want.Blob || got.View != want.View ||
			got.Repo != want.Repo || got.Excluded != want.Excluded || !got.TS.Equal(want.TS) {
			t.Errorf("decoded %+v\nParseEvent %+v\nline %s", got, want, line)
		}
	}
	refused := []gitstore.Event{
		{Seq: 1, Session: "s1", Op: "read", Path: "quote\"d.go", Blob: blob},
		{Seq: 2, Session: "s1", Op: "read", Path: "bad\xffname.go", Blob: blob},
		{Seq: 3, Session: "s1", Op: "span", Blob: blob, Extra: map[string]json.RawMessage{"enc": json.RawMessage(`"age"`)}},
		{Seq: 4, Session: "s1", Op: "read", Blob: blob, Extra: map[string]json.RawMessage{"meta": json.RawMessage(`{"op":"span"}`)}},
	}
	for _, e := range refused {
		e.SetPath(e.Path)
		line := mk(e)
		if e.Path64 != "" {
			// A path that is not valid UTF-8 is stored with U+FFFD and
			// path64: plain; the decoder must still return the raw bytes.
			got, ok := d.decode(line)
			if !ok || got.RawPath() != "bad\xffname.go" {
				t.Errorf("path64 line: ok %v, raw path %q", ok, got.RawPath())
			}
			continue
		}
		if _, ok := d.decode(line); ok {
			t.Errorf("decoder accepts %s", line)
		}
	}
}
