package gitstore

// Op names what an event records: the "op" member of its line. The
// vocabulary is closed for writers of this version — every event this
// program writes carries one of the constants below — and open for readers:
// a line written by a newer version may carry an op this one does not know,
// which is kept, sealed and verified like any other (FORMAT.md, "Forward
// compatibility"). Op is a defined string type so that a misspelt op is a
// compile error at the writer, while comparisons with the constants, JSON
// and the stored bytes stay those of a plain string.
type Op string

// The ops this version writes. FORMAT.md lists what each one carries.
const (
	// File versions: content is a file's bytes, as the model saw them.
	OpRead    Op = "read"    // a tool showed the model a file (View says which part)
	OpEdit    Op = "edit"    // the model edited a file: the bytes after the edit
	OpWrite   Op = "write"   // the model wrote a whole file
	OpAttach  Op = "attach"  // a file attached to a prompt (an @-mention)
	OpRestore Op = "restore" // a version handed back to the model after a compaction

	// File bookkeeping without content.
	OpDelete Op = "delete" // a tool call removed the file
	OpDeny   Op = "deny"   // the guard refused a blind edit of the file

	// Conversation.
	OpSpan       Op = "span"       // a conversation span (transcript entry or proxy fold)
	OpCompact    Op = "compact"    // a compaction boundary found in a transcript
	OpPreCompact Op = "precompact" // the harness said it is about to compact
	OpHandBack   Op = "handback"   // what was handed back to the model after a compaction

	// Written by the store itself.
	OpPrune Op = "prune" // content removed from the archive (prune.go)
	OpVault Op = "vault" // the age-encrypted values redacted from a batch (redact.go)
)

// IsFileVersion reports whether op's content is a file version (stored as
// the model saw it, marked with "secrets") rather than conversation text
// (redacted).
func (op Op) IsFileVersion() bool {
	switch op {
	case OpRead, OpEdit, OpWrite, OpAttach, OpRestore:
		return true
	}
	return false
}

// IsFileVersion is Op.IsFileVersion for callers holding a plain string (a
// line's op read without decoding the whole event).
func IsFileVersion(op string) bool { return Op(op).IsFileVersion() }

// Needle returns the op's member as it stands in a canonical event line,
// `"op":"read"`: the bytes a Selection sifts lines by before parsing
// (ops are plain words, never escaped).
func (op Op) Needle() []byte { return []byte(`"op":"` + string(op) + `"`) }
