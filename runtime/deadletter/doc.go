// Package deadletter is for working with dead letters: the messages a
// subscription parked because it could not handle them. It reads them with
// their explanation, groups them by cause, and replays, purges, exports
// and imports them, without ever harming the store it reads. It knows no
// broker: a Store is where letters are kept, and each broker package
// provides its own, in its own framing:
//
//   - rabbitmq.DialDeadLetterQueue (or rabbitmq.NewDeadLetterQueue on a
//     connection of your own) opens a RabbitMQ dead-letter queue;
//   - zeromq.OpenDeadLetterDir opens the directory a zeromq.Keeper writes
//     the dead letters of ZeroMQ services to (ZeroMQ has no broker to keep
//     them).
//
// NewMemoryStore makes a Store in memory, whose Replay records what it
// sends: for tests without a broker. The streamgen dlq command and
// package console are thin layers over a Store; package storetest checks
// that a Store behaves as they expect.
//
// A Letter is a parked message (body, headers, properties) and the
// explanation read from its headers: the reason, the source subscription,
// the attempts, whether it was poison, and when it was parked. A letter
// the broker dead-lettered itself (a quorum queue's delivery limit, an
// expiry) is explained by its store from the broker's own record, and
// marked ByBroker.
//
//	q, err := rabbitmq.DialDeadLetterQueue(ctx, "amqp://guest:guest@127.0.0.1:5672/", "orders.parked")
//	if err != nil { ... }
//	defer q.Close()
//
// Find out why messages failed: Groups gathers the letters by message type
// and normalised reason (NormalizeReason: "order 123: card declined" and
// "order 456: card declined" are one group), with a count, the sources and
// types, and the oldest and newest park time:
//
//	groups, err := q.Groups(ctx)
//	deadletter.WriteGroups(os.Stdout, groups)
//
// Look at some letters: a Selection picks them by group, reason
// substring, type, message id and park time, up to a limit:
//
//	sel := deadletter.Selection{Reason: "card declined", Limit: 10}
//	err := q.Select(ctx, sel, func(l *deadletter.Letter) error {
//		return deadletter.WriteLetter(os.Stdout, l)
//	})
//
// After the fix, replay them: each picked letter is sent as a new delivery
// of the original message (Replayed says what is kept and what is reset:
// the attempt count and the dead-letter headers go, so the subscription
// handles it as attempt 1 again, and x-streamgen-replays counts the
// replays), to its source queue, another queue, an exchange (RabbitMQ) or
// an address (ZeroMQ); TargetKinds says which a store takes. A letter
// leaves the store only once its replay is confirmed (RabbitMQ) or written
// (ZeroMQ):
//
//	rep, err := q.Replay(ctx, sel, deadletter.ReplayOptions{Rate: 100})
//
// Purge removes letters for good; Export writes them as JSON Lines, one
// letter a line, and Import puts such a file back into a store.
//
// Every operation reads the letters present when it starts, in their
// order, with a bounded amount read ahead, and leaves the others as they
// were. A store whose readers hold letters from each other (RabbitMQ)
// lets one operation read at a time; one that waited too long for its
// turn fails with ErrBusy.
package deadletter
