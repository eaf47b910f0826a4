package main

// Kind says how a case's figures read and which way its target points.
type Kind uint8

const (
	// Throughput figures are messages per second, from ns/msg; the ratio
	// is streamgen's throughput over the baseline's, and the target is a
	// minimum.
	Throughput Kind = iota
	// Speed figures are times per operation; the ratio is the baseline's
	// time over streamgen's (1 or more: no slower), and the target is a
	// minimum.
	Speed
	// Duration figures are times per operation; the ratio is streamgen's
	// time over the baseline's, and the target is a maximum.
	Duration
	// Memory figures are the live heap after the warm-up (baseline column)
	// and at the end (streamgen column); the ratio column is the growth,
	// and the target is its maximum in percent.
	Memory
	// Rate figures are messages per second, as Throughput's, but the
	// target is streamgen's own rate, a minimum in messages per second;
	// the ratio against the baseline is shown for reference.
	Rate
	// Allocs figures are allocations per operation, the allocs/op of a
	// benchmark that calls b.ReportAllocs (go test prints the count
	// rounded down, as testing.AllocsPerRun returns it); the target is a
	// maximum: the most the benchmark may allocate beyond its baseline.
	// The baseline is the allocs/op of the benchmark AllocBaselines names
	// for the case, or else the benchmark's own needed-allocs/op metric
	// (what the value it makes must allocate), or else none: 0.
	Allocs
)

// Case is one row of the table.
type Case struct {
	// Bench is the benchmark's name without the -GOMAXPROCS suffix; a
	// benchmark whose name another package's benchmark has too is named
	// with its package's path in the module and a colon before it
	// (runtime/zeromq:BenchmarkWorkerMemory; see Results.Lookup).
	Bench string
	// Label says what is measured, as the table shows it.
	Label  string
	Kind   Kind
	Target float64
}

// MemoryReadings names, by benchmark name, a Memory case's two readings
// when they are not "after warm-up" and "end".
var MemoryReadings = map[string][2]string{
	"BenchmarkDLQList": {"50,000 letters:", "100,000 letters:"},
}

// CPUTargets holds, by benchmark name, the largest ratio of streamgen's
// client CPU time per message over the baseline's that meets a case; a
// case not listed has no CPU target.
var CPUTargets = map[string]float64{
	"BenchmarkBrokerRetry": 1, // the broker's CPU: lower than the wait-queue path's
	"BenchmarkConsume/payload=256B/prefetch=50/concurrency=1":  1.1,
	"BenchmarkConsume/payload=256B/prefetch=50/concurrency=4":  1.1,
	"BenchmarkConsume/payload=256B/prefetch=250/concurrency=1": 1.1,
	"BenchmarkConsume/payload=256B/prefetch=250/concurrency=4": 1.1,
	"BenchmarkConsume/payload=16KiB/prefetch=50/concurrency=1": 1.1,

	"BenchmarkConsume/payload=256B/prefetch=50/concurrency=1/decoder=encoding_json": 1.1,
	"BenchmarkConsume/payload=256B/prefetch=50/concurrency=1/codec=protobuf":        1.1,
}

// AllocBaselines names, by benchmark name, the benchmark whose allocs/op
// an Allocs case is measured against: what the work the case does must
// allocate anyway.
var AllocBaselines = map[string]string{
	"BenchmarkPublishWithoutOptions":  "BenchmarkPublishParts",
	"BenchmarkPublishAsyncAllocation": "BenchmarkPublishAsyncChannelAllocation",
}

