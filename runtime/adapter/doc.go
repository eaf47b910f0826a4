// Package adapter is what a broker adapter is built on. It holds every
// decision about a delivery, so that each rule lives in one place and
// holds the same on every broker and in the in-memory harness:
//
//   - the attempt number (one rule: 1 + the larger of the retry count
//     header and the retry cycles the broker recorded, capped so that a
//     forged count makes the delivery the last attempt, never one beyond;
//     an unreadable count is poison);
//   - decoding, poison (too large, no or unknown type, an unreadable content
//     type, a body that does not decode or is null), the handler call
//     through the App's and the subscription's middleware (the chain is
//     built once, in NewConsumer), within the policy's timeout, with each
//     panic recovered, and the policy that turns the outcome into a
//     Verdict;
//   - what the App's Observer (runtime.Env.Observer) learns: each delivery
//     as it starts and as it ends, the headers it adds to each copy, and
//     the Consumer itself (its copies waiting in memory);
//   - every copy, fully built: destination (the RabbitMQ wait queue the
//     ladder picks, the ZeroMQ out_retry destination, the dead-letter
//     queue), the headers it keeps and sets, normalised to the broker's
//     header rules (Rules);
//   - how the original is settled once its copy is sent or not, and the
//     in-memory delay of a ZeroMQ retry copy, on the App's clock;
//   - on RabbitMQ, what becomes of a message that comes back after its
//     worker crashed or lost its connection: it is set aside on the
//     subscription's suspect queue with its count of crashes, runs there
//     alone, and is parked once it crashed its worker as often as the
//     crash limit allows (see Consumer.Handle);
//   - the log line and the counters of every outcome.
//
// An adapter only moves bytes and settles deliveries. Its Start is given
// the subscriptions runtime.App.Run checked, and makes a Consumer for
// each, giving it a
// Transport that sends copies (and, on a broker with acknowledgements, an
// Acknowledger that acks, rejects and requeues):
//
//	func (b *Broker) Start(ctx context.Context, env runtime.Env, subs []*runtime.Subscription) error {
//		for _, sub := range subs {
//			c := adapter.NewConsumer(sub, env, adapter.Rules{Kind: runtime.RabbitMQ}, b.transportFor(sub))
//			// for each message received:
//			//	c.Handle(handlerCtx, &adapter.Delivery{MessageID: ..., Headers: ..., Body: ..., Raw: msg})
//		}
//		...
//	}
//
// An adapter runs Subscription.Workers() calls of Handle at once. For a
// batch subscription (Subscription.BatchSize) that is enough for the
// batches being handled and the next one filling: each Handle joins a
// batch, and returns once its batch was handled and its delivery settled.
// Batching is the Consumer's; the adapter does nothing of its own for it.
//
// At shutdown the adapter hands each delivery it took but will not run to
// Consumer.Release (RabbitMQ: a nack with requeue, counted as Released),
// calls Consumer.Drain once it takes no more deliveries (a batch waiting
// for more is handled at once), then Consumer.Stop (ZeroMQ retry copies
// still waiting are lost, and logged) and Consumer.WaitCopies.
//
// A RabbitMQ adapter declares the queues Topology gives for its
// subscriptions and the version of the broker it reached, each with its
// arguments (QueueArguments, WaitQueueArguments, SuspectQueueArguments,
// DeadLetterQueueArguments): the subscriptions' queues, the wait queues
// the Consumer sends retry copies to (WaitQueues), each subscription's
// suspect queue (runtime.Subscription.SuspectQueue, with ack=manual), and
// the dead-letter queues. It decides none of them itself. It consumes the
// suspect queue beside the subscription's own, one delivery at a time (a
// prefetch of 1), marks those deliveries Delivery.Suspect, and hands each
// to Handle, which runs it alone; should its Acknowledger hold acks back,
// it is an AckFlusher too.
//
// The conformance suite runtime/brokertest checks a transport against all
// of this.
package adapter
