// Package shellread decides when a shell call is evidence that a model
// saw a file. Codex has no read tool and reads with `cat`, `sed -n`,
// `nl -ba`, `head` and `tail` through exec_command; Claude Code's models
// do the same through Bash. Such a call counts as a read (view "full" or
// "lines:A-B") only when its command is one of the forms below, naming one
// file, and its output, as the model received it, is exactly what that
// command prints of the file's bytes on disk when the hook runs. Anything
// else is only a span of the conversation, never evidence. The package is
// harness-neutral and imports only the standard library: each harness
// adapter unwraps its own framing of the output and says how the harness
// altered it (Shown); the hook runtime resolves, reads and records.
//
// This doc is the spec; the tests run every form and near-miss below with
// /bin/sh on real files.
//
// # The principle
//
// Parse attributes, Match proves. Parse accepts only commands whose
// output can come from one named file and nothing else, selected in a way
// known exactly, with no side effect; Match accepts only an output equal,
// byte for byte, to what the command prints of the file now on disk. So
// the evidence never rests on the command alone: a file changed between
// the command and the hook, a truncated output, an error message, another
// file's content, all fail the equality. What equality proves is that the
// model received exactly the bytes of Seen.Content of the file as it is
// now — the claim the guard needs.
//
// # Recognised forms
//
// FILE is one word (see Words) naming one file; N, A and B are decimal
// numbers of one to nine digits, at least 1.
//
//	cat FILE            whole file        (FILE not starting with "-")
//	cat -- FILE         whole file        (FILE may start with "-", not be "-")
//	sed -n Ap FILE      line A
//	sed -n A,Bp FILE    lines A..B        (B >= A)
//	sed -n A,$p FILE    lines A..end      ($ quoted or escaped, else it expands)
//	nl -ba FILE         whole file, each line numbered (see Matching)
//	head FILE           lines 1..10
//	head -n N FILE      lines 1..N        (also -nN and -N)
//	tail -n N FILE      the last N lines  (also -nN)
//	tail -n +N FILE     lines N..end      (also -n+N)
//
// Two wrappers around a form:
//
//   - `bash -c SCRIPT`, `bash -lc SCRIPT`, and the same with sh, /bin/bash,
//     /bin/sh, /usr/bin/bash or /usr/bin/sh: SCRIPT (one word, exactly
//     three words in all) is parsed again by the same rules, as Codex's
//     rollout shows its calls (`/bin/bash -lc "cat hello.txt"`). Once
//     only: a wrapper inside a wrapper, or after `cd DIR &&`, is refused.
//     zsh is not unwrapped: it expands `=word` and globs the rules below
//     do not model.
//   - `cd DIR && FORM`: the read is of DIR + "/" + FILE when FILE is
//     relative (FILE when absolute), with DIR as written (a trailing "/"
//     not doubled). DIR must be non-empty, not start with "-" (options
//     and `cd -`), and have no ".." component: cd resolves ".." lexically
//     (cd -L) while the file is then opened physically, which differ
//     through a symlink. Exactly one `cd DIR &&` and one form after it.
//     (When CDPATH sends cd elsewhere, bash prints the directory it went
//     to, and the output no longer matches.)
//
// Read.Path is never cleaned (`a/../b` opens b beside wherever a symlink a
// points, as cat did); Read.Resolve joins it to the directory the command
// ran in without cleaning, and a symlink is followed as cat follows it:
// the Path names the link, resolving it is the caller's.
//
// # Words
//
// Words are split and unquoted exactly as a POSIX shell (and bash) does
// for plain words: blanks (space, tab) separate words; '…' keeps
// everything literally; "…" keeps everything literally except that a
// backslash before $ ` " or \ stands for that character (before anything
// else it is itself); an unquoted backslash makes the next character
// literal; adjacent pieces join into one word ('a b'"c"\ d is "a bc d").
// Anything whose meaning depends on more than that is refused:
//
//   - expansions: an unquoted or double-quoted $ or ` (variables, $(…),
//     `…`, $'…', $"…", arithmetic); a $ inside '…' or escaped is literal
//   - globs and brace expansion: unquoted * ? [ { }
//   - tilde: an unquoted ~ anywhere
//   - operators: | || & ; < > ( ) and a newline (pipes, lists, background,
//     redirections such as 2>/dev/null, subshells, bash's extglob and
//     process substitution); && only in `cd DIR && FORM`
//   - an unquoted # (comment), an unquoted or double-quoted ! (negation,
//     history expansion), an unquoted ^ (a zsh glob), an unquoted = at the
//     start of a word (zsh's =cmd; an assignment before the command fails
//     anyway, as the command name would be VAR=value)
//   - a control character (below 0x20 but tab, and DEL) anywhere, quoted
//     or not, a backslash before a newline (line continuation), an
//     unterminated quote, a backslash at the end, invalid UTF-8, more than
//     eight words
//
// # Refused commands
//
// Besides the word rules, a command is refused (ErrNotRead, with the rule
// in NotReadError.Reason) when it is not exactly a form above:
//
//   - several files (`cat a b`, `head -n 2 a b`): the output cannot be
//     attributed to either, and cat's output of two files may even equal
//     a third file's content
//   - other programs (grep, rg, awk, less, more), other spellings of the
//     program (/bin/cat, `command cat`), an environment assignment first
//   - any option but those shown: `cat -n`, `cat -A`, `sed -i` (an edit),
//     `sed` without -n or with -e, `nl` without -ba or with any other flag
//     (its output format changes), `head -c`, `tail -c`, `tail -f`,
//     `tail -N`, `tail FILE`
//   - a sed script other than Ap, A,Bp, A,$p (`1,3p;5p`, `/re/p`, `1,3w f`
//     which writes a file, spaces, address 0, B < A)
//   - a count of 0, a negative or suffixed count (`head -n -2`,
//     `head -n 1K`), `tail -n +0`
//   - standard input (no file, or "-"), an empty file name, an option
//     where the file goes
//
// # Matching
//
// Lines are what sed, head, tail and nl count: the bytes up to and
// including each "\n", and a final segment without "\n" when the file
// does not end with one (a file has no line when empty). A selection is
// clipped to the file: `head -n 50` of a 30-line file, `sed -n '1,100p'`
// of it, `tail -n 100` of it and `tail -n +1` all show lines 1..30 and are
// "full"; a selection that starts past the last line (`sed -n '40,50p'`,
// `tail -n +31` of 30 lines) shows nothing and is no evidence
// (ErrNothingShown). An empty file is shown "full" (with empty content,
// Seen.First = Seen.Last = 0) by any form that starts at line 1 or counts
// from the end: the model learnt it is empty. The view is "full" when the
// lines shown are the whole file, else "lines:A-B" with B the last line
// actually shown (`sed -n '25,40p'` of 30 lines is "lines:25-30").
//
// The expected output is those lines' bytes exactly as the file holds
// them, which is what cat, sed -n, head and tail print: no newline is
// added to a final line that lacks one, CRLF line ends stay CRLF, nothing
// is decoded. For nl -ba it is every line (the whole file) printed as its
// number right-aligned in six columns (wider past 999999), a tab, the line
// without its newline, and "\n" — added also after a last line that lacks
// one (GNU and BSD nl with their default -w6 -s'\t' -nrn). nl reads a line
// of only \:\:\:, \:\: or \: as a section delimiter and prints something
// else, so a file holding one is no evidence through nl (ErrNLSection).
// Seen.Content never includes nl's numbers: it is the file's bytes of the
// lines shown, a sub-slice of disk, the content to archive; its git blob
// is then the file's own blob for a "full" view.
//
// How the harness altered the output is the adapter's to say (Shown):
//
//   - Verbatim (Codex exec_command; its PostToolUse tool_response is the
//     output, its rollout wraps the same text as "Chunk ID: …\nProcess
//     exited with code 0\n…Output:\n<output>", which the adapter removes):
//     the output must equal the expected bytes exactly. A trailing newline
//     missing or added, CRLF shown as LF, anything else is ErrMismatch.
//   - BlankEdgesTrimmed (Claude Code's Bash tool_response.stdout): Claude
//     Code splits stdout at "\n", drops the lines at both ends that are
//     blank after JavaScript's trim (space, tab, \v, \f, \r, NBSP, the
//     Unicode spaces, U+2028/9, U+FEFF) and joins the rest with "\n"; so
//     `cat hello.txt` of "hello world\n" reaches the model as
//     "hello world". Match applies the same to the expected bytes and
//     compares exactly; Seen.Trimmed says the trim removed something (the
//     model saw the lines shown up to blank lines at their edges, which is
//     still "full" for the whole file). A selection the trim leaves empty
//     (only blank lines) is no evidence (ErrNothingShown).
//
// Truncated outputs are no evidence by construction: Codex cuts a long
// output in the middle with a "…N tokens truncated…" marker, Claude Code
// cuts at its output limit (BASH_MAX_OUTPUT_LENGTH, 30000 characters by
// default) or replaces the output by a preview; neither equals the
// expected bytes. A file holding a NUL byte or invalid UTF-8 is no
// evidence (ErrBinary): the harnesses decode output as UTF-8, so such
// bytes never reach the model intact, and the check does not depend on
// which replacement a harness made.
//
// # Reading the file
//
// ReadFile reads the file for Match after the command ran: it follows
// symlinks as cat does, refuses anything but a regular file without
// blocking (ErrNotRegular: a directory, of which cat prints nothing on
// stdout; a FIFO, opened non-blocking, which an ordinary open would hang
// on; a device such as /dev/urandom, which would never end) and a file
// over MaxFileSize (ErrTooLarge), far above what a harness shows of one
// shell call.
//
// # Left to the caller
//
// Resolving Read.Path against the command's working directory
// (Read.Resolve; the adapter must know that directory: Codex's
// exec_command takes a workdir, Claude Code's Bash keeps a cwd across
// calls), the deny list (a denied path's access is recorded, its content
// and the output withheld), the symlink's real path, and recording.
package shellread
