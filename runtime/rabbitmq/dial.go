package rabbitmq

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// closeTimeout bounds the graceful close of a lost consuming connection.
const closeTimeout = 30 * time.Second

// skipFailedFor is how long an address that failed stays behind the
// others in the order the connections try them: a dead address found by
// one connection is tried last by the other, and by reconnects, for that
// long.
const skipFailedFor = time.Minute

// Connection roles, appended to the connection name.
const (
	roleConsume = "consume"
	rolePublish = "publish"
)

// address is one broker address. url holds the credentials and is never
// logged nor put in an error: redacted is.
type address struct {
	url      string
	redacted string
	uri      amqp.URI
}

// dialer opens connections to the broker's addresses, each role (consume,
// publish) on its own: a role's first connection goes to the first address
// that answers, and every later one (a reconnect) starts at the address
// after the one that role last connected to.
type dialer struct {
	addrs    []address
	redacted string // every address, redacted, in the order tried
	err      error  // why the addresses are not usable, without passwords
	user     string // the addresses' user name
	tls      *tls.Config
	// handshake bounds the TCP connect plus the TLS and AMQP handshakes
	// of one attempt to one address (WithHandshakeTimeout).
	handshake time.Duration
	// log returns the logger the warnings about failed addresses go to.
	log func() *slog.Logger

	mu   sync.Mutex
	name string
	next map[string]int // per role, the index in addrs the next dial starts at
	// failed holds, per index in addrs, when an attempt to that address
	// last failed; an address that answers is taken out. Both roles share
	// it.
	failed map[int]time.Time
}

// newDialer parses list, one URL or a comma list of them, once; a list
// that does not parse is reported by every dial. Unless inOrder, the
// addresses are shuffled once, so that a fleet of workers spreads over a
// cluster's nodes.
func newDialer(list string, tlsConfig *tls.Config, name string, inOrder bool) *dialer {
	d := &dialer{
		tls: tlsConfig, name: name, next: map[string]int{}, failed: map[int]time.Time{},
		handshake: DefaultHandshakeTimeout,
		log:       func() *slog.Logger { return slog.New(slog.DiscardHandler) },
	}
	raw := splitAddresses(list)
	var errs []string
	for i, u := range raw {
		a := address{url: u, redacted: redactOne(u)}
		uri, err := parseAddress(u)
		switch {
		case err != nil:
			errs = append(errs, fmt.Sprintf("%s: %v", a.redacted, err))
		case i > 0 && uri.Username != d.user:
			errs = append(errs, fmt.Sprintf("%s has the user %q, but %s has %q: every address must use the same user", a.redacted, uri.Username, d.addrs[0].redacted, d.user))
		}
		if i == 0 {
			d.user = uri.Username
		}
		a.uri = uri
		d.addrs = append(d.addrs, a)
	}
	if !inOrder {
		rand.Shuffle(len(d.addrs), func(i, j int) { d.addrs[i], d.addrs[j] = d.addrs[j], d.addrs[i] })
	}
	names := make([]string, len(d.addrs))
	for i, a := range d.addrs {
		names[i] = a.redacted
	}
	d.redacted = strings.Join(names, ",")
	switch {
	case len(errs) == 1 && len(raw) == 1:
		d.err = fmt.Errorf("rabbitmq: broker URL %s is not valid: %s", d.addrs[0].redacted, strings.TrimPrefix(errs[0], d.addrs[0].redacted+": "))
	case len(errs) > 0:
		d.err = fmt.Errorf("rabbitmq: broker addresses are not valid: %s", strings.Join(errs, "; "))
	}
	return d
}

// parseAddress parses one broker URL. Its errors never hold the password.
func parseAddress(u string) (amqp.URI, error) {
	uri, err := amqp.ParseURI(u)
	if err != nil {
		// A url.Error repeats the URL, password included: keep only its cause.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		// amqp091 quotes the values it cannot read, and a value of a URL
		// run into another can hold that one's password.
		return uri, errors.New(safeText(err.Error(), u, "it does not parse as amqp://user:password@host:port/vhost"))
	}
	if strings.Contains(uri.Vhost, "://") || strings.Contains(uri.Vhost, "@") {
		return uri, errors.New("its virtual host looks like another address: separate addresses with commas, each starting with amqp:// or amqps://")
	}
	return uri, nil
}

