package gitstore

// HarnessOf is the agent harness an event came from: its own "harness"
// field when it has one; else the harness whose sessions' writers carry
// the prefix its writer starts with, as ofWriter says (events written
// before the field existed: cc-<session> is Claude Code's); else "", an
// event of no harness (proxy-, cli- and mcp- writers).
//
// It is the one rule by which log, recall, the MCP server's search,
// meter, pack and receipts tell an event's harness. The writer-to-harness
// mapping is passed in rather than known here: the prefixes belong to the
// adapters (package hooks and its adapters, listed by hooks/harnesses),
// which this package, recall, meter and receipt must not import. The
// commands pass harnesses.WriterHarness(); a nil ofWriter knows no
// prefix, so only the field counts.
func HarnessOf(harness, writer string, ofWriter func(writer string) string) string {
	if harness != "" || ofWriter == nil {
		return harness
	}
	return ofWriter(writer)
}
