package hooks

// The hand-back of a context's working set after a compaction no hook
// saw (Call.HandBack): once per boundary, at the next event whose added
// context reaches the model.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/git-lossless/git-lossless/gitstore"
)

// handBack is for harnesses that fire no hook after a compaction (see
// Call.HandBack): it sweeps the context's transcript (the whole session
// at BeforeAgent) and, when the cursor shows a compaction boundary of the
// context, hands the working set back (ManifestWith, as SessionStart does
// after a compaction) — once per boundary. Once is the store's dedupe: a
// "handback" event keyed handback:<boundary key> is appended first, and
// only the hook whose append stored it prints the text, so two hooks
// racing on one boundary, a later prompt or a resumed session never hand
// the same boundary back again. A boundary found only by a later import
// is handed back at the session's next prompt.
func (h *handler) handBack(ctx context.Context, session bool) error {
	tp := h.c.ContextTranscript
	if session && h.c.Transcript != "" {
		tp = h.c.Transcript
	}
	if tp == "" || !h.c.HandBack {
		return nil
	}
	var err error
	if session {
		_, err = SweepSession(ctx, h.st, h.h, tp, SweepOptions{})
	} else {
		_, err = SweepTranscript(ctx, h.st, h.h, tp, SweepOptions{})
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		h.warn("sweep: %v", err)
	}
	if session {
		tp = h.c.ContextTranscript
	}
	cur := ReadCursor(ctx, h.st, h.h, tp)
	if cur == nil {
		return nil
	}
	ep, ok := cur.Epochs[h.c.Agent]
	if !ok || ep.Key == "" {
		return nil
	}
	key := "handback:" + ep.Key
	mark := handBackMark(ctx, h.st, h.writer(), h.c.Agent)
	if b, err := os.ReadFile(mark); err == nil && string(b) == key {
		return nil // handed back already (the store's dedupe below is the authority; this spares it)
	}
	rec := gitstore.Record{Event: h.baseEvent(gitstore.OpHandBack)}
	rec.Tool, rec.View = "", ""
	rec.Key = key
	setExtra(&rec, "boundary", jsonStr(ep.Key))
	res, err := h.st.Append(ctx, h.writer(), []gitstore.Record{rec})
	if err != nil {
		return fmt.Errorf("record the hand-back after compaction %s: %w", ep.Key, err)
	}
	if mark != "" {
		if err := os.WriteFile(mark, []byte(key), 0o600); err != nil {
			h.warn("hand-back mark: %v", err)
		}
	}
	if len(res.Events) == 0 {
		return nil // handed back already
	}
	dir := h.c.Cwd
	if dir == "" {
		dir, _ = os.Getwd()
	}
	tools, terr := h.h.MCPTools(dir, h.e.Getenv)
	if terr != nil {
		h.warn("%v", terr)
	}
	text, err := ManifestWith(ctx, h.st, ManifestOptions{Harness: h.h, Session: h.c.Session, Agent: h.c.Agent, Source: "compact", Budget: ManifestBudget,
		MCPTool: tools, Warn: func(msg string) { h.warn("%s", msg) }})
	if err != nil || text == "" {
		return err
	}
	_, err = h.e.Stdout.Write(h.h.Reply(h.c, Reply{Context: text}))
	return err
}

// handBackMark is the file that remembers the last boundary handed back
// to a context (writer and agent), so that the hooks after it do not ask
// the store again: <state dir>/handback/<sha256 of writer NUL agent, 16
// bytes hex>. "" when the state directory cannot be had.
func handBackMark(ctx context.Context, st *gitstore.Store, writer, agent string) string {
	dir, err := st.StateDir(ctx, "handback")
	if err != nil {
		return ""
	}
	sum := sha256.Sum256([]byte(writer + "\x00" + agent))
	return filepath.Join(dir, hex.EncodeToString(sum[:16]))
}
