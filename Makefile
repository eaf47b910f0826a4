# streamgen — make test runs every test; make demo runs the main example.
GO        ?= go
PKGS      := ./...
RABBITMQ  ?= amqp://guest:guest@127.0.0.1:5672/
export STREAMGEN_RABBITMQ_URL ?= $(RABBITMQ)

.PHONY: all docs postgres protos test test-rabbitmq test-rabbitmq4 test-cluster test-cluster-crash test-cluster-crash-rabbitmq4 test-partitions fuzz vet fmt-check rabbitmq generate check demo demo-rabbitmq bench

all: test

## test: vet, format check, and every test with the race detector (needs RabbitMQ, started if installed,
## and PostgreSQL: a cluster of its own that .ci/ensure-postgres installs and starts),
## then the JSON decoders' tests again under GOEXPERIMENT=jsonv2, whose encoding/json they leave every body to
test: vet fmt-check rabbitmq postgres
	$(GO) test -race -count=1 -timeout 12m $(PKGS)
	GOEXPERIMENT=jsonv2 $(GO) test -race -count=1 ./internal/testsupport/jsoncheck ./runtime/jsondecode

## test-rabbitmq: the tests that talk to RabbitMQ, on the broker STREAMGEN_RABBITMQ_URL names (and
## STREAMGEN_RABBITMQCTL reaches, default rabbitmqctl), saying which version it is
BROKER_PKGS := ./runtime/rabbitmq/ ./runtime/otelstream/ ./runtime/promstream/ ./runtime/deadletter/ ./runtime/deadletter/console/ ./cmd/streamgen/ ./internal/testsupport/testkit/ ./examples/...
test-rabbitmq: rabbitmq
	@echo "RabbitMQ $$($${STREAMGEN_RABBITMQCTL:-rabbitmqctl} -q version) at $$(echo "$$STREAMGEN_RABBITMQ_URL" | sed -E 's#//[^@/]*@#//#')"
	$(GO) test -race -count=1 -timeout 12m $(BROKER_PKGS)

## test-rabbitmq4: test-rabbitmq on a RabbitMQ 4.x of its own, which .ci/rabbitmq4 builds once (a few
## minutes), starts on 127.0.0.1:5673 beside the system broker, and stops afterwards
test-rabbitmq4:
	.ci/rabbitmq4 run $(MAKE) --no-print-directory test-rabbitmq

## test-cluster: the cluster tests (build tag cluster), against a three-node RabbitMQ cluster that
## .ci/rabbitmq-cluster starts on this machine for them and removes afterwards (a few minutes); all but
## the leader crash, which test-cluster-crash runs
test-cluster:
	$(GO) vet -tags cluster ./runtime/rabbitmq/
	.ci/rabbitmq-cluster $(GO) test -tags cluster -count=1 -timeout 15m -v -run '^TestCluster' -skip '^TestClusterLeaderCrash$$' ./runtime/rabbitmq/

## test-cluster-crash: the leader of a quorum queue killed with kill -9, on a cluster of its own (10 to
## 20 minutes: the node stays down 3 minutes, and its retries can be held for minutes more)
test-cluster-crash:
	.ci/rabbitmq-cluster $(GO) test -tags cluster -count=1 -timeout 40m -v -run '^TestClusterLeaderCrash$$' ./runtime/rabbitmq/

## test-cluster-crash-rabbitmq4: the same on a three-node cluster of RabbitMQ 4.x, from the root folder
## that .ci/rabbitmq4 builds once
test-cluster-crash-rabbitmq4:
	.ci/rabbitmq4 build
	STREAMGEN_CLUSTER_ROOT=$${STREAMGEN_RABBITMQ4_ROOT:-/var/cache/streamgen/rabbitmq4-sid} STREAMGEN_CLUSTER_NAME=streamgen-c4n STREAMGEN_CLUSTER_PORT=5711 \
		.ci/rabbitmq-cluster $(GO) test -tags cluster -count=1 -timeout 40m -v -run '^TestClusterLeaderCrash$$' ./runtime/rabbitmq/

## test-partitions: the partition tests (build tag partitions; docs/partitions.md): a quorum queue with
## retries and dead letters while the network between the nodes is cut, on a three-node cluster of
## RabbitMQ 3.10 and then of 4.x, each node in a network namespace of its own, which
## .ci/rabbitmq-partitions makes and removes (needs root, ip and nft; about 12 minutes)
PARTITION_TEST = $(GO) test -tags partitions -count=1 -timeout 20m -v ./internal/partitiontest/
test-partitions:
	$(GO) vet -tags partitions ./internal/partitiontest/
	.ci/rabbitmq-partitions $(PARTITION_TEST)
	.ci/rabbitmq4 build
	STREAMGEN_CLUSTER_ROOT=$${STREAMGEN_RABBITMQ4_ROOT:-/var/cache/streamgen/rabbitmq4-sid} STREAMGEN_PARTITION_NAME=sgq STREAMGEN_PARTITION_NET=10.231.2 \
		.ci/rabbitmq-partitions $(PARTITION_TEST)

