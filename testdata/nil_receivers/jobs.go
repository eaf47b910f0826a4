// Package jobs has handler methods on two pointer types: Mount refuses a
// nil one of either, and names both when both are nil.
package jobs

import "context"

// Job is work to do.
type Job struct {
	ID int `json:"id"`
}

// Invoice is money to ask for.
type Invoice struct {
	ID int `json:"id"`
}

// Worker does jobs.
type Worker struct{ done chan<- int }

// Work does a job.
//
//stream:subscriber "jobs" broker=zeromq
func (w *Worker) Work(ctx context.Context, j Job) error {
	w.done <- j.ID
	return nil
}

// Biller sends invoices.
type Biller struct{ sent chan<- int }

// Send sends an invoice.
//
//stream:subscriber "invoices" broker=zeromq
func (b *Biller) Send(ctx context.Context, i Invoice) error {
	b.sent <- i.ID
	return nil
}
