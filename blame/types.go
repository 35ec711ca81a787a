package blame

import (
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
)

// Origin is the archived agent write that introduced a line: the context
// that made it and the call that made it. A nil *Origin means no archived
// agent write produced the line: a person wrote it, or an agent the archive
// did not record.
type Origin struct {
	Harness string      `json:"harness,omitempty"` // claude-code, codex, gemini, opencode; "" when unknown
	Writer  string      `json:"writer"`            // the refs/lossless/<writer> holding the event
	Seq     int64       `json:"seq"`               // the event's position in the writer's chain
	Session string      `json:"session,omitempty"`
	Agent   string      `json:"agent,omitempty"` // subagent; "" for the main context
	Model   string      `json:"model,omitempty"` // where the archive knows it
	Op      gitstore.Op `json:"op"`              // edit or write
	Tool    string      `json:"tool,omitempty"`  // the tool the model called (Edit, apply_patch, ...)
	Call    string      `json:"call,omitempty"`  // the tool call's id (the event's key)
	TS      time.Time   `json:"ts"`
	Path    string      `json:"path"` // the path the write named, repository-relative when inside it
	Blob    string      `json:"blob"` // the version the write produced
	Line    int         `json:"line"` // the line's number (from 1) in that version
	// Request is the user request that led to the write (the last user
	// prompt of its context before it), masked as recall masks, cut to a
	// line; filled only when asked for (Options.Requests).
	Request string `json:"request,omitempty"`
}

// Line is one line of the blamed file: where git blame finds it entered
// history, and its origin.
type Line struct {
	N    int    `json:"line"` // from 1, in the blamed version
	Text string `json:"text"`
	// Commit is the commit git blame names (40 zeros: not committed yet),
	// with the path and line number the line had in it.
	Commit     string    `json:"commit"`
	OrigPath   string    `json:"orig_path"`
	OrigLine   int       `json:"orig_line"`
	Author     string    `json:"author"`
	AuthorMail string    `json:"author_mail"`
	AuthorTime time.Time `json:"author_time"`
	Summary    string    `json:"summary"`
	Boundary   bool      `json:"boundary,omitempty"`
	Origin     *Origin   `json:"origin"` // nil: a person (or an unrecorded agent)
	// Headers are git blame's --line-porcelain key-value lines for the
	// line, as git wrote them (for a porcelain output that extends git's).
	Headers []string `json:"-"`
	// Head is git's header line for the line ("<commit> <orig> <final>",
	// with a group's line count on the first line of a group).
	Head string `json:"-"`
}

// AddedLine is a line a commit added to a file (relative to its first
// parent), with its origin.
type AddedLine struct {
	N      int     `json:"line"` // from 1, in the commit's version
	Text   string  `json:"text"`
	Origin *Origin `json:"origin"`
}

// FileChange is one file a commit changed, with the lines it added and
// the lines it removed (counts as git diff --numstat counts them, for text
// files; Binary files have no lines).
type FileChange struct {
	Path    string      `json:"path"`
	OldPath string      `json:"old_path,omitempty"` // a rename's source
	Binary  bool        `json:"binary,omitempty"`
	Added   []AddedLine `json:"added"`
	Removed int         `json:"removed"`
	// Written counts, per crediting write (keyed by writer and seq), the
	// lines that write added which the commit does not carry as written:
	// the agent's lines a person changed or dropped before committing.
	Rewritten int `json:"rewritten"`
}

// CommitChange is a commit's attributed change.
type CommitChange struct {
	Commit     string       `json:"commit"`
	Parent     string       `json:"parent,omitempty"` // first parent; "" for a root
	Author     string       `json:"author"`
	AuthorMail string       `json:"author_mail"`
	AuthorTime time.Time    `json:"author_time"`
	CommitTime time.Time    `json:"commit_time"`
	Summary    string       `json:"summary"`
	Files      []FileChange `json:"files"`
}
