// Package rows is streamgen's batch example: a RabbitMQ worker that writes
// meter readings into a table up to 100 at a time, one insert per batch,
// with a //stream:subscriber annotation on a method of the Store that
// holds the table.
//
//   - Store.Insert takes a batch of readings and the Metadata of each. A
//     reading without a meter can never be written: Insert fails it
//     alone with runtime.DeadLetter inside a runtime.BatchFailures, so it
//     is parked on readings.dead with its own reason while the others are
//     written and acknowledged.
//   - When the table refuses the whole insert (ErrTableDown), Insert
//     returns the error, and every reading of the batch is retried, each
//     by its own attempt count, up to five deliveries.
//
// go generate writes streamgen_gen.go: Mount, which takes the *Store, and
// the typed publisher PublishReading. rows_test.go runs the worker on the
// in-process broker of runtime/streamtest.
package rows
