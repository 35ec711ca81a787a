// Package blame finds where each line of a file came from: the archived
// agent write that introduced it (harness, session, subagent, model, tool
// call, time, the request that led to it), or a person. The origin is found
// by content — which archived write's version carries the line, matched
// through the file's history — never by a stored commit id, so it survives
// amend, rebase, cherry-pick, squash merges and filter-branch unchanged.
// Which commit brought a line into history is what `git blame` says: the
// real git is run for that part, so the two agree by construction.
//
// The rule is in FORMAT.md beside this file.
package blame
