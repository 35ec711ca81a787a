//go:build !unix

package gitobj

import "os"

func MapFile(f *os.File, size int64) []byte { return nil }

func UnmapFile(b []byte) {}
