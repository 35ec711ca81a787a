package seal

import (
	"encoding/json"
	"reflect"
	"testing"
)

var entryCases = []string{
	`{"blob":"ce01","bytes":12,"op":"read","path":"a/é.go","prev":"ab","seq":3,"session":"s","sha256":"00","source":"hook","ts":"2026-01-02T03:04:05.000000000Z"}`,
	`{"excluded":true,"op":"read","prev":"x","seq":1}`,
	`{}`,
	`{"seq":01}`, `{"seq":1.5}`, `{"seq":"1"}`, `{"seq":null}`, `{"Seq":4}`, `{"PREV":"x"}`,
	`{"op":"prune","pruned":[{"blob":"b","sha256":"s"}],"prev":"p","seq":9}`,
	`{"prev":"a\"b","seq":1}`, `{"prev":"\xff","seq":1}`, `{"seq":1,}`, `{"seq":1 }`, `{"seq":1,"x":{"y":1}}`,
	`{"seq":1,"x":[1]}`, `{"seq":1,"x":1e5}`, `{"seq":1,"x":-7}`, `{"seq":99999999999999999999}`, `[]`, `null`,
	`{"seq":1,"seq":2}`, "{\"\x1b\":0}", "{\"\xff\":0}", `{"excluded":1}`, `{"blob":7}`,
}

func checkEntry(t *testing.T, line string) {
	var fast entry
	if !decodeEntryFast([]byte(line), &fast) {
		return
	}
	var slow entry
	if err := json.Unmarshal([]byte(line), &slow); err != nil {
		t.Fatalf("%q: fast path accepted what encoding/json rejects: %v", line, err)
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("%q: fast %+v, json %+v", line, fast, slow)
	}
}

func TestDecodeEntryFast(t *testing.T) {
	n := 0
	for _, c := range entryCases {
		checkEntry(t, c)
		var e entry
		if decodeEntryFast([]byte(c), &e) {
			n++
		}
	}
	if n < 5 {
		t.Fatalf("fast path took only %d cases", n)
	}
}

func FuzzDecodeEntryFast(f *testing.F) {
	for _, c := range entryCases {
		f.Add(c)
	}
	f.Fuzz(func(t *testing.T, line string) { checkEntry(t, line) })
}
