package brokertest

import (
	"context"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/brokertest/brokertestpb"
)

// deliveryCalls records the deliveries a handler of every message type
// was called with.
type deliveryCalls = handlerCalls[runtime.Delivery]

// everyReader is a subscription on queue that acknowledges every message,
// whatever its type and body, and records it in got: how the codec cases
// read a dead-letter queue, whose bodies are not all JSON.
func (f *fixture) everyReader(queue string, got *deliveryCalls) *runtime.Subscription {
	return f.subscription(queue, runtime.HandleEvery(f.policy(0, ""), func(ctx context.Context, m *runtime.Delivery, md runtime.Metadata) runtime.Outcome {
		got.add(ctx, m, md)
		return runtime.Ack()
	}))
}

// Each codec carries its message through the broker: a protocol buffer
// message in protobuf and in its JSON mapping (which its handler reads
// too), structs in MessagePack, CBOR and JSON, all on one queue, each
// read by its content type; a retry copy keeps its content type and
// decodes again.
func eachCodecRoundTrips(t testing.TB, tr Transport) {
	q := uniqueName(t)
	f := newFixture(t, tr, q)
	var protos, msgpacks, cbors, jsons handlerCalls[Job]
	record := func(calls *handlerCalls[Job], failFirst bool) func(context.Context, *Job, runtime.Metadata) runtime.Outcome {
		return func(ctx context.Context, j *Job, md runtime.Metadata) runtime.Outcome {
			calls.add(ctx, j, md)
			if failFirst && md.Attempt == 1 {
				return f.retryLater(errFailed)
			}
			return runtime.Ack()
		}
	}
	f.start(f.subscription(q,
		runtime.Handle("ProtoJob", f.policy(2, ""), func(ctx context.Context, j *brokertestpb.Job, md runtime.Metadata) runtime.Outcome {
			return record(&protos, j.GetId() == 1)(ctx, &Job{ID: j.GetId(), Note: j.GetNote()}, md)
		}),
		runtime.Handle("MsgPackJob", f.policy(2, ""), record(&msgpacks, true)).WithCodec(runtime.MsgPack{}),
		runtime.Handle("CBORJob", f.policy(2, ""), record(&cbors, true)).WithCodec(runtime.CBOR{}),
		runtime.Handle("JSONJob", f.policy(2, ""), record(&jsons, false)),
	))
	ctx, cancel := context.WithTimeout(context.Background(), f.tr.Timeout)
	defer cancel()
	publish := func(codec runtime.Codec, messageType, id string, v any) {
		t.Helper()
		if err := runtime.PublishWith(ctx, f.inst.Broker, codec, runtime.Queue(q), messageType, v, runtime.WithMessageID(id)); err != nil {
			t.Fatalf("publish %s: %v", id, err)
		}
	}
	publish(runtime.Protobuf{}, "ProtoJob", "m-protobuf", &brokertestpb.Job{Id: 1, Note: "in protobuf"})
	publish(runtime.JSON{}, "ProtoJob", "m-protojson", &brokertestpb.Job{Id: 2, Note: "in the protobuf JSON mapping"})
	publish(runtime.MsgPack{}, "MsgPackJob", "m-msgpack", Job{ID: 3, Note: "in MessagePack"})
	publish(runtime.CBOR{}, "CBORJob", "m-cbor", Job{ID: 4, Note: "in CBOR"})
	publish(runtime.JSON{}, "JSONJob", "m-json", Job{ID: 5, Note: "in JSON"})
	publish(runtime.JSON{}, "MsgPackJob", "m-msgpack-json", Job{ID: 6, Note: "in JSON, beside MessagePack"})
	f.eventually("every message to be handled, four of them twice", func() bool { return f.stats(q).Acked >= 6 })
	f.stop()

	want := map[string][]Job{
		"protobuf": {{ID: 1, Note: "in protobuf"}, {ID: 1, Note: "in protobuf"}, {ID: 2, Note: "in the protobuf JSON mapping"}},
		"msgpack":  {{ID: 3, Note: "in MessagePack"}, {ID: 3, Note: "in MessagePack"}, {ID: 6, Note: "in JSON, beside MessagePack"}, {ID: 6, Note: "in JSON, beside MessagePack"}},
		"cbor":     {{ID: 4, Note: "in CBOR"}, {ID: 4, Note: "in CBOR"}},
		"json":     {{ID: 5, Note: "in JSON"}},
	}
	for name, calls := range map[string]*handlerCalls[Job]{"protobuf": &protos, "msgpack": &msgpacks, "cbor": &cbors, "json": &jsons} {
		got := calls.messages()
		slices.SortStableFunc(got, func(a, b Job) int { return int(a.ID) - int(b.ID) })
		if !slices.Equal(got, want[name]) {
			t.Errorf("the %s handler got %+v, want %+v (the retry copy decoded again)", name, got, want[name])
		}
	}
	if st := f.stats(q); st.Acked != 6 || st.Retried != 4 || st.Parked+st.Rejected+st.Dropped != 0 {
		t.Errorf("counters %+v, want 6 acked after 4 retries, nothing poison", st)
	}
}

