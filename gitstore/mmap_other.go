//go:build !unix

package gitstore

import "os"

func mapFile(f *os.File, size int64) []byte { return nil }

func unmapFile(b []byte) {}
