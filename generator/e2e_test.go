package generator

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/streamgen/streamgen/generator/internal/gentest"
)

// TestGoldenOutputsRunEndToEnd copies six golden cases with their wanted
// output into a module of their own, vets it, and runs tests there that
// drive the generated Mount and publishers on runtime/streamtest: the
// reference's failing job on ZeroMQ (five deliveries, the last with retry
// count 4, then dropped), every handler shape on RabbitMQ, handler
// methods called on the values Mount was given (a nil pointer refused by
// Run, naming its handlers), the publishers that //stream:publisher
// declares routing through an exchange, handlers that take a *sql.Tx,
// each message handled once over SQLite, and handlers that reply, each
// answered through its typed client, in its handler's codec.
func TestGoldenOutputsRunEndToEnd(t *testing.T) {
	dir := gentest.TempModule(t, "example.com/e2e")
	copyCase(t, "zeromq_basic", dir, "billing")
	copyCase(t, "shapes", dir, "shapes")
	copyCase(t, "methods", dir, "methods")
	copyCase(t, "publisher_directive", dir, "publisher")
	copyCase(t, "nil_receivers", dir, "jobs")
	copyCase(t, "tx_handlers", dir, "txorders")
	copyCase(t, "request_reply", dir, "pricing")
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("billing/billing_test.go", billingTest)
	write("shapes/shapes_test.go", shapesTest)
	write("methods/methods_test.go", methodsTest)
	write("publisher/publisher_test.go", publisherTest)
	write("jobs/jobs_test.go", nilReceiversTest)
	write("txorders/txorders_test.go", txTest)
	write("pricing/pricing_test.go", pricingTest)
	gentest.RunGo(t, dir, "vet", "./...")
	out := gentest.RunGo(t, dir, "test", "-count=1", "-v", "./...")
	for _, name := range []string{"TestFailingJobIsDeliveredFiveTimes", "TestEveryShapeIsCalled", "TestMethodsAreCalledOnTheValuesMountTakes", "TestDeclaredPublishersRoute", "TestANilReceiverIsRefused", "TestNilReceiversAreRefusedTogether", "TestTransactionalHandlersRunOnce", "TestTypedClientsGetTheirReplies", "TestTypedClientsSendTheirHandlersCodec"} {
		if !strings.Contains(out, "--- PASS: "+name) {
			t.Errorf("%s did not pass:\n%s", name, out)
		}
	}
}

const billingTest = `package billing

import (
	"context"
	"testing"
	"time"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

func TestFailingJobIsDeliveredFiveTimes(t *testing.T) {
	h := streamtest.New(t, runtime.ZeroMQ, streamtest.WithQuietLogs())
	Mount(h.App(), h.Broker())
	h.Start()
	ctx := context.Background()
	if err := PublishJob(ctx, h.Broker(), Job{ID: 1, Amount: -5}, runtime.WithMessageID("job-1")); err != nil {
		t.Fatal(err)
	}
	h.Wait()
	for range 10 {
		h.Advance(30 * time.Second)
	}
	ds := h.Deliveries("jobs")
	if len(ds) != 5 {
		t.Fatalf("%d deliveries, want 5", len(ds))
	}
	for i, d := range ds {
		if d.Attempt != i+1 || d.RetryCount() != i || d.MessageType != "Job" || d.MessageID != "job-1" {
			t.Errorf("delivery %d: attempt %d, retry count %d, type %q, id %q", i+1, d.Attempt, d.RetryCount(), d.MessageType, d.MessageID)
		}
	}
	if got := ds[3].Verdict.Kind; got != streamtest.VerdictRetry {
		t.Errorf("fourth delivery: %v, want retry", got)
	}
	if got := ds[4].Verdict.Kind; got != streamtest.VerdictDrop {
		t.Errorf("fifth delivery: %v, want drop", got)
	}

	// A good job is acknowledged at once.
	if err := PublishJob(ctx, h.Broker(), Job{ID: 2, Amount: 10}); err != nil {
		t.Fatal(err)
	}
	h.Wait()
	ds = h.Deliveries("jobs")
	if last := ds[len(ds)-1]; len(ds) != 6 || last.Verdict.Kind != streamtest.VerdictAck {
		t.Errorf("good job: %d deliveries, last %v; want 6, ack", len(ds), last.Verdict.Kind)
	}
}
`

