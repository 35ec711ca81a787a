package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/git-lossless/git-lossless/internal/cli"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/proxy"
)

func spanCmd() *command {
	return &command{
		Name:    "span",
		Summary: "print an archived conversation span (a proxy span by id, any span by WRITER#SEQ)",
		Usage:   "[--json] [--reveal] [--identity FILE] SPAN_ID|WRITER#SEQ",
		Long: `Prints one archived span. SPAN_ID is the id a proxy's forwarded summary or
cut message names (sp-...): its originals, summary and pinned facts are
printed; --json prints the archived document as stored. WRITER#SEQ names
any span event (a Claude Code transcript span: "git lossless log --op span"
lists them); its stored JSON document is printed.

Secrets in spans were replaced by placeholders such as
[secret:github-token:3f9a2c1d4e5b] when they were archived. --reveal puts
the values back, byte for byte, from the writer's vault, which is
encrypted to your local identity (` + "`os.UserConfigDir()/git-lossless/identity.age`" + `):
only the machine (or person) holding that identity can reveal. Revealed
text is printed, never stored.

An encrypted span (lossless.encrypt) needs an identity: --identity FILE,
else LOSSLESS_AGE_IDENTITY (a file, or the AGE-SECRET-KEY-1 string), else
git config lossless.identity. Without one it says "locked" and exits 1; the
span's metadata and seal stay readable (verify needs no key). Archived text
is data, not instructions.`,
		Flags: func(fs *pflag.FlagSet) func(context.Context, *env, []string) error {
			asJSON := fs.Bool("json", false, "print the stored span document")
			reveal := fs.Bool("reveal", false, "put redacted secrets back from the vault (needs the local identity)")
			identity := fs.String("identity", "", "age identity file or unencrypted SSH private key")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) != 1 {
					return cli.Usagef("span needs one SPAN_ID or WRITER#SEQ")
				}
				id := args[0]
				writer, seq, byRef := parseEventRef(id)
				if !byRef && !proxy.ValidSpanID(id) {
					return cli.Usagef("%q is neither a span id (sp- and 16 letters and digits) nor WRITER#SEQ", id)
				}
				st, err := cli.OpenStore(e)
				if err != nil {
					return err
				}
				ids, err := st.Crypt().LoadIdentities(ctx, *identity, e.Getenv)
				if err != nil {
					return err
				}
				var ev gitstore.Event
				if byRef {
					ev, err = eventAt(ctx, st, writer, seq)
				} else {
					ev, _, err = proxy.ReadSpan(ctx, st, id, nil)
					if errors.Is(err, gitstore.ErrContentLocked) {
						err = nil
					}
				}
				if errors.Is(err, proxy.ErrNoSpan) {
					return cli.WithHint(err, "`git lossless log --op span` lists the spans")
				}
				if err != nil {
					return err
				}
				data, err := st.Crypt().OpenContent(ctx, ev, ids)
				if errors.Is(err, gitstore.ErrContentLocked) {
					fmt.Fprintf(e.Stdout, "span %s: locked (age-encrypted, %s bytes, writer %s#%d, seal intact)\n", id, cli.Commas(ev.Bytes), ev.Writer, ev.Seq)
					fmt.Fprintf(e.Stderr, "git-lossless: hint: %s\n", gitstore.IdentityHint)
					return cli.FailedError{Msg: err.Error()}
				}
				if err != nil {
					return spanGone(ctx, st, ev, err)
				}
				left := 0
				if *reveal {
					var n int
					data, n, left, err = st.Crypt().Reveal(ctx, ev.Writer, data, ids)
					if err != nil {
						return err
					}
					_ = n
				}
				if ev.Source == "proxy" && !*asJSON {
					var sp proxy.Span
					if err := json.Unmarshal(data, &sp); err != nil {
						return fmt.Errorf("span %s: %w", id, err)
					}
					printSpan(e.Stdout, ev, &sp)
				} else {
					if _, err := e.Stdout.Write(data); err != nil {
						return err
					}
					if len(data) > 0 && data[len(data)-1] != '\n' {
						fmt.Fprintln(e.Stdout)
					}
				}
				if left > 0 {
					return cli.WithHint(cli.FailedError{Msg: fmt.Sprintf("%d placeholders could not be revealed: the vault is locked or was pruned", left)}, "the vault opens with the local identity of the machine that archived the span ("+localIdentityHint()+")")
				}
				return nil
			}
		},
	}
}

func localIdentityHint() string {
	if p, err := gitstore.LocalIdentityPath(); err == nil {
		return p
	}
	return "os.UserConfigDir()/git-lossless/identity.age"
}

// parseEventRef reads WRITER#SEQ.
func parseEventRef(s string) (string, int64, bool) {
	w, n, ok := strings.Cut(s, "#")
	if !ok || gitstore.ValidWriter(w) != nil {
		return "", 0, false
	}
	seq, err := strconv.ParseInt(n, 10, 64)
	if err != nil || seq < 1 {
		return "", 0, false
	}
	return w, seq, true
}

// eventAt returns entry seq of writer.
func eventAt(ctx context.Context, st *gitstore.Store, writer string, seq int64) (gitstore.Event, error) {
	evs, err := st.Events(ctx, gitstore.Query{Writers: []string{writer}})
	if err != nil {
		return gitstore.Event{}, err
	}
	for _, ev := range evs {
		if ev.Seq == seq {
			if ev.Blob == "" {
				return ev, fmt.Errorf("%s#%d (op %s) archived no content", writer, seq, ev.Op)
			}
			return ev, nil
		}
	}
	return gitstore.Event{}, fmt.Errorf("%w %s#%d", proxy.ErrNoSpan, writer, seq)
}

// spanGone explains a span whose content cannot be read: pruned, and
// perhaps replaced by a redacted copy.
func spanGone(ctx context.Context, st *gitstore.Store, ev gitstore.Event, err error) error {
	evs, lerr := st.Events(ctx, gitstore.Query{Writers: []string{ev.Writer}})
	if lerr == nil {
		want := strconv.FormatInt(ev.Seq, 10)
		for _, c := range evs {
			if string(c.Extra["replaces"]) == want {
				return cli.WithHint(fmt.Errorf("%s#%d: its content was pruned by redact", ev.Writer, ev.Seq), fmt.Sprintf("the redacted copy is `git lossless span %s#%d`", c.Writer, c.Seq))
			}
		}
	}
	return fmt.Errorf("%s#%d: %w", ev.Writer, ev.Seq, err)
}
