package brokertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/brokertest/brokertestpb"
)

// A handler that replies answers a request (RabbitMQ): the caller gets the
// reply through the transport's Broker, a runtime.Requester; a request
// retried and then parked gets one error reply naming the dead-letter
// queue and carrying the handler's error. A reply is written in the codec
// its request came in: a codec=msgpack handler answers MessagePack in
// MessagePack and JSON in JSON, and a protocol buffer request gets a
// protocol buffer reply in protobuf. On ZeroMQ the App refuses such a
// handler: request/reply needs RabbitMQ.
func requestIsAnswered(t testing.TB, tr Transport) {
	q := uniqueName(t)
	dl := q + ".dead"
	f := newFixture(t, tr, q, dl)
	var got handlerCalls[Job]
	invoice := func(ctx context.Context, j *Job, md runtime.Metadata) (Invoice, error) {
		got.add(ctx, j, md)
		if j.ID == 2 {
			return Invoice{}, runtime.RetryAfter(f.tr.RetryDelay, errFailed)
		}
		return Invoice{ID: j.ID, AmountCents: 100 * j.ID}, nil
	}
	sub := f.subscription(q,
		runtime.HandleReply[Job, Invoice]("Job", "Invoice", f.policy(2, dl), nil, invoice),
		runtime.HandleReply[Job, Invoice]("MsgPackJob", "Invoice", f.policy(2, dl), nil, invoice).WithCodec(runtime.MsgPack{}),
		runtime.HandleReply[brokertestpb.Job, brokertestpb.Job]("ProtoJob", "ProtoJob", f.policy(2, dl), nil, func(_ context.Context, j *brokertestpb.Job) (*brokertestpb.Job, error) {
			return &brokertestpb.Job{Id: j.GetId(), Note: "answered: " + j.GetNote()}, nil
		}))
	ctx, cancel := context.WithTimeout(context.Background(), 2*tr.Timeout)
	defer cancel()
	if tr.Kind == runtime.ZeroMQ {
		f.app.Mount(f.spy, sub)
		if err := f.app.Run(ctx); err == nil || !strings.Contains(err.Error(), "request/reply needs RabbitMQ") {
			t.Fatalf("Run = %v, want the error that request/reply needs RabbitMQ", err)
		}
		return
	}
	r, ok := f.inst.Broker.(runtime.Requester)
	if !ok {
		t.Fatalf("brokertest: the %T of a RabbitMQ transport is no runtime.Requester: request/reply needs its Request method", f.inst.Broker)
	}
	f.start(sub)

	// As a typed client sends it: the JSON reply read by the decoder
	// streamgen generates for its type (here encoding/json, counted).
	decoded := 0
	decodeInvoice := func(body []byte, v *Invoice) bool {
		decoded++
		return json.Unmarshal(body, v) == nil
	}
	inv, err := runtime.RequestJSON(ctx, r, runtime.Queue(q), "Job", Job{ID: 1}, decodeInvoice)
	if err != nil || inv != (Invoice{ID: 1, AmountCents: 100}) || decoded != 1 {
		t.Fatalf("the request got %+v, %v, the reply's decoder ran %d times; want its invoice, read by the decoder once", inv, err, decoded)
	}
	// Each reply in its request's codec.
	rec := &replyTypes{Requester: r}
	inv, err = runtime.RequestWith[Invoice](ctx, rec, runtime.MsgPack{}, runtime.Queue(q), "MsgPackJob", Job{ID: 3})
	if err != nil || inv != (Invoice{ID: 3, AmountCents: 300}) {
		t.Fatalf("the MessagePack request got %+v, %v; want its invoice", inv, err)
	}
	inv, err = runtime.RequestWith[Invoice](ctx, rec, runtime.JSON{}, runtime.Queue(q), "MsgPackJob", Job{ID: 4})
	if err != nil || inv != (Invoice{ID: 4, AmountCents: 400}) {
		t.Fatalf("the JSON request to the MessagePack handler got %+v, %v; want its invoice", inv, err)
	}
	pj, err := runtime.RequestWith[*brokertestpb.Job](ctx, rec, runtime.Protobuf{}, runtime.Queue(q), "ProtoJob", &brokertestpb.Job{Id: 5, Note: "in protobuf"})
	if want := (&brokertestpb.Job{Id: 5, Note: "answered: in protobuf"}); err != nil || !proto.Equal(pj, want) {
		t.Fatalf("the protobuf request got %v, %v; want %v", pj, err, want)
	}
	if got, want := strings.Join(rec.contentTypes, ", "), "application/msgpack, application/json, application/protobuf"; got != want {
		t.Fatalf("the replies came in %s, want %s", got, want)
	}
	res := make(chan error, 1)
	go func() {
		_, err := runtime.Request[Invoice](ctx, r, runtime.Queue(q), "Job", Job{ID: 2})
		res <- err
	}()
	f.eventually("the error reply of the parked request", func() bool { return len(res) > 0 })
	err = <-res
	var re *runtime.RemoteError
	if !errors.Is(err, runtime.ErrParked) || !errors.As(err, &re) || re.DeadLetter != dl || !strings.Contains(re.Reason, "failed on attempt 2 of 2: "+errFailed.Error()) {
		t.Fatalf("the failing request got %v, want a RemoteError parked on %s with the handler's error", err, dl)
	}
	f.eventually("the request to be parked", func() bool { return f.stats(q).Parked >= 1 })
	f.stop()
	if st := f.stats(q); st.Delivered != 6 || st.Acked != 4 || st.Retried != 1 || st.Parked != 1 {
		t.Errorf("counters %+v, want 6 delivered, 4 acked, 1 retried, 1 parked", st)
	}
	// The handler of Job and MsgPackJob ran once for each request that
	// succeeded and on both attempts of the one that failed.
	var calls []string
	mds := got.metadata()
	for i, j := range got.messages() {
		calls = append(calls, fmt.Sprintf("%s %d attempt %d", mds[i].MessageType, j.ID, mds[i].Attempt))
	}
	slices.Sort(calls)
	if want := []string{"Job 1 attempt 1", "Job 2 attempt 1", "Job 2 attempt 2", "MsgPackJob 3 attempt 1", "MsgPackJob 4 attempt 1"}; !slices.Equal(calls, want) {
		t.Errorf("the handler was called for %q, want %q", calls, want)
	}
}

// replyTypes is a Requester that keeps the content type of each reply.
type replyTypes struct {
	runtime.Requester
	mu           sync.Mutex
	contentTypes []string
}

func (r *replyTypes) Request(ctx context.Context, queue string, msg runtime.Message) (runtime.Message, error) {
	reply, err := r.Requester.Request(ctx, queue, msg)
	r.mu.Lock()
	r.contentTypes = append(r.contentTypes, reply.ContentType)
	r.mu.Unlock()
	return reply, err
}
