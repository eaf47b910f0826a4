package outbox

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"log/slog"
	"strings"
	"sync"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Migration returns the SQL that creates the outbox's tables (and, on
// PostgreSQL, the trigger that wakes relays) in dialect d: what Open runs
// when they are missing, for you to read or to run with your own
// migrations. It is safe to run again.
func Migration(d Dialect) string {
	b, err := migrations.ReadFile("migrations/" + string(d) + ".sql")
	if err != nil {
		return ""
	}
	return string(b)
}

// Outbox is a transactional outbox and inbox on a database: messages
// published inside a transaction (Tx) are written to a table with the
// transaction's other changes, and a relay publishes them to the broker
// once they are committed.
type Outbox struct {
	inbox   inboxConfig // the inbox's settings (InboxRetention)
	db      *sql.DB
	dialect Dialect
	log     *slog.Logger

	noMigrate   bool        // WithoutMigration
	relayCfg    relayConfig // the relays' settings (OpenOptions)
	sqliteRelay sync.Mutex  // SQLite: held for a relay's pass (Relay.passLock)
}

// OpenOption sets up an Outbox.
type OpenOption func(*Outbox)

// WithLogger gives the Outbox a logger; by default it logs nothing.
func WithLogger(l *slog.Logger) OpenOption { return func(o *Outbox) { o.log = l } }

// Open returns the outbox on db, PostgreSQL (github.com/jackc/pgx/v5/stdlib)
// or SQLite (modernc.org/sqlite), and creates its tables when they are
// missing (Migration), unless WithoutMigration.
func Open(ctx context.Context, db *sql.DB, opts ...OpenOption) (*Outbox, error) {
	d, err := dialectOf(db)
	if err != nil {
		return nil, err
	}
	o := &Outbox{db: db, dialect: d, log: slog.New(slog.DiscardHandler)}
	for _, opt := range opts {
		opt(o)
	}
	migrate := o.migrate
	if o.noMigrate {
		migrate = o.checkTables
	}
	if err := migrate(ctx); err != nil {
		return nil, err
	}
	return o, nil
}

// DB is the database the outbox is on.
func (o *Outbox) DB() *sql.DB { return o.db }

// Dialect is the outbox's database.
func (o *Outbox) Dialect() Dialect { return o.dialect }

// migrate runs the migration, statement by statement on SQLite (whose
// driver runs one statement a call), at once on PostgreSQL (whose
// function body holds semicolons).
func (o *Outbox) migrate(ctx context.Context) error {
	sqlText := Migration(o.dialect)
	if o.dialect == PostgreSQL {
		// Two Opens at once would race to create the same objects: one
		// transaction-level lock orders them.
		tx, err := o.db.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("outbox: create the tables: %w", err)
		}
		defer func() { _ = tx.Rollback() }()
		if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(hashtextextended('streamgen_outbox migration', 0))"); err != nil {
			return fmt.Errorf("outbox: create the tables: %w", err)
		}
		if _, err := tx.ExecContext(ctx, sqlText); err != nil {
			return fmt.Errorf("outbox: create the tables: %w", err)
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("outbox: create the tables: %w", err)
		}
		return nil
	}
	for _, stmt := range sqliteStatements(sqlText) {
		if _, err := o.db.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("outbox: create the tables: %w", err)
		}
	}
	return nil
}

// sqliteStatements splits the SQLite migration into statements: it has
// no semicolon but at the end of one.
func sqliteStatements(sqlText string) []string {
	var out []string
	var cur strings.Builder
	for _, line := range strings.Split(sqlText, "\n") {
		if t := strings.TrimSpace(line); t == "" || strings.HasPrefix(t, "--") {
			continue
		}
		cur.WriteString(line)
		cur.WriteString("\n")
		if strings.HasSuffix(strings.TrimSpace(line), ";") {
			out = append(out, cur.String())
			cur.Reset()
		}
	}
	return out
}
