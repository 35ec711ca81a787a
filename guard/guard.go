// Package guard decides whether a model may edit a file: only when, in
// its own current context, it has seen the version of the file that is on
// disk now. It is pure: callers gather the evidence (from the archive and
// the transcript) and the disk state; Decide applies the rules.
//
// The rules, in order:
//
//  1. A file that does not exist may be created.
//  2. Evidence counts only in the context it was produced in (the main
//     agent, or one subagent: a subagent's read never vouches for the main
//     context, nor the other way round) and only after that context's last
//     compaction boundary. Evidence is a RESULT the model received: a
//     read's result, the content after its own write or edit, a file the
//     harness re-attached after compaction (Claude Code does), or content
//     `git lossless restore` printed. Never a tool call's intent: the
//     pending call itself is already in the transcript when the guard
//     runs.
//  3. No evidence in the context at all: deny (never seen). Evidence only
//     before the last boundary: deny (compacted away).
//  4. The latest evidence decides. If it carries a content hash, the file
//     on disk must still have it (or the disk hash recorded beside it when
//     the model saw it); otherwise deny (drift: someone else changed it).
//  5. Latest evidence without a hash — a partial read (lines A-B), a
//     non-text result — allows the edit. This is the deliberate fail-open
//     direction: a model that read lines 10-20 of a file cannot be said to
//     have seen "the version on disk", and denying every edit after a
//     partial read would make the guard unusable on large files. Drift in
//     such a file goes unnoticed.
//
// # What a compaction boundary is, and what is after it
//
// The boundary is the transcript's own record of the compaction (Claude
// Code's compact_boundary line), nothing else. A pre-compaction hook fires
// before the harness compacts, and a compaction can still fail or be
// cancelled; a mark written by that hook
// would make every earlier read of the context "compacted away" although
// the model still holds it, so the guard never treats such a mark as a
// boundary (hooks records it under another op, for the record only).
//
// Placing evidence against the boundary uses transcript order wherever
// the evidence comes from the transcript (Evidence.Transcript): it is
// after the boundary exactly when the line it came from follows the
// boundary line in the same transcript (Evidence.Epoch names the last
// boundary above it). Timestamps cannot do this: transcript lines carry
// milliseconds, and the files Claude Code re-attaches after a compaction
// are written in the same millisecond as the boundary line. Evidence that
// no transcript line holds yet — a PostToolUse hook's record, restore's
// output — is placed by time: after the boundary when its timestamp is
// later than the boundary line's. Those records are taken by a process
// running while the tool result is handed over, and a compaction cannot
// start until the results before it have been handed over and its summary
// request has been answered, so such a record of a result from before the
// compaction is earlier than the boundary line by far more than the
// line's millisecond resolution.
//
// Claude Code writes its transcript in bursts, a little behind the hooks.
// A compaction whose boundary line is not in the file yet when the guard
// runs is not known to it: until the line lands, evidence from before
// that compaction still counts. This is the fail-open direction again,
// chosen over treating PreCompact's mark as a boundary, which would deny
// edits after a compaction that never happened; it lasts until Claude
// Code flushes, and the file attachments that re-establish evidence come
// after the boundary line in the same file, so they never count without
// it.
package guard

import (
	"fmt"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
)

// Evidence is one result that put (a version of) a file into a context.
type Evidence struct {
	TS time.Time
	// Transcript is true for evidence taken from a line of the context's
	// transcript; Epoch is then the Key of the last compaction boundary
	// above that line ("" above the first). Such evidence is placed
	// against Input.Boundary by transcript order, other evidence by TS.
	Transcript bool
	Epoch      string
	// Op is what produced it: read, write, edit, attach, restore.
	Op gitstore.Op
	// Blob is the git blob id of the content the model received; empty
	// when it carried no content we can hash.
	Blob string
	// DiskBlob is the git blob id of the file on disk when the evidence
	// was taken, recorded only when it equals what the model was shown up
	// to line endings (so it vouches for the same version).
	DiskBlob string
	// Partial is true for a view of part of the file.
	Partial bool
}

// hashed reports whether the evidence pins a version of the file.
func (e Evidence) hashed() bool { return !e.Partial && (e.Blob != "" || e.DiskBlob != "") }

// Input is everything Decide needs about one edit.
type Input struct {
	// Path is the file as the model named it (for messages; shown
	// through Printable). The caller gathers Evidence for the file it
	// names, whatever the spelling of the path each piece was recorded
	// under (a symlink, a symlinked directory): Decide never compares
	// paths.
	Path string
	// Exists, DiskBlob: the file on disk now.
	Exists   bool
	DiskBlob string
	// Evidence for this file in this context, any time. The latest by TS
	// decides; of evidence with equal timestamps the later in the slice,
	// so callers list it in the order it happened where they know it
	// (archive order, then transcript order).
	Evidence []Evidence
	// Boundary is the context's last compaction boundary (nil: never
	// compacted).
	Boundary *Boundary
	// Agent names the context in messages ("" = main agent).
	Agent string
	// RestoreHint is the command that brings content back, for messages.
	RestoreHint string
	// ReadWith names how the model reads a file again in its harness, for
	// messages: the reason says "Read FILE again with <ReadWith>". The
	// harness's adapter supplies it ("the Read tool" in Claude Code); empty,
	// the reason names no tool.
	ReadWith string
	// ChangedBy, when set, is asked on a drift denial only (so a caller
	// may search for it then, off the allow path) who changed the file
	// after seen, the evidence the context last had; nil: not known. The
	// reason then names them, so a model knows it works beside another
	// agent.
	ChangedBy func(seen Evidence) *Change
}

