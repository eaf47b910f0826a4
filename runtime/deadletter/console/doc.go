// Package console is a dead-letter console in the browser: it shows an
// operator why messages failed and lets them replay or purge them, as a
// thin layer over package deadletter. It works over any
// deadletter.Store: a RabbitMQ dead-letter queue
// (rabbitmq.DialDeadLetterQueue), or the directory a ZeroMQ keeper writes
// (zeromq.OpenDeadLetterDir); it imports neither broker package.
//
// The pages are rendered on the server with html/template, and all they
// need (one stylesheet) is embedded: no script at all, nothing from
// elsewhere.
//   - The overview: each dead-letter queue with its count, its groups
//     (letters of one type and normalised reason), newest first, and an
//     SVG chart of the letters parked over time, per group.
//   - A group: its letters, newest first, a page at a time, with their
//     message id, type, source, attempts, park time and the first line
//     of the reason.
//   - A letter: its explanation, properties, trace id, headers and body
//     (indented when it is JSON, a hex dump and base64 when it is not
//     text).
//   - Actions: replay a letter, the letters ticked or a group, to their
//     source or a named queue (at an address, which the confirm page asks
//     for, when the store replays to one: deadletter.TargetKinds); purge
//     them; export them as JSON Lines.
//     Replay and purge first show what they would do (counted in the
//     index, or by a dry run) and ask to confirm; afterwards the page
//     says how many letters were replayed or purged, and why any failed.
//
// The pages are served from an index of each queue, which one streaming
// scan builds: the counts, the groups, the chart, and each group's
// letters (a row each, newest first, at most 250,000 letters, and the
// newest 32 MiB of letters whole, for their pages: 67 MiB for 100,000
// letters, at most about 120 MiB a queue), so that a page does not read
// the queue again. Every page says when its letters were read.
// The queue is read again in the background when a page finds the index
// older than Options.Fresh (and than five times the last reading took),
// and at once after every action: until that reading ends, the pages say
// their figures are from before the action, and refresh themselves. A
// page without an index waits for the reading Options.Wait, then shows
// how far it got. Past the index's bounds a group page or a letter page
// reads the queue itself.
//
// Security. Letters are input from anyone who can publish, and the
// actions move production messages:
//   - Every page but the sign-in page needs the operator token
//     (Options.Token, or a random one made by New: Token returns it). A
//     sign-in opens a session (an HttpOnly, SameSite=Strict cookie) that
//     lives in memory for 12 hours.
//   - Actions are POST only, each with a CSRF token of its session and
//     action, good once and for 30 minutes; a POST from another site is
//     refused. Nothing changes on a GET.
//   - Every byte of a letter is escaped by html/template, and the
//     Content-Security-Policy forbids any script (default-src 'none').
//     Pages cannot be framed and are not cached.
//   - Every action and sign-in is logged (Options.Logger) with what was
//     done and how many letters it took, and with the token's Fingerprint,
//     never the token. Options.Redact rewrites every error text shown or
//     logged, to hide a broker password.
//
// Run it with streamgen dlq serve, or mount it in a service beside its
// health endpoint, built from the App so that it knows every
// subscription's dead-letter queues:
//
//	dlq, err := console.ForApp(ctx, app, rabbitmq.DeadLetterOpener(url), console.Options{
//		Prefix: "/dlq", Token: os.Getenv("STREAMGEN_DLQ_TOKEN"),
//	})
//	if err != nil { ... }
//	defer dlq.Close()
//	mux.Handle("/readyz", app.Health())
//	mux.Handle("/dlq/", dlq)
package console
