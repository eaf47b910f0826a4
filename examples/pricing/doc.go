// Package pricing is streamgen's example of request/reply: a RabbitMQ
// service that answers price quotes, and the typed client its callers use.
//
//   - Service.Quote returns a Price and an error: the runtime sends the
//     Price to the request's reply_to (the caller's direct reply-to) with
//     the request's correlation id, then acknowledges the request.
//   - A SKU the catalog does not have can never be priced: Quote parks the
//     request on pricing.quotes.dead at once (runtime.DeadLetter), and the
//     caller gets one error reply naming that queue (errors.Is
//     runtime.ErrParked).
//   - While the price feed is down (Service.FeedDown), Quote fails and the
//     request is retried, up to 3 attempts a second apart; the caller
//     waits for the attempt that succeeds, or gets the last one's error.
//
// go generate writes streamgen_gen.go: Mount, which takes the *Service,
// and RequestQuote(ctx, client, req), the typed client, which takes a
// runtime.Requester: a rabbitmq.Requester, a rabbitmq.Broker, or the
// harness's streamtest.Broker; and asyncapi.yaml, the AsyncAPI document,
// where the receive operation of Service.Quote has its reply (the Price or
// the error reply, to the request's reply_to). pricing_test.go runs it on the in-process
// broker of runtime/streamtest; rabbitmq_test.go on RabbitMQ.
package pricing
