package cli

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
)

// TakeDirFlag consumes a leading `-C DIR` or `-CDIR` of args, as git
// does (each one relative to the one before), into e.Dir. It reports
// whether it took one; a `-C` without a directory is a usage error.
// Every program of git-lossless parses its global -C through it, so
// `git lossless -C D mcp` and `git-lossless-mcp -C D mcp` agree.
func TakeDirFlag(e *Env, args []string) (rest []string, took bool, err error) {
	if len(args) == 0 {
		return args, false, nil
	}
	switch a := args[0]; {
	case a == "-C":
		if len(args) < 2 {
			return args, false, Usagef("-C needs a directory")
		}
		e.Dir = JoinDir(e.Dir, args[1])
		return args[2:], true, nil
	case strings.HasPrefix(a, "-C") && len(a) > 2:
		e.Dir = JoinDir(e.Dir, a[2:])
		return args[1:], true, nil
	}
	return args, false, nil
}

// EnterDir settles the command's directory: the working directory when
// no -C named one, else the named one, which must be a directory.
func EnterDir(e *Env) error {
	if e.Dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return err
		}
		e.Dir = wd
		return nil
	}
	st, err := os.Stat(e.Dir)
	if err != nil {
		return Usagef("cannot change to %s: %v", e.Dir, errors.Unwrap(err))
	}
	if !st.IsDir() {
		return Usagef("cannot change to %s: not a directory", e.Dir)
	}
	return nil
}

// JoinDir is d relative to base (d itself when absolute or base is "").
func JoinDir(base, d string) string {
	if base == "" || filepath.IsAbs(d) {
		return d
	}
	return filepath.Join(base, d)
}
