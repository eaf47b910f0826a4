package console_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/streamgen/streamgen/runtime/deadletter"
	"github.com/streamgen/streamgen/runtime/deadletter/console"
)

// withHost does a request of s's client, with its cookies, with the Host
// header host.
func (s *site) withHost(method, path, host string, form url.Values) answer {
	s.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, s.base+path, body)
	if err != nil {
		s.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	// The jar would look the cookies up by Host: send the site's own.
	for _, ck := range s.client.Jar.Cookies(req.URL) {
		req.AddCookie(ck)
	}
	req.Host = host
	client := &http.Client{CheckRedirect: s.client.CheckRedirect}
	resp, err := client.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s (Host %s): %v", method, path, host, err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, string(b), resp.Header}
}

// port is the port s serves at.
func (s *site) port() string {
	_, port, err := net.SplitHostPort(s.srv.Listener.Addr().String())
	if err != nil {
		s.t.Fatal(err)
	}
	return port
}

// A console bound to loopback answers to its address and to the other
// names of loopback at its port, and refuses any other Host (a page of
// another site that reaches it by DNS rebinding) with 421 and a body
// that says how to allow a name: every page, the sign-in and the
// stylesheet alike.
func TestTheConsoleAnswersOnlyToItsOwnHost(t *testing.T) {
	st := orders()
	s := newSite(t, console.Options{}, st)
	s.signIn()
	port := s.port()
	for _, host := range []string{"127.0.0.1:" + port, "localhost:" + port, "LocalHost:" + port, "localhost.:" + port, "[::1]:" + port} {
		if a := s.withHost("GET", "/", host, nil); a.status != http.StatusOK || !strings.Contains(a.body, "card declined") {
			t.Errorf("Host %s: %d\n%s", host, a.status, a.body)
		}
	}
	paths := []string{"/", "/login", "/static/style.css", "/q/orders.parked/", "/q/orders.parked/g/" + groupOf(st, "m1"),
		"/q/orders.parked/l/" + keyOf(st, "m1"), "/q/orders.parked/export?all=1", "/nowhere"}
	for _, host := range []string{
		"evil.example:" + port, "evil.example", "localhost", "127.0.0.1", "localhost:1", "127.0.0.1:1",
		"localhost.evil.example:" + port, "127.0.0.1.evil.example:" + port, "evil.example:" + port + "@127.0.0.1",
		"192.0.2.1:" + port, "[::2]:" + port, "0x7f000001:" + port,
	} {
		for _, p := range paths {
			a := s.withHost("GET", p, host, nil)
			if a.status != http.StatusMisdirectedRequest {
				t.Errorf("GET %s with Host %s: %d, not 421", p, host, a.status)
				continue
			}
			for _, want := range []string{"-allow-host", "AllowedHosts", "127.0.0.1:" + port} {
				if !strings.Contains(a.body, want) {
					t.Errorf("GET %s with Host %s: the refusal does not say %q:\n%s", p, host, want, a.body)
				}
			}
			for _, leak := range []string{"card declined", "csrf", "orders.parked"} {
				if strings.Contains(a.body, leak) {
					t.Errorf("GET %s with Host %s: the refusal shows %q:\n%s", p, host, leak, a.body)
				}
			}
		}
		// Signing in and acting are refused too, and change nothing.
		if a := s.do(newClient(), "POST", "/login", url.Values{"token": {token}}); a.status != http.StatusSeeOther {
			t.Fatalf("sign in: %d", a.status)
		}
		other := &site{t: t, srv: s.srv, client: newClient(), base: s.base}
		if a := other.withHost("POST", "/login", host, url.Values{"token": {token}}); a.status != http.StatusMisdirectedRequest || len(a.header.Values("Set-Cookie")) != 0 {
			t.Errorf("sign in with Host %s: %d, cookies %q", host, a.status, a.header.Values("Set-Cookie"))
		}
		_, form := s.confirm("orders.parked", "action=purge&all=1")
		if a := s.withHost("POST", "/q/orders.parked/purge", host, form); a.status != http.StatusMisdirectedRequest {
			t.Errorf("purge with Host %s: %d", host, a.status)
		}
	}
	if got := st.state(); got != "4 letters, ops 0" {
		t.Fatalf("a refused request changed the store: %s", got)
	}
	// A request without a Host (HTTP/1.0) is refused too.
	conn, err := net.Dial("tcp", s.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	if _, err := io.WriteString(conn, "GET /login HTTP/1.0\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusMisdirectedRequest {
		t.Fatalf("a request without a Host: %d", resp.StatusCode)
	}
}

// Options.AllowedHosts adds names, with or without a port, one an entry
// or several separated by commas; "*" allows any.
func TestAllowedHostsAddNames(t *testing.T) {
	s := newSite(t, console.Options{AllowedHosts: []string{"dlq.example.com", "ops.example:8443, Tunnel.Example:" + "9000", " [2001:db8::1]:443 "}}, orders())
	port := s.port()
	for host, want := range map[string]int{
		"dlq.example.com":         http.StatusOK,
		"dlq.example.com:" + port: http.StatusOK,
		"DLQ.example.com.:1":      http.StatusOK,
		"ops.example:8443":        http.StatusOK,
		"tunnel.example:9000":     http.StatusOK,
		"[2001:db8::1]:443":       http.StatusOK,
		"127.0.0.1:" + port:       http.StatusOK,
		"ops.example":             http.StatusMisdirectedRequest,
		"ops.example:" + port:     http.StatusMisdirectedRequest,
		"tunnel.example":          http.StatusMisdirectedRequest,
		"[2001:db8::1]":           http.StatusMisdirectedRequest,
		"example.com:" + port:     http.StatusMisdirectedRequest,
		"x.dlq.example.com":       http.StatusMisdirectedRequest,
	} {
		if a := s.withHost("GET", "/login", host, nil); a.status != want {
			t.Errorf("Host %s: %d, not %d", host, a.status, want)
		}
	}
	any := newSite(t, console.Options{AllowedHosts: []string{"*"}}, orders())
	if a := any.withHost("GET", "/login", "anything.example", nil); a.status != http.StatusOK {
		t.Errorf("with *, Host anything.example: %d", a.status)
	}
	for _, bad := range []string{"https://dlq.example.com", "dlq.example.com/x", "a b", "dlq.example.com:port", "[::1"} {
		if _, err := console.New([]deadletter.Store{orders()}, console.Options{AllowedHosts: []string{bad}}); err == nil || !strings.Contains(err.Error(), "AllowedHosts") {
			t.Errorf("allowed host %q: %v", bad, err)
		}
	}
}

// Reached at an address that is not loopback, the console answers to
// that address alone: not to localhost, which a page may resolve at will.
func TestOffLoopbackTheConsoleAnswersToItsAddress(t *testing.T) {
	c, err := console.New([]deadletter.Store{orders()}, console.Options{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	serve := func(local net.Addr, host string) int {
		r := httptest.NewRequest("GET", "/login", nil)
		r.Host = host
		if local != nil {
			r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, local))
		}
		w := httptest.NewRecorder()
		c.ServeHTTP(w, r)
		return w.Code
	}
	lan := &net.TCPAddr{IP: net.ParseIP("192.0.2.10"), Port: 8089}
	for host, want := range map[string]int{
		"192.0.2.10:8089":  http.StatusOK,
		"192.0.2.10":       http.StatusMisdirectedRequest, // port 80
		"localhost:8089":   http.StatusMisdirectedRequest,
		"127.0.0.1:8089":   http.StatusMisdirectedRequest,
		"lan.example:8089": http.StatusMisdirectedRequest,
	} {
		if got := serve(lan, host); got != want {
			t.Errorf("at %v, Host %s: %d, not %d", lan, host, got, want)
		}
	}
	// At port 80, a Host without a port is at port 80.
	if got := serve(&net.TCPAddr{IP: net.IPv6loopback, Port: 80}, "localhost"); got != http.StatusOK {
		t.Errorf("at [::1]:80, Host localhost: %d", got)
	}
	// A request that did not come over a connection (a handler called
	// directly) is answered for loopback names only.
	for host, want := range map[string]int{"localhost": http.StatusOK, "127.0.0.1:8089": http.StatusOK, "example.com": http.StatusMisdirectedRequest} {
		if got := serve(nil, host); got != want {
			t.Errorf("without a connection, Host %s: %d, not %d", host, got, want)
		}
	}
}
