//go:build !linux

package main

import "os/exec"

// dieWithUs does nothing where the kernel has no parent-death signal: a
// program whose git-lossless was killed stops when its standard input
// ends.
func dieWithUs(cmd *exec.Cmd) {}