vet:
	$(GO) vet $(PKGS)

fmt-check:
	@out="$$(gofmt -l $$(git ls-files '*.go' | grep -v '^testdata/'))"; \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

rabbitmq:
	@.ci/ensure-rabbitmq

postgres:
	@.ci/ensure-postgres

## fuzz: run each fuzz function for FUZZTIME (50,000 inputs each: about a minute in all; the JSON decoders' also under GOEXPERIMENT=jsonv2); for a longer hunt, make fuzz FUZZTIME=10000000x
# A count, not a duration: with a duration, Go 1.26's fuzzing coordinator can
# end a run that found nothing with "context deadline exceeded" (golang/go#75804,
# fixed in Go 1.27).
## (make test runs their seed corpora, testdata/fuzz, as plain tests)
FUZZTIME ?= 50000x
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzParseHeaders$$' -fuzztime $(FUZZTIME) ./runtime/zeromq
	$(GO) test -run '^$$' -fuzz '^FuzzParseEnvelope$$' -fuzztime $(FUZZTIME) ./runtime/zeromq
	$(GO) test -run '^$$' -fuzz '^FuzzReadMessage$$' -fuzztime $(FUZZTIME) ./runtime/zeromq/internal/zmtp
	$(GO) test -run '^$$' -fuzz '^FuzzHandshakeGuard$$' -fuzztime $(FUZZTIME) ./runtime/zeromq/internal/zmtp
	$(GO) test -run '^$$' -fuzz '^FuzzParseRetryCount$$' -fuzztime $(FUZZTIME) ./runtime/internal/retrycount
	$(GO) test -run '^$$' -fuzz '^FuzzAttemptReader$$' -fuzztime $(FUZZTIME) ./runtime/rabbitmq
	$(GO) test -run '^$$' -fuzz '^FuzzSkip$$' -fuzztime $(FUZZTIME) ./runtime/jsondecode
	$(GO) test -run '^$$' -fuzz '^FuzzScalars$$' -fuzztime $(FUZZTIME) ./runtime/jsondecode
	$(GO) test -run '^$$' -fuzz '^FuzzGeneratedDecoders$$' -fuzztime $(FUZZTIME) ./internal/testsupport/jsoncheck
	GOEXPERIMENT=jsonv2 $(GO) test -run '^$$' -fuzz '^FuzzGeneratedDecoders$$' -fuzztime $(FUZZTIME) ./internal/testsupport/jsoncheck

## generate: regenerate the examples' generated files, and those of the decoder tests and benchmarks
generate:
	$(GO) generate ./examples/... ./internal/testsupport/jsoncheck ./internal/testsupport/benchpair/benchorder

## protos: regenerate the protocol buffer code of the codec tests, benchmarks, conformance suite and
## fleet example (internal/testsupport/testpb, runtime/brokertest/brokertestpb, examples/fleet/fleetpb; committed), with protoc (apt-get
## install protobuf-compiler) and the protoc-gen-go of the google.golang.org/protobuf that go.mod requires
PROTOC_GEN_GO := $(or $(TMPDIR),/tmp)/streamgen-protoc-gen-go
protos:
	$(GO) build -o $(PROTOC_GEN_GO) google.golang.org/protobuf/cmd/protoc-gen-go
	protoc --plugin=protoc-gen-go=$(PROTOC_GEN_GO) --go_out=. --go_opt=module=github.com/streamgen/streamgen \
		internal/testsupport/testpb/testpb.proto runtime/brokertest/brokertestpb/brokertestpb.proto examples/fleet/fleetpb/fleet.proto

## docs: rewrite the annotation reference (docs/annotations.md) and generator/doc.go's key list from
## the key table in generator/keys.go (the docs tests fail while they are stale)
docs:
	$(GO) test -count=1 -run '^TestKeyDocsAreCurrent$$' ./generator -args -update-docs

## check: fail when a generated file or AsyncAPI document is stale
check:
	$(GO) run ./cmd/streamgen -check ./examples/... ./internal/testsupport/jsoncheck ./internal/testsupport/benchpair/benchorder
	$(GO) run ./cmd/streamgen -check -asyncapi examples/billing/asyncapi.yaml ./examples/billing
	$(GO) run ./cmd/streamgen -check -asyncapi examples/orders/asyncapi.yaml ./examples/orders
	$(GO) run ./cmd/streamgen -check -asyncapi examples/rows/asyncapi.yaml ./examples/rows
	$(GO) run ./cmd/streamgen -check -asyncapi examples/fleet/asyncapi.yaml ./examples/fleet
	$(GO) run ./cmd/streamgen -check -asyncapi examples/pricing/asyncapi.yaml ./examples/pricing

## demo: the billing service on ZeroMQ over loopback, told as it happens (no server needed)
demo:
	$(GO) run ./examples/billing/cmd/billing-demo

