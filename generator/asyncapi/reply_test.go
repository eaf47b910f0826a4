package asyncapi

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/streamgen/streamgen/generator"
	"github.com/streamgen/streamgen/generator/internal/gentest"
	"github.com/streamgen/streamgen/runtime"
)

// at returns what path ("a/b/c") holds in doc, failing the test when
// nothing does.
func at(t *testing.T, doc map[string]any, path string) any {
	t.Helper()
	v := resolve(doc, "#/"+path)
	if v == nil {
		t.Fatalf("nothing at %s", path)
	}
	return v
}

// wantValues checks that each path of doc holds the value whose %v is
// want.
func wantValues(t *testing.T, doc map[string]any, cases [][2]string) {
	t.Helper()
	for _, tc := range cases {
		v := resolve(doc, "#/"+tc[0])
		if got := fmt.Sprint(v); v == nil || got != tc[1] {
			t.Errorf("%s = %v, want %s", tc[0], v, tc[1])
		}
	}
}

// TestAsyncAPIReplyPricing: the document of examples/pricing, whose
// handler returns a Price, gives its receive operation a reply to the
// request's reply_to, on a channel of null address, with the Price and
// the error reply, each with its correlation id.
func TestAsyncAPIReplyPricing(t *testing.T) {
	ctx := context.Background()
	pkgs, err := generator.Generate(ctx, generator.Config{Dir: gentest.RepoRoot(t)}, "./examples/pricing")
	if err != nil {
		t.Fatal(err)
	}
	data, err := Generate(ctx, pkgs, Options{Format: JSON})
	if err != nil {
		t.Fatal(err)
	}
	d := checkDocument(t, data, JSON)
	wantValues(t, d, [][2]string{
		{"operations/Service.Quote/action", "receive"},
		{"operations/Service.Quote/reply/address/location", "$message.header#/reply_to"},
		{"operations/Service.Quote/reply/channel/$ref", "#/channels/pricing.quotes.reply"},
		{"operations/Service.Quote/reply/messages", "[map[$ref:#/channels/pricing.quotes.reply/messages/Price] map[$ref:#/channels/pricing.quotes.reply/messages/ErrorReply]]"},
		{"channels/pricing.quotes.reply/messages/Price/$ref", "#/components/messages/Price"},
		{"channels/pricing.quotes.reply/messages/ErrorReply/$ref", "#/components/messages/ErrorReply"},
		{"channels/pricing.quotes.reply/servers", "[map[$ref:#/servers/rabbitmq]]"},
		{"channels/pricing.quotes.reply/x-streamgen-replies-to", "pricing.quotes"},
		{"components/messages/Price/name", "Price"},
		{"components/messages/Price/contentType", "application/json"},
		{"components/messages/Price/payload/$ref", "#/components/schemas/Price"},
		{"components/messages/Price/bindings/amqp/messageType", "Price"},
		{"components/messages/Price/correlationId/location", "$message.header#/correlation_id"},
		{"components/messages/QuoteRequest/correlationId/location", "$message.header#/correlation_id"},
		{"components/schemas/Price/properties/cents/type", "integer"},
		{"components/messages/ErrorReply/headers/required", "[" + runtime.HeaderReplyError + "]"},
		{"components/messages/ErrorReply/correlationId/location", "$message.header#/correlation_id"},
	})
	reply := at(t, d, "channels/pricing.quotes.reply").(map[string]any)
	if address, ok := reply["address"]; !ok || address != nil {
		t.Errorf("the reply channel's address is %v (set: %t), want null", address, ok)
	}
	if got := sortedKeys(at(t, d, "components/messages/ErrorReply/headers/properties").(map[string]any)); !slices.Equal(got, []string{runtime.HeaderReplyError, runtime.HeaderReplyDeadLetter}) {
		t.Errorf("the error reply's headers are %v", got)
	}
	errorReply := at(t, d, "components/messages/ErrorReply").(map[string]any)
	for _, k := range []string{"payload", "contentType", "bindings"} {
		if errorReply[k] != nil {
			t.Errorf("the error reply has %s: %v", k, errorReply[k])
		}
	}
	// A message that only travels as a reply has none of the headers of
	// a consumed message (x-retry-count, a parked copy's).
	if price := at(t, d, "components/messages/Price").(map[string]any); price["headers"] != nil {
		t.Errorf("Price, only ever a reply, has headers %v", price["headers"])
	}
	// The copies the subscription sends itself have no reply.
	for _, op := range []string{"send.pricing.quotes.retry", "send.pricing.quotes.dead"} {
		if at(t, d, "operations/"+op).(map[string]any)["reply"] != nil {
			t.Errorf("operations.%s has a reply", op)
		}
	}
}