// Change is another context's edit that the archive knows changed the
// file after this context saw it.
type Change struct {
	// Who names the context for a model ("codex session X (subagent
	// Y)"); shown through Printable.
	Who string
	TS  time.Time
}

// Boundary is a compaction of a context: its compact_boundary line.
type Boundary struct {
	Key string    // the line's dedupe key (compact:<line uuid>)
	TS  time.Time // the line's timestamp
}

// After reports whether evidence is in the context after boundary b (nil:
// no boundary, everything is).
func (b *Boundary) After(e Evidence) bool {
	if b == nil {
		return true
	}
	if e.Transcript {
		return e.Epoch == b.Key
	}
	return e.TS.After(b.TS)
}

// Kind classifies a decision.
type Kind string

const (
	AllowCreate   Kind = "create"         // file does not exist
	AllowCurrent  Kind = "current"        // latest evidence matches disk
	AllowPartial  Kind = "partial"        // latest evidence has no hash (fail open)
	DenyNeverSeen Kind = "never-seen"     // no evidence in this context
	DenyCompacted Kind = "compacted"      // evidence only before the last boundary
	DenyDrift     Kind = "drift"          // disk differs from what was seen
	AllowOff      Kind = "guard-off"      // LOSSLESS_GUARD=off
	AllowError    Kind = "internal-error" // our failure: fail open
)

// Decision is the guard's answer.
type Decision struct {
	Allow bool
	Kind  Kind
	// Reason is written for the model: what happened and what to do.
	Reason string
	// Latest is the evidence the decision rested on, if any.
	Latest *Evidence
}

// Decide applies the rules in the package doc.
func Decide(in Input) Decision {
	if !in.Exists {
		return Decision{Allow: true, Kind: AllowCreate}
	}
	var latest *Evidence
	before := 0
	for i := range in.Evidence {
		e := &in.Evidence[i]
		if !in.Boundary.After(*e) {
			before++
			continue
		}
		if latest == nil || !e.TS.Before(latest.TS) {
			latest = e
		}
	}
	ctx := "this context"
	if in.Agent != "" {
		ctx = "this subagent's context (" + Printable(in.Agent) + ")"
	}
	hint := in.RestoreHint
	if hint == "" {
		hint = "git lossless restore --files " + ShellQuote(in.Path)
	}
	path := Printable(in.Path)
	with := ""
	if in.ReadWith != "" {
		with = " with " + Printable(in.ReadWith)
	}
	what := fmt.Sprintf("Read %s again%s (or run `%s`), then retry the edit.", path, with, Printable(hint))
	if latest == nil {
		if before > 0 {
			return Decision{Kind: DenyCompacted, Reason: fmt.Sprintf(
				"git-lossless guard: edit of %s denied. You saw this file only before %s was compacted (%s), and it was not re-attached afterwards, so your view of it is gone. %s",
				path, ctx, in.Boundary.TS.UTC().Format(time.RFC3339), what)}
		}
		return Decision{Kind: DenyNeverSeen, Reason: fmt.Sprintf(
			"git-lossless guard: edit of %s denied. It exists, but %s has not seen its content (a read by another agent does not count). %s",
			path, ctx, what)}
	}
	if !latest.hashed() {
		return Decision{Allow: true, Kind: AllowPartial, Latest: latest}
	}
	if in.DiskBlob != "" && (in.DiskBlob == latest.Blob || in.DiskBlob == latest.DiskBlob) {
		return Decision{Allow: true, Kind: AllowCurrent, Latest: latest}
	}
	seen := latest.Blob
	if seen == "" {
		seen = latest.DiskBlob
	}
	by := "someone or something else edited it"
	if in.ChangedBy != nil {
		if c := in.ChangedBy(*latest); c != nil {
			by = fmt.Sprintf("it was changed by %s at %s, after %s read it", Printable(c.Who), c.TS.UTC().Format(time.RFC3339), ctx)
		}
	}
	return Decision{Kind: DenyDrift, Latest: latest, Reason: fmt.Sprintf(
		"git-lossless guard: edit of %s denied. The file changed on disk after you last saw it (you saw version %.12s via %s at %s; disk now has %.12s): %s. %s",
		path, seen, latest.Op, latest.TS.UTC().Format(time.RFC3339), in.DiskBlob, by, what)}
}