const shapesTest = `package shapes

import (
	"context"
	"strings"
	"testing"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

func TestEveryShapeIsCalled(t *testing.T) {
	h := streamtest.New(t, runtime.RabbitMQ, streamtest.WithQuietLogs())
	Mount(h.App(), h.Broker())
	h.Start()
	ctx := context.Background()
	p := h.Broker()
	for _, err := range []error{
		PublishA(ctx, p, A{1}), PublishB(ctx, p, &B{2}), PublishC(ctx, p, C{3}), PublishD(ctx, p, &D{4}),
		PublishE(ctx, p, E{5}), PublishF(ctx, p, &F{6}), PublishG(ctx, p, G{7}), PublishH(ctx, p, &H{8}),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	h.Wait()
	want := map[string]streamtest.VerdictKind{
		"a": streamtest.VerdictAck, "b": streamtest.VerdictAck, "c": streamtest.VerdictAck, "d": streamtest.VerdictAck,
		"e": streamtest.VerdictAck, "f": streamtest.VerdictAck,
		// G retries on its first delivery; with one attempt allowed the
		// message is dropped. H drops it itself.
		"g": streamtest.VerdictDrop, "h": streamtest.VerdictDrop,
	}
	for sub, kind := range want {
		ds := h.Deliveries(sub)
		if len(ds) != 1 {
			t.Errorf("%s: %d deliveries, want 1", sub, len(ds))
			continue
		}
		if ds[0].Verdict.Kind != kind || ds[0].MessageType != strings.ToUpper(sub) {
			t.Errorf("%s: verdict %v type %q, want %v %q", sub, ds[0].Verdict.Kind, ds[0].MessageType, kind, strings.ToUpper(sub))
		}
	}
}
`

const methodsTest = `package orders

import (
	"context"
	"fmt"
	goruntime "runtime"
	"slices"
	"testing"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

func TestMethodsAreCalledOnTheValuesMountTakes(t *testing.T) {
	seen, out := make(chan string, 10), make(chan string, 10)
	h := streamtest.New(t, runtime.RabbitMQ, streamtest.WithQuietLogs())
	Mount(h.App(), h.Broker(), Ledger{Prefix: "audit: ", Out: out}, &Service{Seen: seen})
	h.Start()
	ctx := context.Background()
	p := h.Broker()
	for _, err := range []error{
		PublishOrderToOrders(ctx, p, Order{ID: "o1"}),
		PublishRefundToRefunds(ctx, p, &Refund{OrderID: "o2"}),
		PublishAudit(ctx, p, Audit{Line: "checked"}),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	h.Wait()
	close(seen)
	close(out)
	var got []string
	for s := range seen {
		got = append(got, s)
	}
	slices.Sort(got)
	if want := []string{"placed o1", "refunded o2 from refunds"}; !slices.Equal(got, want) {
		t.Errorf("the service saw %q, want %q", got, want)
	}
	if line := <-out; line != "audit: checked" {
		t.Errorf("the ledger wrote %q", line)
	}

	// A nil *Service is refused before anything runs.
	// The error says where Mount was called.
	app := runtime.NewApp("orders")
	_, _, line, _ := goruntime.Caller(0)
	Mount(app, streamtest.NewBroker(runtime.RabbitMQ, streamtest.NewClock(streamtest.DefaultStart())), Ledger{}, nil)
	want := fmt.Sprintf("runtime: Mount (at methods/methods_test.go:%d) was given a nil *orders.Service as service, whose methods Service.Place and Service.Refund handle messages: pass a *orders.Service that is not nil", line+1)
	stopped, cancel := context.WithCancel(ctx)
	cancel()
	if err := app.Run(stopped); err == nil || err.Error() != want {
		t.Errorf("Run with a nil *Service = %v, want %s", err, want)
	}
}
`

