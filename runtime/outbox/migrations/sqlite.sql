-- streamgen's outbox and inbox tables on SQLite. outbox.Open runs this
-- when the tables are missing; it is safe to run again, and you may run it
-- yourself with your migrations instead. SQLite has one writer at a time,
-- so ids follow commit order.

-- A message published inside a transaction (Outbox.Tx), waiting for the
-- relay to publish it to its broker. The relay removes a row once the
-- broker confirmed the message.
CREATE TABLE IF NOT EXISTS streamgen_outbox (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    exchange     TEXT NOT NULL DEFAULT '',
    route        TEXT NOT NULL,
    message_id   TEXT NOT NULL,
    message_type TEXT NOT NULL,
    content_type TEXT NOT NULL DEFAULT '',
    headers      TEXT NOT NULL DEFAULT '{}',
    properties   TEXT NOT NULL DEFAULT '{}',
    body         BLOB NOT NULL,
    created_at   TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE INDEX IF NOT EXISTS streamgen_outbox_route ON streamgen_outbox (exchange, route, id);

-- The messages a subscription's *sql.Tx handler handled (see the
-- PostgreSQL migration).
CREATE TABLE IF NOT EXISTS streamgen_inbox (
    subscription TEXT NOT NULL,
    message_id   TEXT NOT NULL,
    handled_at   TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    PRIMARY KEY (subscription, message_id)
);
CREATE INDEX IF NOT EXISTS streamgen_inbox_handled_at ON streamgen_inbox (handled_at);
