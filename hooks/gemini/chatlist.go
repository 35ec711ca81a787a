package gemini

// $set of the message list and $rewindTo: compressions, rewrites,
// resumes and rewinds, and the epochs they start.

import (
	"strings"

	"github.com/git-lossless/git-lossless/hooks/transcript"
	"github.com/git-lossless/git-lossless/internal/jsonscan"
)

// isSessionContext reports whether m is the CLI's environment message
// (the first user message of every chat).
func isSessionContext(m *message) bool {
	return m.typ == "user" && strings.HasPrefix(strings.TrimSpace(messageText(m.content)), "<session_context>")
}

// setMessages handles a $set of the whole message list: see the package
// doc (compression, rewrites, resumes).
func (c *ChatReader) setMessages(raw []byte, tl *transcript.Line) {
	var list []*message
	jsonscan.Elems(raw, func(v []byte) bool {
		if len(v) > 0 && v[0] == '{' {
			if m, ok := parseMessage(v); ok {
				list = append(list, m)
			}
		}
		return true
	})
	conversation := false
	for _, m := range list {
		conversation = conversation || !isSessionContext(m)
	}
	if c.afterHeader && len(c.seen.order) > 0 && !conversation {
		// A chat started afresh in a file that holds one already (a
		// resume in the same minute): the resumed list follows.
		tl.Skipped = true
		return
	}
	// Held texts the list holds were the CLI's copies: dropped. Others
	// were said again: yielded now.
	inList := map[string]bool{}
	for _, m := range list {
		inList[m.id] = true
	}
	keep := c.held[:0]
	for _, h := range c.held {
		if !inList[h.Msg] {
			keep = append(keep, h)
		}
	}
	c.held = keep
	c.release(tl)
	// A compression: the first message after the environment is a user
	// message holding a <state_snapshot> not read before.
	var snap *message
	for _, m := range list {
		if isSessionContext(m) {
			continue
		}
		if m.typ == "user" && strings.HasPrefix(strings.TrimSpace(messageText(m.content)), "<state_snapshot>") && !c.isSeen(m.id) {
			snap = m
		}
		break
	}
	old := map[*message]bool{}
	for _, m := range list {
		old[m] = c.isSeen(m.id)
	}
	switch {
	case snap != nil:
		key := "compact:" + snap.id
		meta := c.meta()
		meta.UUID, meta.TS = snap.id, snap.ts
		tl.Items = append(tl.Items,
			&transcript.CompactBoundary{LineMeta: meta, Trigger: "compress", Key: key},
			&transcript.CompactSummary{LineMeta: meta, TextJSON: jsonscan.Quote(messageText(snap.content)), Key: "span:" + snap.id + ":summary"})
		c.newEpoch(key)
		c.markSeen(snap.id)
	case c.lostEvidence(list):
		key := "compact:rewrite:" + listDigest(list)
		meta := c.meta()
		if len(list) > 0 {
			meta.UUID, meta.TS = list[len(list)-1].id, list[len(list)-1].ts
		}
		tl.Items = append(tl.Items, &transcript.CompactBoundary{LineMeta: meta, Trigger: "rewrite", Key: key})
		c.newEpoch(key)
	default:
		// The same context (a resume lists it again): what is new in it
		// (the CLI's copies of results, "<id>_response") is read like an
		// appended message; results already answered yield nothing.
		for _, m := range list {
			if !old[m] {
				c.markSeen(m.id)
				tl.Items = append(tl.Items, c.emit(m, map[string]bool{}, false)...)
			}
		}
		c.setLast(list)
		return
	}
	// After a boundary: messages read before that are still in the list
	// give their evidence again, in the new epoch; new ones give all.
	for _, m := range list {
		if m == snap {
			continue
		}
		if old[m] {
			tl.Items = append(tl.Items, c.emit(m, map[string]bool{}, true)...)
		} else {
			c.markSeen(m.id)
			tl.Items = append(tl.Items, c.emit(m, map[string]bool{}, false)...)
		}
	}
	c.release(tl)
	c.setLast(list)
}

// setLast makes the list's last message the one later lines may complete.
func (c *ChatReader) setLast(list []*message) {
	if len(list) == 0 {
		c.last, c.lastSubs = "", map[string]bool{}
		return
	}
	l := list[len(list)-1]
	c.last, c.lastSubs = l.id, subsOf(l)
}

// lostEvidence reports whether a message list drops or changes a result
// that gave evidence in the current epoch: the CLI rolled the history
// back (a cancelled turn), masked old tool outputs, or cut them.
func (c *ChatReader) lostEvidence(list []*message) bool {
	need := false
	for _, a := range c.answered {
		need = need || a.Evidence
	}
	if !need {
		return false
	}
	have := map[string]map[string]bool{}
	note := func(id string, resp []byte) {
		if id == "" {
			return
		}
		raw, _ := responseText(resp)
		if have[id] == nil {
			have[id] = map[string]bool{}
		}
		have[id][digest(string(raw))] = true
	}
	for _, m := range list {
		parts(m.content, func(_ int, p []byte) {
			if fr := jsonscan.Field(p, "functionResponse"); len(fr) > 0 && fr[0] == '{' {
				f, _ := fields(fr, "id", "response")
				id, _ := jsonscan.String(f["id"])
				note(id, f["response"])
			}
		})
		jsonscan.Elems(m.toolCalls, func(v []byte) bool {
			f, _ := fields(v, "id", "result", "status")
			id, _ := jsonscan.String(f["id"])
			if st, _ := jsonscan.String(f["status"]); finalStatus(st) {
				note(id, callResponse(f["result"], id))
			}
			return true
		})
	}
	for _, a := range c.answered {
		if a.Evidence && !have[a.ID][a.Digest] {
			return true
		}
	}
	return false
}

// listDigest identifies a message list: its ids and contents.
func listDigest(list []*message) string {
	var p []string
	for _, m := range list {
		p = append(p, m.id, digest(string(m.content)), digest(string(m.toolCalls)))
	}
	return digest(p...)
}

// rewind handles a $rewindTo: the CLI dropped the message and every one
// after it. The context lost what they held; which results survived is
// not known here (the reader keeps no copy of them), so no earlier
// evidence counts after the boundary: the guard asks for a read again.
func (c *ChatReader) rewind(id string, tl *transcript.Line) {
	c.release(tl)
	key := "compact:rewind:" + id
	meta := c.meta()
	meta.UUID = id
	tl.Items = append(tl.Items, &transcript.CompactBoundary{LineMeta: meta, Trigger: "rewind", Key: key})
	c.newEpoch(key)
	c.last, c.lastSubs = "", map[string]bool{}
}
