package codex

import (
	"fmt"
	"strconv"
	"strings"
)

// CheckUnifiedDiff checks a file's content before and after a patch
// against the unified diff Codex reported for it (FileChangeEntry's
// UnifiedDiff, which Codex computed from the real content on disk): each
// hunk's context and removed lines must be old's lines where the hunk
// header says, and its context and added lines new's, byte for byte
// (line endings included). A replay whose pair passes agrees with what
// Codex wrote wherever the patch changed the file; nil means it passes.
func CheckUnifiedDiff(old, new []byte, diff string) error {
	oldLines, newLines := inclusiveLines(string(old)), inclusiveLines(string(new))
	dl := inclusiveLines(diff)
	var oldAt, newAt, oldLeft, newLeft int
	inHunk := false
	hunks := 0
	for i := 0; i < len(dl); i++ {
		l := dl[i]
		if strings.HasPrefix(l, "@@ ") {
			if inHunk && (oldLeft != 0 || newLeft != 0) {
				return fmt.Errorf("unified diff: hunk %d is short of %d old and %d new lines", hunks, oldLeft, newLeft)
			}
			var err error
			oldAt, oldLeft, newAt, newLeft, err = hunkHeader(l)
			if err != nil {
				return err
			}
			inHunk = true
			hunks++
			continue
		}
		if !inHunk {
			if strings.HasPrefix(l, "--- ") || strings.HasPrefix(l, "+++ ") {
				continue
			}
			return fmt.Errorf("unified diff: %q before any hunk", l)
		}
		if strings.HasPrefix(l, `\`) {
			continue // "\ No newline at end of file": read with the line before
		}
		if l == "" {
			return fmt.Errorf("unified diff: empty line in hunk %d", hunks)
		}
		text := l[1:]
		if i+1 < len(dl) && strings.HasPrefix(dl[i+1], `\`) {
			text = strings.TrimSuffix(text, "\n")
		}
		check := func(lines []string, at *int, left *int, side string) error {
			if *left == 0 || *at < 1 || *at > len(lines) || lines[*at-1] != text {
				return fmt.Errorf("unified diff: hunk %d: %s line %d is not %q", hunks, side, *at, text)
			}
			*at++
			*left--
			return nil
		}
		switch l[0] {
		case ' ':
			if err := check(oldLines, &oldAt, &oldLeft, "old"); err != nil {
				return err
			}
			if err := check(newLines, &newAt, &newLeft, "new"); err != nil {
				return err
			}
		case '-':
			if err := check(oldLines, &oldAt, &oldLeft, "old"); err != nil {
				return err
			}
		case '+':
			if err := check(newLines, &newAt, &newLeft, "new"); err != nil {
				return err
			}
		default:
			return fmt.Errorf("unified diff: line %q in hunk %d", l, hunks)
		}
	}
	if inHunk && (oldLeft != 0 || newLeft != 0) {
		return fmt.Errorf("unified diff: hunk %d is short of %d old and %d new lines", hunks, oldLeft, newLeft)
	}
	if hunks == 0 && string(old) != string(new) {
		return fmt.Errorf("unified diff: no hunk, but the content changed")
	}
	return nil
}

// inclusiveLines splits s after each '\n', keeping it.
func inclusiveLines(s string) []string {
	var out []string
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

// hunkHeader reads "@@ -a[,b] +c[,d] @@...": where each side starts
// (1-based) and how many lines it has (1 when omitted).
func hunkHeader(l string) (oldAt, oldN, newAt, newN int, err error) {
	f := strings.Fields(l)
	if len(f) < 4 || f[0] != "@@" || f[3] != "@@" || !strings.HasPrefix(f[1], "-") || !strings.HasPrefix(f[2], "+") {
		return 0, 0, 0, 0, fmt.Errorf("unified diff: bad hunk header %q", strings.TrimSpace(l))
	}
	side := func(s string) (int, int, bool) {
		a, b, found := strings.Cut(s, ",")
		at, err1 := strconv.Atoi(a)
		n := 1
		var err2 error
		if found {
			n, err2 = strconv.Atoi(b)
		}
		return at, n, err1 == nil && err2 == nil && at >= 0 && n >= 0
	}
	oldAt, oldN, ok1 := side(f[1][1:])
	newAt, newN, ok2 := side(f[2][1:])
	if !ok1 || !ok2 {
		return 0, 0, 0, 0, fmt.Errorf("unified diff: bad hunk header %q", strings.TrimSpace(l))
	}
	return oldAt, oldN, newAt, newN, nil
}
