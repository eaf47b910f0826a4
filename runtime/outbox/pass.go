package outbox

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/streamgen/streamgen/runtime"
)

// row is a message of the outbox table, as the relay publishes it.
type row struct {
	id  int64
	key routeKey
	msg runtime.Message
	// bad says why the row cannot be made a message (its headers or
	// properties are not the JSON Tx writes); it then fails its route.
	bad error
}

// passResult is what a pass did.
type passResult struct {
	taken     int  // rows read
	published int  // rows published, confirmed and removed
	more      bool // there may be more to take at once
	// failed is the first failure of a publish, or nil.
	failed error
}

// pass takes a batch of rows, publishes them and removes the confirmed
// ones. force tries the routes that wait after a failure too. It returns
// an error when the database fails; a failed publish is in the result.
func (r *Relay) pass(ctx context.Context, force bool) (passResult, error) {
	lock := r.passLock()
	lock.Lock()
	defer lock.Unlock()
	// The batch in hand is finished when ctx ends (a shutdown): its
	// confirms awaited, the confirmed rows removed.
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.drainTimeout)
	defer cancel()
	skip := r.waiting(force)
	if r.o.dialect == PostgreSQL {
		return r.passPostgres(ctx, pctx, skip)
	}
	return r.passSQLite(ctx, pctx, skip)
}

// waiting returns the routes that wait after a failure and are not due,
// none when force is set. The pass lock is held.
func (r *Relay) waiting(force bool) []routeKey {
	if force {
		return nil
	}
	now := time.Now()
	var out []routeKey
	for k, st := range r.routes {
		if now.Before(st.retryAt) {
			out = append(out, k)
		}
	}
	return out
}

