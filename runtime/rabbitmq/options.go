package rabbitmq

import (
	"crypto/tls"
	"log/slog"
	"time"

	"github.com/streamgen/streamgen/runtime"
)

// Defaults of a Broker made without options.
const (
	// DefaultPrefetch is the basic.qos prefetch count of a subscription that
	// sets no prefetch. It is raised to the subscription's concurrency when
	// that is larger, so no handler slot waits for a delivery.
	DefaultPrefetch = 20
	// DefaultConfirmTimeout bounds the wait for the broker's publisher
	// confirm of a retry copy, a dead letter or a published message.
	DefaultConfirmTimeout = 10 * time.Second
	// DefaultPublishWindow is how many messages sent with PublishAsync may
	// await their confirm at once.
	DefaultPublishWindow = 256
	// DefaultReconnectMin and DefaultReconnectMax bound the delay between
	// two attempts to reconnect after the broker connection is lost.
	DefaultReconnectMin = 100 * time.Millisecond
	DefaultReconnectMax = 30 * time.Second
	// DefaultReconnectJitter is the fraction of each reconnect delay that is
	// randomised, so many workers do not reconnect in step.
	DefaultReconnectJitter = 0.2
	// DefaultHandshakeTimeout bounds one connection attempt to one address:
	// the TCP connect and the TLS and AMQP handshakes. An address that
	// accepts connections and does not answer (a frozen node, a proxy
	// with nothing behind it) costs this long before the next address is
	// tried.
	DefaultHandshakeTimeout = 5 * time.Second
	// DefaultConnectionName names the broker's connections when neither
	// WithConnectionName nor an App name says otherwise.
	DefaultConnectionName = "streamgen"
)

// Option configures a Broker.
type Option func(*options)

type options struct {
	connectionName string
	tls            *tls.Config
	backoff        backoff
	confirmTimeout time.Duration
	publishWindow  int
	prefetch       int
	logger         *slog.Logger
	codec          runtime.Codec
	inOrder        bool
	handshake      time.Duration
	waitForBroker  time.Duration // 0: Start fails when no address answers
	ackIdle        time.Duration // see acker; tests lengthen it
	stallAfter     time.Duration // see waitWatch; tests shorten it
}

func defaultOptions() options {
	return options{
		backoff:        backoff{min: DefaultReconnectMin, max: DefaultReconnectMax, jitter: DefaultReconnectJitter},
		confirmTimeout: DefaultConfirmTimeout,
		publishWindow:  DefaultPublishWindow,
		prefetch:       DefaultPrefetch,
		handshake:      DefaultHandshakeTimeout,
		ackIdle:        ackIdle,
		stallAfter:     defaultStallAfter,
	}
}

// WithConnectionName names the broker's connections, as RabbitMQ shows them
// (management UI, rabbitmqctl list_connections client_properties): the
// consuming connection is "<name> (consume)", the publishing one
// "<name> (publish)". The default is the App's name, or "streamgen" for a
// Broker used only to publish.
func WithConnectionName(name string) Option {
	return func(o *options) { o.connectionName = name }
}

// WithTLSConfig sets the TLS configuration of amqps:// connections (client
// certificates, root CAs, minimum version). The Broker clones it before each
// connection and fills in ServerName from the URL host when it is empty.
// Without it, an amqps:// URL uses the system roots, and the URL's query
// parameters (cacertfile, certfile, keyfile, server_name_indication) as
// amqp091-go reads them. Giving a TLS configuration with an amqp:// URL is
// an error at connect time, so a plain-text connection is never mistaken
// for a secure one.
func WithTLSConfig(c *tls.Config) Option {
	return func(o *options) { o.tls = c }
}

// WithReconnectBackoff sets how long the Broker waits between attempts to
// reconnect: min after the first failure, doubling up to max; jitter (0 to
// 1) is the fraction of each delay that is randomised.
func WithReconnectBackoff(min, max time.Duration, jitter float64) Option {
	return func(o *options) { o.backoff = backoff{min: min, max: max, jitter: jitter}.normalized() }
}

// WithConfirmTimeout bounds the wait for a publisher confirm. A copy that
// is not confirmed in time counts as not sent: the original delivery is
// requeued, and Publish returns ErrNoConfirm.
func WithConfirmTimeout(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.confirmTimeout = d
		}
	}
}

// WithPublishWindow sets how many messages sent with PublishAsync (and
// runtime.PublishAsync) may await their confirm at once; PublishAsync
// waits while that many do. The default is DefaultPublishWindow.
func WithPublishWindow(n int) Option {
	return func(o *options) {
		if n > 0 {
			o.publishWindow = n
		}
	}
}

// WithDefaultPrefetch sets the prefetch of subscriptions that set none
// (see DefaultPrefetch).
func WithDefaultPrefetch(n int) Option {
	return func(o *options) {
		if n > 0 {
			o.prefetch = n
		}
	}
}

// WithLogger sets the logger. By default a Broker logs through the App's
// logger once started, and not at all before (a Broker used only to
// publish).
func WithLogger(l *slog.Logger) Option {
	return func(o *options) { o.logger = l }
}

// WithCodec sets the codec runtime.Publish encodes with when it publishes
// through this Broker. By default that is the App's codec once started, and
// JSON before.
func WithCodec(c runtime.Codec) Option {
	return func(o *options) { o.codec = c }
}

// WithAddressesInOrder makes the Broker try its addresses in the order
// given, the first one first (a primary and its standbys), instead of in
// the order it shuffles them into once. Reconnects still start at the
// address after the one that was lost, and wrap around.
func WithAddressesInOrder() Option {
	return func(o *options) { o.inOrder = true }
}

// WithHandshakeTimeout bounds each connection attempt to one address (the
// TCP connect and the TLS and AMQP handshakes; see
// DefaultHandshakeTimeout). When it passes, the next address is tried, and
// a warning names the one that did not answer.
func WithHandshakeTimeout(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.handshake = d
		}
	}
}

// WaitForBroker makes Start wait up to max for the broker when no address
// answers, instead of failing at once: orchestrators often start a
// service before its broker. Start tries again with the reconnect backoff
// (WithReconnectBackoff, each delay capped at 5 s), logs each failed try as
// a warning naming the addresses, and returns an error saying how long it
// waited once max has passed. The context given to Start ends the wait
// too. Waiting does not mend a refused login, an unknown virtual host, or
// a TLS configuration that does not fit the URL: Start fails on those at
// once.
func WaitForBroker(max time.Duration) Option {
	return func(o *options) {
		if max > 0 {
			o.waitForBroker = max
		}
	}
}
