package outbox

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/stdlib"
)

// notifyChannel is the channel the migration's trigger notifies when a
// transaction that wrote to the outbox commits.
const notifyChannel = "streamgen_outbox"

// errCannotListen: the database's driver is not pgx, whose connection the
// relay listens on.
var errCannotListen = errors.New("the database is not opened with github.com/jackc/pgx/v5/stdlib, on whose connection the relay listens")

// listen wakes the relay on every notification of notifyChannel, on a
// connection of its own, until ctx ends. It connects again after a
// failure (a restarted server), waking the relay each time it listens
// anew, for what was committed while it did not. Polling goes on all the
// while.
func (r *Relay) listen(ctx context.Context) {
	wait := time.Duration(0)
	for ctx.Err() == nil {
		listened, err := r.listenOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, errCannotListen) {
			r.logger().Info("outbox: the relay polls only", "reason", err.Error(), "poll", r.cfg.poll)
			return
		}
		if listened {
			wait = 0
		}
		wait = min(max(2*wait, r.cfg.dbBackoff), r.cfg.dbMaxBackoff)
		r.logger().Warn("outbox: the relay cannot listen for commits; it polls meanwhile and listens again", "err", err, "retry_in", wait)
		r.sleep(ctx, wait, false)
	}
}

// listenOnce listens on one connection until it fails or ctx ends, and
// reports whether it listened at all. The connection is never handed back
// to the pool: it is closed.
func (r *Relay) listenOnce(ctx context.Context) (listened bool, err error) {
	conn, err := r.o.db.Conn(ctx)
	if err != nil {
		return false, fmt.Errorf("outbox: listen: %w", err)
	}
	defer func() { _ = conn.Close() }()
	err = conn.Raw(func(dc any) error {
		sc, ok := dc.(*stdlib.Conn)
		if !ok {
			return errCannotListen
		}
		pc := sc.Conn()
		if _, err := pc.Exec(ctx, "LISTEN "+notifyChannel); err != nil {
			return errors.Join(fmt.Errorf("outbox: listen: %w", err), driver.ErrBadConn)
		}
		listened = true
		r.Wake()
		for {
			if _, err := pc.WaitForNotification(ctx); err != nil {
				// A connection that listens must not serve another query.
				return errors.Join(fmt.Errorf("outbox: listen: %w", err), driver.ErrBadConn)
			}
			r.Wake()
		}
	})
	return listened, err
}