// passPostgres is a pass on PostgreSQL, in one transaction: it claims
// routes by locking their oldest rows (FOR UPDATE SKIP LOCKED: a route
// another relay holds is skipped), reads their next rows, publishes them,
// removes those confirmed, and commits.
func (r *Relay) passPostgres(ctx, pctx context.Context, skip []routeKey) (passResult, error) {
	tx, err := r.o.db.BeginTx(pctx, nil)
	if err != nil {
		return passResult{}, fmt.Errorf("outbox: begin: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	skipEx, skipRt := make([]string, len(skip)), make([]string, len(skip))
	for i, k := range skip {
		skipEx[i], skipRt[i] = k.exchange, k.route
	}
	heads, err := tx.QueryContext(pctx, claimSQL, r.cfg.maxRoutes, skipEx, skipRt)
	if err != nil {
		return passResult{}, fmt.Errorf("outbox: claim routes: %w", err)
	}
	var exchanges, routes []string
	for heads.Next() {
		var id int64
		var ex, rt string
		if err := heads.Scan(&id, &ex, &rt); err != nil {
			heads.Close()
			return passResult{}, fmt.Errorf("outbox: claim routes: %w", err)
		}
		exchanges, routes = append(exchanges, ex), append(routes, rt)
	}
	if err := heads.Err(); err != nil {
		return passResult{}, fmt.Errorf("outbox: claim routes: %w", err)
	}
	if len(routes) == 0 {
		return passResult{}, tx.Commit()
	}
	// The batch is shared among the routes claimed, each at least a few
	// rows: one route alone gets the whole batch.
	perRoute := max(r.cfg.batch/len(routes), min(r.cfg.batch, 16))
	rows, err := tx.QueryContext(pctx, readClaimedSQL, exchanges, routes, perRoute)
	if err != nil {
		return passResult{}, fmt.Errorf("outbox: read messages: %w", err)
	}
	batch, err := scanRows(rows)
	if err != nil {
		return passResult{}, err
	}
	res := passResult{taken: len(batch), more: len(routes) == r.cfg.maxRoutes}
	perCount := map[routeKey]int{}
	for _, rw := range batch {
		perCount[rw.key]++
		if perCount[rw.key] == perRoute {
			res.more = true
		}
	}
	confirmed, failed := r.publish(ctx, pctx, batch)
	res.failed = failed
	if len(confirmed) > 0 {
		if _, err := tx.ExecContext(pctx, "DELETE FROM streamgen_outbox WHERE id = ANY($1::bigint[])", confirmed); err != nil {
			return res, fmt.Errorf("outbox: remove %d published messages (they will be published again): %w", len(confirmed), err)
		}
	}
	if err := tx.Commit(); err != nil {
		return res, fmt.Errorf("outbox: remove %d published messages (they will be published again): %w", len(confirmed), err)
	}
	res.published = len(confirmed)
	// A route that waited sent its oldest row alone: the rest follows.
	res.more = res.more || res.published > 0
	return res, nil
}

// claimSQL locks the oldest row of up to $1 routes, oldest first, except
// the routes in $2/$3 (exchanges, routes) and those whose oldest row
// another relay holds. The routes are found with a skip scan of the
// (exchange, route, id) index: one index probe per route, however many
// rows each holds.
const claimSQL = `WITH RECURSIVE routes(exchange, route) AS (
    (SELECT exchange, route FROM streamgen_outbox ORDER BY exchange, route LIMIT 1)
  UNION ALL
    SELECT n.exchange, n.route FROM routes r CROSS JOIN LATERAL (
        SELECT o.exchange, o.route FROM streamgen_outbox o
        WHERE (o.exchange, o.route) > (r.exchange, r.route)
        ORDER BY o.exchange, o.route LIMIT 1) n
), heads AS (
    SELECT h.id FROM routes r CROSS JOIN LATERAL (
        SELECT o.id FROM streamgen_outbox o
        WHERE o.exchange = r.exchange AND o.route = r.route
        ORDER BY o.id LIMIT 1) h
    WHERE NOT EXISTS (SELECT 1 FROM unnest($2::text[], $3::text[]) AS s(exchange, route)
        WHERE s.exchange = r.exchange AND s.route = r.route)
)
SELECT o.id, o.exchange, o.route FROM streamgen_outbox o
WHERE o.id IN (SELECT id FROM heads)
ORDER BY o.id
LIMIT $1
FOR UPDATE OF o SKIP LOCKED`

// readClaimedSQL reads the first $3 rows of each route claimed ($1/$2),
// in id order.
const readClaimedSQL = `SELECT m.id, m.exchange, m.route, m.message_id, m.message_type, m.content_type, m.headers, m.properties, m.body
FROM unnest($1::text[], $2::text[]) AS c(exchange, route)
CROSS JOIN LATERAL (
    SELECT o.* FROM streamgen_outbox o
    WHERE o.exchange = c.exchange AND o.route = c.route
    ORDER BY o.id LIMIT $3) m
ORDER BY m.id`

// passSQLite is a pass on SQLite, where a database has one writer: it
// reads the oldest rows, publishes them and removes those confirmed, each
// statement a transaction of its own, so that the relay never holds the
// write lock while it waits for the broker.
func (r *Relay) passSQLite(ctx, pctx context.Context, skip []routeKey) (passResult, error) {
	var q strings.Builder
	q.WriteString("SELECT id, exchange, route, message_id, message_type, content_type, headers, properties, body FROM streamgen_outbox")
	args := make([]any, 0, 2*len(skip)+1)
	if len(skip) > 0 {
		q.WriteString(" WHERE (exchange, route) NOT IN (VALUES ")
		for i, k := range skip {
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteString("(?, ?)")
			args = append(args, k.exchange, k.route)
		}
		q.WriteString(")")
	}
	q.WriteString(" ORDER BY id LIMIT ?")
	args = append(args, r.cfg.batch)
	// Each statement waits out another connection's write (whileBusy):
	// a removal that gave up would leave its rows to be published again.
	var batch []row
	err := r.o.whileBusy(pctx, func() error {
		rows, err := r.o.db.QueryContext(pctx, q.String(), args...)
		if err != nil {
			return fmt.Errorf("outbox: read messages: %w", err)
		}
		batch, err = scanRows(rows)
		return err
	})
	if err != nil {
		return passResult{}, err
	}
	res := passResult{taken: len(batch), more: len(batch) == r.cfg.batch}
	if len(batch) == 0 {
		return res, nil
	}
	confirmed, failed := r.publish(ctx, pctx, batch)
	res.failed = failed
	const chunk = 500
	for start := 0; start < len(confirmed); start += chunk {
		ids := confirmed[start:min(start+chunk, len(confirmed))]
		args := make([]any, len(ids))
		for i, id := range ids {
			args[i] = id
		}
		stmt := "DELETE FROM streamgen_outbox WHERE id IN (?" + strings.Repeat(", ?", len(ids)-1) + ")"
		err := r.o.whileBusy(pctx, func() error {
			_, err := r.o.db.ExecContext(pctx, stmt, args...)
			return err
		})
		if err != nil {
			res.published = start
			return res, fmt.Errorf("outbox: remove %d published messages (they will be published again): %w", len(confirmed)-start, err)
		}
	}
	res.published = len(confirmed)
	// A route that waited sent its oldest row alone: the rest follows.
	res.more = res.more || res.published > 0
	return res, nil
}

// scanRows reads rows of the outbox table, in the order of the query, and
// closes them.
func scanRows(rows *sql.Rows) ([]row, error) {
	defer rows.Close()
	var out []row
	for rows.Next() {
		var rw row
		var headers, props string
		if err := rows.Scan(&rw.id, &rw.key.exchange, &rw.key.route, &rw.msg.ID, &rw.msg.Type, &rw.msg.ContentType, &headers, &props, &rw.msg.Body); err != nil {
			return nil, fmt.Errorf("outbox: read messages: %w", err)
		}
		rw.msg.Exchange = rw.key.exchange
		rw.bad = decodeStored(&rw.msg, headers, props)
		out = append(out, rw)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("outbox: read messages: %w", err)
	}
	return out, nil
}

// decodeStored sets m's headers and properties from the columns Tx wrote.
func decodeStored(m *runtime.Message, headers, props string) error {
	if headers != "" && headers != "{}" {
		if err := json.Unmarshal([]byte(headers), &m.Headers); err != nil {
			return fmt.Errorf("outbox: the row's headers are not a JSON object of strings: %w", err)
		}
	}
	if props != "" && props != "{}" {
		var s stored
		if err := json.Unmarshal([]byte(props), &s); err != nil {
			return fmt.Errorf("outbox: the row's properties are not the JSON Tx writes: %w", err)
		}
		m.Properties = runtime.Properties{
			CorrelationID: s.CorrelationID, ReplyTo: s.ReplyTo, Priority: s.Priority,
			Expiration: time.Duration(s.ExpirationMS) * time.Millisecond, Timestamp: s.Timestamp, AppID: s.AppID,
		}
		m.AllowUnroutable = s.AllowUnroutable
	}
	return nil
}

// errNotSent marks a row that was not sent: its route stopped before it.
var errNotSent = errors.New("not sent: an earlier message of its route was not published")

// publish publishes batch, in id order, pipelined when the publisher has
// PublishAsync, and waits for every outcome. It returns the ids to remove,
// a prefix of each route's rows, each confirmed; and the first failure.
// A route stops at its first failure: its later rows are not sent once
// the failure is known. A route that waits after a failure sends its
// oldest row alone. ctx ending stops the sending; pctx bounds the wait
// for the outcomes of what was sent. The pass lock is held.
func (r *Relay) publish(ctx, pctx context.Context, batch []row) ([]int64, error) {
	// Sending stops when ctx ends (a shutdown): what was sent is awaited.
	sendCtx, stopSending := context.WithCancel(ctx)
	defer stopSending()
	stop := context.AfterFunc(pctx, stopSending)
	defer stop()
	var mu sync.Mutex
	outcomes := make([]error, len(batch))
	known := make([]bool, len(batch))
	stopped := map[routeKey]bool{}
	sent := map[routeKey]int{}
	var pending sync.WaitGroup
	for i, rw := range batch {
		mu.Lock()
		halted := stopped[rw.key]
		mu.Unlock()
		_, probing := r.routes[rw.key]
		switch {
		case halted || sendCtx.Err() != nil || (probing && sent[rw.key] > 0):
			outcomes[i], known[i] = errNotSent, true
			continue
		case rw.bad != nil:
			outcomes[i], known[i] = rw.bad, true
			mu.Lock()
			stopped[rw.key] = true
			mu.Unlock()
			continue
		}
		sent[rw.key]++
		if r.async == nil {
			err := r.pub.Publish(sendCtx, rw.key.route, rw.msg)
			outcomes[i], known[i] = err, true
			if err != nil {
				mu.Lock()
				stopped[rw.key] = true
				mu.Unlock()
			}
			continue
		}
		pending.Add(1)
		r.async.PublishAsync(sendCtx, rw.key.route, rw.msg, func(err error) {
			mu.Lock()
			outcomes[i], known[i] = err, true
			if err != nil {
				stopped[rw.key] = true
			}
			mu.Unlock()
			pending.Done()
		})
	}
	waited := make(chan struct{})
	go func() {
		pending.Wait()
		close(waited)
	}()
	select {
	case <-waited:
	case <-pctx.Done():
	}
	mu.Lock()
	defer mu.Unlock()
	// Each route's confirmed prefix.
	var confirmed []int64
	var first error
	blocked := map[routeKey]bool{}
	failedAt := map[routeKey]int{}
	published := map[routeKey]bool{}
	for i, rw := range batch {
		if blocked[rw.key] {
			continue
		}
		err := outcomes[i]
		if !known[i] {
			err = fmt.Errorf("no outcome within %v", r.cfg.drainTimeout)
		}
		if err == nil {
			confirmed = append(confirmed, rw.id)
			published[rw.key] = true
			continue
		}
		blocked[rw.key] = true
		if errors.Is(err, errNotSent) {
			continue
		}
		failedAt[rw.key] = i
		if first == nil {
			first = fmt.Errorf("outbox: publish message %s (row %d) to %s: %w", rw.msg.ID, rw.id, rw.key, err)
		}
	}
	r.noteOutcomes(batch, outcomes, failedAt, published)
	return confirmed, first
}

// noteOutcomes updates the failing routes after a pass: a route whose
// publish failed waits, longer after each failure in a row, and is
// logged; a route that waited and published again is well. The pass lock
// is held.
func (r *Relay) noteOutcomes(batch []row, outcomes []error, failedAt map[routeKey]int, published map[routeKey]bool) {
	seen := map[routeKey]bool{}
	for _, rw := range batch {
		seen[rw.key] = true
	}
	log := r.logger()
	for k := range seen {
		i, failed := failedAt[k]
		st := r.routes[k]
		if !failed {
			if st != nil && published[k] {
				log.Info("outbox: the route publishes again", "route", k.String(), "failures", st.failures)
				delete(r.routes, k)
			}
			continue
		}
		if st == nil {
			st = &routeState{}
			r.routes[k] = st
		}
		st.failures++
		wait := r.cfg.backoff
		for n := 1; n < st.failures && wait < r.cfg.maxBackoff; n++ {
			wait *= 2
		}
		wait = min(wait, r.cfg.maxBackoff)
		st.retryAt, st.err, st.id, st.messageID = time.Now().Add(wait), outcomes[i], batch[i].id, batch[i].msg.ID
		log.Warn("outbox: a message was not published; its route waits and tries again",
			"route", k.String(), "row", st.id, "message_id", st.messageID, "message_type", batch[i].msg.Type,
			"failures", st.failures, "retry_in", wait, "err", st.err)
	}
	r.noteRoutes()
}