const nilReceiversTest = `package jobs

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

// run mounts the package with biller and worker and returns Run's error.
func run(t *testing.T, biller *Biller, worker *Worker) error {
	app := runtime.NewApp("jobs")
	Mount(app, streamtest.NewBroker(runtime.ZeroMQ, streamtest.NewClock(streamtest.DefaultStart())), biller, worker)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return app.Run(ctx)
}

func TestANilReceiverIsRefused(t *testing.T) {
	err := run(t, &Biller{}, nil)
	want := regexp.MustCompile(` + "`" + `^runtime: Mount \(at jobs/jobs_test\.go:\d+\) was given a nil \*jobs\.Worker as worker, whose method Worker\.Work handles messages: pass a \*jobs\.Worker that is not nil$` + "`" + `)
	if err == nil || !want.MatchString(err.Error()) {
		t.Fatalf("Run = %v, want %s", err, want)
	}
	if err := run(t, &Biller{}, &Worker{}); err != nil {
		t.Fatalf("Run with both = %v", err)
	}
}

func TestNilReceiversAreRefusedTogether(t *testing.T) {
	err := run(t, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "nil *jobs.Biller as biller, whose method Biller.Send") ||
		!strings.Contains(err.Error(), "nil *jobs.Worker as worker, whose method Worker.Work") {
		t.Fatalf("Run = %v, want both refused", err)
	}
}
`

