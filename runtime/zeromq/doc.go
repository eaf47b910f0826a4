// Package zeromq runs streamgen subscriptions on ZeroMQ PUSH/PULL sockets
// and publishes to them. A *Broker is a runtime.Broker and a
// runtime.Publisher. Endpoints come from the configuration in main, never
// from annotations:
//
//	zq := zeromq.New(
//		zeromq.Queue("jobs", zeromq.Bind("tcp://127.0.0.1:5555")),         // our PULL binds; senders PUSH to it
//		zeromq.Queue("work", zeromq.Dial("tcp://ventilator:5557")),         // our PULL dials a ventilator
//		zeromq.Queue("invoices.dead", zeromq.Bind("tcp://127.0.0.1:5561")),
//	)
//	app := runtime.NewApp("billing", runtime.WithLogger(slog.Default()))
//	billing.Mount(app, zq) // generated
//	err := app.Run(ctx)
//
// # Queues and sockets
//
// Every queue is a subscription name with one endpoint, tcp://host:port
// (tcp://*:port binds every interface; port 0 picks a free port, which
// Broker.Addr reports) or ipc:///path. The endpoint says which side binds:
//
//   - Bind(ep): the queue's reader binds a PULL socket at ep. A subscription
//     mounted on the queue binds it; Publish to the queue, here or in any
//     service that declares the queue the same way, dials ep with a PUSH
//     socket. A service that only sends declares the queue and publishes;
//     it needs no App (Shutdown closes its sockets).
//   - Dial(ep): the queue's readers dial a ventilator at ep. A subscription
//     mounted on it connects its PULL there and takes its share; it
//     redials when the connection is lost, and reports each reconnect to
//     the App's Observer (runtime.WithObserver) through runtime.Env.Report.
//   - Ventilator(ep): this service feeds the queue: it binds a PUSH at ep,
//     workers dial in (with Dial, or any libzmq PULL that connects), and
//     each message published to the queue goes to exactly one live worker:
//     the next one in turn whose queue has room, as libzmq's PUSH hands a
//     message to the next peer below its high-water mark. Each worker's
//     queue holds OutboxSize messages (DefaultOutboxSize, 1,000, libzmq's
//     default), so a burst is shared round-robin and a worker that falls
//     behind is skipped once its queue is full. With no worker connected, or
//     every queue full, Publish waits. (zmq4's own PUSH socket writes every
//     message to every peer, so the runtime accepts the workers itself and
//     speaks ZMTP to each.)
//
// Publish, like a ZeroMQ PUSH socket, waits while the queue cannot be
// reached, redialling with backoff on the runtime's clock, until the
// message is written to the queue's connection (Bind) or queued for a
// worker (Ventilator), or its context ends. What it accepted, Shutdown
// flushes while its context lasts (see below). runtime.Publish encodes with
// the Broker's codec: WithCodec's, else the App's once started, else JSON.
// Connections are ZMTP 3.0 with the NULL mechanism (no authentication, no
// encryption: keep the sockets on a trusted network); libzmq 4.x peers
// (pyzmq, czmq, cppzmq) interoperate.
//
// # Framing
//
// Every message has exactly three frames:
//
//	frame 0  the subscription name, UTF-8, not empty
//	frame 1  the headers: "name: value" lines joined by "\n" (empty when none)
//	frame 2  the body, as the codec wrote it (JSON by default)
//
// The header frame is UTF-8. Lines are separated by "\n"; a "\r" that ends
// a line is ignored, and so are empty lines, so a trailing "\n" is harmless.
// Each line is a name, a colon, and a value. The name is everything before
// the first colon, without surrounding spaces or tabs; it must be a token
// (ASCII letters, digits and !#$%&'*+-.^_`|~), and is case-insensitive: it is
// read, matched and written in lower case. The value is everything after the
// first colon, without surrounding spaces or tabs (so it may hold colons,
// but not line breaks: a "\r" anywhere but at the end of a line makes the
// frame malformed, and its own surrounding whitespace is not kept). A name
// may appear once: a header frame that repeats one is malformed. A message
// has at most MaxHeaders (256) headers and a header frame at most
// MaxHeaderBytes (64 KiB); one over either is malformed. This package writes
// "name: value" with one space, names in lower case, and no trailing line
// break, and refuses to write what it would refuse to read.
//
// The headers with a meaning:
//
//	type           the message type; it selects the handler. It may be left
//	               out when the subscription has a single handler.
//	content-type   the codec's content type, e.g. application/json
//	message-id     the message id
//	x-retry-count  retries so far, decimal text; absent means 0. The name
//	               is runtime.RetryCountHeader; WithRetryCountHeader
//	               changes it (to "x-ruststream-retry-count", a queue can be
//	               shared with services of the Rust framework that uses it).
//
// Other headers are the application's; a handler sees them all in
// runtime.Metadata.Headers (keys in lower case, the retry count included,
// type, content-type and message-id excluded), and the message as it
// arrived in Metadata.Raw, an *Envelope. A Go publisher writes type,
// content-type and message-id first, then the application headers sorted by
// name. For example, a job retried once:
//
//	frame 0  jobs
//	frame 1  type: Job\ncontent-type: application/json\nmessage-id: 3f2a…\nx-retry-count: 1
//	frame 2  {"id":7}
//
// From Python:
//
//	push = zmq.Context().socket(zmq.PUSH)
//	push.connect("tcp://127.0.0.1:5555")
//	push.send_multipart([b"jobs", b"type: Job\nmessage-id: 1", b'{"id": 7}'])
//
// Envelope, ParseEnvelope, ParseHeaders and FormatHeaders implement the
// framing for Go programs that speak to the sockets directly.
//
// A bound queue takes only messages framed with its own subscription name.
// A malformed message — not three frames, a header frame that does not
// parse or is over its limits, a retry count that is not a non-negative
// decimal, another subscription's name — is dropped with a warning
// ("message dropped") naming the subscription, the message id when it could
// be read, and the reason; the worker goes on with the next message. A message the handlers
// cannot take (a body over max_payload_bytes, an unknown or missing type, a
// body that does not decode) is poison: the runtime parks it on the
// dead-letter queue, or drops it when there is none.
//
// # Retries
//
// ZeroMQ delivers at most once and stores nothing: a retry is a copy the
// service sends. The delivery number is 1 + the retry count (a count above
// 2^30 reads as 2^30: the attempts are used up). When the
// runtime decides to retry, the copy — body and headers exactly as they
// arrived, the retry count one more — waits out the delay the handler asked
// for (runtime.RetryAfter) in memory, on the App's clock, and is then sent
// to the policy's out_retry queue: "self" is the subscription's own bound
// queue, another name is a queue declared on the broker (framed with that
// name, since a bound queue takes only its own). max_attempts caps the
// deliveries, the first included: with 5, the fifth delivery is not
// retried, and its copy carried the count 4. A copy still waiting for its
// delay when the service stops is lost; Shutdown logs each one and their
// number.
//
// A subscription declared with Dial cannot send back to its ventilator:
// out_retry=self is refused at startup. It names a queue it binds itself,
// out_retry=<queue>, and mounts the same handler there.
//
// # Dead letters
//
// A message the policy parks is published to the dead_letter queue, framed
// with that queue's name, with the headers it arrived with and the
// explanation headers of adapter.DeadLetterHeaders (x-streamgen-reason,
// -source, -attempts, -poison, -parked-at; line breaks in values become
// spaces). The copy starts a fresh retry count, so the dead-letter queue's
// own subscription applies its own max_attempts; the attempts made are in
// x-streamgen-attempts. Without max_attempts every failure goes straight
// there. A mount may have both retries and a dead-letter queue.
//
// Nothing keeps a dead letter unless a program binds the dead_letter
// queue's address: a Keeper (streamgen dlq keep) does, and writes each
// letter to a DeadLetterDir, a deadletter.Store whose Replay pushes the
// letters back to a queue's address.
//
// # Outboxes
//
// Every copy the service sends (retry copies once their delay has passed,
// dead letters) goes through the outbox of its destination queue: one
// goroutine per queue sends them in order, so a queue that does not answer
// (its reader is down) holds back none of the others, and no subscription,
// while its outbox has room. An outbox holds OutboxSize copies
// (DefaultOutboxSize, 1,000, when 0), counting the one being sent. When it
// is full, the worker with the next copy waits for room, so the subscription
// stops taking messages and TCP holds its senders back; a warning names the
// queue (once, until the outbox empties again). A copy to a queue this
// service reads itself (out_retry=self) waits for room in memory instead:
// the worker that would wait is the one that has to read it. A copy is
// settled (counted as retried or parked) once it is written.
//
// # Acknowledgements
//
// There are none. An acknowledgement does nothing, which is logged once
// per subscription at info level; a rejected message is dropped, which is
// warned about once per subscription; neither is logged per message.
//
// # Concurrency, limits, shutdown
//
// Subscription.Workers() handler calls run at once; Prefetch
// (DefaultPrefetch when 0) received messages may wait for a free worker,
// and one more per connection while it waits for room. Beyond that the
// runtime stops reading and TCP holds the senders back.
//
// A received message larger than MaxMessageBytes (by default the
// subscription's max_payload_bytes plus 1 MiB, or DefaultMaxMessageBytes)
// is not read into memory: its connection is closed and the message dropped
// with a warning, as libzmq does with ZMQ_MAXMSGSIZE. So is a message whose
// subscription name and header frames hold more than 128 KiB together. The
// frames a peer sends in the ZMTP handshake are bounded too.
//
// The messages a subscription has read and not yet handled — being read,
// waiting for a worker, being handled — hold at most MaxInFlightBytes
// across all its connections (DefaultMaxInFlightBytes, 256 MiB, or one
// largest message when max_payload_bytes allows more than that). A
// connection takes a message's bytes from the bound as their size is
// announced, before it reads them, and a worker gives them back once the
// message is handled. While they do not fit the connection reads no more,
// so TCP holds its sender back; nothing it sent is dropped, and the
// connections waiting for room are served in turn. Start refuses a bound
// smaller than the largest message the queue takes. Retry copies waiting
// for their delay and copies in an outbox are not counted (an outbox holds
// at most OutboxSize copies).
//
// A queue this service binds (a subscription's Bind queue, a Ventilator)
// takes at most MaxConnections connections at once (DefaultMaxConnections,
// 1,024, when 0); a peer over it is hung up on. A frame's buffer grows as its
// bytes arrive, so a peer that announces a large message and sends little of
// it costs little memory. A connection that does not open with a ZMTP
// greeting (a port scanner, an HTTP probe) is hung up on at its first byte.
// A failed handshake and a refused connection are warned about at most once
// a minute per socket, with the count so far; the others are logged at
// debug level.
//
// Shutdown does everything while its context lasts. It stops receiving
// (listeners and connections close), lets the workers finish the messages
// already received, reports the copies still waiting for their delay, sends
// what is in the outboxes, and writes what Publish queued for a ventilator's
// workers, handing the queue of a worker that leaves to the others. It
// returns promptly when nothing is in flight. When its context ends first,
// it ends the handlers' context, gives up on what is left and reports it:
// each copy still in an outbox to the runtime, which logs it with its
// message id and verdict; a warning per queue with the number lost (copies,
// or messages Publish had accepted for a ventilator); and an error saying
// so. Then it closes the sockets. Messages still in the network when a
// worker stops — in its kernel buffers, or written by a ventilator and not
// yet read — are lost, as with any ZeroMQ socket.
package zeromq
