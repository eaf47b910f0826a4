package streamtest_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/adapter"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

// overlap records handler calls of jobs, and the calls of suspects that
// ran while another handler ran.
type overlap struct {
	mu       sync.Mutex
	running  int
	most     int
	calls    []uint64
	overlaps []uint64
}

// handler acknowledges every job; those for which suspect holds are
// recorded when another call runs beside them, and every call of a job
// below hold waits a little, so that calls that may overlap do.
func (o *overlap) handler(suspect func(j *job, md runtime.Metadata) bool) runtime.Handler {
	return runtime.Handle("Job", runtime.Policy{MaxAttempts: 3, DeadLetter: "jobs.dead"}, func(_ context.Context, j *job, md runtime.Metadata) runtime.Outcome {
		o.mu.Lock()
		o.running++
		o.most = max(o.most, o.running)
		o.calls = append(o.calls, j.ID)
		if o.running > 1 && suspect(j, md) {
			o.overlaps = append(o.overlaps, j.ID)
		}
		o.mu.Unlock()
		time.Sleep(5 * time.Millisecond)
		o.mu.Lock()
		if o.running > 1 && suspect(j, md) {
			o.overlaps = append(o.overlaps, j.ID)
		}
		o.running--
		o.mu.Unlock()
		return runtime.Ack()
	})
}

func jobMessage(id int) runtime.Message {
	return runtime.Message{ID: "job-" + strconv.Itoa(id), Type: "Job", ContentType: "application/json", Body: fmt.Appendf(nil, `{"id":%d}`, id)}
}

// On a classic queue, the messages a crash brought back are set aside on
// the suspect queue, each with its count of crashes, without running;
// from there each runs alone, never beside another handler, while the
// others run four at a time.
func TestMessagesThatCameBackAfterACrashRunAloneFromTheSuspectQueue(t *testing.T) {
	h := streamtest.New(t, runtime.RabbitMQ)
	var o overlap
	h.App().Mount(h.Broker(), &runtime.Subscription{Name: "jobs", Concurrency: 4, Handlers: []runtime.Handler{
		o.handler(func(_ *job, md runtime.Metadata) bool { return md.Headers[adapter.HeaderCrashes] != "" }),
	}})
	if err := h.Broker().Redeliver("jobs", 1, jobMessage(1), jobMessage(2), jobMessage(3)); err != nil {
		t.Fatal(err)
	}
	for id := 4; id <= 20; id++ {
		h.Publish("jobs", "Job", job{ID: uint64(id)}, runtime.WithMessageID("job-"+strconv.Itoa(id)))
	}
	h.Start()
	h.Wait()

	if len(o.calls) != 20 || len(o.overlaps) != 0 || o.most < 2 {
		t.Errorf("calls %v, suspects beside another call %v, at most %d at once; want 20 calls, no suspect beside another, the others together",
			o.calls, o.overlaps, o.most)
	}
	isolated, fromSuspects := 0, 0
	for _, d := range h.Deliveries("jobs") {
		switch {
		case d.Verdict.Kind == streamtest.VerdictIsolate:
			isolated++
			if !d.Redelivered || d.Queue != "jobs" || d.Verdict.Queue != "jobs.suspect" {
				t.Errorf("set aside: %+v", d)
			}
		case d.Queue == "jobs.suspect":
			fromSuspects++
			if d.Verdict.Kind != streamtest.VerdictAck || d.Headers[adapter.HeaderCrashes] != "1" || d.Redelivered {
				t.Errorf("a suspect: %+v; want it acknowledged, with 1 crash", d)
			}
		}
	}
	if isolated != 3 || fromSuspects != 3 {
		t.Errorf("%d set aside, %d handled from the suspect queue; want 3 and 3", isolated, fromSuspects)
	}
	if n := len(h.Queue("jobs.suspect")) + len(h.Queue("jobs.dead")); n != 0 {
		t.Errorf("%d messages left in jobs.suspect and jobs.dead, want none", n)
	}
}