// A body that does not decode in the codec its content type names is
// poison, parked with a reason that names its type and the codec's
// error; a content type none of the handler's codecs reads is poison with
// a reason that names it and those they read. The handler sees none of
// them.
func corruptBodiesAreParked(t testing.TB, tr Transport) {
	q := uniqueName(t)
	dl := q + ".dead"
	f := newFixture(t, tr, q, dl)
	var work handlerCalls[Job]
	var protos handlerCalls[struct{}]
	var dead deliveryCalls
	ack := func(ctx context.Context, j *Job, md runtime.Metadata) runtime.Outcome {
		work.add(ctx, j, md)
		return runtime.Ack()
	}
	f.start(
		f.subscription(q,
			runtime.Handle("ProtoJob", f.policy(3, dl), func(ctx context.Context, _ *brokertestpb.Job, md runtime.Metadata) runtime.Outcome {
				protos.add(ctx, &struct{}{}, md)
				return runtime.Ack()
			}),
			runtime.Handle("MsgPackJob", f.policy(3, dl), ack).WithCodec(runtime.MsgPack{}),
			runtime.Handle("CBORJob", f.policy(3, dl), ack).WithCodec(runtime.CBOR{}),
			runtime.Handle("JSONJob", f.policy(3, dl), ack),
		),
		f.everyReader(dl, &dead),
	)
	cases := []struct {
		id, messageType, contentType string
		body                         []byte
		reason                       string
	}{
		{"m-bad-protobuf", "ProtoJob", "application/protobuf", []byte{0x0a, 0x09, 'x'}, "body does not decode into ProtoJob: runtime: decode: proto:"}, // protobuf-go writes a space or a no-break space after "proto:", at random
		{"m-bad-protojson", "ProtoJob", "application/json", []byte(`{"id": "x"}`), "body does not decode into ProtoJob: runtime: decode: protobuf JSON: "},
		{"m-bad-msgpack", "MsgPackJob", "application/msgpack", []byte{0x81, 0xa2, 'i'}, "body does not decode into MsgPackJob: runtime: decode: msgpack: "},
		{"m-bad-cbor", "CBORJob", "application/cbor", []byte{0xa1, 0x62, 'i'}, "body does not decode into CBORJob: runtime: decode: cbor: "},
		{"m-bad-json", "JSONJob", "application/json", []byte(`{"id":`), "body does not decode into JSONJob: runtime: decode: "},
		{"m-xml", "MsgPackJob", "application/xml", []byte(`<job/>`), `content type "application/xml" cannot be read by the codecs of message type "MsgPackJob", which read application/msgpack or application/json`},
		{"m-cbor-for-protobuf", "ProtoJob", "application/cbor", []byte{0xa0}, `content type "application/cbor" cannot be read by the codecs of message type "ProtoJob", which read application/protobuf or application/json`},
	}
	for _, c := range cases {
		f.publishRaw(q, runtime.Message{ID: c.id, Type: c.messageType, ContentType: c.contentType, Body: c.body})
	}
	f.eventually("the poison to be parked", func() bool { return dead.len() >= len(cases) })
	ctx, cancel := context.WithTimeout(context.Background(), f.tr.Timeout)
	defer cancel()
	if err := runtime.PublishWith(ctx, f.inst.Broker, runtime.CBOR{}, runtime.Queue(q), "CBORJob", Job{ID: 12}, runtime.WithMessageID("m-after")); err != nil {
		t.Fatal(err)
	}
	f.eventually("the next message to be handled", func() bool { return work.len() >= 1 })
	f.stop()

	if mds := work.metadata(); len(mds) != 1 || mds[0].MessageID != "m-after" || protos.len() != 0 {
		t.Fatalf("the handlers saw %v and %d protobuf messages, want only m-after: poison must not reach them", mds, protos.len())
	}
	parked := map[string]runtime.Delivery{}
	for _, m := range dead.messages() {
		parked[m.MessageID] = m
	}
	for _, c := range cases {
		m, ok := parked[c.id]
		if !ok {
			t.Errorf("%s was not parked", c.id)
			continue
		}
		h := m.Headers
		if h[runtime.HeaderDeadLetterPoison] != "true" || h[runtime.HeaderDeadLetterAttempts] != "1" || !strings.HasPrefix(h[runtime.HeaderDeadLetterReason], c.reason) {
			t.Errorf("%s parked with headers %v: want poison true, attempts 1, a reason that starts %q", c.id, h, c.reason)
		}
		if m.ContentType != c.contentType || string(m.Body) != string(c.body) || m.MessageType != c.messageType {
			t.Errorf("%s parked as %q %q %q, want the original's type, content type and body", c.id, m.MessageType, m.ContentType, m.Body)
		}
	}
	if st := f.stats(q); st.Parked != int64(len(cases)) || st.Retried != 0 || st.Acked != 1 {
		t.Errorf("counters %+v, want %d parked, no retry, 1 acked", st, len(cases))
	}
}

