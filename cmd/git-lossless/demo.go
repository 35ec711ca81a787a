package main

import (
	"context"

	"github.com/spf13/pflag"
)

func demoCmd() *command {
	return &command{
		name:    "demo",
		summary: "run a scripted agent session in a temporary repository",
		usage:   "",
		flags: func(fs *pflag.FlagSet) func(context.Context, *env, []string) error {
			return func(ctx context.Context, e *env, args []string) error {
				return usagef("demo: not built yet")
			}
		},
	}
}
