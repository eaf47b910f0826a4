package rabbitmq

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/streamgen/streamgen/internal/testsupport/benchpair"
	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
)

// BenchmarkBrokerRetry measures messages through fail-once-then-succeed on
// quorum queues of RabbitMQ 4.3 (STREAMGEN_RABBITMQ_URL must reach one,
// as make test-rabbitmq4 and make bench-rabbitmq4 arrange): the queue's own
// delayed retry (retry=broker: the message handed back, redelivered after
// 50 ms) as the streamgen side, against the wait-queue path (retry=queue:
// a confirmed copy to a quorum wait queue, the original acked, the copy
// dead-lettered back after its 50 ms TTL) as the baseline. Both are the
// Broker, with max_attempts=2, prefetch 50 and concurrency 4; the ratio
// is the wait-queue path's time over the queue's own. The CPU figures are
// the broker's, not this process's: the CPU time of the RabbitMQ node per
// message, both deliveries included.
func BenchmarkBrokerRetry(b *testing.B) {
	adm := newAdmin(b)
	if !adm.version().queues().DelayedRetry() {
		b.Fatalf("BenchmarkBrokerRetry needs RabbitMQ 4.3 or later, and %s is %v: run it with make bench-rabbitmq4", brokerURL(), adm.version())
	}
	pid := brokerPID(b)
	n := 4 * retryBatch // so that the last retry's delay is a small part of a round
	msgs := orderMessages(n, benchpair.OrderJSON(benchpair.Small))
	side := func(label string, retry runtime.RetryPath) func(b *testing.B) benchpair.Sample {
		q := adm.queue(label)
		done := newCounter(n)
		sub := orderSubscription(q, 50, runtime.Policy{MaxAttempts: 2}, []time.Duration{retryTTL},
			func(_ context.Context, _ *benchpair.Order, md runtime.Metadata) error {
				if md.Attempt == 1 {
					return errFailed
				}
				done.done()
				return nil
			})
		sub.QueueType = runtime.QuorumQueue
		sub.Retry = retry
		sub.Concurrency = 4
		sw := benchBroker(b, sub)
		return func(b *testing.B) benchpair.Sample {
			before := processCPU(b, pid)
			s := round(b, adm, q, msgs, done, sw.start, sw.stop)
			s.CPU = processCPU(b, pid) - before
			return s
		}
	}
	benchpair.Run(b, benchpair.Pair{
		Units: n, Unit: "msg", Warmup: 1,
		StreamgenSample: side("bench-broker-retry", runtime.RetryBroker),
		BaselineSample:  side("bench-queue-retry", runtime.RetryQueue),
	})
}

// brokerPID is the operating system's process id of the RabbitMQ node
// STREAMGEN_RABBITMQCTL reaches.
func brokerPID(b *testing.B) int {
	b.Helper()
	out, err := testkit.RunRabbitmqctl(context.Background(), "eval", "os:getpid().")
	if err != nil {
		b.Fatalf("rabbitmqctl eval os:getpid(): %v: %s", err, out)
	}
	pid, err := strconv.Atoi(strings.Trim(strings.TrimSpace(out), `"`))
	if err != nil {
		b.Fatalf("rabbitmqctl eval os:getpid() said %q", out)
	}
	return pid
}

// processCPU is the CPU time process pid has spent, user and system, as
// /proc says (in clock ticks of 10 ms).
func processCPU(b *testing.B, pid int) time.Duration {
	b.Helper()
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// The fields after the command, which is in parentheses: state is
	// the first, utime the 12th and stime the 13th.
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("/proc/%d/stat: %q", pid, stat)
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond
}
