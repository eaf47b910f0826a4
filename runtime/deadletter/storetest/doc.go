// Package storetest is the conformance suite every deadletter.Store must
// pass: the RabbitMQ dead-letter queue (rabbitmq.DeadLetterQueue), the
// directory a ZeroMQ keeper writes (zeromq.DeadLetterDir), the memory
// store (deadletter.MemoryStore), and a store of your own. The streamgen
// dlq command and the console work on any Store; the suite checks that a
// store behaves as they expect.
//
// # Using it
//
// A store's test package calls Run with a Fixture that makes a fresh,
// empty store for each case, parks letters in it as its broker would, and
// reads what its replays send:
//
//	func TestStoreConformance(t *testing.T) {
//		storetest.Run(t, storetest.Fixture{New: func(t testing.TB) storetest.Instance {
//			q := declareQueue(t) // deleted in t.Cleanup
//			src, other := declareQueue(t), declareQueue(t)
//			return storetest.Instance{
//				Store: rabbitmq.NewDeadLetterQueue(conn, q),
//				Park:  func(ctx context.Context, ls ...*deadletter.Letter) error { return publish(ctx, q, ls) },
//				Targets: []storetest.Target{
//					{To: deadletter.Target{}, Queue: src, Arrived: reader(src)},
//					{To: deadletter.Target{Queue: other}, Queue: other, Arrived: reader(other)},
//				},
//			}
//		}})
//	}
//
// Park publishes each letter as the broker's subscriptions park a message
// (a RabbitMQ store: into the dead-letter queue, with the letter's headers
// and properties; a directory: to its keeper), not with the store's own
// Import, which the suite checks apart. Each Target is a place of its own
// to replay to, of each kind the store takes (a RabbitMQ store: its
// letters' source queue, another queue, an exchange bound to a queue; a
// directory: the source queue, or another, at a bound address), and
// Arrived reads what arrived there. A store whose broker carries headers
// as text (ZeroMQ) sets Instance.Text.
//
// # What every store must do
//
// Each case states its rule; together:
//
//   - Scan gives every letter, oldest first, with its body, headers,
//     properties and the explanation read from its headers; Len counts
//     them.
//   - Groups gather the letters by type and normalised reason, with their
//     count, key, types, sources, and oldest and newest park time.
//   - Every Selection field (Group, Reason, Types, IDs, Before, After,
//     Keys, Limit) picks the letters it says, in Select, Purge and
//     Replay alike.
//   - Replay sends each letter picked as a new delivery of the original
//     message (deadletter.Replayed): the body byte for byte, the
//     properties, the user headers, none of the headers of its past
//     deliveries, x-streamgen-replays one more than the letter carried;
//     the letter leaves the store. A letter without a source, replayed to
//     its source, is reported failed and stays. A dry run changes
//     nothing.
//   - Purge removes the letters picked; a dry run only counts them.
//   - Export and Import round trip: the letters come back equal, headers
//     with their types. Import refuses a line that is not a letter, or
//     whose bytes JSON decoding would change (not UTF-8, half a surrogate
//     pair), naming the line: the letters before it are imported and
//     counted, none after.
//   - Two Scans at once both see every letter; a Scan during a slow
//     replay loses nothing; the letters keep their order after scans,
//     replays and purges.
//   - Odd bytes are kept exactly: bodies that are not UTF-8, hold NUL
//     bytes, are 1 MiB or empty, and headers with odd values, through
//     Scan, Export and Import, and replay.
//
// Run does not skip: a store whose broker is missing must fail its test
// with the command that starts the broker.
package storetest
