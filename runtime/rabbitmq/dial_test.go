package rabbitmq

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
)

const secret = "s3cret-pa55"

func TestConfigNamesTheConnection(t *testing.T) {
	testkit.NoLeaks(t)
	d := newDialer("amqp://guest:"+secret+"@127.0.0.1:5672/", nil, "billing", false)
	cfg, err := d.config(d.addrs[0], roleConsume)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Properties["connection_name"]; got != "billing (consume)" {
		t.Errorf("connection_name = %v, want %q", got, "billing (consume)")
	}
	if cfg.TLSClientConfig != nil {
		t.Errorf("amqp:// without a TLS option got a TLS config")
	}
	if strings.Contains(d.redacted, secret) || strings.Contains(d.addrs[0].redacted, secret) {
		t.Errorf("redacted URL %q shows the password", d.redacted)
	}
}

func TestConfigClonesTLSAndSetsServerName(t *testing.T) {
	testkit.NoLeaks(t)
	mine := &tls.Config{MinVersion: tls.VersionTLS12}
	d := newDialer("amqps://guest:"+secret+"@broker.example:5671/", mine, "billing", false)
	cfg, err := d.config(d.addrs[0], rolePublish)
	uri := d.addrs[0].uri
	if err != nil {
		t.Fatal(err)
	}
	if uri.Scheme != "amqps" || uri.Port != 5671 {
		t.Errorf("uri = %s:%d, want amqps on 5671", uri.Scheme, uri.Port)
	}
	if cfg.TLSClientConfig == mine {
		t.Fatal("the caller's TLS config is used as is; amqp091 writes into it, so it must be cloned")
	}
	if cfg.TLSClientConfig.ServerName != "broker.example" || cfg.TLSClientConfig.MinVersion != tls.VersionTLS12 {
		t.Errorf("TLS config = ServerName %q MinVersion %x, want broker.example and TLS 1.2", cfg.TLSClientConfig.ServerName, cfg.TLSClientConfig.MinVersion)
	}
	if mine.ServerName != "" {
		t.Errorf("the caller's TLS config was changed: ServerName %q", mine.ServerName)
	}

	named := &tls.Config{ServerName: "rabbit.internal"}
	nd := newDialer("amqps://broker.example/", named, "x", false)
	cfg, err = nd.config(nd.addrs[0], rolePublish)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.TLSClientConfig.ServerName != "rabbit.internal" {
		t.Errorf("ServerName = %q, want the configured rabbit.internal kept", cfg.TLSClientConfig.ServerName)
	}
}

func TestConfigRefusesTLSWithPlainURL(t *testing.T) {
	testkit.NoLeaks(t)
	d := newDialer("amqp://guest:"+secret+"@127.0.0.1:5672/", &tls.Config{}, "x", false)
	_, err := d.config(d.addrs[0], roleConsume)
	if err == nil || !strings.Contains(err.Error(), "amqps://") {
		t.Fatalf("TLS config with amqp:// URL: err = %v, want one that asks for amqps://", err)
	}
	if strings.Contains(err.Error(), secret) {
		t.Errorf("error shows the password: %v", err)
	}
}

func TestInvalidURLErrorHidesPassword(t *testing.T) {
	testkit.NoLeaks(t)
	for _, u := range []string{
		"amqp://guest:" + secret + "@127.0.0.1:notaport/",
		"http://guest:" + secret + "@127.0.0.1/",
		"amqp://guest:" + secret + "@127.0.0.1:5672/%zz",
	} {
		_, err := newDialer(u, nil, "x", false).dial(context.Background(), roleConsume)
		if err == nil {
			t.Errorf("dial %q succeeded", u)
			continue
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("error for a bad URL shows the password: %v", err)
		}
		if !strings.HasPrefix(err.Error(), "rabbitmq: ") {
			t.Errorf("error %q lacks the package prefix", err)
		}
	}
}

// tlsServer accepts one TLS connection with a certificate for localhost
// and reports the server name the client asked for and the first bytes it
// sent after the handshake.
type tlsServer struct {
	addr   string
	pool   *x509.CertPool
	result chan tlsSeen
}

type tlsSeen struct {
	serverName string
	first      []byte
	err        error
}

func newTLSServer(t *testing.T) *tlsServer {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "localhost"},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}},
	})
	if err != nil {
		t.Fatal(err)
	}
	s := &tlsServer{addr: ln.Addr().String(), pool: pool, result: make(chan tlsSeen, 1)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		conn, err := ln.Accept()
		if err != nil {
			s.result <- tlsSeen{err: err}
			return
		}
		defer conn.Close()
		tc := conn.(*tls.Conn)
		_ = tc.SetDeadline(time.Now().Add(10 * time.Second))
		if err := tc.Handshake(); err != nil {
			s.result <- tlsSeen{err: err}
			return
		}
		first := make([]byte, 8)
		_, err = io.ReadFull(tc, first)
		s.result <- tlsSeen{serverName: tc.ConnectionState().ServerName, first: first, err: err}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
	})
	return s
}

func TestDialSpeaksAMQPOverTLS(t *testing.T) {
	testkit.NoLeaks(t)
	srv := newTLSServer(t)
	_, port, _ := net.SplitHostPort(srv.addr)
	url := "amqps://guest:" + secret + "@localhost:" + port + "/"
	d := newDialer(url, &tls.Config{RootCAs: srv.pool, MinVersion: tls.VersionTLS12}, "tls-test", false)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	_, err := d.dial(ctx, roleConsume)
	if err == nil {
		t.Fatal("dial succeeded against a server that closes after the protocol header")
	}
	if strings.Contains(err.Error(), secret) {
		t.Errorf("dial error shows the password: %v", err)
	}
	seen := <-srv.result
	if seen.err != nil {
		t.Fatalf("TLS server: %v (client error: %v)", seen.err, err)
	}
	if seen.serverName != "localhost" {
		t.Errorf("server saw SNI %q, want localhost (from the URL host)", seen.serverName)
	}
	if string(seen.first) != "AMQP\x00\x00\x09\x01" {
		t.Errorf("first bytes inside TLS = %q, want the AMQP 0-9-1 protocol header", seen.first)
	}
}

func TestDialVerifiesTheServerCertificate(t *testing.T) {
	testkit.NoLeaks(t)
	srv := newTLSServer(t)
	_, port, _ := net.SplitHostPort(srv.addr)
	d := newDialer("amqps://guest:"+secret+"@localhost:"+port+"/", &tls.Config{MinVersion: tls.VersionTLS12}, "tls-test", false)
	_, err := d.dial(context.Background(), roleConsume)
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("dial to a server with an unknown CA: err = %v, want a certificate error", err)
	}
	if seen := <-srv.result; seen.err == nil {
		t.Errorf("the server completed a handshake the client should have refused")
	}
}
