// Package deadletter is for working with dead letters: the messages a
// subscription parked because it could not handle them. It reads them with
// their explanation, groups them by cause, and replays, purges, exports
// and imports them, without ever harming the queue it reads. The
// streamgen dlq command is a thin layer over it.
//
// A Letter is a parked message (body, headers, AMQP properties) and the
// explanation read from its headers: the reason, the source subscription,
// the attempts, whether it was poison, and when it was parked. A letter the
// broker dead-lettered itself (a quorum queue's delivery limit, an expiry)
// is explained from its x-death record and marked ByBroker.
//
// Open a RabbitMQ dead-letter queue with Dial, or NewQueue on a connection
// of your own:
//
//	q, err := deadletter.Dial("amqp://guest:guest@127.0.0.1:5672/", "orders.parked")
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
// After the fix, replay them: each picked letter is published as a new
// delivery of the original message (Replayed says what is kept and what
// is reset: the attempt count and the dead-letter headers go, so the
// subscription handles it as attempt 1 again, and x-streamgen-replays
// counts the replays), to its source queue, another queue or an exchange,
// with publisher confirms and mandatory. A letter leaves the queue only
// once its replay is confirmed:
//
//	rep, err := q.Replay(ctx, sel, deadletter.ReplayOptions{Rate: 100})
//
// Purge removes letters for good; Export writes them as JSON Lines, one
// letter a line, and Import puts such a file back into a queue.
//
// Reading is harmless: every operation reads the letters present when it
// starts (a basic.get tells how many) with consumers of a bounded
// prefetch, so that the client holds at most about 8 MiB of letters read
// ahead (512 letters, when they are larger than 16 KiB) whatever the
// queue holds, and hands back what it leaves with
// basic.nack (multiple, requeue), which neither reorders the queue nor counts toward a quorum
// queue's delivery limit on RabbitMQ 4.3 (see Queue for the details on
// each version). Several operations may run at once on one queue.
//
// ZeroMQ has no broker to keep dead letters: a Keeper binds the address a
// service's dead_letter queue pushes to and writes each letter, fsync'd,
// to a Dir before it reads the next. A Dir is a Store like a Queue, which
// the other operations work on while the keeper runs; its Replay pushes
// to Target.Address. Store is what the streamgen dlq command and a
// console work on, whichever the letters are kept in.
package deadletter
