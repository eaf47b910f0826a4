//go:build unix

package benchpair

import (
	"syscall"
	"time"
)

// CPUTime returns the user and system CPU time this process has used so
// far, every goroutine and the garbage collector included; 0 when the
// system does not say.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
