package outboxpgx

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/streamgen/streamgen/runtime/outbox/internal/inboxrecord"
)

// Open opens the PostgreSQL database that connString names (a
// postgres:// URL or a key=value string, as pgx.ParseConfig takes it)
// through pgx's database/sql driver, with the inbox's one-round-trip
// begin. Like sql.Open, it does not connect: the first use does.
func Open(connString string, opts ...stdlib.OptionOpenDB) (*sql.DB, error) {
	config, err := pgx.ParseConfig(connString)
	if err != nil {
		return nil, fmt.Errorf("outboxpgx: %w", err)
	}
	return OpenDB(*config, opts...), nil
}

// OpenDB is Open of a parsed configuration, with stdlib.OpenDB's options
// (stdlib.OptionAfterConnect, say).
func OpenDB(config pgx.ConnConfig, opts ...stdlib.OptionOpenDB) *sql.DB {
	return sql.OpenDB(connector{stdlib.GetConnector(config, opts...)})
}

// connector makes pgx's connections, each a conn.
type connector struct{ base driver.Connector }

func (c connector) Connect(ctx context.Context) (driver.Conn, error) {
	dc, err := c.base.Connect(ctx)
	if err != nil {
		return nil, err
	}
	sc, ok := dc.(*stdlib.Conn)
	if !ok {
		_ = dc.Close()
		return nil, fmt.Errorf("outboxpgx: pgx's connector made a %T, not a *stdlib.Conn", dc)
	}
	return conn{sc}, nil
}

func (c connector) Driver() driver.Driver { return pgDriver{} }

// pgDriver is the driver of the databases Open opens: pgx's, whose
// connections begin the inbox's transactions in one round trip. The
// outbox tells a database's dialect by its driver's package.
type pgDriver struct{}

func (d pgDriver) Open(name string) (driver.Conn, error) {
	c, err := d.OpenConnector(name)
	if err != nil {
		return nil, err
	}
	return c.Connect(context.Background())
}

func (pgDriver) OpenConnector(name string) (driver.Connector, error) {
	base, err := stdlib.GetDefaultDriver().(driver.DriverContext).OpenConnector(name)
	if err != nil {
		return nil, err
	}
	return connector{base}, nil
}

// conn is a pgx connection, all of whose methods are pgx's but BeginTx.
// Its Conn (promoted) returns the *pgx.Conn, for sql.Conn.Raw.
type conn struct{ *stdlibConn }

// stdlibConn names pgx's connection so that, embedded, its field does
// not hide its Conn method.
type stdlibConn = stdlib.Conn

// BeginTx begins a transaction as pgx does; when ctx carries the inbox's
// record of a message (the outbox's transactor begins a *sql.Tx
// handler's transaction so), it sends BEGIN and the record's insert
// together, in one round trip, and says in the record what the insert
// did. An insert that fails ends the transaction, and BeginTx returns
// its error.
func (c conn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	rec := inboxrecord.From(ctx)
	if rec == nil || opts.Isolation != driver.IsolationLevel(sql.LevelDefault) || opts.ReadOnly {
		return c.stdlibConn.BeginTx(ctx, opts)
	}
	pc := c.Conn()
	if pc.IsClosed() {
		return nil, driver.ErrBadConn
	}
	batch := &pgx.Batch{}
	batch.Queue("begin")
	batch.Queue(inboxrecord.PostgresInsert, rec.Subscription, rec.MessageID)
	results := pc.SendBatch(ctx, batch)
	_, beginErr := results.Exec()
	tag, insertErr := results.Exec()
	closeErr := results.Close()
	if err := firstOf(beginErr, insertErr, closeErr); err != nil {
		if pc.PgConn().TxStatus() != 'I' {
			if _, rbErr := pc.Exec(ctx, "rollback"); rbErr != nil {
				_ = pc.Close(ctx) // in a transaction no one can end: database/sql drops it
			}
		}
		return nil, err
	}
	rec.Written, rec.New = true, tag.RowsAffected() == 1
	return &tx{ctx: ctx, conn: pc}, nil
}

// firstOf is the first error of errs that is not nil.
func firstOf(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// tx is a transaction conn.BeginTx began itself, ended as pgx ends its
// own: a commit that failed leaves no transaction open (the connection is
// closed), a commit of a failed transaction is ErrTxCommitRollback, and a
// rollback that failed closes the connection.
type tx struct {
	ctx  context.Context
	conn *pgx.Conn
	done bool
}

func (t *tx) Commit() error {
	if t.done {
		return pgx.ErrTxClosed
	}
	t.done = true
	tag, err := t.conn.Exec(t.ctx, "commit")
	if err != nil {
		if t.conn.PgConn().TxStatus() != 'I' {
			_ = t.conn.Close(t.ctx)
		}
		return err
	}
	if tag.String() == "ROLLBACK" {
		return pgx.ErrTxCommitRollback
	}
	return nil
}

func (t *tx) Rollback() error {
	if t.done {
		return pgx.ErrTxClosed
	}
	t.done = true
	if _, err := t.conn.Exec(t.ctx, "rollback"); err != nil {
		_ = t.conn.Close(t.ctx)
		return err
	}
	return nil
}
