package outbox_test

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/outbox"
)

// published is a message a fake broker received, with its outcome.
type published struct {
	queue string
	msg   runtime.Message
	err   error
}

// fakeBroker is a runtime.Publisher that records what it is given, in
// order, and answers with fail's error (nil: confirmed). With async set
// it has PublishAsync too, and confirms from a goroutine of its own, in
// order, as a broker's channel does.
type fakeBroker struct {
	mu   sync.Mutex
	fail func(queue string, m runtime.Message) error
	got  []published

	confirms chan func()
	once     sync.Once
}

func (b *fakeBroker) record(queue string, m runtime.Message) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	var err error
	if b.fail != nil {
		err = b.fail(queue, m)
	}
	b.got = append(b.got, published{queue: queue, msg: m, err: err})
	return err
}

func (b *fakeBroker) Publish(_ context.Context, queue string, m runtime.Message) error {
	return b.record(queue, m)
}

// setFail replaces the failure rule.
func (b *fakeBroker) setFail(fail func(queue string, m runtime.Message) error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.fail = fail
}

// published returns what the broker received, in order.
func (b *fakeBroker) published() []published {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.got)
}

// confirmedIDs returns the message ids of the messages confirmed, in the
// order they were sent.
func (b *fakeBroker) confirmedIDs() []string {
	var ids []string
	for _, p := range b.published() {
		if p.err == nil {
			ids = append(ids, p.msg.ID)
		}
	}
	return ids
}

// asyncBroker is a fakeBroker with PublishAsync.
type asyncBroker struct{ *fakeBroker }

func (b asyncBroker) PublishAsync(_ context.Context, queue string, m runtime.Message, done func(error)) {
	b.once.Do(func() {
		b.confirms = make(chan func(), 1<<16)
		go func() {
			for f := range b.confirms {
				f()
			}
		}()
	})
	err := b.record(queue, m)
	b.confirms <- func() { done(err) }
}

// stop ends the confirming goroutine.
func (b asyncBroker) stop() {
	b.once.Do(func() { b.confirms = make(chan func()) })
	close(b.confirms)
}

// newAsyncBroker returns an asyncBroker, stopped when the test ends.
func newAsyncBroker(t testing.TB) asyncBroker {
	b := asyncBroker{&fakeBroker{}}
	t.Cleanup(b.stop)
	return b
}

// commit publishes msgs, each (route, id), in one transaction that
// commits, or rolls back when rollback is set.
func commit(t testing.TB, db *sql.DB, ob *outbox.Outbox, rollback bool, msgs ...[2]string) {
	t.Helper()
	if err := commitTx(context.Background(), db, ob, rollback, msgs...); err != nil {
		t.Fatal(err)
	}
}

// commitTx is commit, returning its error.
func commitTx(ctx context.Context, db *sql.DB, ob *outbox.Outbox, rollback bool, msgs ...[2]string) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	for _, m := range msgs {
		if err := runtime.Publish(ctx, ob.Tx(tx), runtime.Queue(m[0]), "OrderPlaced", order{ID: len(m[1])}, runtime.WithMessageID(m[1])); err != nil {
			_ = tx.Rollback()
			return err
		}
	}
	if rollback {
		return tx.Rollback()
	}
	return tx.Commit()
}

// msgs returns n messages to route, with ids prefix-1 to prefix-n.
func msgs(route, prefix string, n int) [][2]string {
	out := make([][2]string, n)
	for i := range out {
		out[i] = [2]string{route, fmt.Sprintf("%s-%d", prefix, i+1)}
	}
	return out
}

// ids returns the message ids of msgs.
func idsOf(ms [][2]string) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m[1]
	}
	return out
}

// rowsLeft counts the outbox table's rows.
func rowsLeft(t testing.TB, db *sql.DB) int {
	t.Helper()
	var n int
	if err := db.QueryRow("SELECT count(*) FROM streamgen_outbox").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// open opens the outbox on db, failing t on an error.
func open(t testing.TB, db *sql.DB, opts ...outbox.OpenOption) *outbox.Outbox {
	t.Helper()
	ob, err := outbox.Open(context.Background(), db, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return ob
}

// runRelay runs r until the test ends, and checks that Run returns nil
// once its context ends.
func runRelay(t testing.TB, r *outbox.Relay) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Relay.Run: %v", err)
			}
		case <-time.After(testkit.Patience):
			t.Error("Relay.Run did not return after its context ended")
		}
	})
}

// byRoute groups the ids of ps by queue, in order.
func byRoute(ps []published) map[string][]string {
	out := map[string][]string{}
	for _, p := range ps {
		if p.err == nil {
			out[p.queue] = append(out[p.queue], p.msg.ID)
		}
	}
	return out
}
