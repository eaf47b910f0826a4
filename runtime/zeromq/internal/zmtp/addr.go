package zmtp

import "net"

// Endpoint is the ZeroMQ endpoint of a listener's address:
// tcp://host:port, or ipc:///path for a Unix socket.
func Endpoint(a net.Addr) string {
	if a.Network() == "unix" {
		return "ipc://" + a.String()
	}
	return "tcp://" + a.String()
}
