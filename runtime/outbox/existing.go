package outbox

import (
	"context"
	"fmt"
)

// WithoutMigration makes Open leave the database as it is: for a
// database whose migrations you run yourself (Migration gives the SQL),
// or a tool that only reads (streamgen outbox status). Open then fails
// when the outbox table is missing.
func WithoutMigration() OpenOption { return func(o *Outbox) { o.noMigrate = true } }

// checkTables fails when the outbox table is missing.
func (o *Outbox) checkTables(ctx context.Context) error {
	if _, err := o.db.ExecContext(ctx, "SELECT 1 FROM streamgen_outbox WHERE 1 = 0"); err != nil {
		return fmt.Errorf("outbox: the database has no outbox table (streamgen_outbox) that can be read: %w: open it with outbox.Open without WithoutMigration once, or run the SQL of outbox.Migration", err)
	}
	return nil
}
