//go:build !unix

package hooks

import "time"

func swCPUTime() time.Duration { return 0 }
