package rabbitmq

import (
	"log/slog"
	"sort"
	"strings"
	"sync"

	amqp "github.com/rabbitmq/amqp091-go"
)

// blockState tracks the connections the broker has blocked. RabbitMQ sends
// connection.blocked while a memory or disk alarm is in force: it stops
// reading from connections that publish until the alarm clears, so
// whatever they send waits, closing them included.
type blockState struct {
	mu      sync.Mutex
	reasons map[*connection]string // the blocked connections and why
	roles   map[*connection]string
}

func newBlockState() *blockState {
	return &blockState{reasons: map[*connection]string{}, roles: map[*connection]string{}}
}

// watch logs conn's connection.blocked and connection.unblocked and keeps
// the state until conn closes. The goroutine it starts joins wg.
func (s *blockState) watch(conn *connection, role string, wg *sync.WaitGroup, log func() *slog.Logger) {
	blocks := conn.NotifyBlocked(make(chan amqp.Blocking, 4))
	wg.Go(func() {
		defer s.set(conn, role, "", false)
		for b := range blocks {
			s.set(conn, role, b.Reason, b.Active)
			if b.Active {
				log().Warn("rabbitmq: the broker blocked the connection: it reads nothing from it until its alarm clears",
					"connection", role, "url", conn.addr, "reason", b.Reason)
			} else {
				log().Info("rabbitmq: the broker unblocked the connection", "connection", role, "url", conn.addr)
			}
		}
	})
}

func (s *blockState) set(conn *connection, role, reason string, blocked bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !blocked {
		delete(s.reasons, conn)
		delete(s.roles, conn)
		return
	}
	if reason == "" {
		reason = "no reason given"
	}
	s.reasons[conn] = reason
	s.roles[conn] = role
}

// blocked returns why the broker blocks the connections it blocks, as
// "<role>: <reason>" joined by "; ", and whether it blocks any.
func (s *blockState) blocked() (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.reasons) == 0 {
		return "", false
	}
	out := make([]string, 0, len(s.reasons))
	for c, r := range s.reasons {
		out = append(out, s.roles[c]+": "+r)
	}
	sort.Strings(out)
	return strings.Join(out, "; "), true
}

// isBlocked reports whether the broker blocks conn.
func (s *blockState) isBlocked(conn *connection) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.reasons[conn]
	return ok
}