// A suspect that comes back again counts one more crash and is set aside
// again; at the crash limit (max_attempts 3) it is parked without
// running, with the reason.
func TestASuspectThatKeepsComingBackIsParked(t *testing.T) {
	h := streamtest.New(t, runtime.RabbitMQ)
	var o overlap
	h.App().Mount(h.Broker(), &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{o.handler(func(*job, runtime.Metadata) bool { return true })}})
	once := jobMessage(1)
	once.Headers = map[string]string{adapter.HeaderCrashes: "1"}
	twice := jobMessage(2)
	twice.Headers = map[string]string{adapter.HeaderCrashes: "2"}
	if err := h.Broker().Redeliver("jobs.suspect", 1, once, twice); err != nil {
		t.Fatal(err)
	}
	h.Start()
	h.Wait()
	if len(o.calls) != 1 || o.calls[0] != 1 {
		t.Errorf("handled %v, want job 1 alone (after it was set aside again)", o.calls)
	}
	dead := h.Queue("jobs.dead")
	if len(dead) != 1 || dead[0].ID != "job-2" ||
		dead[0].Headers[runtime.HeaderDeadLetterReason] != "crashed the worker (or lost its connection, or could not send its copy) 3 times while being handled: parked without running it again" {
		t.Fatalf("jobs.dead holds %v, want job-2 parked for its 3 crashes", dead)
	}
	var again []string
	for _, d := range h.Deliveries("jobs") {
		if d.Verdict.Kind == streamtest.VerdictIsolate {
			again = append(again, d.MessageID+" "+d.Queue)
		}
	}
	if len(again) != 1 || again[0] != "job-1 jobs.suspect" {
		t.Errorf("set aside %v, want job-1 once more from jobs.suspect", again)
	}
}

// On a quorum queue the broker counts the returns: a message it counted
// is set aside alike, counted once however often it came back, and runs
// alone; a message handed back at shutdown, which RabbitMQ 4.3 does not
// count, runs as any other.
func TestOnAQuorumQueueTheCountedReturnsRunAlone(t *testing.T) {
	h := streamtest.New(t, runtime.RabbitMQ)
	var o overlap
	h.App().Mount(h.Broker(), &runtime.Subscription{Name: "jobs", QueueType: runtime.QuorumQueue, Concurrency: 4, Handlers: []runtime.Handler{
		o.handler(func(_ *job, md runtime.Metadata) bool { return md.Headers[adapter.HeaderCrashes] != "" }),
	}})
	if err := h.Broker().Redeliver("jobs", 1, jobMessage(1), jobMessage(2)); err != nil {
		t.Fatal(err)
	}
	if err := h.Broker().Redeliver("jobs", 3, jobMessage(3)); err != nil {
		t.Fatal(err)
	}
	for id := 4; id <= 20; id++ {
		h.Publish("jobs", "Job", job{ID: uint64(id)}, runtime.WithMessageID("job-"+strconv.Itoa(id)))
	}
	h.Start()
	h.Wait()
	if len(o.calls) != 20 || len(o.overlaps) != 0 || o.most < 2 {
		t.Errorf("calls %v, returns beside another call %v, at most %d at once; want 20 calls, no return beside another, the others together",
			o.calls, o.overlaps, o.most)
	}
	var suspects []string
	for _, d := range h.Deliveries("jobs") {
		if d.Queue == "jobs.suspect" {
			suspects = append(suspects, d.MessageID+"="+d.Headers[adapter.HeaderCrashes])
		}
	}
	slices.Sort(suspects)
	if want := []string{"job-1=1", "job-2=1", "job-3=1"}; !slices.Equal(suspects, want) {
		t.Errorf("handled from jobs.suspect: %v, want %v", suspects, want)
	}
	if n := len(h.Queue("jobs.dead")); n != 0 {
		t.Errorf("%d parked, want none", n)
	}
}

// Redeliver is RabbitMQ's: ZeroMQ never hands a message back.
func TestRedeliverIsForRabbitMQ(t *testing.T) {
	b := streamtest.NewBroker(runtime.ZeroMQ, nil)
	if err := b.Redeliver("jobs", 1, jobMessage(1)); err == nil {
		t.Error("Redeliver on ZeroMQ succeeded")
	}
}
