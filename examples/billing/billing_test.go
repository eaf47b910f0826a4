package billing_test

import (
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/streamgen/streamgen/examples/billing"
	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

// start runs the billing service in process, on the emulated ZeroMQ broker
// with a fake clock, mounted by the generated Mount.
func start(t *testing.T) *streamtest.Harness {
	t.Helper()
	h := streamtest.New(t, runtime.ZeroMQ, streamtest.WithAppName("billing"))
	billing.Mount(h.App(), h.Broker())
	h.Start()
	return h
}

func attempts(ds []streamtest.Delivery) []int {
	out := make([]int, len(ds))
	for i, d := range ds {
		out[i] = d.Attempt
	}
	return out
}

func verdicts(ds []streamtest.Delivery) []streamtest.VerdictKind {
	out := make([]streamtest.VerdictKind, len(ds))
	for i, d := range ds {
		out[i] = d.Verdict.Kind
	}
	return out
}

func stats(t *testing.T, h *streamtest.Harness, name string) runtime.SubscriptionStats {
	t.Helper()
	for _, s := range h.App().Stats() {
		if s.Subscription == name {
			return s
		}
	}
	t.Fatalf("no counters for subscription %q", name)
	return runtime.SubscriptionStats{}
}

// The reference's job test: a job that always fails is delivered five
// times, Backoff apart; its last copy carries the retry count 4; then it is
// dropped with a warning, and nothing comes back.
func TestFailingJobIsDeliveredFiveTimesThenDropped(t *testing.T) {
	h := start(t)
	if err := billing.PublishJob(t.Context(), h.Broker(), billing.Job{ID: 3, AmountCents: 4200, FailAttempts: 99}, runtime.WithMessageID("job-3")); err != nil {
		t.Fatal(err)
	}
	h.Wait()
	begin := h.Now()
	if n := len(h.Deliveries("jobs")); n != 1 {
		t.Fatalf("after publishing: %d deliveries, want 1", n)
	}
	h.Advance(billing.Backoff - time.Second)
	if n := len(h.Deliveries("jobs")); n != 1 {
		t.Fatalf("a second before the backoff ends: %d deliveries, want still 1", n)
	}
	h.Advance(time.Second)
	for range 3 {
		h.Advance(billing.Backoff)
	}
	h.Advance(time.Hour) // nothing more comes, however long we wait

	ds := h.Deliveries("jobs")
	if got, want := attempts(ds), []int{1, 2, 3, 4, 5}; !slices.Equal(got, want) {
		t.Fatalf("attempts %v, want %v", got, want)
	}
	if got := ds[4].RetryCount(); got != 4 {
		t.Errorf("the last copy carries retry count %d, want 4", got)
	}
	if got := ds[4].Headers[runtime.RetryCountHeader]; got != "4" {
		t.Errorf("the last copy's %s header is %q, want \"4\"", runtime.RetryCountHeader, got)
	}
	want := []streamtest.VerdictKind{streamtest.VerdictRetry, streamtest.VerdictRetry, streamtest.VerdictRetry, streamtest.VerdictRetry, streamtest.VerdictDrop}
	if got := verdicts(ds); !slices.Equal(got, want) {
		t.Fatalf("verdicts %v, want %v", got, want)
	}
	for i, d := range ds {
		if at := d.Time.Sub(begin); at != time.Duration(i)*billing.Backoff {
			t.Errorf("delivery %d came at +%v, want +%v", i+1, at, time.Duration(i)*billing.Backoff)
		}
		if i < 4 && (d.Verdict.Delay != billing.Backoff || d.Verdict.Queue != "jobs") {
			t.Errorf("retry %d went to %q after %v, want back into its own queue (self) after %v", i+1, d.Verdict.Queue, d.Verdict.Delay, billing.Backoff)
		}
	}
	if n := h.Pending(); n != 0 {
		t.Errorf("%d copies still waiting, want none", n)
	}
	drops := h.Logs().Find(slog.LevelWarn, "message dropped")
	if len(drops) != 1 {
		t.Fatalf("%d drop warnings, want 1", len(drops))
	}
	if d := drops[0]; d.Attr("subscription") != "jobs" || d.Attr("message_id") != "job-3" ||
		d.Attr("reason") != "failed on attempt 5 of 5: charge job 3: the payment gateway is unavailable" {
		t.Errorf("drop warning %s", d)
	}
	if s := stats(t, h, "jobs"); s.Delivered != 5 || s.Retried != 4 || s.Dropped != 1 || s.Acked != 0 {
		t.Errorf("jobs counters %+v, want 5 delivered, 4 retried, 1 dropped", s)
	}
}

// The reference's invoice test: an invoice without an amount reaches the
// handler on invoices.dead after one delivery; a good one is sent.
func TestZeroAmountInvoiceReachesTheDeadLetterHandlerAfterOneDelivery(t *testing.T) {
	h := start(t)
	if err := billing.PublishInvoiceToInvoices(t.Context(), h.Broker(), billing.Invoice{ID: 1, AmountCents: 1250}, runtime.WithMessageID("inv-1")); err != nil {
		t.Fatal(err)
	}
	if err := billing.PublishInvoiceToInvoices(t.Context(), h.Broker(), billing.Invoice{ID: 2}, runtime.WithMessageID("inv-2")); err != nil {
		t.Fatal(err)
	}
	h.Wait()

	sent := h.Deliveries("invoices")
	if got := attempts(sent); !slices.Equal(got, []int{1, 1}) {
		t.Fatalf("invoice deliveries have attempts %v, want [1 1]: one each", got)
	}
	byID := map[string]streamtest.Delivery{}
	for _, d := range sent {
		byID[d.MessageID] = d
	}
	if v := byID["inv-1"].Verdict; v.Kind != streamtest.VerdictAck {
		t.Errorf("the good invoice: %v, want ack", v.Kind)
	}
	if v := byID["inv-2"].Verdict; v.Kind != streamtest.VerdictPark || v.Queue != "invoices.dead" {
		t.Errorf("the zero invoice: %v to %q, want park on invoices.dead", v.Kind, v.Queue)
	}

	dead := h.Deliveries("invoices.dead")
	if len(dead) != 1 {
		t.Fatalf("the dead-letter handler got %d invoices, want 1", len(dead))
	}
	d := dead[0]
	var inv billing.Invoice
	if err := json.Unmarshal(d.Body, &inv); err != nil || inv != (billing.Invoice{ID: 2}) {
		t.Fatalf("the dead-letter handler got %s (%v), want invoice 2", d.Body, err)
	}
	if d.MessageID != "inv-2" || d.Attempt != 1 || d.Verdict.Kind != streamtest.VerdictAck {
		t.Errorf("dead letter %s attempt %d settled %v, want inv-2, attempt 1, ack", d.MessageID, d.Attempt, d.Verdict.Kind)
	}
	for header, want := range map[string]string{
		runtime.HeaderDeadLetterReason:   "failed: invoice 2: the invoice has no amount",
		runtime.HeaderDeadLetterSource:   "invoices",
		runtime.HeaderDeadLetterAttempts: "1",
		runtime.HeaderDeadLetterPoison:   "false",
	} {
		if got := d.Headers[header]; got != want {
			t.Errorf("dead letter header %s = %q, want %q", header, got, want)
		}
	}
	if s := stats(t, h, "invoices"); s.Delivered != 2 || s.Acked != 1 || s.Parked != 1 || s.Retried != 0 {
		t.Errorf("invoices counters %+v, want 2 delivered, 1 acked, 1 parked", s)
	}
}

func TestJobThatSucceedsIsChargedOnce(t *testing.T) {
	h := start(t)
	if err := billing.PublishJob(t.Context(), h.Broker(), billing.Job{ID: 1, AmountCents: 1250}, runtime.WithMessageID("job-1")); err != nil {
		t.Fatal(err)
	}
	h.Wait()
	h.Advance(time.Hour)
	ds := h.Deliveries("jobs")
	if len(ds) != 1 || ds[0].Attempt != 1 || ds[0].Verdict.Kind != streamtest.VerdictAck {
		t.Fatalf("deliveries %+v, want one, acked on attempt 1", ds)
	}
	if n := h.Pending(); n != 0 {
		t.Errorf("%d copies waiting, want none", n)
	}
	if s := stats(t, h, "jobs"); s.Delivered != 1 || s.Acked != 1 || s.Retried != 0 {
		t.Errorf("jobs counters %+v, want 1 delivered, 1 acked", s)
	}
}

func TestJobThatFailsTwiceSucceedsOnTheThirdAttempt(t *testing.T) {
	h := start(t)
	if err := billing.PublishJob(t.Context(), h.Broker(), billing.Job{ID: 2, AmountCents: 800, FailAttempts: 2}, runtime.WithMessageID("job-2")); err != nil {
		t.Fatal(err)
	}
	h.Wait()
	begin := h.Now()
	h.Advance(2 * billing.Backoff)
	h.Advance(time.Hour)
	ds := h.Deliveries("jobs")
	want := []streamtest.VerdictKind{streamtest.VerdictRetry, streamtest.VerdictRetry, streamtest.VerdictAck}
	if got := verdicts(ds); !slices.Equal(got, want) {
		t.Fatalf("verdicts %v, want %v", got, want)
	}
	if at := ds[2].Time.Sub(begin); at != 2*billing.Backoff {
		t.Errorf("the third delivery came at +%v, want +%v", at, 2*billing.Backoff)
	}
	if got := ds[2].RetryCount(); got != 2 {
		t.Errorf("the third delivery carries retry count %d, want 2", got)
	}
}

// The handlers log through slog.Default with the attributes the runtime
// uses; Park tells why an invoice was parked.
func TestHandlersLogWhatTheyDo(t *testing.T) {
	logs := streamtest.NewLogRecorder(nil)
	previous := slog.Default()
	slog.SetDefault(logs.Logger())
	t.Cleanup(func() { slog.SetDefault(previous) })

	h := start(t)
	if err := billing.PublishJob(t.Context(), h.Broker(), billing.Job{ID: 5, AmountCents: 100, FailAttempts: 1}, runtime.WithMessageID("job-5")); err != nil {
		t.Fatal(err)
	}
	if err := billing.PublishInvoiceToInvoices(t.Context(), h.Broker(), billing.Invoice{ID: 9}, runtime.WithMessageID("inv-9")); err != nil {
		t.Fatal(err)
	}
	h.Wait()
	h.Advance(billing.Backoff)

	failed := logs.Find(slog.LevelWarn, "charge failed")
	if len(failed) != 1 || failed[0].Attr("attempt") != "1" || failed[0].Attr("max_attempts") != "5" ||
		failed[0].Attr("message_id") != "job-5" || !strings.Contains(failed[0].Attr("err"), "payment gateway is unavailable") {
		t.Errorf("charge failed lines %v", failed)
	}
	charged := logs.Find(slog.LevelInfo, "job charged")
	if len(charged) != 1 || charged[0].Attr("attempt") != "2" || charged[0].Attr("amount") != "1.00" || charged[0].Attr("subscription") != "jobs" {
		t.Errorf("job charged lines %v", charged)
	}
	parked := logs.Find(slog.LevelError, "invoice parked for a person to look at")
	if len(parked) != 1 || parked[0].Attr("invoice") != "9" || parked[0].Attr("from") != "invoices" ||
		parked[0].Attr("reason") != "failed: invoice 9: the invoice has no amount" || parked[0].Attr("subscription") != "invoices.dead" {
		t.Errorf("parked lines %v", parked)
	}
}

// Below the default logger's level the handlers derive no logger per
// message: they give slog.LogAttrs the message's attributes at the call.
func TestHandlersDeriveNoLoggerPerMessage(t *testing.T) {
	testkit.RestoreDefaultLogger(t)
	counter := &testkit.CountingHandler{Level: slog.LevelError}
	slog.SetDefault(slog.New(counter))
	ctx := t.Context()
	md := runtime.Metadata{Subscription: "jobs", MessageID: "job-1", Attempt: 1, MaxAttempts: 5}
	job := billing.Job{ID: 1, AmountCents: 100, FailAttempts: 1}
	if err := billing.Work(ctx, job, md); err == nil {
		t.Fatal("the first delivery of a job that fails once succeeded")
	}
	md.Attempt = 2
	if err := billing.Work(ctx, job, md); err != nil {
		t.Fatal(err)
	}
	md = runtime.Metadata{Subscription: "invoices", MessageID: "inv-1", Attempt: 1, MaxAttempts: 1}
	if err := billing.SendInvoice(ctx, billing.Invoice{ID: 1, AmountCents: 100}, md); err != nil {
		t.Fatal(err)
	}
	md.Subscription = "invoices.dead"
	if err := billing.Park(ctx, billing.Invoice{ID: 2}, md); err != nil {
		t.Fatal(err)
	}
	if counter.Derived() != 0 || counter.Handled() != 1 {
		t.Errorf("%d loggers derived and %d records handled, want none derived and only Park's error handled", counter.Derived(), counter.Handled())
	}
}
