// Package examples holds the example services of streamgen and the tests
// that keep the code of the README and the guide (docs/) working.
//
//   - examples/billing: the billing service on ZeroMQ (make demo runs it).
//   - examples/orders: the orders service on RabbitMQ (make demo-rabbitmq).
//   - examples/rows: a batch handler writing rows.
//   - examples/shipping: a *sql.Tx handler, each message handled once,
//     on PostgreSQL or SQLite.
//   - examples/pricing: request/reply, a handler that returns its answer
//     and the typed client that asks, on RabbitMQ.
//   - examples/internal/demo: what the demos share to tell what happens.
//
// readme_test.go builds the README's quick start as a module of its own,
// runs go generate, go vet and its test there, and type-checks every other
// Go block of the README and the guide; readme_run_test.go runs their tests
// and programs, docs_links_test.go checks their links, and
// architecture_test.go holds docs/architecture.md's picture to the code
// (docs/development.md says what each checks).
package examples
