// Package billing is the billing service of streamgen's ZeroMQ example: two
// workers and a dead-letter reader, each an ordinary Go function marked
// with a //stream:subscriber annotation.
//
//   - Work charges a job. A job that fails asks for another try in
//     Backoff (30 seconds) with runtime.RetryAfter; the annotation caps it
//     at five deliveries, the first included, and sends each retry copy
//     back into the jobs queue (out_retry=self). The fifth failure is
//     dropped with a warning that names the subscription.
//   - SendInvoice sends an invoice. An invoice without an amount cannot be
//     sent, and sending it again changes nothing: the annotation names a
//     dead-letter queue and no retries, so the failure parks it on
//     invoices.dead at once.
//   - Park reads invoices.dead and logs each parked invoice with the reason
//     the runtime wrote into its headers.
//
// go generate writes streamgen_gen.go: Mount, which registers the three
// subscriptions on an App, and the typed publishers PublishJob,
// PublishInvoiceToInvoices and PublishInvoiceToInvoicesDead. The service's
// main is in cmd/billing; cmd/billing-demo runs it on loopback and tells
// what happens (make demo). billing_test.go tests the handlers with the
// in-process broker of runtime/streamtest.
//
// The charges and invoices are stand-ins for real work: Job.FailAttempts
// makes the first deliveries of a job fail, as a flaky payment gateway
// would, so that retries can be seen and tested.
package billing
