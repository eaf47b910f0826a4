// Package streamtest runs streamgen handlers in process, with no broker and
// a fake clock, so a test can watch retries and dead letters happen: publish
// a message, let thirty seconds pass at once, and check how many times the
// handler ran, what each copy carried, and what landed on the dead-letter
// queue. It emulates the retry semantics of both brokers.
//
// # A test
//
//	func TestFailingJobIsRetriedFiveTimes(t *testing.T) {
//		h := streamtest.New(t, runtime.ZeroMQ)
//		billing.Mount(h.App(), h.Broker()) // the generated Mount
//		h.Start()
//
//		billing.PublishJob(t.Context(), h.Broker(), billing.Job{ID: 1}) // a generated publisher
//		h.Wait() // the first delivery has been handled
//		for range 4 {
//			h.Advance(30 * time.Second) // the next copy is due and handled
//		}
//		ds := h.Deliveries("jobs")
//		// len(ds) == 5; ds[4].RetryCount() == 4; ds[4].Verdict.Kind == streamtest.VerdictDrop
//		// h.Logs().Find(slog.LevelWarn, "message dropped") names the subscription
//	}
//
// New makes the App (runtime.App, with the fake clock and a logger that
// records every line), the Broker and the Clock. Mount the subscriptions
// as main does, then Start: the App runs in the background until the test
// ends. The test's cleanup waits until the broker is idle, stops the App
// gracefully, and fails the test when a handler is still busy or Run ended
// with an error. Stop stops it earlier, returning Run's error.
// WithAppOptions gives the App the service's own options, such as its
// middleware (runtime.WithMiddleware), hooks and Observer: they run on
// the harness as on a broker, in the same adapter.Consumer. WithOutbox
// runs an outbox (runtime/outbox) in the App: handlers that take a
// *sql.Tx run in its database's transactions, over SQLite when the test
// wants no server.
//
// Time only moves when the test says so. Wait returns once the broker is
// idle: no message waiting in a consumed queue, no handler running. Timers
// not yet due stay pending. Advance(d) moves the clock by d, firing each
// timer that falls due in due order, each at its own time, and waiting for
// idle after each: a copy due in 30 seconds is delivered, handled and
// settled before a copy due in 31 seconds fires. A batch that is not full
// (Subscription.BatchWait) waits on the clock too: the broker is idle
// while its messages wait for more, and Advance past its wait runs it.
//
// What to look at afterwards:
//
//   - Deliveries(name): each delivery to a subscription, in settle order:
//     attempt, message id and type, headers and body as they arrived, the
//     runtime's Verdict (with the wait queue and delay RabbitMQ applied),
//     and the fake time.
//   - Queue(name): messages waiting in a queue nobody consumes, such as
//     dead letters (with their explanation headers, runtime.HeaderDeadLetter*)
//     or RabbitMQ wait queues ("jobs.retry"). Mount a subscription on the
//     dead-letter queue instead to have a handler read them.
//   - Rejected(name): what a RabbitMQ subscription nacked without requeue.
//   - Logs(): every log record, with its attributes, to assert on warnings.
//   - App().Stats(): the counters of each subscription.
//
// The Broker answers requests in process (it is a runtime.Requester): a
// generated typed client called with h.Broker() gets the reply of a
// handler of runtime.HandleReply, or its error reply. A reply no request
// waits for stays in the queue ReplyAddress, and a reply to a reply_to of
// the test's own in that queue.
//
// # What is emulated
//
// Both kinds share the model: a queue per name, consumed by the
// subscription of that name when one is mounted (Subscription.Workers()
// handler calls at once), kept for Queue otherwise. Publish puts a message
// at the tail of its queue, before Start too. Each delivery goes through
// the same adapter.Consumer as on the real adapters: it computes the
// attempt, decides, builds every copy (headers to the broker's rules:
// ZeroMQ names in lower case and one-line values) and logs and counts it.
// The harness only moves messages between queues and emulates what a
// broker does itself (a RabbitMQ wait queue's TTL), so policies behave as
// in production. A handler's Metadata.Raw is a copy of the runtime.Message
// as it arrived, which the handler may change.
//
// ZeroMQ (runtime.ZeroMQ): a retry copy waits Verdict.Delay on the clock
// in memory (no delay: sent at once), then goes to the out_retry
// destination ("self" is the subscription's own queue). Copies still
// waiting when the App stops are lost, as in a real process: Shutdown logs
// how many and Broker.Lost counts them. Reject and Drop both forget the
// message (there is no acknowledgement). RetryCountHeader renames the
// retry count header, as zeromq.WithRetryCountHeader does.
//
// RabbitMQ (runtime.RabbitMQ): a retry copy goes to the wait queue that
// adapter.WaitQueueFor picks ("jobs.retry", or a step of the
// retry_delay ladder such as "jobs.retry.10s") and returns to the
// subscription's queue when that queue's TTL has passed on the clock. The
// wait queues belong to the broker: their copies outlive the App. Reject
// records the message in Rejected (a broker-level dead-letter exchange
// would get it), except under ack=auto, where the broker already considered
// it delivered: the reject cannot be carried out, the message is lost, and
// the Consumer reports it as failed, as on the real adapter. Broker.Redeliver
// puts messages back as a worker that died leaves them (redelivered, and
// counted as a quorum queue counts returns), to see that each is set
// aside on the subscription's suspect queue ("jobs.suspect"), which the
// harness consumes one message at a time, runs alone from there, and is
// parked at the subscription's crash limit. Deliveries records the queue
// each delivery came from.
//
// Both: a retry count header that cannot be read makes the message poison
// (parked, or rejected without a dead-letter queue), and a count beyond
// the cap makes the delivery the last attempt, never one beyond.
//
// Both: a parked message is a copy on the dead-letter queue with the
// explanation headers of adapter.DeadLetterHeaders and without the retry
// count, so a subscription on the dead-letter queue counts its own
// attempts from 1.
//
// # Publishing with a database
//
// WithOutbox runs an outbox (package runtime/outbox) in the App, over
// SQLite so that the test needs no server: what the test or a handler
// publishes through ob.Tx(tx) reaches the broker once tx commits, and
// Wait returns once it is handled; a rolled-back transaction's messages
// never arrive.
//
// # Without a testing.T
//
// NewBroker and NewClock work alone: mount on a Broker with an App made
// WithClock of the same Clock, run the App, and use Broker.Wait and
// Broker.Advance (see the package example). A Clock also serves any code
// that takes a clock.Clock (Clock.PendingDelays tells what each waiting
// timer was set to). LogRecorder captures slog records anywhere: Find picks
// them by level and message, Containing by part of the message, and String
// writes them all for a failing test's message.
//
// For tests of a real adapter, RunApp runs an App in the background until
// the test ends and checks that it stops gracefully.
//
// The runtime/brokertest conformance suite runs against this broker for
// both kinds, as it does against the real adapters.
package streamtest
