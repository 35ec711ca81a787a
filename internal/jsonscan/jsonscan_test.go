package jsonscan

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// seeds are the cases of the scanners this package replaced: gitstore's
// event lines, the seal's entry lines, the transcript parser's hostile
// lines, the proxy's request shapes; and the corners of the grammar.
var seeds = []string{
	// gitstore/eventfast_test.go
	`{"agent":"agent-é","blob":"ce013625030ba8dba906f756967f9e9ca394464a","bytes":4096,"excluded":true,"key":"toolu_1","op":"read","path":"dir/ü.go","prev":"ab","repo":"/src/r","seq":7,"session":"s-1","sha256":"00ff","sidechain":true,"source":"hook","tokens":1024,"tool":"Read","ts":"2026-02-28T23:59:59.123456789Z","view":"lines:1-9"}`,
	`{}`, `{"op":"read","seq":1,"prev":"x","source":"cli","ts":"2026-01-02T03:04:05.000000000Z"}`,
	`{"op":"read","seq":-0,"bytes":0,"excluded":false,"source":"cli"}`,
	`{"seq":01}`, `{"seq":1.0}`, `{"seq":1e3}`, `{"seq":"1"}`, `{"seq":99999999999999999999}`,
	`{"op":null}`, `{"op":"a\"b"}`, `{"op":"a\u00e9"}`, "{\"path\":\"\xff\"}", `{"op":"x","op":"y"}`, `{"Seq":5}`,
	`{"pruned":[{"blob":"x"}],"op":"prune"}`, `{"op":"read",}`, `{"op":"read" }`, `{"op":tru}`,
	`{"excluded":truex}`, `{"ts":""}`, `[1]`, `null`, `{"op":"read"}x`, `{"op":"\t"}`, "{\"op\":\"\x01\"}",
	`{"tokens":-12,"bytes":9223372036854775807}`,
	// seal/entryfast_test.go
	`{"seq":1.5}`, `{"seq":null}`, `{"PREV":"x"}`, `{"seq":1,}`, `{"seq":1 }`, `{"seq":1,"x":{"y":1}}`,
	`{"seq":1,"x":[1]}`, `{"seq":1,"x":1e5}`, `{"seq":1,"x":-7}`, `[]`, "{\"\x1b\":0}", "{\"\xff\":0}",
	`{"excluded":1}`, `{"blob":7}`,
	// hooks/transcript_test.go (hostile input)
	"not json at all", "{", `{"type":"user","message":{"role":"user","content":"unterminated}`,
	"{\"type\":\"user\",\"uuid\":\"x1\",\"message\":{\"role\":\"user\",\"content\":\"ok \xff\xfe invalid utf-8\"}}",
	"\xff\xfe\xfd", `{"type":"user","uuid":"x2","message":{"role":"user","content":"bad escape \x"}}`,
	`{"type":"user","uuid":"x3","message":{"role":"user","content":"lone surrogate \ud800 and pair \ud83d\ude00"}}`,
	`{"type":"assistant","uuid":"x6","message":{"content":[null,1,"s",{"type":"tool_use"},{"type":"tool_use","id":"t","name":"Read","input":"notobject"}]}}`,
	`{"type":"user","uuid":"x9","message":{"content":"x"}} trailing`,
	`{"type":"user","uuid":"x10","message":{"content":"ok"},"n":1e400,"m":-0.5e-3}`,
	`{"type":"user","uuid":"x12","message":{"content":"\u0000\u001f control escapes"}}`,
	"{\"type\":\"user\",\"uuid\":\"x13\",\"message\":{\"content\":\"raw\tcontrol\x01bytes\"}}",
	`{"type":"attachment","attachment":{"type":"file","content":{"type":"text","file":{"filePath":"/a","content":"x\n","numLines":1,"startLine":1,"totalLines":1}}},"uuid":"u"}`,
	// proxy request shapes
	`{"model":"m","stream":true,"max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]},{"role":"assistant","tool_calls":[{"id":"c","function":{"name":"f","arguments":"{}"}}]}]}`,
	` { "k\u0061y" : [ 1 , 2.5e-3 , -0 , true , false , null , "s" , { } , [ ] ] } `,
	// corners
	`"\ud800"`, `"\ud800\u0041"`, `"\udc00\ud800"`, `"\ud83d\ude00"`, `"a\\"`, `"a\\\"`, `"\/\b\f\n\r\t"`,
	`"\u2028\u2029<>&"`, `-`, `-01`, `1.`, `1e`, `1e+`, `0.0e-0`, `tru`, `nul`, `falsey`, `"`, `""`, `"\u12"`,
	strings.Repeat("[", 10001) + strings.Repeat("]", 10001), strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
	`{"a":1}{"b":2}`, `[1,]`, `[,1]`, `{"a" 1}`, `{1:2}`, "\"\x7f\x80\"",
}

func FuzzScan(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkValidity(t, data)
		checkMembers(t, data)
		checkElems(t, data)
		checkUnquote(t, data)
		checkInt(t, data)
		checkQuote(t, string(data))
		checkPlain(t, data)
	})
}

