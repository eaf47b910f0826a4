package console

import (
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// throttle makes a client that sends wrong operator tokens wait: after
// free of them in a row, it waits first before its next try, then twice
// as long after each wrong token, up to last; its tries meanwhile are
// refused without the token being checked. A sign-in starts the client
// afresh. Its memory is bounded whatever the requests: at most
// maxClients clients are kept, each forgotten forget after its last wrong
// token; past the bound, new clients share one record, and so wait
// together. The log has a line when a client sends its first wrong token,
// one when it is made to wait, and a summary of the wrong tokens and the
// tries refused at most every summaryEvery, not a line a try.
type throttle struct {
	now          func() time.Time
	log          *slog.Logger
	free         int
	first, last  time.Duration
	forget       time.Duration
	maxClients   int
	summaryEvery time.Duration

	mu      sync.Mutex
	clients map[string]*client
	pruned  time.Time // when the clients were last pruned
	// Since the last summary:
	since          time.Time
	wrong, refused int
}

// client is what the throttle keeps of a client.
type client struct {
	wrong int       // wrong tokens in a row
	until time.Time // no try before
	last  time.Time // the last wrong token
}

// overflow is the record the clients past maxClients share.
const overflow = "(the clients past the bound)"

func newThrottle(log *slog.Logger) *throttle {
	return &throttle{now: time.Now, log: log, free: 5, first: time.Second, last: 5 * time.Minute,
		forget: time.Hour, maxClients: 10_000, summaryEvery: time.Minute, clients: map[string]*client{}}
}

// clientOf is who a request is from, for the throttle: its remote IP
// address, an IPv6 address's /64 network (which one host has at will).
// Behind a proxy every request is from the proxy, and its clients wait
// together.
func clientOf(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip := net.ParseIP(host)
	switch {
	case ip == nil:
		return host
	case ip.To4() != nil:
		return ip.String()
	}
	return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
}

// wait returns how long who must wait before its next try, 0 when it may
// try now; a try it must wait before is counted as refused.
func (t *throttle) wait(who string) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	t.summarize(now)
	c := t.lookup(who, now)
	if c == nil && len(t.clients) >= t.maxClients {
		c = t.lookup(overflow, now)
	}
	if c == nil || !now.Before(c.until) {
		return 0
	}
	t.refused++
	return c.until.Sub(now)
}

// lookup returns who's record, nil when there is none or it is forgotten
// (see prune). t.mu is held.
func (t *throttle) lookup(who string, now time.Time) *client {
	c := t.clients[who]
	if c != nil && t.forgotten(c, now) {
		delete(t.clients, who)
		return nil
	}
	return c
}

// forgotten reports whether c's last wrong token is forget old and c
// waits no more.
func (t *throttle) forgotten(c *client, now time.Time) bool {
	return now.Sub(c.last) >= t.forget && !now.Before(c.until)
}

// failed records a wrong token from who, and returns how long who must
// wait before its next try.
func (t *throttle) failed(who string) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	t.summarize(now)
	c := t.lookup(who, now)
	if c == nil {
		if len(t.clients) >= t.maxClients {
			t.prune(now)
		}
		if len(t.clients) >= t.maxClients {
			who = overflow
			c = t.lookup(who, now)
		}
	}
	if c == nil {
		c = &client{}
		t.clients[who] = c
		if who == overflow {
			t.log.Warn("dlq console: sign-in refused: wrong operator tokens from more clients than are kept apart: those past the bound wait together", "clients", t.maxClients)
		} else {
			t.log.Warn("dlq console: sign-in refused: wrong operator token", "client", who)
		}
	}
	c.wrong++
	c.last = now
	t.wrong++
	var d time.Duration
	if n := c.wrong - t.free; n >= 0 {
		d = t.last
		if n < 30 && t.first<<n < t.last {
			d = t.first << n
		}
		c.until = now.Add(d)
		if n == 0 {
			t.log.Warn("dlq console: sign-in refused: too many wrong operator tokens: the client is made to wait before each try, longer after each wrong token",
				"client", who, "wrong_in_a_row", c.wrong, "wait", d)
		}
	}
	return d
}

// succeeded starts who afresh, and returns the wrong tokens it sent
// before.
func (t *throttle) succeeded(who string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.clients[who]
	if c == nil {
		return 0
	}
	delete(t.clients, who)
	return c.wrong
}

// summarize logs the wrong tokens and the tries refused since the last
// summary, when it is summaryEvery old, before the try under way is
// counted. t.mu is held.
func (t *throttle) summarize(now time.Time) {
	if t.since.IsZero() {
		t.since = now
	}
	if now.Sub(t.since) < t.summaryEvery {
		return
	}
	if t.wrong > 0 || t.refused > 0 {
		waiting := 0
		for _, c := range t.clients {
			if now.Before(c.until) {
				waiting++
			}
		}
		t.log.Warn("dlq console: wrong operator tokens since the last summary", "since", t.since.UTC().Format(time.RFC3339),
			"wrong_tokens", t.wrong, "refused", t.refused, "clients", len(t.clients), "clients_waiting", waiting)
	}
	t.since, t.wrong, t.refused = now, 0, 0
}

// prune forgets the clients whose last wrong token is forget old and who
// wait no more; at most once a minute, so that a full table costs a scan
// a minute, not a scan a request. t.mu is held.
func (t *throttle) prune(now time.Time) {
	if now.Sub(t.pruned) < time.Minute {
		return
	}
	t.pruned = now
	for who, c := range t.clients {
		if t.forgotten(c, now) {
			delete(t.clients, who)
		}
	}
}

// size is the number of clients kept.
func (t *throttle) size() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.clients)
}