const publisherTest = `package orders

import (
	"context"
	"errors"
	"testing"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

func TestDeclaredPublishersRoute(t *testing.T) {
	h := streamtest.New(t, runtime.RabbitMQ, streamtest.WithQuietLogs())
	Mount(h.App(), h.Broker())
	// Another service's queue on the same exchange, not consumed here.
	if err := h.Broker().Bind("orders", runtime.TopicExchange, "audit", "order.#"); err != nil {
		t.Fatal(err)
	}
	h.Start()
	ctx := context.Background()
	p := h.Broker()
	if err := PublishOrderPlaced(ctx, p, OrderPlaced{ID: "o1", Amount: 5}, runtime.WithMessageID("placed-1")); err != nil {
		t.Fatal(err)
	}
	// The routing key of one message, overridden: audit gets it, billing
	// (bound to order.placed only) does not.
	if err := PublishOrderPlaced(ctx, p, OrderPlaced{ID: "o2"}, runtime.WithRoutingKey("order.refunded"), runtime.WithMessageID("refunded-2")); err != nil {
		t.Fatal(err)
	}
	if err := PublishOrderCancelled(ctx, p, OrderCancelled{ID: "o3"}, runtime.WithMessageID("cancelled-3")); err != nil {
		t.Fatal(err)
	}
	if err := PublishReceipt(ctx, p, Receipt{ID: "r1"}); err != nil {
		t.Fatal(err)
	}
	// No queue is bound to ticks: the publisher sees it, unless allowed.
	if err := PublishTick(ctx, p, Tick{N: 1}); err == nil {
		t.Error("a tick no queue is bound for was published without an error")
	}
	if err := h.Broker().Bind("ticks", runtime.FanoutExchange, "tocks"); err != nil {
		t.Fatal(err)
	}
	if err := PublishOrderCancelled(ctx, p, OrderCancelled{ID: "o4"}, runtime.WithRoutingKey("nobody.listens")); !errors.Is(err, streamtest.ErrUnroutable) {
		t.Errorf("unroutable publish: %v, want ErrUnroutable", err)
	}
	if err := PublishOrderCancelled(ctx, p, OrderCancelled{ID: "o5"}, runtime.WithRoutingKey("nobody.listens"), runtime.AllowUnroutable()); err != nil {
		t.Errorf("unroutable publish that allows it: %v", err)
	}
	if err := PublishTick(ctx, p, Tick{N: 2}); err != nil {
		t.Error(err)
	}
	// The Async twins send the same way, and their Confirmation carries
	// the outcome.
	if err := PublishOrderPlacedAsync(ctx, p, OrderPlaced{ID: "o6"}, runtime.WithMessageID("async-6")).Wait(ctx); err != nil {
		t.Errorf("async publish: %v", err)
	}
	if err := PublishOrderCancelledAsync(ctx, p, OrderCancelled{ID: "o7"}, runtime.WithRoutingKey("nobody.listens")).Wait(ctx); !errors.Is(err, streamtest.ErrUnroutable) {
		t.Errorf("unroutable async publish: %v, want ErrUnroutable", err)
	}
	if err := PublishReceiptAsync(ctx, p, Receipt{ID: "r2"}).Wait(ctx); err != nil {
		t.Errorf("async publish of a receipt: %v", err)
	}
	h.Wait()
	bills := h.Deliveries("billing")
	if len(bills) != 2 || bills[0].MessageID != "placed-1" || bills[1].MessageID != "async-6" || bills[0].MessageType != "OrderPlaced" || bills[0].Verdict.Kind != streamtest.VerdictAck {
		t.Errorf("billing: %+v, want OrderPlaced placed-1 and async-6, acked", bills)
	}
	if rs := h.Deliveries("receipts"); len(rs) != 2 || rs[0].MessageType != "Receipt" {
		t.Errorf("receipts: %+v, want two Receipts", rs)
	}
	var audit []string
	for _, m := range h.Queue("audit") {
		audit = append(audit, m.ID+" "+m.Type)
	}
	want := []string{"placed-1 OrderPlaced", "refunded-2 OrderPlaced", "cancelled-3 order.cancelled.v1", "async-6 OrderPlaced"}
	if len(audit) != len(want) {
		t.Fatalf("audit queue holds %q, want %q", audit, want)
	}
	for i := range want {
		if audit[i] != want[i] {
			t.Errorf("audit queue holds %q, want %q", audit, want)
		}
	}
	if n := len(h.Queue("tocks")); n != 1 {
		t.Errorf("tocks holds %d ticks, want 1", n)
	}
}
`

const txTest = `package orders

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/outbox"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

func TestTransactionalHandlersRunOnce(t *testing.T) {
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "orders.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ob, err := outbox.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	h := streamtest.New(t, runtime.RabbitMQ, streamtest.WithQuietLogs(), streamtest.WithOutbox(ob))
	Mount(h.App(), h.Broker(), &Service{})
	h.Start()
	ctx := context.Background()
	p := h.Broker()
	for range 2 {
		for _, err := range []error{
			PublishA(ctx, p, A{1}, runtime.WithMessageID("a")), PublishB(ctx, p, &B{2}, runtime.WithMessageID("b")),
			PublishC(ctx, p, C{3}, runtime.WithMessageID("c")), PublishD(ctx, p, &D{4}, runtime.WithMessageID("d")),
			PublishE(ctx, p, E{5}, runtime.WithMessageID("e")), PublishF(ctx, p, &F{6}, runtime.WithMessageID("f")),
			PublishG(ctx, p, G{7}, runtime.WithMessageID("g")), PublishH(ctx, p, &H{8}, runtime.WithMessageID("h")),
		} {
			if err != nil {
				t.Fatal(err)
			}
		}
		h.Wait()
	}
	for _, st := range h.App().Stats() {
		if st.Acked != 2 || st.Duplicates != 1 {
			t.Errorf("%s: %+v, want 2 acked, the second a duplicate", st.Subscription, st)
		}
	}
	var n int
	if err := db.QueryRow("SELECT count(*) FROM streamgen_inbox").Scan(&n); err != nil || n != 8 {
		t.Errorf("%d inbox records (%v), want one per message", n, err)
	}

	// Without the outbox the App refuses to start.
	app := runtime.NewApp("bare")
	Mount(app, h.Broker(), &Service{})
	if err := app.Run(ctx); err == nil {
		t.Error("an App without a database ran *sql.Tx handlers")
	}
}
`

