package receipt

import (
	"strings"
	"testing"
)

// indexKey finds what bytes.Index finds.
func TestIndexKey(t *testing.T) {
	needle := []byte(`"path":"`)
	for _, line := range []string{
		`{"op":"read","path":"a"}`, `{"xpath":"b","path":"a"}`, `path":"x"`, `{"a":"path\":\"","path":"z"}`,
		`"path":"`, `{"op":"read"}`, ``, `{"path":"a","path":"b"}`,
	} {
		if got, want := indexKey([]byte(line), needle), strings.Index(line, string(needle)); got != want {
			t.Errorf("indexKey(%q) = %d, want %d", line, got, want)
		}
	}
}
