//go:build !unix

package claudecode

import (
	"os"
	"time"
)

func swCPUTime() time.Duration { return 0 }

func swFileIdentity(os.FileInfo) (dev, ino uint64) { return 0, 0 }
