package main

import (
	"strconv"
	"strings"
)

// plural is "1 writer", "2 writers": a count and its noun, the noun made
// plural the regular English way (entry -> entries, batch -> batches,
// ref -> refs). Every count a command prints goes through it, so no
// output says "1 writers" (TestNoGoFormattingInOutput).
func plural(n int, noun string) string {
	return strconv.Itoa(n) + " " + nounFor(n, noun)
}

// nounFor is noun, made plural unless n is 1.
func nounFor(n int, noun string) string {
	if n == 1 || noun == "" {
		return noun
	}
	switch {
	case strings.HasSuffix(noun, "y") && len(noun) > 1 && !strings.ContainsRune("aeiou", rune(noun[len(noun)-2])):
		return noun[:len(noun)-1] + "ies"
	case strings.HasSuffix(noun, "s"), strings.HasSuffix(noun, "x"), strings.HasSuffix(noun, "ch"), strings.HasSuffix(noun, "sh"):
		return noun + "es"
	}
	return noun + "s"
}
