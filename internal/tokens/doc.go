// Package tokens counts what a model was shown in o200k_base tokens,
// exactly (github.com/tiktoken-go/tokenizer's codec, its vocabulary
// compiled in): CountText for one text, ModelText for the text an
// archived event put in front of the model (a file version whole or the
// lines of its view, a span's text), Counter for many events at once
// with a per-repository cache of counts by content, TextCounter for texts
// that repeat lines.
//
// It is a package of its own because three concerns count and none owns
// counting: receipts (what a commit's contexts saw), the meter and packs
// (where the read tokens went) and the replay of sessions (what a
// restore saves). It lived in package receipt, so the meter imported
// receipts to count; now each imports this. It is internal: a counting
// library, not part of the archive's architecture. The hook program
// links none of it (internal/layoutcheck: the tokenizer's tables cost
// every process that links them).
package tokens
