package console

import (
	"fmt"
	"net"
	"net/http"
	"strings"
)

// hosts is what the console answers to in a request's Host header (see
// Options.AllowedHosts). A page of another site that names the console's
// address by a name of its own (DNS rebinding: evil.example resolving to
// 127.0.0.1) makes the browser send that name: it is refused.
type hosts struct {
	any   bool
	names []hostName
}

// hostName is an allowed name, at any port when port is "".
type hostName struct{ host, port string }

// parseHosts reads Options.AllowedHosts.
func parseHosts(list []string) (hosts, error) {
	var h hosts
	for _, entry := range list {
		for e := range strings.SplitSeq(entry, ",") {
			e = strings.TrimSpace(e)
			switch {
			case e == "":
				continue
			case e == "*":
				h.any = true
				continue
			}
			host, port, err := net.SplitHostPort(e)
			if err != nil { // no port
				host, port = e, ""
				if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
					host = host[1 : len(host)-1]
				}
			}
			if !validHost(host) || port != "" && !validPort(port) {
				return h, fmt.Errorf("console: AllowedHosts (-allow-host): %q is not a host: give a name or an address, with or without its port, such as dlq.example.com or dlq.example.com:8089", e)
			}
			h.names = append(h.names, hostName{normalHost(host), port})
		}
	}
	return h, nil
}

func validHost(h string) bool {
	if h == "" {
		return false
	}
	if net.ParseIP(h) != nil {
		return true
	}
	for _, r := range h {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '-' || r == '.' || r == '_') {
			return false
		}
	}
	return true
}

func validPort(p string) bool {
	if p == "" || len(p) > 5 {
		return false
	}
	for _, r := range p {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// normalHost is a host name as compared: lower case, without the dot of
// a fully qualified name, an address in its canonical form.
func normalHost(h string) string {
	h = strings.TrimSuffix(strings.ToLower(h), ".")
	if ip := net.ParseIP(h); ip != nil {
		return ip.String()
	}
	return h
}

// requestHost splits r's Host into its name and port (80, or 443 over
// TLS, when it names none); ok is false when it has no name.
func requestHost(r *http.Request) (host, port string, ok bool) {
	host, port, err := net.SplitHostPort(r.Host)
	if err != nil {
		host, port = r.Host, "80"
		if r.TLS != nil {
			port = "443"
		}
		if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
			host = host[1 : len(host)-1]
		}
	}
	host = normalHost(host)
	return host, port, host != ""
}

// allowed reports whether the console answers to r's Host: a name of
// Options.AllowedHosts; the address r came in at; when that is loopback,
// localhost or another loopback address at its port; and, when r came
// over no connection (a handler called directly), a loopback name.
func (h hosts) allowed(r *http.Request) bool {
	if h.any {
		return true
	}
	host, port, ok := requestHost(r)
	if !ok {
		return false
	}
	for _, n := range h.names {
		if n.host == host && (n.port == "" || n.port == port) {
			return true
		}
	}
	ip := net.ParseIP(host)
	loopback := host == "localhost" || ip != nil && ip.IsLoopback()
	local, ok := r.Context().Value(http.LocalAddrContextKey).(*net.TCPAddr)
	if !ok {
		return loopback
	}
	if port != fmt.Sprint(local.Port) {
		return false
	}
	if ip != nil && ip.Equal(local.IP) {
		return true
	}
	// On loopback, the other names of loopback, and the unspecified
	// address, which reaches it, are this console too; a name that is no
	// address can be made to resolve anywhere, but localhost.
	return local.IP.IsLoopback() && (loopback || ip != nil && ip.IsUnspecified())
}

// ownHosts says what the console answers to, for the refusal.
func (h hosts) ownHosts(r *http.Request) string {
	var names []string
	if local, ok := r.Context().Value(http.LocalAddrContextKey).(*net.TCPAddr); ok {
		port := fmt.Sprint(local.Port)
		names = append(names, net.JoinHostPort(local.IP.String(), port))
		if local.IP.IsLoopback() {
			for _, n := range []string{"localhost", "127.0.0.1", "::1"} {
				if n := net.JoinHostPort(n, port); n != names[0] {
					names = append(names, n)
				}
			}
		}
	} else {
		names = append(names, "localhost", "127.0.0.1", "[::1]")
	}
	for _, n := range h.names {
		if n.port == "" {
			names = append(names, n.host)
		} else {
			names = append(names, net.JoinHostPort(n.host, n.port))
		}
	}
	return strings.Join(names, ", ")
}

// misdirected answers a request for a Host the console does not answer
// to: a plain text that says how to allow the name, and nothing of the
// console (the page asking may be another site's).
func (c *Console) misdirected(w http.ResponseWriter, r *http.Request) {
	c.log.Debug("dlq console: refused a request for another host", "host", r.Host, "remote", r.RemoteAddr)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusMisdirectedRequest)
	_, _ = fmt.Fprintf(w, "This dead-letter console does not answer to the host %q: it answers to %s.\n\n"+
		"A page of another site can reach a console on this machine by a name of its own (DNS rebinding), so other names are refused.\n"+
		"To open the console by this name, allow it: streamgen dlq serve -allow-host NAME[:PORT] (repeatable, or comma separated),\n"+
		"or console.Options.AllowedHosts where a service mounts the console.\n", r.Host, c.hosts.ownHosts(r))
}
