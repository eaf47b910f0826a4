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
//     (letters of one type and normalised reason), the largest first, and
//     an SVG chart of the letters parked over time, per group.
//   - A group: its letters, newest first, a page at a time, with their
//     message id, type, source, attempts, park time and the first line
//     of the reason.
//   - A letter: its explanation, properties, trace id, headers and body
//     (indented when it is JSON, a hex dump and base64 when it is not
//     text); the broker's delivery counters (x-delivery-count,
//     x-acquired-count) apart from the headers, as the broker's
//     bookkeeping.
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
// the queue again. Every page says when its letters were read, and its
// figures (the headline count, the groups, the chart) are of that one
// reading; the queue's own count now is shown apart when it differs, and
// not while the queue is read (a RabbitMQ queue does not count the letters
// a reading holds).
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
//     lives in memory for 12 hours. A client (an IP address, an IPv6
//     /64) that sends 5 wrong tokens in a row waits a second before its
//     next try, twice as long after each wrong token since, up to 5
//     minutes: its tries meanwhile are refused with 429 and Retry-After,
//     without their token being checked. The log has a line when a client
//     sends its first wrong token and one when it is made to wait, then a
//     summary of the counts at most once a minute.
//   - The console answers only to its own address in a request's Host
//     (and, on loopback, to localhost, 127.0.0.1 and [::1] at its port),
//     so that a page of another site cannot reach it by a name of its own
//     (DNS rebinding); Options.AllowedHosts adds names.
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
