//go:build !unix

package mcp

// openNonBlock: no FIFOs to open without blocking here.
const openNonBlock = 0
