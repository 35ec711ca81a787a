package main

import (
	"context"

	"github.com/spf13/pflag"
)

func benchCmd() *command {
	return &command{
		name:    "bench",
		summary: "measure the store against C git, side by side",
		usage:   "store",
		flags: func(fs *pflag.FlagSet) func(context.Context, *env, []string) error {
			return func(ctx context.Context, e *env, args []string) error {
				return usagef("bench: not built yet")
			}
		},
	}
}
