package tokens

// TextCounter counts o200k tokens of texts that are not archived (a diff,
// a short note) the way Counter counts archived contents: chunk by
// chunk (see nextChunk), each distinct chunk and piece once, so that text
// which repeats lines — diffs of versions of one file, source code — is
// counted far faster than by CountText, with the same result
// (TestTextCounterEqualsCountText; TestChunkedCountsEqual and
// FuzzChunkedCount hold the chunking). The bench replay (package
// hooks/claudecode/replay) counts its diffs with it. One TextCounter belongs to one
// goroutine.
type TextCounter struct {
	memo lineMemo
	pc   *pieceCounter
}

// NewTextCounter returns an empty counter.
func NewTextCounter() *TextCounter {
	return &TextCounter{memo: lineMemo{m: map[string]int64{}}, pc: newPieceCounter()}
}

// Count returns the number of o200k_base tokens in s, as CountText does.
func (c *TextCounter) Count(s string) (int64, error) {
	return c.memo.count(s, c.pc)
}