const pricingTest = `package pricing

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

func TestTypedClientsGetTheirReplies(t *testing.T) {
	h := streamtest.New(t, runtime.RabbitMQ, streamtest.WithQuietLogs())
	Mount(h.App(), h.Broker(), &Service{Node: "n1"})
	h.Start()
	ctx := t.Context()
	if p, err := RequestQuote(ctx, h.Broker(), QuoteRequest{SKU: "A", Quantity: 2}); err != nil || p != (Price{SKU: "A", Cents: 500}) {
		t.Fatalf("RequestQuote = %+v, %v", p, err)
	}
	if s, err := RequestStockLeft(ctx, h.Broker(), &StockRequest{SKU: "A"}); err != nil || s.Left != 3 {
		t.Fatalf("RequestStockLeft = %+v, %v", s, err)
	}
	if d, err := RequestDiscount(ctx, h.Broker(), Discount{Customer: "c"}); err != nil || d.Value != 5 {
		t.Fatalf("RequestDiscount = %+v, %v", d, err)
	}
	if p, err := RequestPing(ctx, h.Broker(), &Ping{}); err != nil || p.Node != "n1" {
		t.Fatalf("RequestPing = %+v, %v", p, err)
	}
	_, err := RequestQuote(ctx, h.Broker(), QuoteRequest{})
	var re *runtime.RemoteError
	if !errors.Is(err, runtime.ErrParked) || !errors.As(err, &re) || re.DeadLetter != "pricing.quotes.dl" {
		t.Fatalf("RequestQuote of no SKU = %v, want it parked on pricing.quotes.dl", err)
	}
}

// replies is a Requester that keeps the content type of each reply.
type replies struct {
	runtime.Requester
	contentTypes []string
}

func (r *replies) Request(ctx context.Context, queue string, msg runtime.Message) (runtime.Message, error) {
	reply, err := r.Requester.Request(ctx, queue, msg)
	r.contentTypes = append(r.contentTypes, reply.ContentType)
	return reply, err
}

func TestTypedClientsSendTheirHandlersCodec(t *testing.T) {
	h := streamtest.New(t, runtime.RabbitMQ, streamtest.WithQuietLogs())
	Mount(h.App(), h.Broker(), &Service{Node: "n1"})
	h.Start()
	ctx := t.Context()
	r := &replies{Requester: h.Broker()}
	if rate, err := RequestExchangeRate(ctx, r, RateRequest{From: "EUR", To: "USD"}); err != nil || rate.Value != 1.25 {
		t.Fatalf("RequestExchangeRate = %+v, %v", rate, err)
	}
	if tax, err := RequestTax(ctx, r, &TaxRequest{Cents: 500}); err != nil || tax.Cents != 100 {
		t.Fatalf("RequestTax = %+v, %v", tax, err)
	}
	if p, err := RequestQuote(ctx, r, QuoteRequest{SKU: "A", Quantity: 1}); err != nil || p.Cents != 250 {
		t.Fatalf("RequestQuote = %+v, %v", p, err)
	}
	if got := strings.Join(r.contentTypes, ", "); got != "application/msgpack, application/cbor, application/json" {
		t.Fatalf("the replies came in %s, want msgpack, cbor and JSON", got)
	}
	h.Wait()
	for queue, want := range map[string]string{"pricing.rates": "application/msgpack", "pricing.taxes": "application/cbor", "pricing.quotes": "application/json"} {
		if ds := h.Deliveries(queue); len(ds) != 1 || ds[0].ContentType != want {
			t.Errorf("%s got %+v, want one request in %s", queue, ds, want)
		}
	}
}
`
