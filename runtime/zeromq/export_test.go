package zeromq

import "github.com/streamgen/streamgen/runtime/deadletter"

// InFlight reports the in-flight bound of the subscription on queue: the
// bytes its messages hold now, the most they held at once, and how many
// connections wait for room.
func InFlight(b *Broker, queue string) (inUse, peak int64, waiting int) {
	b.mu.Lock()
	s := b.subs[queue]
	b.mu.Unlock()
	return s.recv.budget.InUse(), s.recv.budget.Peak(), s.recv.budget.Waiting()
}

// InFlightBound is the in-flight bound of the subscription on queue.
func InFlightBound(b *Broker, queue string) int64 {
	b.mu.Lock()
	s := b.subs[queue]
	b.mu.Unlock()
	return s.recv.budget.Size()
}

// Outlet is the PUSH socket a directory's replay sends with: tests play a
// service that pushes to a keeper with it.
type Outlet = outlet

// DialOutlet returns an Outlet to addr.
func DialOutlet(addr string) (*Outlet, error) { return dialOutlet(addr, nil) }

// LetterEnvelope frames the message of l for queue as a service frames a
// message it publishes: tests push it to a keeper as a service pushes a
// dead letter.
func LetterEnvelope(queue string, l *deadletter.Letter) (*Envelope, error) {
	return letterEnvelope(queue, l)
}
