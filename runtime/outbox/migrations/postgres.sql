-- streamgen's outbox and inbox tables on PostgreSQL. outbox.Open runs
-- this when the tables are missing; it is safe to run again, and you may
-- run it yourself with your migrations instead.

-- A message published inside a transaction (Outbox.Tx), waiting for the
-- relay to publish it to its broker. The relay removes a row once the
-- broker confirmed the message. id orders the rows of one route
-- (exchange, route) in commit order: Outbox.Tx takes a transaction lock
-- on the route before it inserts.
CREATE TABLE IF NOT EXISTS streamgen_outbox (
    id           BIGSERIAL PRIMARY KEY,
    exchange     TEXT NOT NULL DEFAULT '',  -- "" is the default exchange (a queue by name)
    route        TEXT NOT NULL,             -- the queue, or the routing key on exchange
    message_id   TEXT NOT NULL,
    message_type TEXT NOT NULL,
    content_type TEXT NOT NULL DEFAULT '',
    headers      TEXT NOT NULL DEFAULT '{}', -- JSON object of text headers
    properties   TEXT NOT NULL DEFAULT '{}', -- JSON: correlation_id, reply_to, priority, expiration_ms, timestamp, app_id, allow_unroutable
    body         BYTEA NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS streamgen_outbox_route ON streamgen_outbox (exchange, route, id);

-- Wakes the relays (LISTEN streamgen_outbox) when a transaction that
-- wrote to the outbox commits.
CREATE OR REPLACE FUNCTION streamgen_outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('streamgen_outbox', '');
    RETURN NULL;
END $$;
DROP TRIGGER IF EXISTS streamgen_outbox_notify ON streamgen_outbox;
CREATE TRIGGER streamgen_outbox_notify AFTER INSERT ON streamgen_outbox
    FOR EACH STATEMENT EXECUTE FUNCTION streamgen_outbox_notify();

-- The messages a subscription's *sql.Tx handler handled, recorded in the
-- handler's own transaction: a redelivery of one of them is acknowledged
-- without calling the handler again. Rows older than the retention are
-- removed in the background.
CREATE TABLE IF NOT EXISTS streamgen_inbox (
    subscription TEXT NOT NULL,
    message_id   TEXT NOT NULL,
    handled_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (subscription, message_id)
);
-- A BRIN index: records arrive in handled_at order, and it costs an
-- insert far less than a B-tree, while the cleaner's range deletes use it.
CREATE INDEX IF NOT EXISTS streamgen_inbox_handled_at ON streamgen_inbox USING brin (handled_at);
