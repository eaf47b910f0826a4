// Package brokertest is the conformance suite every streamgen transport
// must pass: the in-process runtime/streamtest broker (both kinds), and the
// RabbitMQ and ZeroMQ adapters. It runs the same handlers on each and checks
// that the runtime's verdicts are carried out alike: the broker adapters
// differ in how, never in what.
//
// # Using it
//
// A transport's test package calls Run with a Transport:
//
//	func TestConformance(t *testing.T) {
//		brokertest.Run(t, brokertest.Transport{
//			Kind:       runtime.RabbitMQ,
//			RetryDelay: 100 * time.Millisecond,
//			New: func(t testing.TB, queues []string) brokertest.Instance {
//				b := rabbitmq.New(brokerURL(t))
//				t.Cleanup(func() { deleteQueues(t, queues) }) // and <q>.retry
//				return brokertest.Instance{Broker: b}
//			},
//		})
//	}
//
// Run runs each case as a subtest. A case makes its own queue names (unique
// per run: "brokertest.<case>.<random hex>", and "<name>.dead" for a
// dead-letter queue), asks Transport.New for a broker serving them, mounts
// hand-built subscriptions (runtime.Handle, no generated code) on a fresh
// runtime.App, runs it, publishes with runtime.Publish or Broker.Publish,
// waits for what must happen, stops the App and checks what the handlers
// saw, the App's counters (App.Stats) and its log records.
//
// # The Transport contract
//
// Kind is runtime.RabbitMQ or runtime.ZeroMQ. The suite writes each
// subscription for it: Subscription.Broker is Kind; on RabbitMQ a retrying
// subscription has RetryDelays = [RetryDelay] (one wait queue, "<q>.retry");
// on ZeroMQ a retrying policy has OutRetry = "self". Handlers that fail
// return runtime.RetryAfter(RetryDelay, err), so a ZeroMQ copy waits
// RetryDelay and a RabbitMQ copy goes to the one wait queue.
//
// New(t, queues) returns an Instance whose Broker has not been started. It
// is called once per case, with every name the case uses, subscriptions and
// dead-letter queues alike. The broker must:
//
//   - let subscriptions with those names be mounted and started by
//     App.Run: on ZeroMQ give each name an endpoint the broker binds, so a
//     subscription's PULL receives what is pushed to its name, retry copies
//     can go back to "self", and dead letters pushed to "<q>.dead" reach the
//     subscription mounted there;
//   - publish to each name with Publish once App.Ready is closed (the suite
//     publishes only then);
//   - be new for every call: no state shared between cases;
//   - on RabbitMQ, be a runtime.Requester too, and carry the replies the
//     Consumer builds (its Transport an adapter.Replier): the suite sends
//     requests through it.
//
// New registers with t.Cleanup whatever must be undone: on RabbitMQ delete
// every queue the names imply — each name, its wait queue "<name>.retry",
// and its dead-letter queue (which is also in the list) — and close any
// connection made for the test. Cleanups registered in New run after the
// suite has stopped the App.
//
// Instance.Clock is the clock the App runs with (runtime.WithClock); nil
// means the wall clock. A transport that waits out delays itself (ZeroMQ
// retry copies) must wait on Env.Clock, as every transport should.
//
// Instance.Pass lets time pass while the suite waits for something that
// needs a retry delay: for a fake clock it advances it by d and returns when
// the broker is idle again; nil means real time, and the suite polls every
// few milliseconds until Timeout. Keep RetryDelay small for a real broker
// (50–200 ms): a case may wait out up to three delays.
//
// Timeout (default 30 s, real time) bounds every wait: for a handler call,
// for a dead letter. It is also the App's shutdown timeout, so the App's
// start and Run's return after a stop are each given twice as long.
//
// Redeliver is required of a RabbitMQ transport: it puts messages in a
// queue as a worker that died leaves those it held, redelivered (and
// counted as returned where the queue counts returns). The suite calls it
// before it starts the App; the queue's subscription has no dead-letter
// queue and no queue type, so a queue that does not exist yet is declared
// durable with no arguments. Against a real broker: publish the messages,
// take them on a channel of its own without settling them, and close it
// (the RabbitMQ adapter's test does so); the in-process broker has
// streamtest.Broker.Redeliver.
//
// # What every transport must do
//
// Each case states its rule; together:
//
//   - A published message reaches its handler once, as attempt 1, with
//     Metadata naming the subscription, message id, message type and the
//     cap in force, and with the application headers it was published with.
//
//   - A failure is retried: the next delivery is attempt 2 and carries
//     runtime.RetryCountHeader "1"; id, type, headers and body are the
//     original's.
//
//   - After max_attempts failures the message is parked on the dead-letter
//     queue, with the explanation headers of adapter.DeadLetterHeaders
//     (reason, source, attempts, poison, time) and the original's headers.
//     A parked copy starts a fresh count: it does not carry the retry
//     count header, so the dead-letter queue's own subscription sees
//     attempt 1 and applies its own max_attempts. (The attempts are in
//     runtime.HeaderDeadLetterAttempts.)
//
//   - Poison (here, a body that does not decode) never reaches the handler,
//     uses no retries, and is parked with poison "true"; without a
//     dead-letter queue it is rejected (the Consumer counts it in
//     Rejected). Either way the subscription goes on.
//
//   - DeadLetter(err) parks at once, attempts "1"; Drop(err) forgets at once
//     with the warning "message dropped" naming subscription, message_id
//     and reason; nothing of a dropped message reaches the dead-letter queue.
//
//   - A panicking handler is a failure: logged with its stack, retried.
//
//   - Several message types on one subscription each reach their handler,
//     with their own policy's cap.
//
//   - Graceful shutdown: when the App stops, Shutdown waits for a handler in
//     flight, whose context stays live (handler contexts must not derive
//     from the context Start got, which ends when the App starts to stop),
//     settles its delivery, and App.Run returns nil.
//
//   - Header names reach a handler as the broker shows them (ZeroMQ: lower
//     case), and a parked reason with line breaks is carried as the broker
//     can (ZeroMQ: one line).
//
//   - A retry count beyond the cap is the last attempt, never one beyond;
//     an unreadable one is poison.
//
//   - With Transport.RetryCountHeader set, the count travels in that
//     header.
//
//   - Middleware wraps every call, the App's outside the subscription's,
//     and the Outcome it returns is carried out; a panicking middleware is
//     a failure, retried.
//
//   - A handler that outlives Policy.Timeout fails with "handler timed out
//     after 50ms", retried, then parked with that reason.
//
//   - A handler that ignores its context and returns nil after its timeout
//     is acknowledged, not retried, with a warning that it was late.
//
//   - The App's Observer hears of every delivery and how it ended, and the
//     headers it sets on a delivery's copies reach the next delivery: a
//     transport sends each copy with Copy.Set.
//
//   - RabbitMQ: messages that came back after their worker died are set
//     aside on the subscription's suspect queue with one crash counted
//     (adapter.HeaderCrashes), which counts as Released, and each runs
//     alone from there, never beside another handler call, whatever the
//     subscription's concurrency.
//
//   - A handler that replies (runtime.HandleReply) answers a request sent
//     through the Broker; a request retried and then parked gets one error
//     reply naming the dead-letter queue (runtime.ErrParked). On ZeroMQ
//     App.Run refuses such a handler.
//
//   - A batch subscription's handler gets a full batch in one call, each
//     message with its own Metadata, and a batch that is not full once its
//     wait has passed on the App's clock (so on a fake clock, once Pass let
//     it pass); each message is then retried, parked or acknowledged on
//     its own, by its own attempt count. Poison never enters a batch, and
//     a shutdown handles the batch in hand at once.
//
//   - Each codec carries its messages through the broker, all on one
//     queue: protobuf and its JSON mapping, MessagePack, CBOR and JSON, each
//     delivery read by its content type, a retry copy keeping it. A body
//     that does not decode in its codec, or of a content type its handler
//     does not read, is poison, parked with a reason that says which, its
//     content type and body kept.
//
//   - A handler of every message type (runtime.HandleEvery) takes what no
//     other handler of its subscription takes, undecoded, with the
//     message's type, content type, headers and properties; it is retried
//     and parked by its policy, naming the message's type.
//
// All of it follows when an adapter hands each delivery to an
// adapter.Consumer and does what its Transport is told — the suite checks
// the counters and log lines the Consumer produces, so a transport that
// decides anything itself, or skips the Consumer, fails.
//
// Run does not skip: a transport whose broker is missing must fail its test
// with the command that starts the broker.
package brokertest
