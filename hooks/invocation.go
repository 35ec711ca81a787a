package hooks

import (
	"context"
	"fmt"
	"strings"
)

// Invocation reports whether args (a whole command line after the program
// name, of git-lossless or git-lossless-hook) run the hook command, and
// returns what follows "hook". Global flags before it are skipped,
// whatever they are: a hook must exit 0 even when they are wrong (Claude
// Code reads exit 2 from PreToolUse as a block), and it finds its
// repository from the payload's cwd, not -C. "--help", "-h" and
// "--version" before the command keep their meaning, and so does a help
// flag after it.
func Invocation(args []string) ([]string, bool) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-h" || a == "--help" || a == "--version" || a == "version":
			return nil, false
		case a == "-C":
			i++ // its directory
		case strings.HasPrefix(a, "-"):
		case a == "hook":
			rest := args[i+1:]
			for _, r := range rest {
				if r == "-h" || r == "--help" {
					return nil, false // help is help, printed as usual
				}
			}
			return rest, true
		default:
			return nil, false
		}
	}
	return nil, false
}

// RunArgs runs `hook ARGS`: exactly one event name and nothing else, or
// one line on stderr and nothing done (for pre-tool-use: the edit goes
// ahead). It always returns 0.
func RunArgs(ctx context.Context, args []string, e Env) int {
	if len(args) != 1 || strings.HasPrefix(args[0], "-") {
		fmt.Fprintf(e.Stderr, "git-lossless: hook: usage: git lossless hook EVENT, got %q (ignored)\n", strings.Join(args, " "))
		return 0
	}
	return Run(ctx, args[0], e)
}