// connectionName returns the name the connections are given.
func (d *dialer) connectionName() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.name
}

// setConnectionName names the connections opened from now on.
func (d *dialer) setConnectionName(name string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.name = name
}

// config returns the amqp091 configuration of a connection in role to a:
// its name, and its TLS settings for an amqps:// URL.
func (d *dialer) config(a address, role string) (amqp.Config, error) {
	props := amqp.NewConnectionProperties()
	props.SetClientConnectionName(d.connectionName() + " (" + role + ")")
	cfg := amqp.Config{Properties: props}
	if d.tls != nil {
		if a.uri.Scheme != "amqps" {
			return amqp.Config{}, configError{fmt.Errorf("rabbitmq: a TLS configuration is set but the broker URL %s is not amqps://: use an amqps:// URL", a.redacted)}
		}
		// amqp091 writes ServerName into the config it is given: clone it,
		// so the caller's configuration stays as it was.
		cfg.TLSClientConfig = d.tls.Clone()
		if cfg.TLSClientConfig.ServerName == "" {
			cfg.TLSClientConfig.ServerName = a.uri.Host
		}
	}
	return cfg, nil
}

// connection is an open AMQP connection and the socket under it, which
// abort closes when a graceful close would wait too long. amqp091 writes
// to the socket through a coalescingConn; abort closes the socket itself,
// and waits for nothing to be written.
type connection struct {
	*amqp.Connection
	raw  net.Conn
	addr string // the address, redacted
}

// abort closes the socket: whatever waits on the connection fails at once,
// and the broker requeues what the connection had not acknowledged.
func (c *connection) abort() { _ = c.raw.Close() }

// closeWithin closes c gracefully, or aborts it when ctx ends first (a
// blocked connection never answers connection.close), calling
// beforeAbort first. It reports whether the graceful close finished.
func (c *connection) closeWithin(ctx context.Context, beforeAbort func()) bool {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = c.Close()
	}()
	return waitOrAbort(ctx, done, func() {
		beforeAbort()
		c.abort()
	})
}

// waitOrAbort waits until done is closed; when ctx ends first it calls
// abort and then waits. It reports whether done came first.
func waitOrAbort(ctx context.Context, done <-chan struct{}, abort func()) bool {
	select {
	case <-done:
		return true
	default:
	}
	select {
	case <-done:
		return true
	case <-ctx.Done():
		abort()
		<-done
		return false
	}
}

// dialErrors is why no address answered: one error per address tried.
type dialErrors []error

func (es dialErrors) Error() string {
	msgs := make([]string, len(es))
	for i, e := range es {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "; ")
}

func (es dialErrors) Unwrap() []error { return es }

// dial opens a connection in role to the first address that answers,
// starting where the role's previous dial left off; an address that failed
// in the last skipFailedFor, for either role, is tried after the others.
// Each address that does not answer while another is left to try is
// logged as a warning. ctx bounds every attempt: once it ends, the attempt
// under way ends at once, whether it is in the TCP connect or in the TLS
// or AMQP handshake.
func (d *dialer) dial(ctx context.Context, role string) (*connection, error) {
	if d.err != nil {
		return nil, d.err
	}
	order := d.order(role, time.Now())
	var errs dialErrors
	for i, k := range order {
		a := d.addrs[k]
		conn, err := d.dialOne(ctx, a, role)
		if err == nil {
			d.mu.Lock()
			d.next[role] = (k + 1) % len(d.addrs)
			delete(d.failed, k)
			d.mu.Unlock()
			return conn, nil
		}
		if ctx.Err() == nil {
			d.mu.Lock()
			d.failed[k] = time.Now()
			d.mu.Unlock()
		}
		if len(d.addrs) == 1 {
			return nil, classify(fmt.Errorf("rabbitmq: connect to %s (%s): %w", a.redacted, role, err), err)
		}
		errs = append(errs, fmt.Errorf("%s: %w", a.redacted, err))
		if ctx.Err() != nil {
			break
		}
		if i < len(order)-1 {
			d.log().Warn("rabbitmq: a broker address did not answer; trying the next one",
				"connection", role, "url", a.redacted, "err", err)
		}
	}
	return nil, classify(fmt.Errorf("rabbitmq: connect (%s): no broker address answered: %w", role, errs), errs...)
}

