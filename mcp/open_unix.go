//go:build unix

package mcp

import "syscall"

// openNonBlock opens a FIFO without waiting for a writer (read_file then
// refuses it: it is not a regular file); on a regular file it changes
// nothing.
const openNonBlock = syscall.O_NONBLOCK
