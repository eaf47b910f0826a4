package rabbitmq

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/runtime"
)

// handshakeTimeout bounds the TCP connect plus the TLS and AMQP handshakes
// of one connection attempt.
const handshakeTimeout = 30 * time.Second

// Connection roles, appended to the connection name.
const (
	roleConsume = "consume"
	rolePublish = "publish"
)

// dialer opens connections to one broker. url holds the credentials and is
// never logged nor put in an error: redacted is.
type dialer struct {
	url      string
	redacted string
	uri      amqp.URI // url parsed, when uriErr is nil
	uriErr   error    // why url does not parse, without the password
	tls      *tls.Config
	name     string
}

// newDialer parses rawURL once; a URL that does not parse is reported by
// every dial.
func newDialer(rawURL string, tlsConfig *tls.Config, name string) dialer {
	d := dialer{url: rawURL, redacted: runtime.RedactURL(rawURL), tls: tlsConfig, name: name}
	uri, err := amqp.ParseURI(rawURL)
	if err != nil {
		// A url.Error repeats the URL, password included: keep only its cause.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		d.uriErr = fmt.Errorf("rabbitmq: broker URL %s is not valid: %v", d.redacted, err)
	}
	d.uri = uri
	return d
}

// config returns the amqp091 configuration of a connection in role: its
// name, and its TLS settings for an amqps:// URL.
func (d dialer) config(role string) (amqp.Config, amqp.URI, error) {
	uri := d.uri
	if d.uriErr != nil {
		return amqp.Config{}, uri, d.uriErr
	}
	props := amqp.NewConnectionProperties()
	props.SetClientConnectionName(d.name + " (" + role + ")")
	cfg := amqp.Config{Properties: props}
	if d.tls != nil {
		if uri.Scheme != "amqps" {
			return amqp.Config{}, uri, fmt.Errorf("rabbitmq: a TLS configuration is set but the broker URL %s is not amqps://: use an amqps:// URL", d.redacted)
		}
		// amqp091 writes ServerName into the config it is given: clone it,
		// so the caller's configuration stays as it was.
		cfg.TLSClientConfig = d.tls.Clone()
		if cfg.TLSClientConfig.ServerName == "" {
			cfg.TLSClientConfig.ServerName = uri.Host
		}
	}
	return cfg, uri, nil
}

// dial opens a connection in role. ctx bounds the TCP connect and the
// handshakes, as does handshakeTimeout.
func (d dialer) dial(ctx context.Context, role string) (*amqp.Connection, error) {
	cfg, _, err := d.config(role)
	if err != nil {
		return nil, err
	}
	cfg.Dial = func(network, addr string) (net.Conn, error) {
		deadline := time.Now().Add(handshakeTimeout)
		if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
			deadline = dl
		}
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
		return conn, nil
	}
	conn, err := amqp.DialConfig(d.url, cfg)
	if err != nil {
		return nil, fmt.Errorf("rabbitmq: connect to %s (%s): %w", d.redacted, role, err)
	}
	return conn, nil
}