## demo-rabbitmq: the orders service on the local RabbitMQ (started first if installed), ending with what it parked and why
demo-rabbitmq: rabbitmq
	$(GO) run ./examples/orders/cmd/orders-demo

## bench: streamgen against the raw clients, each pair interleaved in one run, printed as a table (needs RabbitMQ, PostgreSQL and python3-zmq, and starts a RabbitMQ 4.x of its own on 5674 for the queue's own retry; about 15 minutes)
# The allocation rows of make bench: each benchmark reports allocs/op, and
# benchreport checks them against the most the claim allows (see Allocs in
# internal/testsupport/benchreport). Allocation counts live here, not in
# tests: sync.Pool drops items at random under -race.
ALLOC_BENCH := PublishWithoutOptions|PublishParts|PublishAsyncAllocation|PublishAsyncChannelAllocation|FillDelivery|SettleAck|HandleAllocation|ReplyAllocation|DeliveryAllocation|ReadMessageAllocation|EscapedStringAllocation|OrderAllocation|GeneratedDecoderAllocation
ALLOC_PKGS := ./runtime ./runtime/rabbitmq ./runtime/adapter ./runtime/zeromq ./runtime/zeromq/internal/zmtp ./runtime/jsondecode ./internal/testsupport/jsoncheck

bench: SHELL := /bin/bash
bench: .SHELLFLAGS := -eo pipefail -c
bench: BENCH_OUT ?= $(or $(TMPDIR),/tmp)/streamgen-bench.txt
bench: rabbitmq postgres
	@: > $(BENCH_OUT)
	$(GO) test -run '^$$' -bench '^BenchmarkConsume$$' -benchtime 20x ./runtime/rabbitmq | tee -a $(BENCH_OUT)
	$(GO) test -run '^$$' -bench '^Benchmark(Publish|PublishWindow|Retry)$$' -benchtime 12x ./runtime/rabbitmq | tee -a $(BENCH_OUT)
	$(GO) test -run '^$$' -bench '^BenchmarkRequestReply$$' -benchtime 25x ./runtime/rabbitmq | tee -a $(BENCH_OUT)
	STREAMGEN_RABBITMQ4_PORT=5674 .ci/rabbitmq4 run $(GO) test -run '^$$' -bench '^BenchmarkBrokerRetry$$' -benchtime 12x ./runtime/rabbitmq | tee -a $(BENCH_OUT)
	$(GO) test -run '^$$' -bench '^BenchmarkBatch$$/^baseline=raw$$' -benchtime 5x ./runtime/rabbitmq | tee -a $(BENCH_OUT)
	$(GO) test -run '^$$' -bench '^BenchmarkBatch$$/^baseline=single$$' -benchtime 2x ./runtime/rabbitmq | tee -a $(BENCH_OUT)
	$(GO) test -run '^$$' -bench '^BenchmarkInbox$$/^db=outboxpgx$$' -benchtime 30x -timeout 30m ./runtime/outbox | tee -a $(BENCH_OUT)
	$(GO) test -run '^$$' -bench '^BenchmarkSubscribe$$' -benchtime 40x ./runtime/zeromq | tee -a $(BENCH_OUT)
	$(GO) test -run '^$$' -bench '^BenchmarkWorkerMemory$$' -benchtime 1x ./runtime/zeromq | tee -a $(BENCH_OUT)
	$(GO) test -run '^$$' -bench '^BenchmarkDLQ(List|Replay|ReplayFew)$$' -benchtime 5x -timeout 30m ./runtime/rabbitmq | tee -a $(BENCH_OUT)
	$(GO) test -run '^$$' -bench '^BenchmarkOverview100k$$' -benchtime 2x -timeout 30m ./runtime/deadletter/console | tee -a $(BENCH_OUT)
	$(GO) test -run '^$$' -bench '^BenchmarkWorkerMemory$$' -benchtime 1x ./runtime/rabbitmq | tee -a $(BENCH_OUT)
	$(GO) test -run '^$$' -bench '^BenchmarkOutbox(Relay|Tx)$$' -benchtime 5x -timeout 30m ./runtime/outbox | tee -a $(BENCH_OUT)
	$(GO) test -run '^$$' -bench '^BenchmarkDecode$$' -benchtime 200x ./runtime | tee -a $(BENCH_OUT)
	$(GO) test -run '^$$' -bench '^BenchmarkGenerateVsLoad$$' -benchtime 20x ./generator | tee -a $(BENCH_OUT)
	$(GO) test -run '^$$' -bench '^Benchmark($(ALLOC_BENCH))$$' -benchtime 2000x $(ALLOC_PKGS) | tee -a $(BENCH_OUT)
	$(GO) test -run '^$$' -bench '^BenchmarkRegenerateVsLoad$$' -benchtime 20x ./generator | tee -a $(BENCH_OUT)
	@echo
	@$(GO) run ./internal/testsupport/benchreport $(BENCH_OUT)
