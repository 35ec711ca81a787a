package receipt

import (
	"testing"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/receipt/note"
)

// TestHarnessMismatch: verification compares a context's harness with an
// event's own field only when both name one, so receipts issued before
// the field, and events written before it, verify as they did.
func TestHarnessMismatch(t *testing.T) {
	for _, c := range []struct {
		ctx, ev string
		bad     bool
	}{
		{"", "", false},
		{"", "codex", false},       // an old receipt over a new event
		{"claude-code", "", false}, // an old event: its writer names it
		{"claude-code", "claude-code", false},
		{"claude-code,codex", "codex", false},
		{"claude-code", "codex", true},
		{"codex,opencode", "gemini", true},
	} {
		msg := harnessMismatch(note.Context{Harness: c.ctx}, &gitstore.Event{Harness: c.ev})
		if (msg != "") != c.bad {
			t.Errorf("context %q, event %q: %q", c.ctx, c.ev, msg)
		}
	}
}
