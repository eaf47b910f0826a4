package adapter

import (
	"sync"
	"time"
)

// Poison log lines are rate-limited per subscription: a sender that floods
// a queue with malformed or hostile messages must not flood the logs too.
// Every message is still counted; the first line after a quiet spell says
// how many lines were left out.
const (
	poisonLogBurst = 100                   // lines at once
	poisonLogEvery = 50 * time.Millisecond // one more line per this much time
)

// logLimiter is a token bucket of log lines.
type logLimiter struct {
	mu         sync.Mutex
	tokens     float64
	last       time.Time
	suppressed int
}

// allow reports whether a line may be logged at now, and how many lines
// were left out since the last one logged.
func (l *logLimiter) allow(now time.Time) (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.last.IsZero() {
		l.tokens, l.last = poisonLogBurst, now
	}
	if elapsed := now.Sub(l.last); elapsed > 0 {
		l.tokens = min(poisonLogBurst, l.tokens+float64(elapsed)/float64(poisonLogEvery))
		l.last = now
	}
	if l.tokens < 1 {
		l.suppressed++
		return false, 0
	}
	l.tokens--
	n := l.suppressed
	l.suppressed = 0
	return true, n
}