// order returns the indexes in addrs in the order a dial in role tries
// them at now: from where the role left off, those that failed in the last
// skipFailedFor last, each part in that order.
func (d *dialer) order(role string, now time.Time) []int {
	d.mu.Lock()
	defer d.mu.Unlock()
	start := d.next[role]
	order := make([]int, 0, len(d.addrs))
	var behind []int
	for i := range d.addrs {
		k := (start + i) % len(d.addrs)
		if at, ok := d.failed[k]; ok && now.Sub(at) < skipFailedFor {
			behind = append(behind, k)
		} else {
			order = append(order, k)
		}
	}
	return append(order, behind...)
}

// unreachableError is a dial error where no address answered, or one that
// answered was not ready: waiting for the broker may help (WaitForBroker).
// Its Error is the dial error's.
type unreachableError struct{ error }

func (e unreachableError) Unwrap() error { return e.error }

// classify wraps err, the error of a dial whose attempts failed with
// causes, in an unreachableError, unless a cause is one that waiting does
// not mend: the broker refused the credentials or the virtual host, or the
// TLS configuration does not fit the URL.
func classify(err error, causes ...error) error {
	for _, c := range causes {
		var cfg configError
		if errors.Is(c, amqp.ErrCredentials) || errors.Is(c, amqp.ErrVhost) || errors.As(c, &cfg) {
			return err
		}
	}
	return unreachableError{err}
}

// configError is a connection setting that does not fit an address.
type configError struct{ error }

func (e configError) Unwrap() error { return e.error }

// handshakeError says, of err, the error of an attempt whose handshakes
// had until deadline, that the address did not complete them in time, when
// that is why it failed. amqp091 turns the socket's timeout into a
// connection exception that keeps only its text.
func handshakeError(err error, deadline time.Time, timeout time.Duration) error {
	if !deadline.IsZero() && !time.Now().Before(deadline) {
		return fmt.Errorf("no AMQP handshake within %s (WithHandshakeTimeout): %w", timeout, err)
	}
	return err
}

// dialOne opens a connection in role to a.
func (d *dialer) dialOne(ctx context.Context, a address, role string) (*connection, error) {
	cfg, err := d.config(a, role)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var (
		mu      sync.Mutex
		raw     net.Conn
		aborted bool
		// handshakeBy is the deadline of the handshakes, once the
		// connect began.
		handshakeBy time.Time
	)
	cfg.Dial = func(network, addr string) (net.Conn, error) {
		deadline := time.Now().Add(d.handshake)
		if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
			deadline = dl
		}
		mu.Lock()
		handshakeBy = deadline
		mu.Unlock()
		nd := net.Dialer{Deadline: deadline}
		conn, err := nd.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		// amqp091 clears the deadline once the AMQP handshake is done.
		if err := conn.SetDeadline(deadline); err != nil {
			conn.Close()
			return nil, err
		}
		mu.Lock()
		defer mu.Unlock()
		if aborted {
			conn.Close()
			return nil, ctx.Err()
		}
		raw = conn
		// What many goroutines write at once reaches the socket together.
		return newCoalescingConn(conn), nil
	}
	// The handshakes read and write the socket with no context of their
	// own: closing it when ctx ends is what ends them.
	stop := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		aborted = true
		if raw != nil {
			raw.Close()
		}
	})
	conn, err := amqp.DialConfig(a.url, cfg)
	if !stop() {
		if conn != nil {
			_ = conn.Close()
		}
		return nil, ctx.Err()
	}
	if err != nil {
		mu.Lock()
		defer mu.Unlock()
		return nil, handshakeError(err, handshakeBy, d.handshake)
	}
	return &connection{Connection: conn, raw: raw, addr: a.redacted}, nil
}
