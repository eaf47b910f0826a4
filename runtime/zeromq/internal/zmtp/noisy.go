package zmtp

import (
	"log/slog"
	"sync"
	"time"

	"github.com/streamgen/streamgen/runtime/clock"
)

// warnEvery is how often a noisy event is warned about; in between it is
// logged at debug level.
const warnEvery = time.Minute

// noisy logs an event that a peer can cause at will (a connection that does
// not speak ZMTP, one over the connection limit): a warning the first time
// and then at most once every warnEvery on the clock, the others at debug
// level. Each line carries the count so far under key, and a warning the
// number of events since the last one that were not warned about.
type noisy struct {
	key   string
	clock clock.Clock

	mu        sync.Mutex
	count     int64
	notWarned int64
	lastWarn  time.Time
}

func (n *noisy) log(log *slog.Logger, msg string, args ...any) {
	n.mu.Lock()
	n.count++
	count := n.count
	now := n.clock.Now()
	warn := count == 1 || now.Sub(n.lastWarn) >= warnEvery
	var skipped int64
	if warn {
		n.lastWarn, skipped, n.notWarned = now, n.notWarned, 0
	} else {
		n.notWarned++
	}
	n.mu.Unlock()
	args = append(args, n.key, count)
	if !warn {
		log.Debug(msg, args...)
		return
	}
	if skipped > 0 {
		args = append(args, "not_warned", skipped)
	}
	log.Warn(msg, append(args, "note", "later ones at debug level, a warning at most once a minute")...)
}

// total returns how many events were logged.
func (n *noisy) total() int64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.count
}
