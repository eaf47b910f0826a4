package console_test

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime/deadletter"
	"github.com/streamgen/streamgen/runtime/deadletter/console"
)

// clock is a time the test moves.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// gate is a console whose sign-ins the test sends from any address, on
// its clock.
type gate struct {
	t     *testing.T
	c     *console.Console
	clock *clock
	logs  *testkit.SyncBuffer
}

func newGate(t *testing.T) *gate {
	logs := &testkit.SyncBuffer{}
	c, err := console.New([]deadletter.Store{orders()}, console.Options{Token: token, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	g := &gate{t: t, c: c, clock: &clock{t: t0}, logs: logs}
	console.SetClock(c, g.clock.now)
	return g
}

// signIn sends a sign-in with tok from remote (an ip:port) and returns
// the status and the Retry-After header.
func (g *gate) signIn(remote, tok string) (int, string) {
	g.t.Helper()
	r := httptest.NewRequest("POST", "/login", strings.NewReader(url.Values{"token": {tok}, "next": {"/"}}.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Host = "localhost"
	r.RemoteAddr = remote
	w := httptest.NewRecorder()
	g.c.ServeHTTP(w, r)
	return w.Code, w.Header().Get("Retry-After")
}

// lines counts the log's lines that hold s.
func (g *gate) lines(s string) int {
	n := 0
	for l := range strings.Lines(g.logs.String()) {
		if strings.Contains(l, s) {
			n++
		}
	}
	return n
}

// A client that sends wrong tokens is made to wait after a few: 429 with
// Retry-After, the wait doubling with each wrong token up to a cap, and
// no token is checked meanwhile (not even the right one). Other clients
// sign in as before, and a sign-in starts the client afresh.
func TestWrongTokensMakeTheClientWait(t *testing.T) {
	g := newGate(t)
	const a, b = "198.51.100.7:40000", "203.0.113.9:40000"
	for i := range 5 {
		if status, _ := g.signIn(a, "wrong-token-"+strconv.Itoa(i)); status != http.StatusForbidden {
			t.Fatalf("wrong token %d: %d", i+1, status)
		}
	}
	// Now it waits: 1 s, and the right token is not even checked.
	status, after := g.signIn("198.51.100.7:40001", token)
	if status != http.StatusTooManyRequests || after != "1" {
		t.Fatalf("after 5 wrong tokens, the right one: %d, Retry-After %q", status, after)
	}
	// Another client is not held up.
	if status, _ := g.signIn(b, "wrong"); status != http.StatusForbidden {
		t.Fatalf("another client's wrong token: %d", status)
	}
	if status, _ := g.signIn(b, token); status != http.StatusSeeOther {
		t.Fatalf("another client's token: %d", status)
	}
	// Each wrong token once the wait is over doubles it, up to a cap.
	wait := time.Second
	var waits []string
	for range 14 {
		g.clock.add(wait - time.Millisecond)
		if status, _ := g.signIn(a, "wrong"); status != http.StatusTooManyRequests {
			t.Fatalf("a try %v before the wait of %v is over: %d", time.Millisecond, wait, status)
		}
		g.clock.add(time.Millisecond)
		if status, _ := g.signIn(a, "wrong"); status != http.StatusForbidden {
			t.Fatalf("a try once the wait of %v is over: %d", wait, status)
		}
		status, after := g.signIn(a, "wrong")
		secs, err := strconv.Atoi(after)
		if status != http.StatusTooManyRequests || err != nil {
			t.Fatalf("right after a wrong token: %d, Retry-After %q", status, after)
		}
		waits = append(waits, after)
		wait = time.Duration(secs) * time.Second
	}
	if got := strings.Join(waits, " "); got != "2 4 8 16 32 64 128 256 300 300 300 300 300 300" {
		t.Fatalf("the waits went %s", got)
	}
	// Once the wait is over, the right token signs in, and the client
	// starts afresh: its next wrong token is not held up.
	g.clock.add(wait)
	if status, _ := g.signIn(a, token); status != http.StatusSeeOther {
		t.Fatalf("the right token after the wait: %d", status)
	}
	for i := range 5 {
		if status, _ := g.signIn(a, "wrong"); status != http.StatusForbidden {
			t.Fatalf("after signing in, wrong token %d: %d", i+1, status)
		}
	}
	if status, _ := g.signIn(a, "wrong"); status != http.StatusTooManyRequests {
		t.Fatalf("after signing in, a 6th wrong token: %d", status)
	}
	if g.lines("signed in") != 2 || g.lines("after_wrong_tokens=19") != 1 {
		t.Fatalf("the sign-in after 19 wrong tokens does not say how many:\n%s", g.logs)
	}
}

// A flood of wrong tokens (3,000 in 0.75 s) is logged in a few lines: one
// when a client sends its first, one when it is made to wait, and a
// summary with the counts at most once a minute.
func TestAFloodOfWrongTokensIsLoggedInAFewLines(t *testing.T) {
	g := newGate(t)
	const remote = "198.51.100.7:40000"
	counts := map[int]int{}
	for i := range 3000 {
		status, _ := g.signIn(remote, fmt.Sprintf("guess-%d", i))
		counts[status]++
		g.clock.add(250 * time.Microsecond)
	}
	if counts[http.StatusForbidden] != 5 || counts[http.StatusTooManyRequests] != 2995 {
		t.Fatalf("answers: %v", counts)
	}
	if n := strings.Count(g.logs.String(), "\n"); n > 3 {
		t.Fatalf("%d lines logged for 3,000 wrong tokens:\n%s", n, g.logs)
	}
	if g.lines("sign-in refused: wrong operator token") != 1 || g.lines("level=WARN") == 0 || g.lines("made to wait") != 1 {
		t.Fatalf("the log:\n%s", g.logs)
	}
	// A minute on, the next try logs the counts since.
	g.clock.add(time.Minute)
	g.signIn(remote, "guess")
	if g.lines("wrong_tokens=5") != 1 || g.lines("refused=2995") != 1 {
		t.Fatalf("no summary with the counts:\n%s", g.logs)
	}
	if n := strings.Count(g.logs.String(), "\n"); n > 4 {
		t.Fatalf("%d lines logged:\n%s", n, g.logs)
	}
}

// Whatever the number of addresses wrong tokens come from, the clients
// kept are bounded: past the bound they are made to wait together, and
// each client is forgotten an hour after its last wrong token.
func TestTheClientsKeptAreBounded(t *testing.T) {
	g := newGate(t)
	console.SetThrottleClients(g.c, 100)
	for i := range 5000 {
		remote := fmt.Sprintf("10.%d.%d.%d:5000", i>>16&255, i>>8&255, i&255)
		g.signIn(remote, "wrong")
		g.clock.add(time.Millisecond)
	}
	if n := console.ThrottleClients(g.c); n > 101 {
		t.Fatalf("%d clients kept", n)
	}
	if n := strings.Count(g.logs.String(), "\n"); n > 110 {
		t.Fatalf("%d lines logged for 5,000 clients", n)
	}
	// Those past the bound share a wait: a new address waits too.
	if status, _ := g.signIn("10.200.0.1:5000", token); status != http.StatusTooManyRequests {
		t.Fatalf("a new address while the clients past the bound wait: %d", status)
	}
	// An hour on, the clients are forgotten, and a new one is kept.
	g.clock.add(time.Hour + 10*time.Minute)
	if status, _ := g.signIn("10.200.0.1:5000", "wrong"); status != http.StatusForbidden {
		t.Fatalf("an hour on: %d", status)
	}
	if n := console.ThrottleClients(g.c); n != 1 {
		t.Fatalf("an hour on, %d clients kept", n)
	}
	if status, _ := g.signIn("10.200.0.2:5000", token); status != http.StatusSeeOther {
		t.Fatalf("an hour on, the token: %d", status)
	}
}

// The addresses of one IPv6 network (/64), which one host has at will,
// are one client.
func TestAnIPv6NetworkIsOneClient(t *testing.T) {
	g := newGate(t)
	for i := range 5 {
		if status, _ := g.signIn(fmt.Sprintf("[2001:db8:1:2::%x]:4000", i+1), "wrong"); status != http.StatusForbidden {
			t.Fatalf("wrong token %d: %d", i+1, status)
		}
	}
	if status, _ := g.signIn("[2001:db8:1:2:ffff::9]:4000", token); status != http.StatusTooManyRequests {
		t.Fatalf("another address of the network: %d", status)
	}
	if status, _ := g.signIn("[2001:db8:1:3::1]:4000", token); status != http.StatusSeeOther {
		t.Fatalf("an address of another network: %d", status)
	}
}
