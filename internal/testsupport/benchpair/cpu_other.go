//go:build !unix

package benchpair

import "time"

// CPUTime returns 0: this system's CPU accounting is not read.
func CPUTime() time.Duration { return 0 }
