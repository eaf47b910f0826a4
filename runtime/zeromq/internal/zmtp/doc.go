// Package zmtp is the ZeroMQ transport of package zeromq: ZMTP 3.0 over TCP
// or IPC with the NULL mechanism, spoken to libzmq peers and to zmq4's.
//
// It knows frames, not messages: a message is a list of frames, and what
// they mean (the subscription name, the headers, the body) is package
// zeromq's business. What it does:
//
//   - Conn: one connection after the handshake. zmq4 performs the handshake
//     (through a guard that bounds the frames a peer may announce, and that
//     hangs up at once on a peer that does not open with a ZMTP greeting);
//     frames are read and written here, so that a message size limit holds
//     before memory is allocated, and memory grows only as bytes arrive.
//   - Server: a bound endpoint that accepts peers, up to a connection limit,
//     handshakes with each and serves it; failed handshakes (scanners,
//     probes, peers of the wrong socket type) are warned about at most once
//     a minute and otherwise logged at debug level with a count.
//   - Puller: the PULL side of a queue, bound (a Server) or dialling a
//     ventilator; it hands each message read to a callback.
//   - Budget: a bound on the bytes of the messages a Puller's connections
//     have read and not yet released, all together; a connection takes a
//     message's bytes before it reads them and waits, reading no more,
//     while they do not fit.
//   - Pusher: a PUSH that dials a bound PULL over one connection,
//     redialling with backoff, and writes each message before Send returns.
//   - Ventilator: a bound PUSH that hands each message to exactly one
//     connected worker, round-robin among the workers whose queue has room,
//     as libzmq's PUSH does; Close flushes what it accepted while its
//     context lasts and reports what it could not write.
//
// Errors carry no package prefix: package zeromq adds its own when it
// returns them.
package zmtp