// The handler of every message type takes each message no other handler
// of its subscription takes, of any type, undecoded, with its type,
// content type, headers and properties; its failures are retried and
// parked with its policy, as another handler's are, naming the type.
func everyTypeHandlerTakesTheOthers(t testing.TB, tr Transport) {
	q := uniqueName(t)
	dl := q + ".dead"
	f := newFixture(t, tr, q, dl)
	var jobs handlerCalls[Job]
	var every, dead deliveryCalls
	f.start(
		f.subscription(q,
			runtime.Handle("Job", f.policy(0, ""), func(ctx context.Context, j *Job, md runtime.Metadata) runtime.Outcome {
				jobs.add(ctx, j, md)
				return runtime.Ack()
			}),
			runtime.HandleEvery(f.policy(2, dl), func(ctx context.Context, m runtime.Delivery, md runtime.Metadata) runtime.Outcome {
				every.add(ctx, &m, md)
				switch {
				case m.MessageType == "Order":
					return f.retryLater(errFailed)
				case m.MessageType == "Invoice" && md.Attempt == 1:
					return f.retryLater(errFailed)
				}
				return runtime.Ack()
			}),
		),
		f.everyReader(dl, &dead),
	)
	order, err := proto.Marshal(&brokertestpb.Job{Id: 13, Note: "an order"})
	if err != nil {
		t.Fatal(err)
	}
	f.publish(q, "Job", Job{ID: 13}, runtime.WithMessageID("m-job"))
	f.publish(q, "Invoice", Invoice{ID: 14, AmountCents: 700}, runtime.WithMessageID("m-invoice"), runtime.WithHeader("x-tenant", "acme"),
		runtime.WithProperties(runtime.Properties{CorrelationID: "corr-14"}))
	f.publishRaw(q, runtime.Message{ID: "m-order", Type: "Order", ContentType: "application/protobuf", Body: order})
	f.eventually("the failing order to be parked", func() bool { return dead.len() >= 1 })
	f.eventually("the invoice to be handled again", func() bool { return f.stats(q).Acked >= 2 })
	f.stop()

	if mds := jobs.metadata(); len(mds) != 1 || mds[0].MessageID != "m-job" {
		t.Errorf("the Job handler saw %v, want m-job alone", mds)
	}
	var seen []string
	for _, m := range every.messages() {
		seen = append(seen, m.MessageID+"/"+m.MessageType)
		switch m.MessageID {
		case "m-invoice":
			if string(m.Body) != `{"id":14,"amount_cents":700}` || m.ContentType != "application/json" || m.Headers["x-tenant"] != "acme" || m.CorrelationID != "corr-14" || m.MaxAttempts != 2 {
				t.Errorf("the invoice reached the handler of every type as %+v", m)
			}
		case "m-order":
			var o brokertestpb.Job
			if err := m.Decode(&o); err != nil || o.GetId() != 13 || m.ContentType != "application/protobuf" {
				t.Errorf("the order reached the handler of every type as %+v, decoding to %v, %v", m, &o, err)
			}
		}
	}
	slices.Sort(seen)
	if want := []string{"m-invoice/Invoice", "m-invoice/Invoice", "m-order/Order", "m-order/Order"}; !slices.Equal(seen, want) {
		t.Errorf("the handler of every type saw %v, want %v", seen, want)
	}
	if got := attemptsOf(every.metadata()); len(got) != 4 || slices.Max(got) != 2 {
		t.Errorf("the handler of every type saw attempts %v, want each message twice", got)
	}
	ms := dead.messages()
	if len(ms) != 1 || ms[0].MessageID != "m-order" || ms[0].MessageType != "Order" || string(ms[0].Body) != string(order) ||
		ms[0].Headers[runtime.HeaderDeadLetterReason] != "failed on attempt 2 of 2: "+errFailed.Error() || ms[0].Headers[runtime.HeaderDeadLetterPoison] != "false" {
		t.Errorf("the dead-letter queue holds %+v, want m-order parked after 2 attempts", ms)
	}
	if st := f.stats(q); st.Acked != 2 || st.Retried != 2 || st.Parked != 1 {
		t.Errorf("counters %+v, want 2 acked, 2 retried, 1 parked", st)
	}
}