func hasControl(b []byte) bool {
	for _, c := range b {
		if c < 0x20 {
			return true
		}
	}
	return false
}

// coerce makes s valid UTF-8 the way encoding/json does: U+FFFD per byte.
func coerce(s string) string { return string([]rune(s)) }

func scanAll(data []byte, c Check) bool {
	i := WS(data, 0)
	e, ok := Skip(data, i, c)
	return ok && WS(data, e) == len(data)
}

func checkValidity(t *testing.T, data []byte) {
	want := json.Valid(data)
	if got := Valid(data); got != want {
		t.Fatalf("Valid(%q) = %v, json.Valid %v", data, got, want)
	}
	for _, c := range []Check{Quotes, Escapes, Strict} {
		got := scanAll(data, c)
		if want && !got {
			t.Fatalf("check %d rejects valid %q", c, data)
		}
		if got && !want && (c == Strict || c == Escapes && !hasControl(data)) {
			t.Fatalf("check %d accepts invalid %q", c, data)
		}
	}
	// Object with Escapes is what the transcript parser runs on a line.
	i := WS(data, 0)
	if i < len(data) && data[i] == '{' {
		e, st := Object(data, 0, Strict, nil, nil)
		if got := st == OK && WS(data, e) == len(data); got != want {
			t.Fatalf("Object(%q, Strict) = %v, json.Valid %v", data, got, want)
		}
	}
}

// member is a key (decoded) and its value, compacted.
type member struct{ key, val string }

func compact(t *testing.T, v []byte) string {
	var b bytes.Buffer
	if err := json.Compact(&b, v); err != nil {
		t.Fatalf("value %q: %v", v, err)
	}
	return b.String()
}

// jsonMembers lists an object's members with encoding/json's decoder.
func jsonMembers(t *testing.T, data []byte) []member {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("%q: %v %v", data, tok, err)
	}
	var out []member
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		out = append(out, member{k.(string), compact(t, v)})
	}
	return out
}

func checkMembers(t *testing.T, data []byte) {
	i := WS(data, 0)
	if !json.Valid(data) || data[i] != '{' {
		return
	}
	var got []member
	st := Members(data, func(k, v []byte) bool {
		key, ok := String(append(append([]byte{'"'}, k...), '"'))
		if !ok {
			t.Fatalf("key %q does not decode", k)
		}
		got = append(got, member{coerce(key), compact(t, v)})
		return true
	})
	want := jsonMembers(t, data)
	if st != OK || len(got) != len(want) {
		t.Fatalf("Members(%q) = %v %q, json %q", data, st, got, want)
	}
	for j := range got {
		if got[j] != want[j] {
			t.Fatalf("Members(%q) = %q, json %q", data, got, want)
		}
	}
	if len(want) == 0 {
		return
	}
	var first []byte
	Members(data, func(k, v []byte) bool { first = k; return false })
	if v := Field(data, string(first)); v == nil || compact(t, v) != want[0].val {
		t.Fatalf("Field(%q, %q) = %q, want %q", data, first, v, want[0].val)
	}
	n := 0
	if st := Members(data, func(k, v []byte) bool { n++; return false }); st != Stopped || n != 1 {
		t.Fatalf("stopped scan of %q: %v after %d", data, st, n)
	}
}

func checkElems(t *testing.T, data []byte) {
	i := WS(data, 0)
	valid := json.Valid(data)
	if i >= len(data) || data[i] != '[' {
		if Elems(data, func([]byte) bool { return true }) != Bad {
			t.Fatalf("Elems(%q) is not Bad", data)
		}
		return
	}
	var got []string
	st := Elems(data, func(v []byte) bool {
		if valid {
			got = append(got, compact(t, v))
		}
		return true
	})
	if !valid {
		if st == OK && !hasControl(data) && !bytes.Contains(data, []byte{'\\'}) {
			t.Fatalf("Elems accepts invalid %q", data)
		}
		return
	}
	var want []json.RawMessage
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatal(err)
	}
	if st != OK || len(got) != len(want) {
		t.Fatalf("Elems(%q) = %v %q, json %q", data, st, got, want)
	}
	for j := range got {
		if got[j] != compact(t, want[j]) {
			t.Fatalf("Elems(%q) = %q, json %q", data, got, want)
		}
	}
}

func checkUnquote(t *testing.T, data []byte) {
	var want string
	jerr := json.Unmarshal(data, &want)
	token := len(data) > 0 && data[0] == '"'
	if token {
		e, ok := Skip(data, 0, Quotes)
		token = ok && e == len(data)
	}
	got, ok := Unquote(data)
	s, sok := String(data)
	if ok != sok || (ok && s != string(got)) {
		t.Fatalf("String(%q) = %q %v, Unquote %q %v", data, s, sok, got, ok)
	}
	if jerr == nil && len(data) > 0 && data[0] == '"' && data[len(data)-1] == '"' {
		if !ok || coerce(string(got)) != want {
			t.Fatalf("Unquote(%q) = %q %v, json %q", data, got, ok, want)
		}
		if utf8.Valid(data) && string(got) != want {
			t.Fatalf("Unquote(%q) = %q, json %q", data, got, want)
		}
	} else if ok && token && !hasControl(data) {
		t.Fatalf("Unquote(%q) = %q, json rejects it: %v", data, got, jerr)
	}
}

