// Package rabbitmq runs streamgen subscriptions on RabbitMQ (AMQP 0-9-1,
// through github.com/rabbitmq/amqp091-go) and publishes to it.
//
// # Use
//
// Make a Broker with the broker's URL and mount the generated
// subscriptions on it; the App starts it, and stops it gracefully:
//
//	rb := rabbitmq.New("amqp://user:pass@rabbit:5672/",
//		rabbitmq.WithConnectionName("billing"))
//	app := runtime.NewApp("billing", runtime.WithLogger(slog.Default()))
//	orders.Mount(app, rb)  // generated
//	err := app.Run(ctx)
//
// A Broker is also a runtime.Publisher, and publishing needs no App: it
// connects on first use. Generated typed publishers call runtime.Publish,
// which sets the message type, content type and a message id; the Broker
// sends it persistent and mandatory, and returns once the broker confirmed
// it. The Broker also has PublishAsync (see runtime.Publisher): runtime.PublishAsync
// returns once the message is sent, with a runtime.Confirmation to wait
// on, so that one goroutine keeps many messages awaiting their confirm (up
// to WithPublishWindow, 256 by default), each with its own outcome. A
// Broker used only to publish is closed with Close.
//
// Options: WithConnectionName (how the broker lists the connections, with
// " (consume)" and " (publish)" appended), WithTLSConfig (for amqps://
// URLs), WithAddressesInOrder, WithReconnectBackoff, WithConfirmTimeout,
// WithPublishWindow, WithDefaultPrefetch, WithLogger and WithCodec. The password of every
// address is redacted from every log line and error (RedactURL).
//
// # Clusters
//
// New takes the nodes of a RabbitMQ cluster as a comma list of URLs. The
// Broker shuffles them once, so that a fleet of workers spreads over the
// nodes (WithAddressesInOrder keeps the order given), connects to the
// first that answers, and on each reconnect starts at the address after
// the one it was on. The consuming and the publishing connection fail over
// each on its own. With queue_type=quorum the subscription's queue, its
// wait queues, its suspect queue and its dead-letter queues are quorum
// queues, replicated over the cluster, so losing a node loses no message.
//
// # What Start declares
//
// The queues adapter.Topology gives for the subscriptions and the
// version of the broker reached, each with the arguments it gives: for each
// subscription its queue (durable; x-queue-type, x-delivery-limit and
// x-single-active-consumer as queue_type, delivery_limit and
// single_active_consumer say: adapter.QueueArguments), one wait queue per
// retry delay ("<queue>.retry", or "<queue>.retry.<delay>" for each step
// of a ladder such as retry_delay=1s,10s,1m: durable, x-message-ttl the
// delay, x-dead-letter-exchange "" and x-dead-letter-routing-key the
// queue: adapter.WaitQueueArguments), on a queue with ack=manual its
// suspect queue ("<queue>.suspect", durable; adapter.SuspectQueueArguments;
// see below), and each dead-letter queue (durable;
// adapter.DeadLetterQueueArguments, which on RabbitMQ 4.0 and later gives
// a quorum one x-delivery-limit -1); QueueNames lists them all. A queue that already
// exists with other arguments makes Start fail with a TopologyError naming
// the queue, the argument, both values and the fix. One exception: a
// subscription's own queue may carry arguments the subscription does not
// set (a dead-letter exchange, a length limit an operator added); it is
// used as it is.
//
// # How a delivery is settled
//
// The attempt number is 1 + max(the retry count header
// runtime.RetryCountHeader, the x-death count of expiries from this
// subscription's wait queues) + the retries the queue waited out itself
// (below: x-acquired-count less x-delivery-count), capped at the policy's
// max_attempts: a
// forged count makes a delivery the last attempt; a count that cannot be
// read is poison. The runtime's adapter.Consumer decides everything and
// builds every copy; the Broker sends the copies and settles deliveries as
// it is told:
//
//   - handled: ack.
//   - failed with attempts left: a copy, with the retry count raised, is
//     published to the wait queue; when its TTL passes the broker moves it
//     back to the queue. Then the original is acked. Where the queue waits
//     out retries itself (below), the delivery is handed back instead.
//   - exhausted, or poison (too large, no or unknown type, a body that
//     does not decode): a copy is published to the dead-letter queue with
//     headers that explain it (adapter.DeadLetterHeaders), then the
//     original is acked. Without a dead-letter queue an exhausted message
//     is acked and dropped with a warning; poison is nacked without
//     requeue, so a dead-letter exchange set on the queue receives it.
//
// Copies keep the body and the properties, are persistent, and leave the
// broker's bookkeeping behind: x-death, x-first-death-*, x-last-death-*,
// x-delivery-count and the original expiration. A copy is published with
// publisher confirms and the mandatory flag on a connection of its own; it
// counts as sent only when the broker acks it and did not return it. The
// handler's slot is free as soon as the copy is written: its original is
// settled when the confirm arrives (or does not, within the confirm
// timeout), and at most as many copies as the prefetch (or the
// concurrency, when larger) await their confirm at once. If
// the broker returns it (the queue is gone), the original is nacked
// without requeue. If the broker nacks it, does not confirm it within the
// confirm timeout, or the channel fails, the original is nacked with
// requeue after a short pause that grows while such failures go on (the
// reconnect backoff, at most five seconds), so a dead-letter queue that
// refuses messages does not turn into a busy loop. A delivery is never
// left unsettled on a live channel: that would hold a prefetch slot until
// the consumer stalls.
//
// # A message that crashes its worker
//
// A handler that kills the process (os.Exit, a crash in C code, an
// out-of-memory kill) never returns, so max_attempts cannot count it: the
// broker sees the worker's deliveries end unsettled and hands them back,
// and the next worker runs the message again. The adapter.Consumer
// counts such returns, and parks a message that came back as often as
// the subscription's crash limit (runtime.Subscription.CrashLimit:
// delivery_limit, else the largest max_attempts, at least 2) without
// running it again, with the reason "crashed the worker (or lost its
// connection, or could not send its copy) 3 times while being handled:
// parked without running it again". A crash counts against the message
// being handled alone, never against the others the worker held:
//
//   - A message of the subscription's queue that came back (redelivered
//     on a classic queue; counted by the broker, x-delivery-count, on a
//     quorum queue, so that a message RabbitMQ 4.3 hands back uncounted at
//     shutdown is none) is set aside without running: a copy with its
//     count of crashes (adapter.HeaderCrashes, 1) goes to the
//     subscription's suspect queue ("<queue>.suspect"), then the original
//     is acked. It waits for no handler: held back, it would be counted
//     with a crash.
//   - The Broker consumes the suspect queue on a channel of its own with
//     a prefetch of 1, and each suspect runs alone: once the handlers
//     running return, with the acks held back sent, and holding every
//     other handler of the subscription back until it is settled. Should
//     the worker die while it runs, it alone comes back, from the suspect
//     queue, and is set aside again with its count raised by one.
//
// A message that merely was held when the worker died counts one, and is
// then handled alone; only a message whose own runs end with the worker
// gone reaches the limit. Suspects are handled in the order they came
// back, apart from the other messages. A quorum queue's x-delivery-limit
// keeps its value (the crash limit): a message of the queue comes back
// once and is set aside, so the broker's count reaches the limit only
// for one held through that many crashes before it could be set aside. A
// quorum suspect queue is a quorum queue, declared on RabbitMQ 4 with no
// delivery limit (x-delivery-limit -1).
//
// What is left: a suspect waiting for the handlers running to return is
// counted should one of them crash the worker; a crash counts against
// what the worker holds of its other subscriptions too; a lost connection
// counts as a crash; and on a classic queue a message handed back at
// shutdown comes back redelivered, so it is set aside too, counted once
// (on RabbitMQ 3.x a quorum queue counts such a release as well).
//
// # Concurrency, prefetch, reconnects, shutdown
//
// Each subscription has Concurrency workers and a channel whose prefetch
// (basic.qos) is Prefetch, or the default (DefaultPrefetch, raised to the
// concurrency). Acks are coalesced per channel: one basic.ack with
// multiple=true settles every delivery up to the highest tag below which
// all handlers have finished, sent once a quarter of the prefetch waits,
// a millisecond after the last settlement, before any nack on the
// channel, and at shutdown. A delivery whose handler has not finished is
// never acknowledged; when a handler stuck for a few milliseconds holds
// back half the prefetch, the acks behind it are sent one by one, so it
// never stalls the channel. Otherwise the acks behind a delivery still
// running are sent one by one a millisecond after the last settlement,
// except on a batch subscription's channel, where they wait for it: a
// batch may end while a delivery before its last is in the next batch.
//
// Consuming and publishing use separate connections. On each, what many
// goroutines write at once (publishes, replies, requests) reaches the
// socket in one write: a write that comes alone goes out at once, and
// those that come while one is on the wire go out together after it,
// which saves a system call here and a read on the broker per message
// under load. When
// the consuming connection or a channel is lost, or the broker cancels a
// consumer, the Broker reconnects with backoff, declares the topology
// again and resumes; deliveries that were not acked are redelivered by
// the broker. Shutdown cancels the consumers, lets the handlers running
// finish and settle, hands deliveries that were received but not started
// back to the broker, and closes the connections. When its context ends
// first, the running handlers' context is cancelled and their deliveries
// are left to the broker, which requeues them when the connection closes.
// A connection that does not close before the context ends is dropped:
// RabbitMQ reads nothing from a connection it blocks during a memory or
// disk alarm, so closing one gracefully would wait until the alarm
// clears. Broker.Blocked tells whether the broker blocks a connection,
// and each connection.blocked and connection.unblocked is logged with the
// broker's reason. While the broker blocks the publishing connection, the
// confirm wait of a retry copy or a dead letter does not time out: the
// broker lands the copy once the alarm clears, so its original is held
// until then (a Shutdown gives it up at its deadline).
//
// Each connection attempt to one address is bounded by a handshake
// timeout (DefaultHandshakeTimeout, WithHandshakeTimeout); an address that
// does not answer is logged as a warning and tried last by both
// connections for a minute. Start fails when no address answers, unless
// WaitForBroker makes it wait, for a bound.
//
// Broker.Ready (which App.Health asks, see runtime.Broker) is
// false before Start, while Start waits for the broker (WaitForBroker),
// while the Broker reconnects after losing its consuming connection (the
// reason says why and what the last attempt met), and after Shutdown.
// Broker.Warnings (which App.Health asks too) names the copies an alarm
// holds, with the prefetch slots their originals take, and wait queues
// whose retry copies stop coming back. When the App has an Observer
// (runtime.WithObserver), the Broker reports each reconnect, and how long
// the broker took to confirm each publish (Publish, retry copies, dead
// letters), through runtime.Env.Report.
//
// # Operational caveats
//
// Wait queue arguments are frozen. RabbitMQ never changes the arguments of
// an existing queue, so changing retry_delay makes Start fail on the old
// wait queue: delete it once it is empty (rabbitmqctl delete_queue
// jobs.retry), or keep the delay. A ladder is a set of queues, one per
// step; each step's delay is fixed the same way. Each wait queue has one
// TTL for all its messages, which is what avoids RabbitMQ's head-of-line
// blocking of per-message TTLs.
//
// Duplicates are possible: delivery is at least once. If the ack of the
// original fails after its copy was confirmed (the connection dropped in
// between), the broker redelivers the original and the message runs again;
// a handler that was running when the connection dropped may run twice,
// and so may one whose ack was still waiting to be coalesced (a
// millisecond, or a quarter of the prefetch, at most).
// Handlers must be idempotent, and so must consumers of dead-letter
// queues.
//
// RabbitMQ 4.0 and later ignore an x-death header that a client
// republishes (their count would start at 1 again, and a counter built on
// x-death alone would retry forever), and on 3.x a republished x-death
// can trip the broker's dead-letter cycle detection and drop the copy
// silently. That is why copies carry their own retry count header and no
// x-death. Messages retried by tools that rely on x-death alone are still
// counted through it.
//
// ack=auto is at-most-once: the broker counts a message as delivered when
// it sends it, so a crash or a failing handler loses it, and there are no
// retries (a subscription cannot set both). Prefetch does not apply, so
// the broker sends as fast as the connection takes. Poison with a
// dead-letter queue is still parked; without one it is lost. Messages
// received but not yet handled when the shutdown deadline passes are lost.
//
// Parked copies start a fresh count (they carry no retry count header), so
// a subscription on a dead-letter queue applies its own max_attempts; the
// attempts made before are in runtime.HeaderDeadLetterAttempts.
//
// A copy keeps the user-id property only when it names the user the
// Broker connects as: RabbitMQ refuses a publish whose user-id is not the
// connection's.
//
// # Quorum queues
//
// queue_type=quorum declares the subscription's queue, its wait queues,
// its suspect queue and its dead-letter queues as quorum queues,
// replicated over a cluster's nodes, so that a message survives the loss
// of a node wherever it is: waiting for a worker, waiting out a retry
// delay, waiting to run alone after a crash, or parked. The wait
// queues move expired copies back with x-dead-letter-strategy
// at-least-once (and the x-overflow reject-publish it needs), so a copy
// whose way back is cut by a node loss is moved once the queue is back,
// not dropped. A classic wait queue left from before makes Start fail
// with the fix: delete it once empty. A quorum queue counts
// redeliveries itself: after a nack with requeue or a lost connection it
// redelivers the message with x-delivery-count raised, and a delivery
// limit (the x-delivery-limit argument or a delivery-limit policy)
// dead-letters or drops the message once the count passes it. That count
// and this package's attempt number are independent. Retries are new
// copies published through the wait queue, so they never raise
// x-delivery-count and are capped by max_attempts alone; a redelivery
// does not raise the attempt number. A message that keeps crashing its
// worker is parked at the crash limit (see above). Requeues after failed
// copy publishes count toward the limit too.
//
// # The queue's own retry (RabbitMQ 4.3)
//
// RabbitMQ 4.3's quorum queues can hold a message handed back for a delay
// before delivering it again (x-delayed-retry-*). A quorum subscription
// with one retry delay uses it on a 4.3 broker (runtime.RetryAuto, or
// retry=broker; retry=queue keeps the wait queues): its queue is declared
// with x-delayed-retry-type "returned" and x-delayed-retry-min and -max
// its delay, and a failed attempt is a basic.nack with requeue (held and
// sent with its neighbours in one frame, as acks are): no copy, no wait
// queue write, and about half the broker's CPU a retry (BenchmarkBrokerRetry).
// The queue counts those returns in x-acquired-count, not in
// x-delivery-count, which goes on counting the returns of a worker that
// died, so a crash still counts against the message in hand alone and
// the delivery limit bounds crashes, not retries. A reject (which 4.3
// delays too when the type is "failed") would count as a crash; and the
// queue delays what is handed back by one delay, the same each time (a
// "returned" message waits the minimum), so a ladder keeps the wait
// queues. A handler's own delay (runtime.RetryAfter) picks among the
// subscription's delays as on the wait-queue path, which with one delay
// is the queue's. The wait queues are declared on either path: the retry
// of a suspect takes one, and a copy still waiting in one when a
// subscription moves comes back and counts on. A delivery not started
// before shutdown goes back to its queue as a copy of the same attempt,
// since handed back it would count as a retry.
//
// A queue's arguments never change: a queue declared before (on an older
// broker, or with retry=queue) is used as it is, and its subscription
// retries through wait queues, said at startup. To move it: stop its
// workers, move its messages elsewhere (a shovel), delete it, start the
// workers, which declare it with the arguments, and move the messages
// back; copies waiting in the wait queue come back by themselves. The
// way back (retry=queue on a queue that has the arguments) needs no
// move: the queue is used as declared, retries are copies again, and a
// message the queue still holds for its delay comes back and runs, its
// attempts counted from its retry count header alone.
//
// # Reading and replaying dead letters
//
// A DeadLetterQueue is a dead-letter queue as a deadletter.Store, what
// the streamgen dlq command and the dead-letter console work on.
// DialDeadLetterQueue connects to it as the Broker does (one URL or a
// cluster's list, dialled again after a lost connection);
// NewDeadLetterQueue uses a connection of the caller's; DeadLetterOpener
// opens each of an App's for console.ForApp. A letter the broker
// dead-lettered itself is explained from its x-death record. A replay
// publishes each letter, reset as deadletter.Replayed says, on the same
// confirmed, mandatory publishing as the runner's copies, and removes it
// only once the broker confirmed it and did not return it.
//
// # Request/reply
//
// The runner sends the replies of a handler that replies
// (runtime.HandleReply) to the request's reply_to, transient and not
// mandatory (RabbitMQ returns a mandatory publish to a direct reply-to
// address whether it delivered it or not), on a channel of the
// publishing connection that is not in confirm mode: the request is
// acked once its reply is sent, and handed back when it could not be. A
// confirm would say only that the broker routed the reply, which no
// queue keeps, at the cost of a frame a request; a reply lost with the
// publishing connection after it was sent leaves its caller to its
// deadline. An error reply follows the request's dead letter on the
// confirm channel, confirmed. A Requester (NewRequester,
// and every Broker through Request) sends requests over direct reply-to:
// one connection, one channel that publishes the requests (transient,
// mandatory) and consumes DirectReplyTo with no-ack, and a map from
// correlation id to the call waiting, so that any number of requests are
// in flight on that channel. A reply no call waits for is dropped with a
// log line; a lost connection fails the calls waiting (ErrReplyLost),
// and the next request connects again.
//
// # Testing against a broker
//
// The tests of this package run against the broker at
// amqp://guest:guest@127.0.0.1:5672/ (override with STREAMGEN_RABBITMQ_URL)
// and fail when it does not answer; start one with rabbitmq-server
// -detached. runtime/streamtest runs handlers in process without a broker.
package rabbitmq
