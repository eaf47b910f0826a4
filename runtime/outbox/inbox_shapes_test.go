package outbox_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"github.com/streamgen/streamgen/internal/testsupport/dbtest"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/outbox"
)

// Every handler shape that takes a *sql.Tx runs in a transaction of the
// App's database: it gets the transaction, the message (a copy or the
// decoded value) and, when it declares it, the Metadata; what it writes
// with the transaction is committed with the inbox's record of the
// message, and a second delivery of the message does not call it.
func TestEveryTransactionalShapeRunsInItsTransaction(t *testing.T) {
	db := openSQLite(t, dbtest.SQLitePath(t))
	ctx := context.Background()
	ob, err := outbox.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	execSQL(t, db, "CREATE TABLE effects (subscription TEXT NOT NULL, id INTEGER NOT NULL, message_id TEXT NOT NULL)")
	// write records a call: its subscription, the message's id field and
	// the message id the Metadata gave ("" when the shape takes none).
	write := func(ctx context.Context, tx *sql.Tx, sub string, o *order, md runtime.Metadata) error {
		if tx == nil {
			return fmt.Errorf("%s: no transaction", sub)
		}
		_, err := tx.ExecContext(ctx, "INSERT INTO effects (subscription, id, message_id) VALUES (?, ?, ?)", sub, o.ID, md.MessageID)
		return err
	}
	md0 := runtime.Metadata{}
	shapes := map[string]runtime.Handler{
		"value-error": runtime.HandleJSON[order]("Order", runtime.Policy{}, nil, func(ctx context.Context, tx *sql.Tx, o order) error {
			return write(ctx, tx, "value-error", &o, md0)
		}),
		"pointer-error": runtime.HandleJSON[order]("Order", runtime.Policy{}, nil, func(ctx context.Context, tx *sql.Tx, o *order) error {
			return write(ctx, tx, "pointer-error", o, md0)
		}),
		"value-meta-error": runtime.HandleJSON[order]("Order", runtime.Policy{}, nil, func(ctx context.Context, tx *sql.Tx, o order, md runtime.Metadata) error {
			return write(ctx, tx, "value-meta-error", &o, md)
		}),
		"pointer-meta-error": runtime.HandleJSON[order]("Order", runtime.Policy{}, nil, func(ctx context.Context, tx *sql.Tx, o *order, md runtime.Metadata) error {
			return write(ctx, tx, "pointer-meta-error", o, md)
		}),
		"value-outcome": runtime.HandleJSON[order]("Order", runtime.Policy{}, nil, func(ctx context.Context, tx *sql.Tx, o order) runtime.Outcome {
			return runtime.OutcomeOf(write(ctx, tx, "value-outcome", &o, md0))
		}),
		"pointer-outcome": runtime.HandleJSON[order]("Order", runtime.Policy{}, nil, func(ctx context.Context, tx *sql.Tx, o *order) runtime.Outcome {
			return runtime.OutcomeOf(write(ctx, tx, "pointer-outcome", o, md0))
		}),
		"value-meta-outcome": runtime.HandleJSON[order]("Order", runtime.Policy{}, nil, func(ctx context.Context, tx *sql.Tx, o order, md runtime.Metadata) runtime.Outcome {
			return runtime.OutcomeOf(write(ctx, tx, "value-meta-outcome", &o, md))
		}),
		"pointer-meta-outcome": runtime.HandleJSON[order]("Order", runtime.Policy{}, nil, func(ctx context.Context, tx *sql.Tx, o *order, md runtime.Metadata) runtime.Outcome {
			return runtime.OutcomeOf(write(ctx, tx, "pointer-meta-outcome", o, md))
		}),
	}
	h := inboxHarness(t, ob)
	for name, handler := range shapes {
		h.App().Mount(h.Broker(), &runtime.Subscription{Name: name, Handlers: []runtime.Handler{handler}})
	}
	h.Start()
	for range 2 {
		for name := range shapes {
			h.Publish(name, "Order", order{ID: 7}, runtime.WithMessageID("m-"+name))
		}
		h.Wait()
	}
	for name := range shapes {
		wantID := "m-" + name
		if !strings.Contains(name, "-meta-") {
			wantID = "" // the shape takes no Metadata
		}
		if n := count(t, db, "SELECT count(*) FROM effects WHERE subscription = ? AND id = 7 AND message_id = ?", name, wantID); n != 1 {
			t.Errorf("%s: %d effects with the message and id %q, want 1", name, n, wantID)
		}
		if st := stats(t, h.App(), name); st.Acked != 2 || st.Duplicates != 1 {
			t.Errorf("%s: stats %+v, want 2 acked, 1 duplicate", name, st)
		}
	}
	if n := count(t, db, "SELECT count(*) FROM effects"); n != len(shapes) {
		t.Errorf("%d effects, want one per shape (%d)", n, len(shapes))
	}
}