func checkInt(t *testing.T, data []byte) {
	got, ok := Int(data)
	var n int64
	if json.Unmarshal(data, &n) == nil && bytes.Equal(bytes.TrimSpace(data), data) && string(data) != "null" {
		if !ok || got != n {
			t.Fatalf("Int(%q) = %d %v, json %d", data, got, ok, n)
		}
	}
	if ok {
		var f float64
		if err := json.Unmarshal(data, &f); err != nil || float64(got) != f {
			t.Fatalf("Int(%q) = %d, json %v %v", data, got, f, err)
		}
	}
}

func checkQuote(t *testing.T, s string) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	// encoding/json writes an invalid byte as \ufffd; Quote writes
	// U+FFFD itself (spans archived before this package was cut keep
	// their bytes).
	want := strings.ReplaceAll(strings.TrimSuffix(b.String(), "\n"), `\ufffd`, "\uFFFD")
	if got := strings.ReplaceAll(string(Quote(s)), `\ufffd`, "\uFFFD"); got != want {
		t.Fatalf("Quote(%q) = %s, json %s", s, got, want)
	}
	if back, ok := String([]byte(want)); !ok || back != coerce(s) {
		t.Fatalf("String(Quote(%q)) = %q %v", s, back, ok)
	}
}

func checkPlain(t *testing.T, data []byte) {
	var got []member
	ok := Plain(data, func(k, v []byte, quoted bool) bool {
		val := string(v)
		if quoted {
			val = `"` + val + `"`
		}
		got = append(got, member{string(k), val})
		return true
	})
	if !ok {
		return
	}
	if !json.Valid(data) || data[0] != '{' || bytes.IndexByte(data, '\\') >= 0 || hasControl(data) || bytes.HasPrefix(data, []byte("{ ")) {
		t.Fatalf("Plain accepts %q", data)
	}
	want := jsonMembers(t, data)
	if len(got) != len(want) {
		t.Fatalf("Plain(%q) = %q, json %q", data, got, want)
	}
	for j := range got {
		if got[j] != want[j] {
			t.Fatalf("Plain(%q) = %q, json %q", data, got, want)
		}
	}
	if Plain(data, func([]byte, []byte, bool) bool { return false }) && len(got) > 0 {
		t.Fatalf("Plain(%q) ignores a false from fn", data)
	}
}

// TestSeeds fails when the seeds stop covering each outcome.
func TestSeeds(t *testing.T) {
	var valid, plain, object, str int
	for _, s := range seeds {
		b := []byte(s)
		if Valid(b) {
			valid++
		}
		if Plain(b, func([]byte, []byte, bool) bool { return true }) {
			plain++
		}
		if Members(b, func([]byte, []byte) bool { return true }) == OK {
			object++
		}
		if _, ok := String(b); ok {
			str++
		}
	}
	if valid < 30 || plain < 8 || object < 20 || str < 8 || valid == len(seeds) {
		t.Fatalf("valid %d, plain %d, objects %d, strings %d of %d", valid, plain, object, str, len(seeds))
	}
}

// TestScanExamples pins what callers rely on.
func TestScanExamples(t *testing.T) {
	line := []byte(`{"type":"user","big":"` + strings.Repeat("x", 100) + `","n":1}`)
	var peeked []string
	e, st := Object(line, 0, Escapes, func(k, rest []byte) bool {
		peeked = append(peeked, string(k))
		return string(k) != "big"
	}, nil)
	if st != Stopped || string(peeked[len(peeked)-1]) != "big" || line[e] != '"' {
		t.Fatalf("peek stop: %v at %d, %q", st, e, peeked)
	}
	if _, st := Object([]byte(`{"a":"\x"}`), 0, Escapes, nil, nil); st != Bad {
		t.Fatalf("Escapes accepted a bad escape")
	}
	if _, st := Object([]byte(`{"a":"\x"}`), 0, Quotes, nil, nil); st != OK {
		t.Fatalf("Quotes checked an escape")
	}
	if _, st := Object([]byte("{\"a\":\"\t\"}"), 0, Escapes, nil, nil); st != OK {
		t.Fatalf("Escapes rejected a raw tab")
	}
	if s, ok := String([]byte("\"ok \xff \\u00e9\"")); !ok || s != "ok \xff é" {
		t.Fatalf("invalid UTF-8 not kept: %q", s)
	}
	if v := Field([]byte(`{"a":1,"a":2}`), "a"); string(v) != "1" {
		t.Fatalf("Field takes the first member: %q", v)
	}
	if _, ok := Unquote([]byte(`"a\"`)); ok {
		t.Fatal("escaped closing quote accepted")
	}
}
