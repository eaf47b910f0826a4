package runtime

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// Transactor begins the transactions of the handlers that take a *sql.Tx,
// on the App's database, and keeps their inbox: the record, per
// subscription, of the messages such a handler handled. Give one to an App
// with WithTransactor; package runtime/outbox has one (its Option gives
// it):
//
//	app := runtime.NewApp("orders", ob.Option(broker))
//
// A handler that takes a *sql.Tx runs inside the transaction BeginOnce
// returns. The runtime commits it when the handler succeeds and rolls it
// back otherwise, so the record of the message and the handler's writes
// are kept or lost together: a message redelivered after the commit
// (the worker died before its ack) finds itself recorded and is
// acknowledged without calling the handler again.
type Transactor interface {
	// BeginOnce begins a transaction and records in it that subscription
	// handles the message messageID. When the inbox holds that message
	// already (a transaction that recorded it committed), it ends the
	// transaction it began and returns handled true and no transaction.
	// While another transaction that recorded the message is open, it
	// waits for its end.
	BeginOnce(ctx context.Context, subscription, messageID string) (tx *sql.Tx, handled bool, err error)
}

// WithTransactor gives the App the Transactor its *sql.Tx handlers get
// their transactions from. outbox.Option gives the outbox's; Run refuses
// an App with a *sql.Tx handler and no Transactor.
func WithTransactor(t Transactor) Option {
	return func(a *App) {
		if t == nil {
			a.errs = append(a.errs, errors.New("runtime: WithTransactor was given a nil Transactor"))
			return
		}
		a.transactor = t
	}
}

// ErrNoMessageID is the reason a message without a message id is parked
// as poison by a subscription whose handler of its type takes a *sql.Tx:
// the inbox records each message by its id, so without one the message
// cannot be handled once.
var ErrNoMessageID = errors.New("the message has no message id, and its handler takes a *sql.Tx, which records each message it handles by id so as to handle it once: publish it with an id (generated publishers and runtime.Publish set one; runtime.WithMessageID sets your own)")

// txCall is the function of a handler that takes a *sql.Tx: it gets the
// transaction from tr, which the App binds (bind) before it runs the
// subscription.
type txCall[T any] struct {
	messageType string
	fn          func(ctx context.Context, tx *sql.Tx, msg *T, md Metadata) Outcome
	tr          Transactor
}

// transactional is the handlerFunc of a handler that takes a *sql.Tx.
type transactional interface {
	// bind returns the function with tr as the Transactor it begins its
	// transactions with.
	bind(tr Transactor) handlerFunc
}

func (c txCall[T]) bind(tr Transactor) handlerFunc {
	c.tr = tr
	return c
}

// call runs the handler once per message id: it begins a transaction in
// which the inbox records md.MessageID for md.Subscription; a message
// recorded already is acknowledged without calling the handler (an Ack
// whose Duplicate is true). The handler's success commits the transaction,
// and a failed commit is a failure, to retry; any other outcome, and a
// panic, roll it back.
func (c txCall[T]) call(ctx context.Context, v any, md Metadata) Outcome {
	if c.tr == nil {
		return Retry().Because(fmt.Errorf("runtime: the handler of %s takes a *sql.Tx, and its subscription %q runs without a database: run it in an App given outbox.Option (package runtime/outbox) or runtime.WithTransactor", c.messageType, md.Subscription))
	}
	if md.MessageID == "" {
		return DeadLetterNow().Because(ErrNoMessageID)
	}
	tx, handled, err := c.tr.BeginOnce(ctx, md.Subscription, md.MessageID)
	if err != nil {
		return Retry().Because(fmt.Errorf("begin the handler's transaction: %w", err))
	}
	if handled {
		return Outcome{action: ActionAck, duplicate: true}
	}
	committed := false
	defer func() {
		if !committed {
			_ = tx.Rollback() // a panic, or a failure: its writes go
		}
	}()
	out := c.fn(ctx, tx, v.(*T), md)
	if out.Action() != ActionAck {
		return out
	}
	committed = true
	if err := tx.Commit(); err != nil {
		// Whether a commit that failed on a lost connection happened is
		// unknown; the next delivery finds out: the inbox holds the
		// message only if it did.
		return Retry().Because(fmt.Errorf("commit the handler's transaction: %w", err))
	}
	return out
}

// Transactional reports whether h's handler takes a *sql.Tx: it runs in a
// transaction of the App's Transactor, and handles each message id once.
func (h *Handler) Transactional() bool {
	_, ok := h.fn.(transactional)
	return ok
}

// bindTransactions returns s with its *sql.Tx handlers given tr, a copy,
// or s itself when it has none. Without a Transactor it returns an error
// per *sql.Tx handler.
func bindTransactions(s *Subscription, tr Transactor) (*Subscription, error) {
	var b *Subscription
	var errs []error
	for i := range s.Handlers {
		t, ok := s.Handlers[i].fn.(transactional)
		if !ok {
			continue
		}
		if tr == nil {
			errs = append(errs, fmt.Errorf("runtime: subscription %q: the handler of %q takes a *sql.Tx, and the App has no database to begin its transactions on: give NewApp the outbox's option, runtime.NewApp(name, ob.Option(broker)) (package runtime/outbox), or runtime.WithTransactor", s.Name, s.Handlers[i].MessageType))
			continue
		}
		if b == nil {
			c := *s
			c.Handlers = append([]Handler(nil), s.Handlers...)
			b = &c
		}
		b.Handlers[i].fn = t.bind(tr)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if b == nil {
		return s, nil
	}
	return b, nil
}