// Cases are the rows of make bench, in order.
var Cases = []Case{
	{"BenchmarkConsume/payload=256B/prefetch=50/concurrency=1", "RabbitMQ consume vs coalescing raw consumer, prefetch 50, concurrency 1, 256 B", Throughput, 0.95},
	{"BenchmarkConsume/payload=256B/prefetch=50/concurrency=4", "RabbitMQ consume vs coalescing raw consumer, prefetch 50, concurrency 4, 256 B", Throughput, 0.95},
	{"BenchmarkConsume/payload=256B/prefetch=250/concurrency=1", "RabbitMQ consume vs coalescing raw consumer, prefetch 250, concurrency 1, 256 B", Throughput, 0.95},
	{"BenchmarkConsume/payload=256B/prefetch=250/concurrency=4", "RabbitMQ consume vs coalescing raw consumer, prefetch 250, concurrency 4, 256 B", Throughput, 0.95},
	{"BenchmarkConsume/payload=16KiB/prefetch=50/concurrency=1", "RabbitMQ consume vs coalescing raw consumer, prefetch 50, concurrency 1, 16 KiB", Throughput, 0.95},
	{"BenchmarkConsume/payload=256B/prefetch=50/concurrency=1/decoder=encoding_json", "RabbitMQ consume, both decoding with encoding/json, vs coalescing raw consumer, prefetch 50, concurrency 1, 256 B", Throughput, 0.95},
	{"BenchmarkConsume/payload=256B/prefetch=50/concurrency=1/codec=protobuf", "RabbitMQ consume of protobuf (the 256 B JSON order), both decoding with proto.Unmarshal, vs coalescing raw consumer, prefetch 50, concurrency 1", Throughput, 0.95},
	{"BenchmarkRetry/prefetch=50/concurrency=1", "RabbitMQ retry path vs pipelined raw loop: fail once, 50 ms wait queue, concurrency 1", Throughput, 0.85},
	{"BenchmarkRetry/prefetch=50/concurrency=4", "RabbitMQ retry path vs pipelined raw loop: fail once, 50 ms wait queue, concurrency 4", Throughput, 0.85},
	{"BenchmarkBrokerRetry", "RabbitMQ 4.3 quorum queue, fail once then succeed: the queue's own delayed retry (retry=broker) vs the wait-queue path (retry=queue), 50 ms, concurrency 4; CPU is the broker node's per message", Throughput, 2},
	{"BenchmarkBatch/baseline=raw", "RabbitMQ batch handler (batch_size=100, 2 ms a call, 20,000 persistent msgs) vs a raw consumer batching by hand, prefetch 200", Throughput, 0.95},
	{"BenchmarkBatch/baseline=single", "RabbitMQ batch handler (batch_size=100, 2 ms a call) vs the same handler one message a call", Throughput, 20},
	{"BenchmarkInbox/db=outboxpgx/concurrency=1", "*sql.Tx handler (the runtime's transaction, the inbox's record, one row) vs the same handler committing a transaction of its own without the inbox, PostgreSQL opened with outboxpgx, RabbitMQ, concurrency 1", Throughput, 0.85},
	{"BenchmarkInbox/db=outboxpgx/concurrency=4", "*sql.Tx handler vs the same handler committing a transaction of its own without the inbox, PostgreSQL opened with outboxpgx, RabbitMQ, concurrency 4", Throughput, 0.85},
	{"BenchmarkPublish", "RabbitMQ publish, waiting for each confirm, vs raw", Throughput, 0.9},
	{"BenchmarkPublishWindow", "RabbitMQ PublishAsync from one goroutine vs a raw window of 256 confirms", Throughput, 0.95},
	{"BenchmarkRequestReply/concurrency=1/measure=p50", "RabbitMQ request/reply round trip, median, 1 caller (1 handler goroutine a side), vs a raw amqp091-go client and server over direct reply-to", Speed, 0.95},
	{"BenchmarkRequestReply/concurrency=1/measure=p99", "RabbitMQ request/reply round trip, 99th percentile, 1 caller, vs the same raw client and server", Speed, 0.95},
	{"BenchmarkRequestReply/concurrency=1/measure=throughput", "RabbitMQ request/reply throughput, 1 caller, vs the same raw client and server", Throughput, 0.95},
	{"BenchmarkRequestReply/concurrency=64/measure=p50", "RabbitMQ request/reply round trip, median, 64 callers at once (8 handler goroutines a side), vs a raw amqp091-go client and server over direct reply-to", Speed, 0.95},
	{"BenchmarkRequestReply/concurrency=64/measure=p99", "RabbitMQ request/reply round trip, 99th percentile, 64 callers at once, vs the same raw client and server", Speed, 0.95},
	{"BenchmarkRequestReply/concurrency=64/measure=throughput", "RabbitMQ request/reply throughput, 64 callers at once, vs the same raw client and server", Throughput, 0.95},
	{"BenchmarkRequestReply/concurrency=64/decoder=encoding_json/measure=throughput", "RabbitMQ request/reply throughput, 64 callers at once, streamgen's server and client decoding with encoding/json as the raw ones do, vs the same raw client and server", Throughput, 0.95},
	{"BenchmarkSubscribe/payload=256B/baseline=zmq4", "ZeroMQ PUSH/PULL subscriber vs a raw zmq4 PULL loop, 256 B", Throughput, 0.9},
	{"BenchmarkSubscribe/payload=16KiB/baseline=zmq4", "ZeroMQ PUSH/PULL subscriber vs a raw zmq4 PULL loop, 16 KiB", Throughput, 0.9},
	{"BenchmarkSubscribe/payload=256B/baseline=pyzmq", "ZeroMQ PUSH/PULL subscriber vs a pyzmq (libzmq) PULL loop, 256 B", Throughput, 2.0},
	{"BenchmarkSubscribe/payload=16KiB/baseline=pyzmq", "ZeroMQ PUSH/PULL subscriber vs a pyzmq (libzmq) PULL loop, 16 KiB", Throughput, 2.0},
	{"BenchmarkDecode/payload=256B", "Typed decode vs json.Unmarshal, 256 B", Speed, 1.0},
	{"BenchmarkDecode/payload=16KiB", "Typed decode vs json.Unmarshal, 16 KiB", Speed, 1.0},
	{"BenchmarkGenerateVsLoad/handlers=50", "Generator vs go/packages load, 50 handlers", Duration, 1.5},
	{"BenchmarkGenerateVsLoad/handlers=200", "Generator vs go/packages load, 200 handlers", Duration, 1.5},
	{"BenchmarkGenerateVsLoad/handlers=1000", "Generator vs go/packages load, 1,000 handlers", Duration, 2},
	{"BenchmarkRegenerateVsLoad/handlers=200", "Generator re-run, file current, vs go/packages load, 200 handlers", Duration, 1.1},
	{"BenchmarkRegenerateVsLoad/handlers=1000", "Generator re-run, file current, vs go/packages load, 1,000 handlers", Duration, 1.1},
	{"BenchmarkDLQList", "dlq ls of 100,000 letters (classic queue); baseline: raw amqp091-go consume of all, one nack", Rate, 20000},
	{"BenchmarkDLQList", "dlq ls live heap with the reading stalled at the 20,000th letter (all the client holds read ahead), 50,000 vs 100,000 letters", Memory, 10},
	{"BenchmarkDLQReplay", "dlq replay of 100,000 letters vs a raw amqp091-go move loop, window of 256 confirms, ack after confirm", Throughput, 0.9},
	{"BenchmarkDLQReplayFew", "dlq replay of 10 letters picked by id among 100,000 vs an ls of the same queue, each until the queue has its letters back", Duration, 1.5},
	{"BenchmarkOutboxRelay/baseline=delete-each", "Outbox relay of 10,000 rows (PostgreSQL) to RabbitMQ vs a raw loop: 1,000 rows read at a time, window of 256 confirms, each row deleted after its confirm", Throughput, 0.9},
	{"BenchmarkOutboxRelay/baseline=delete-batch", "Outbox relay of 10,000 rows (PostgreSQL) to RabbitMQ vs the same raw loop deleting each 1,000 rows in one statement after their confirms", Throughput, 0.9},
	{"BenchmarkOutboxTx", "Outbox: a PostgreSQL transaction publishing one message through ob.Tx vs the same transaction with a plain INSERT of the row", Duration, 1.2},
	{"runtime/zeromq:BenchmarkWorkerMemory", "Worker live heap, 100,000 msgs, 10% fail once (ZeroMQ loopback)", Memory, 10},
	{"runtime/rabbitmq:BenchmarkWorkerMemory", "Worker live heap, 100,000 msgs, 10% fail once (RabbitMQ)", Memory, 10},
	{"BenchmarkPublishWithoutOptions", "Publish without options vs its body and id (runtime.JSON Encode, messageid.New)", Allocs, 0},
	{"BenchmarkPublishAsyncAllocation", "RabbitMQ PublishAsync vs the publishing channel alone: one record", Allocs, 1},
	{"BenchmarkFillDelivery", "RabbitMQ delivery without headers to the Consumer's: the handlers' headers map", Allocs, 1},
	{"BenchmarkSettleAck", "Settle of an ack, debug logging off", Allocs, 0},
	{"BenchmarkHandleAllocation/middleware=none", "Consumer Handle of a delivery, no middleware (codec and handler allocate nothing)", Allocs, 0},
	{"BenchmarkHandleAllocation/middleware=app+subscription", "Consumer Handle of a delivery, app and subscription middleware", Allocs, 0},
	{"BenchmarkReplyAllocation", "Consumer Handle of a request answered at once (codec and handler allocate nothing): the reply's record, its callback, its context", Allocs, 3},
	{"BenchmarkDeliveryAllocation", "ZeroMQ frames of a few headers to a Delivery: the Delivery, the header text", Allocs, 2},
	{"BenchmarkReadMessageAllocation/buffered", "ZMTP read of a buffered message of 3 frames: frame list, bodies", Allocs, 2},
	{"BenchmarkReadMessageAllocation/alone", "ZMTP read of a message that came alone: frame list, bodies", Allocs, 2},
	{"BenchmarkEscapedStringAllocation", "jsondecode of an escaped string: its text", Allocs, 1},
	{"BenchmarkOrderAllocation", "jsondecode of an order vs what its value holds (strings, pointer, slice growth)", Allocs, 0},
	{"BenchmarkGeneratedDecoderAllocation/Scalars", "Generated decoder, a value holding nothing (zero Scalars)", Allocs, 0},
	{"BenchmarkGeneratedDecoderAllocation/Order", "Generated decoder, an Order holding nothing, unknown members skipped", Allocs, 0},
}
