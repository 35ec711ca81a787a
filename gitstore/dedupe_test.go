package gitstore

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestStoredKeys checks the dedupe lookups on every path storedKeys takes
// (a few keys searched one by one in the mapped index, many keys in one
// pass, and the commits when the index is gone) against keys that need
// JSON escapes, and a decoy: a nested "key" member inside an unknown
// field, which is not the event's key.
func TestStoredKeys(t *testing.T) {
	ctx := context.Background()
	s, err := OpenDir(gitInit(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	odd := []string{`quo"te`, `back\slash`, "tab\tand ünïcode", "toolu_plain"}
	var recs []Record
	for i, k := range odd {
		recs = append(recs, Record{Event: Event{Op: "read", Source: "hook", Path: fmt.Sprint("f", i), Key: k}})
	}
	for i := range 30 {
		recs = append(recs, Record{Event: Event{Op: "read", Source: "sweep", Key: fmt.Sprint("toolu_many_", i)}})
	}
	decoy := Record{Event: Event{Op: "read", Source: "hook", Extra: map[string]json.RawMessage{"attestation": json.RawMessage(`{"key":"toolu_decoy"}`)}}}
	recs = append(recs, decoy)
	if _, err := s.Append(ctx, "w", recs); err != nil {
		t.Fatal(err)
	}

	check := func(t *testing.T, keys []string, wantDeduped int) {
		t.Helper()
		var again []Record
		for _, k := range keys {
			again = append(again, Record{Event: Event{Op: "read", Source: "sweep", Key: k}})
		}
		res, err := s.Append(ctx, "w", again)
		if err != nil {
			t.Fatal(err)
		}
		if res.Deduped != wantDeduped || len(res.Events) != len(keys)-wantDeduped {
			t.Fatalf("keys %q: deduped %d, stored %d; want deduped %d", keys, res.Deduped, len(res.Events), wantDeduped)
		}
	}
	t.Run("few", func(t *testing.T) {
		check(t, append(append([]string{}, odd...), "toolu_decoy", "toolu_new_1"), len(odd))
	})
	t.Run("many", func(t *testing.T) {
		var keys []string
		for i := range 20 {
			keys = append(keys, fmt.Sprint("toolu_many_", i)) // all stored
		}
		keys = append(keys, odd...)
		keys = append(keys, "toolu_new_2", "toolu_new_1") // toolu_new_1 stored by "few"
		check(t, keys, 20+len(odd)+1)
	})
	t.Run("no index", func(t *testing.T) {
		if err := os.RemoveAll(filepath.Join(s.loc.CommonDir, "lossless", "index")); err != nil {
			t.Fatal(err)
		}
		check(t, []string{`quo"te`, "toolu_many_3", "toolu_new_3", "toolu_new_2"}, 3)
	})
}
