package gitstore

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

func fastParseCases() []string {
	e := Event{Seq: 7, Prev: "ab" + string(make([]byte, 0)), TS: time.Date(2026, 2, 28, 23, 59, 59, 123456789, time.UTC),
		Session: "s-1", Agent: "agent-é", Sidechain: true, Path: "dir/ü.go", Repo: "/src/r", Blob: "ce013625030ba8dba906f756967f9e9ca394464a",
		SHA256: "00ff", Bytes: 4096, Tokens: 1024, Source: "hook", Op: "read", View: "lines:1-9", Excluded: true, Key: "toolu_1", Tool: "Read"}
	canon, _ := e.Canonical()
	return []string{
		string(canon),
		`{}`,
		`{"op":"read","seq":1,"prev":"x","source":"cli","ts":"2026-01-02T03:04:05.000000000Z"}`,
		`{"op":"read","seq":-0,"bytes":0,"excluded":false,"source":"cli"}`,
		`{"seq":01}`,
		`{"seq":1.0}`,
		`{"seq":1e3}`,
		`{"seq":"1"}`,
		`{"seq":99999999999999999999}`,
		`{"op":null}`,
		`{"op":"a\"b"}`,
		`{"op":"a\u00e9"}`,
		`{"path":"\xff"}`,
		`{"op":"x","op":"y"}`,
		`{"Seq":5}`,
		`{"pruned":[{"blob":"x"}],"op":"prune"}`,
		`{"op":"read",}`,
		`{"op":"read" }`,
		`{"op":tru}`,
		`{"excluded":truex}`,
		`{"ts":""}`,
		`{"ts":"2026-02-29T00:00:00.000000000Z"}`,
		`{"ts":"2024-02-29T00:00:00.000000000Z"}`,
		`{"ts":"2026-01-02T03:04:05Z"}`,
		`{"ts":"2026-01-02T03:04:05.000000000+01:00"}`,
		`{"ts":"2026-13-02T03:04:05.000000000Z"}`,
		`{"ts":"2026-01-02T24:04:05.000000000Z"}`,
		`{"ts":"2026-01-02T03:04:60.000000000Z"}`,
		`[1]`,
		`null`,
		`{"op":"read"}x`,
		`{"op":"\t"}`,
		"{\"op\":\"\x01\"}",
		`{"sidechain":true,"sidechain":false}`,
		`{"tokens":-12,"bytes":9223372036854775807}`,
	}
}

// parseEventFast agrees with encoding/json on every line it accepts.
func checkFastParse(t *testing.T, line string) {
	fast, ok := parseEventFast([]byte(line))
	slow, err := parseEventJSON([]byte(line))
	if !ok {
		return
	}
	if err != nil {
		t.Fatalf("%q: fast path accepted what encoding/json rejects: %v", line, err)
	}
	slow.Raw = nil
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("%q:\nfast %+v\njson %+v", line, fast, slow)
	}
}

func TestParseEventFastMatchesJSON(t *testing.T) {
	accepted := 0
	for _, line := range fastParseCases() {
		checkFastParse(t, line)
		if _, ok := parseEventFast([]byte(line)); ok {
			accepted++
		}
	}
	if accepted < 8 {
		t.Fatalf("fast path accepted only %d cases", accepted)
	}
	// And through ParseEvent, Raw and Extra included.
	for _, line := range fastParseCases() {
		a, errA := ParseEvent([]byte(line))
		b, errB := parseEventJSON([]byte(line))
		if (errA == nil) != (errB == nil) || !reflect.DeepEqual(a, b) {
			t.Fatalf("%q: ParseEvent %+v %v, json %+v %v", line, a, errA, b, errB)
		}
	}
	for _, s := range []string{"", "plain", "with \"quote\"", "back\\slash", "tab\t", "<html>&", "é", "\u2028", "\x7f", "\xff"} {
		want, _ := json.Marshal(s)
		got := jsonString(s)
		if s == "\xff" {
			continue // replaced, see jsonString
		}
		if s == "<html>&" || s == "\u2028" {
			want = jsonStringSlow(s)
		}
		if string(got) != string(want) {
			t.Errorf("jsonString(%q) = %s, want %s", s, got, want)
		}
	}
}

func jsonStringSlow(s string) []byte {
	b, _ := json.Marshal(s)
	var out []byte
	// json.Marshal escapes HTML; jsonString does not.
	for i := 0; i < len(b); i++ {
		if i+5 < len(b) && string(b[i:i+4]) == `\u00` {
			switch string(b[i+4 : i+6]) {
			case "3c":
				out = append(out, '<')
				i += 5
				continue
			case "3e":
				out = append(out, '>')
				i += 5
				continue
			case "26":
				out = append(out, '&')
				i += 5
				continue
			}
		}
		out = append(out, b[i])
	}
	return out
}

func FuzzParseEventFast(f *testing.F) {
	for _, line := range fastParseCases() {
		f.Add(line)
	}
	f.Fuzz(func(t *testing.T, line string) { checkFastParse(t, line) })
}