// TestAsyncAPIReplyMixed: on a queue where two handlers reply and one does
// not, only the two have a reply, on one reply channel that holds both
// reply types; a subscription without a handler that replies has none; a
// queue named <queue>.reply keeps its name, and the reply channel is
// <queue>.replies; a reply type that is also published keeps its headers.
func TestAsyncAPIReplyMixed(t *testing.T) {
	data, err := Generate(context.Background(), goldenPackages(t, "asyncapi_reply"), Options{Format: JSON})
	if err != nil {
		t.Fatal(err)
	}
	d := checkDocument(t, data, JSON)
	wantValues(t, d, [][2]string{
		{"operations/Quote/reply/channel/$ref", "#/channels/quotes.replies"},
		{"operations/Quote/reply/messages", "[map[$ref:#/channels/quotes.replies/messages/Price] map[$ref:#/channels/quotes.replies/messages/ErrorReply]]"},
		{"operations/Discounts/reply/channel/$ref", "#/channels/quotes.replies"},
		{"operations/Discounts/reply/messages", "[map[$ref:#/channels/quotes.replies/messages/Percent] map[$ref:#/channels/quotes.replies/messages/ErrorReply]]"},
		{"channels/quotes.reply/address", "quotes.reply"},
		{"channels/quotes.reply/bindings/amqp/is", "queue"},
		{"channels/quotes.replies/x-streamgen-replies-to", "quotes"},
		{"components/messages/Price/headers/properties/x-retry-count/type", "string"},
		{"components/messages/Price/correlationId/location", "$message.header#/correlation_id"},
		{"components/messages/Discount/correlationId/location", "$message.header#/correlation_id"},
	})
	if got := sortedKeys(at(t, d, "channels/quotes.replies/messages").(map[string]any)); !slices.Equal(got, []string{"ErrorReply", "Percent", "Price"}) {
		t.Errorf("the reply channel of quotes holds %v", got)
	}
	for _, op := range []string{"Forget", "Record", "Audit", "PublishPrice"} {
		if at(t, d, "operations/"+op).(map[string]any)["reply"] != nil {
			t.Errorf("operations.%s, whose handler or publisher answers nothing, has a reply", op)
		}
	}
	if at(t, d, "components/messages/Invalidate").(map[string]any)["correlationId"] != nil {
		t.Error("Invalidate, which is no request, has a correlation id")
	}
	if at(t, d, "components/messages/Percent").(map[string]any)["headers"] != nil {
		t.Error("Percent, only ever a reply, has headers")
	}
}

// TestAsyncAPINoReply: a document whose handlers answer nothing has no
// reply, no reply channel and no error reply.
func TestAsyncAPINoReply(t *testing.T) {
	data, err := Generate(context.Background(), goldenPackages(t, "asyncapi_rabbitmq", "asyncapi_exchange", "multi_type_queue", "zeromq_basic"), Options{Format: JSON})
	if err != nil {
		t.Fatal(err)
	}
	d := checkDocument(t, data, JSON)
	ops := d["operations"].(map[string]any)
	if len(ops) == 0 {
		t.Fatal("no operations")
	}
	for id, o := range ops {
		if o.(map[string]any)["reply"] != nil {
			t.Errorf("operations.%s has a reply", id)
		}
	}
	for id, c := range d["channels"].(map[string]any) {
		if c.(map[string]any)["address"] == nil {
			t.Errorf("channels.%s has no address", id)
		}
	}
	for id, m := range d["components"].(map[string]any)["messages"].(map[string]any) {
		if id == errorReplyName || m.(map[string]any)["correlationId"] != nil {
			t.Errorf("components.messages.%s: a document without replies has an error reply or a correlation id", id)
		}
	}
}

// TestAsyncAPIReplyCodec: a reply is written in the codec its request came
// in, the handler's as its typed client sends it: msgpack and cbor
// handlers' replies say so, a protobuf request's protobuf reply is a
// protobuf message, and a default handler's reply is JSON.
func TestAsyncAPIReplyCodec(t *testing.T) {
	data, err := Generate(context.Background(), goldenPackages(t, "request_reply", "codecs"), Options{Format: JSON})
	if err != nil {
		t.Fatal(err)
	}
	d := checkDocument(t, data, JSON)
	for _, tc := range []struct{ channel, message, contentType string }{
		{"pricing.rates.reply", "Rate", "application/msgpack"},
		{"pricing.taxes.reply", "Tax", "application/cbor"},
		{"orders.lines.reply", "OrderItem", "application/protobuf"},
		{"pricing.quotes.reply", "Price", "application/json"},
	} {
		ref, _ := at(t, d, "channels/"+tc.channel+"/messages/"+tc.message+"/$ref").(string)
		msg, _ := resolve(d, ref).(map[string]any)
		if got := msg["contentType"]; got != tc.contentType {
			t.Errorf("the reply %s on %s has content type %v, want %s", tc.message, tc.channel, got, tc.contentType)
		}
	}
}
