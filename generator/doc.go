// Package generator reads //stream:subscriber annotations and writes the
// code that mounts the annotated handlers on a broker. The streamgen
// command (cmd/streamgen) is a thin main around it.
//
// # The annotation
//
// A handler is a function whose doc comment holds the directive:
//
//	//stream:subscriber "jobs" broker=zeromq max_attempts=5 out_retry=self
//	func Work(ctx context.Context, job Job) error {
//		...
//	}
//
// or a method, so that its dependencies live in a struct rather than in
// package variables:
//
//	//stream:subscriber "orders" broker=rabbitmq max_attempts=3
//	func (s *Service) Place(ctx context.Context, o Order) error {
//		return s.db.Insert(ctx, o)
//	}
//
// The receiver may be a pointer or a value. Its type must not be generic,
// and must be exported unless the package is a main: the packages that call
// Mount pass a value of it.
//
// The first argument is the subscription name, quoted: the RabbitMQ queue
// or the ZeroMQ subscription. Keys follow as key=value, all optional:
//
//	key                value                                   applies to
//	broker             rabbitmq | zeromq                       subscription
//	max_attempts       deliveries, the first included, ≥ 1     message type
//	retry_delay        10s, or an increasing ladder 1s,10s,1m  subscription (rabbitmq)
//	dead_letter        queue taking exhausted / poison ones     message type
//	out_retry          self, or the queue retry copies go to   message type (zeromq)
//	type               message type name on the wire           message type
//	                   (default: the Go type's name)
//	ack                manual | auto                           subscription (rabbitmq)
//	prefetch           ≥ 1                                     subscription
//	concurrency        ≥ 1                                     subscription
//	max_payload_bytes  ≥ 1, optionally 64KiB or 2MiB           subscription
//	queue_type         classic | quorum                        subscription (rabbitmq)
//	batch_size         ≥ 1: most messages a batch call gets    subscription
//	batch_wait         50ms: how long a partial batch waits    subscription
//	timeout            30s: the handler call's budget          message type
//
// Several handlers may name the same subscription with different message
// types; the runtime dispatches on the message type. A subscription-level
// key set on one of them applies to all; set on several, the values must
// agree. Message-type keys belong to their handler.
//
// The broker of a subscription is its broker= key; else the package's, when
// every broker= in the package names the same; else the broker its
// broker-specific keys exist for (out_retry: zeromq; retry_delay, ack,
// queue_type: rabbitmq); else any broker. A package that mounts on both
// brokers must say broker= wherever that leaves a doubt. The rules that
// span keys (max_attempts on zeromq needs out_retry, ack=auto cannot retry,
// ...) are those of (*runtime.Subscription).Validate, run at generate time
// and reported at the key at fault.
//
// # Handler shapes
//
//	func(ctx context.Context, msg T) error
//	func(ctx context.Context, msg *T) error
//	func(ctx context.Context, msg T, md runtime.Metadata) error
//	func(ctx context.Context, msg T) runtime.Outcome
//
// and the other combinations of those, and the batch handlers of a
// subscription with batch_size, which take a slice of messages (and the
// Metadata of each) and return error:
//
//	func(ctx context.Context, msgs []T) error
//	func(ctx context.Context, msgs []*T, mds []runtime.Metadata) error
//
// Mount mounts those with runtime.HandleBatch. T is an exported named type that
// encoding/json can decode: no channel, function, complex number or
// unsafe.Pointer reachable through its exported fields (fields tagged
// `json:"-"` are skipped), not an interface, unless it implements
// json.Unmarshaler or encoding.TextUnmarshaler. T may come from another
// package.
//
// A handler that answers requests returns its reply with an error:
//
//	func(ctx context.Context, req T) (R, error)
//	func(ctx context.Context, req *T, md runtime.Metadata) (*R, error)
//
// and the other combinations of the request by value or pointer, with or
// without the Metadata, and the reply by value or pointer, functions and
// methods. R is a named message type as T is. Mount mounts it with
// runtime.HandleReply[T, R]: the runtime sends the reply to the request's
// reply_to and then acknowledges the request, and a request that fails for
// good gets an error reply (see runtime.HandleReply). Request/reply needs
// RabbitMQ: such a handler on a zeromq subscription is an error at the
// annotation; so is one that takes a batch or a *sql.Tx.
//
// # What is generated
//
// One file per package, streamgen_gen.go, holding:
//
//   - Mount(app *runtime.App, <broker> runtime.Broker...), which registers
//     one runtime.Subscription per subscription name, with one
//     runtime.HandleJSON[T]("T", policy, streamgen_decode_T, Work) per
//     handler, with nil for the decoder when T gets none (HandleJSON takes
//     a handler of any shape runtime.HandlerFunc lists). It takes one broker per kind the package uses,
//     named rabbitmq and zeromq, or a single broker when every
//     subscription runs on any broker; then, when handlers are methods, a
//     value of each receiver type, in the order of the types' names:
//     Mount(app, rabbitmq, service *Service), *T when a handler method of
//     T has a pointer receiver and T when all have value receivers. The
//     handlers are its method values (service.Place).
//   - A typed publisher per //stream:publisher directive, Publish<Type>,
//     to the exchange or queue it names; and one per handler whose queue
//     takes messages by its name: PublishJob(ctx, p, msg, opts...), or
//     PublishJobToJobsUrgent when a Go type is consumed on several
//     subscriptions. A handler whose queue is bound to an exchange gets
//     none, since sending to the queue by name would go around the
//     exchange; nor does one whose type a directive sends to its queue
//     already. Each has its Async twin, PublishJobAsync, which returns a
//     *runtime.Confirmation instead of waiting for the broker.
//   - A typed client per handler that replies, Request<Name> after the
//     function or method (RequestQuote for Quote; RequestPricingQuote
//     when methods of two types share the name): RequestQuote(ctx,
//     client, req, opts...) (R, error) sends req to the handler's
//     subscription through a runtime.Requester (rabbitmq.Requester, a
//     rabbitmq.Broker, or the harness's streamtest.Broker) and returns the
//     reply (see runtime.Request).
//   - A JSON decoder per message type that is a struct,
//     streamgen_decode_T, and one per struct type its fields reach: each
//     decodes a body exactly as encoding/json would or reports false, and
//     then encoding/json decodes it (see runtime.HandleJSON and package
//     runtime/jsondecode). Fields it cannot decode the same way itself go
//     to encoding/json with their own bytes.
//   - A guard per handler: a type named
//     streamgen_<Handler>_changed_run_go_generate
//     (streamgen_Service_Place_changed_run_go_generate for a method) with
//     the signature the file was written for, the receiver first for a
//     method, so that a changed handler fails to compile with a message
//     that says what to do.
//
// # Using the library
//
//	pkgs, err := generator.Generate(ctx, generator.Config{}, "./...")
//	if err != nil { ... }           // the packages could not be listed
//	for _, p := range pkgs {
//		for _, d := range p.Diagnostics {
//			fmt.Println(d.Format(cwd)) // file:line:col: message
//		}
//		if p.Source != nil {
//			err = p.Write()  // atomic; the old file is kept on failure
//		}
//	}
//
// Generate loads the packages with golang.org/x/tools/go/packages and the
// build tag streamgen. The generated file starts with
//
//	// Code generated by streamgen. DO NOT EDIT.
//
//	//go:build !streamgen
//
// so it is part of every ordinary build and left out of streamgen's: a
// stale file that no longer compiles never blocks regenerating it, and a
// re-run loads no more than the first run did.
// Output is byte-for-byte deterministic: handlers are ordered by source
// position.
//
// # The AsyncAPI document
//
// Package generator/asyncapi describes the subscriptions of the generated
// packages (their Subscriptions) as one AsyncAPI 3.0.0 document; streamgen
// -asyncapi writes it.
package generator
