package shellread_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-lossless/git-lossless/hooks/shellread"
)

// source8k is a typical 8 KiB source file: 200 lines of about 40 bytes.
func source8k() []byte {
	var b strings.Builder
	for i := 0; b.Len() < 8<<10; i++ {
		fmt.Fprintf(&b, "\tif err := step%03d(ctx, x); err != nil {\n", i)
	}
	return []byte(b.String())
}

// BenchmarkParseMatch is the per-shell-call cost in a post-tool hook:
// Parse the command, Match the output against the file's bytes (already
// read: see the ReadFile variant for the read itself).
func BenchmarkParseMatch(b *testing.B) {
	disk := source8k()
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.go"), disk, 0o600); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name, cmd string
		shown     shellread.Shown
	}{
		{"cat", "cat main.go", shellread.Verbatim},
		{"cat-claude-trimmed", "cat main.go", shellread.BlankEdgesTrimmed},
		{"sed-range", "sed -n '50,120p' main.go", shellread.Verbatim},
		{"nl-ba", "nl -ba main.go", shellread.Verbatim},
		{"tail", "tail -n 40 main.go", shellread.Verbatim},
		{"bash-lc-cd-head", `/bin/bash -lc "cd . && head -n 80 main.go"`, shellread.Verbatim},
	} {
		out := runShell(b, dir, c.cmd)
		if c.shown == shellread.BlankEdgesTrimmed {
			out = out[:len(out)-1] // the final newline, as Claude Code trims it
		}
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(disk)))
			b.ReportAllocs()
			for b.Loop() {
				r, err := shellread.Parse(c.cmd)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := shellread.Match(r, out, disk, c.shown); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("cat+ReadFile", func(b *testing.B) {
		ctx := context.Background()
		out := disk
		b.SetBytes(int64(len(disk)))
		b.ReportAllocs()
		for b.Loop() {
			r, err := shellread.Parse("cat main.go")
			if err != nil {
				b.Fatal(err)
			}
			d, err := shellread.ReadFile(ctx, r.Resolve(dir))
			if err != nil {
				b.Fatal(err)
			}
			if _, err := shellread.Match(r, out, d, shellread.Verbatim); err != nil {
				b.Fatal(err)
			}
		}
	})
}
