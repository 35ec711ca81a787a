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

// RunArgs runs `hook [HARNESS] EVENT`: the event of the harness named
// (of hs), or, with the event alone, of the first of hs (the default
// harness, Claude Code, whose settings name no harness). Anything else is
// one line on stderr and nothing done (for pre-tool-use: the edit goes
// ahead). It always returns 0.
func RunArgs(ctx context.Context, hs []Harness, args []string, e Env) int {
	usage := func(why string) int {
		fmt.Fprintf(e.Stderr, "git-lossless: hook: %susage: git lossless hook [HARNESS] EVENT, got %q (ignored)\n", why, strings.Join(args, " "))
		return 0
	}
	if e.HarnessOf == nil && len(hs) > 0 {
		// Deny reasons name another context's harness by its writer.
		e.HarnessOf = func(w string) string {
			if h, ok := OfWriter(hs, w); ok {
				return h.Name()
			}
			return ""
		}
	}
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			return usage("")
		}
	}
	switch {
	case len(hs) == 0 || len(args) == 0 || len(args) > 2:
		return usage("")
	case len(args) == 1:
		return Run(ctx, hs[0], args[0], e)
	}
	h, ok := Find(hs, args[0])
	if !ok {
		names := make([]string, len(hs))
		for i, h := range hs {
			names[i] = h.Name()
		}
		return usage(fmt.Sprintf("unknown harness %q (known: %s); ", args[0], strings.Join(names, ", ")))
	}
	return Run(ctx, h, args[1], e)
}
