package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/streamgen/streamgen/runtime"
)

// adaptedJob is the message of the adapter tests: pointers inside, and
// large enough that a copy is more than a few registers.
type adaptedJob struct {
	ID   int      `json:"id"`
	Name string   `json:"name"`
	Tags []string `json:"tags"`
	Pad  [16]int64
}

type adaptCtxKey struct{}

// received is what a handler was called with.
type received struct {
	calls int
	ctx   any
	value adaptedJob
	ptr   *adaptedJob
	md    runtime.Metadata
}

// adapterCase is one handler shape: a handler of that shape that records
// its call and returns what it is told, adapted.
type adapterCase struct {
	name                   string
	pointer, meta, outcome bool
	// adapt makes a handler that records into rec and returns err (error
	// shapes) or out (Outcome shapes), and adapts it.
	adapt func(rec *received, err error, out runtime.Outcome) runtime.Handler
}

// recordValue records a value handler's call and changes its copy, which
// must not reach the caller's message.
func (r *received) recordValue(ctx context.Context, m *adaptedJob, md runtime.Metadata) {
	r.calls++
	r.ctx, r.value, r.md = ctx.Value(adaptCtxKey{}), *m, md
	m.Name = "changed by a value handler"
	m.Tags = nil
}

// recordPointer records a pointer handler's call and changes the message,
// which must reach the caller's.
func (r *received) recordPointer(ctx context.Context, m *adaptedJob, md runtime.Metadata) {
	r.calls++
	r.ctx, r.ptr, r.md = ctx.Value(adaptCtxKey{}), m, md
	m.Name = "changed by a pointer handler"
}

func adapterCases() []adapterCase {
	return []adapterCase{
		{"value", false, false, false, func(r *received, err error, _ runtime.Outcome) runtime.Handler {
			return runtime.HandleJSON[adaptedJob]("Job", runtime.Policy{}, nil, func(ctx context.Context, m adaptedJob) error {
				r.recordValue(ctx, &m, runtime.Metadata{})
				return err
			})
		}},
		{"pointer", true, false, false, func(r *received, err error, _ runtime.Outcome) runtime.Handler {
			return runtime.HandleJSON[adaptedJob]("Job", runtime.Policy{}, nil, func(ctx context.Context, m *adaptedJob) error {
				r.recordPointer(ctx, m, runtime.Metadata{})
				return err
			})
		}},
		{"value-meta", false, true, false, func(r *received, err error, _ runtime.Outcome) runtime.Handler {
			return runtime.HandleJSON[adaptedJob]("Job", runtime.Policy{}, nil, func(ctx context.Context, m adaptedJob, md runtime.Metadata) error {
				r.recordValue(ctx, &m, md)
				return err
			})
		}},
		{"pointer-meta", true, true, false, func(r *received, err error, _ runtime.Outcome) runtime.Handler {
			return runtime.HandleJSON[adaptedJob]("Job", runtime.Policy{}, nil, func(ctx context.Context, m *adaptedJob, md runtime.Metadata) error {
				r.recordPointer(ctx, m, md)
				return err
			})
		}},
		{"value-outcome", false, false, true, func(r *received, _ error, out runtime.Outcome) runtime.Handler {
			return runtime.HandleJSON[adaptedJob]("Job", runtime.Policy{}, nil, func(ctx context.Context, m adaptedJob) runtime.Outcome {
				r.recordValue(ctx, &m, runtime.Metadata{})
				return out
			})
		}},
		{"pointer-outcome", true, false, true, func(r *received, _ error, out runtime.Outcome) runtime.Handler {
			return runtime.HandleJSON[adaptedJob]("Job", runtime.Policy{}, nil, func(ctx context.Context, m *adaptedJob) runtime.Outcome {
				r.recordPointer(ctx, m, runtime.Metadata{})
				return out
			})
		}},
		{"value-meta-outcome", false, true, true, func(r *received, _ error, out runtime.Outcome) runtime.Handler {
			return runtime.HandleJSON[adaptedJob]("Job", runtime.Policy{}, nil, func(ctx context.Context, m adaptedJob, md runtime.Metadata) runtime.Outcome {
				r.recordValue(ctx, &m, md)
				return out
			})
		}},
		{"pointer-meta-outcome", true, true, true, func(r *received, _ error, out runtime.Outcome) runtime.Handler {
			return runtime.HandleJSON[adaptedJob]("Job", runtime.Policy{}, nil, func(ctx context.Context, m *adaptedJob, md runtime.Metadata) runtime.Outcome {
				r.recordPointer(ctx, m, md)
				return out
			})
		}},
	}
}

func newAdaptedJob() *adaptedJob {
	return &adaptedJob{ID: 7, Name: "seven", Tags: []string{"a", "b"}, Pad: [16]int64{15: 42}}
}

func TestAdaptersPassTheCall(t *testing.T) {
	md := runtime.Metadata{Subscription: "jobs", MessageID: "m-1", MessageType: "Job", Attempt: 2, MaxAttempts: 5, Headers: map[string]string{"k": "v"}}
	ctx := context.WithValue(context.Background(), adaptCtxKey{}, "the caller's context")
	for _, c := range adapterCases() {
		t.Run(c.name, func(t *testing.T) {
			var rec received
			fn := c.adapt(&rec, nil, runtime.Ack())
			msg := newAdaptedJob()
			fn.Call(ctx, msg, md)
			if rec.calls != 1 {
				t.Fatalf("the handler was called %d times, want 1", rec.calls)
			}
			if rec.ctx != "the caller's context" {
				t.Errorf("the handler's context carries %v, not the caller's", rec.ctx)
			}
			if c.pointer {
				if rec.ptr != msg {
					t.Errorf("the handler got %p, not the decoded message %p", rec.ptr, msg)
				}
				if msg.Name != "changed by a pointer handler" {
					t.Errorf("the handler's change did not reach the message: %q", msg.Name)
				}
			} else {
				if !reflect.DeepEqual(rec.value, *newAdaptedJob()) {
					t.Errorf("the handler got %+v, want %+v", rec.value, *newAdaptedJob())
				}
				if !reflect.DeepEqual(*msg, *newAdaptedJob()) {
					t.Errorf("a value handler's change to its copy reached the message: %+v", *msg)
				}
			}
			wantMD := runtime.Metadata{}
			if c.meta {
				wantMD = md
			}
			if !reflect.DeepEqual(rec.md, wantMD) {
				t.Errorf("the handler got metadata %+v, want %+v", rec.md, wantMD)
			}
		})
	}
}

func TestAdaptersMapTheResult(t *testing.T) {
	wrapped := fmt.Errorf("job 7: %w", runtime.DeadLetter(errBoom))
	errResults := []error{nil, errBoom, runtime.RetryAfter(30*time.Second, errBoom), wrapped, runtime.Drop(errBoom)}
	outResults := []runtime.Outcome{
		runtime.Ack(), runtime.Retry(), runtime.Retry().After(time.Minute).Because(errBoom),
		runtime.DeadLetterNow().Because(errBoom), runtime.DropNow(),
	}
	for _, c := range adapterCases() {
		t.Run(c.name, func(t *testing.T) {
			for i := range errResults {
				var rec received
				var want runtime.Outcome
				if c.outcome {
					want = outResults[i]
				} else {
					want = runtime.OutcomeOf(errResults[i])
				}
				h := c.adapt(&rec, errResults[i], outResults[i])
				got := h.Call(context.Background(), newAdaptedJob(), runtime.Metadata{})
				if got != want {
					t.Errorf("result %d: the adapter returned %v, want %v", i, got, want)
				}
			}
		})
	}
	// The mapping is OutcomeOf's: spot-check that it is not the identity.
	if o := runtime.OutcomeOf(wrapped); o.Action() != runtime.ActionDeadLetter || !errors.Is(o.Err(), errBoom) {
		t.Errorf("OutcomeOf(%v) = %v, want a dead letter because of %v", wrapped, o, errBoom)
	}
}

func TestHandleJSONPanicsOnANilFunction(t *testing.T) {
	handle := func(fn any) func() {
		return func() {
			switch f := fn.(type) {
			case func(context.Context, adaptedJob) error:
				runtime.HandleJSON[adaptedJob]("Job", runtime.Policy{}, nil, f)
			case func(context.Context, *adaptedJob) error:
				runtime.HandleJSON[adaptedJob]("Job", runtime.Policy{}, nil, f)
			case func(context.Context, adaptedJob, runtime.Metadata) error:
				runtime.HandleJSON[adaptedJob]("Job", runtime.Policy{}, nil, f)
			case func(context.Context, *adaptedJob, runtime.Metadata) error:
				runtime.HandleJSON[adaptedJob]("Job", runtime.Policy{}, nil, f)
			case func(context.Context, adaptedJob) runtime.Outcome:
				runtime.HandleJSON[adaptedJob]("Job", runtime.Policy{}, nil, f)
			case func(context.Context, *adaptedJob) runtime.Outcome:
				runtime.HandleJSON[adaptedJob]("Job", runtime.Policy{}, nil, f)
			case func(context.Context, adaptedJob, runtime.Metadata) runtime.Outcome:
				runtime.HandleJSON[adaptedJob]("Job", runtime.Policy{}, nil, f)
			case func(context.Context, *adaptedJob, runtime.Metadata) runtime.Outcome:
				runtime.HandleJSON[adaptedJob]("Job", runtime.Policy{}, nil, f)
			default:
				panic(fmt.Sprintf("the test has no case for %T", fn))
			}
		}
	}
	for name, mount := range map[string]func(){
		"value":                  handle((func(context.Context, adaptedJob) error)(nil)),
		"pointer":                handle((func(context.Context, *adaptedJob) error)(nil)),
		"value, metadata":        handle((func(context.Context, adaptedJob, runtime.Metadata) error)(nil)),
		"pointer, metadata":      handle((func(context.Context, *adaptedJob, runtime.Metadata) error)(nil)),
		"value, outcome":         handle((func(context.Context, adaptedJob) runtime.Outcome)(nil)),
		"pointer, outcome":       handle((func(context.Context, *adaptedJob) runtime.Outcome)(nil)),
		"value, metadata, out":   handle((func(context.Context, adaptedJob, runtime.Metadata) runtime.Outcome)(nil)),
		"pointer, metadata, out": handle((func(context.Context, *adaptedJob, runtime.Metadata) runtime.Outcome)(nil)),
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				p := recover()
				if s, ok := p.(string); !ok || !strings.HasPrefix(s, "runtime: ") || !strings.Contains(s, "nil handler function") {
					t.Errorf("panic value %#v, want a message naming the nil handler function", p)
				}
			}()
			mount()
		})
	}
}

// The handlers of the allocation test, one per shape, as a user writes
// them: they fail when the job has an ID.
func valueJob(_ context.Context, m adaptedJob) error                          { return jobErr(m.ID) }
func pointerJob(_ context.Context, m *adaptedJob) error                       { return jobErr(m.ID) }
func valueMetaJob(_ context.Context, m adaptedJob, md runtime.Metadata) error { return jobErr(m.ID) }
func pointerMetaJob(_ context.Context, m *adaptedJob, md runtime.Metadata) error {
	return jobErr(m.ID)
}
func valueOutcomeJob(_ context.Context, m adaptedJob) runtime.Outcome    { return jobOutcome(m.ID) }
func pointerOutcomeJob(_ context.Context, m *adaptedJob) runtime.Outcome { return jobOutcome(m.ID) }
func valueMetaOutcomeJob(_ context.Context, m adaptedJob, md runtime.Metadata) runtime.Outcome {
	return jobOutcome(m.ID)
}
func pointerMetaOutcomeJob(_ context.Context, m *adaptedJob, md runtime.Metadata) runtime.Outcome {
	return jobOutcome(m.ID)
}

func jobErr(id int) error {
	if id != 0 {
		return errBoom
	}
	return nil
}

func jobOutcome(id int) runtime.Outcome {
	if id != 0 {
		return runtime.Retry().Because(errBoom)
	}
	return runtime.Ack()
}

// BenchmarkHandlerShapes calls a handler of each shape through its Handler
// ("handler") and through the function literal generated code once wrote
// for it ("literal"), for a message that is acknowledged (job 0) and one
// that fails (job 7): per call the Handler should allocate no more than
// the literal, and nothing at all on success.
func BenchmarkHandlerShapes(b *testing.B) {
	type pair struct {
		name     string
		handler  runtime.Handler
		previous func(ctx context.Context, msg *adaptedJob, md runtime.Metadata) runtime.Outcome
	}
	for _, p := range []pair{
		{"value", runtime.HandleJSON[adaptedJob]("Job", runtime.Policy{}, nil, valueJob), func(ctx context.Context, msg *adaptedJob, md runtime.Metadata) runtime.Outcome {
			return runtime.OutcomeOf(valueJob(ctx, *msg))
		}},
		{"pointer", runtime.HandleJSON[adaptedJob]("Job", runtime.Policy{}, nil, pointerJob), func(ctx context.Context, msg *adaptedJob, md runtime.Metadata) runtime.Outcome {
			return runtime.OutcomeOf(pointerJob(ctx, msg))
		}},
		{"value-meta", runtime.HandleJSON[adaptedJob]("Job", runtime.Policy{}, nil, valueMetaJob), func(ctx context.Context, msg *adaptedJob, md runtime.Metadata) runtime.Outcome {
			return runtime.OutcomeOf(valueMetaJob(ctx, *msg, md))
		}},
		{"pointer-meta", runtime.HandleJSON[adaptedJob]("Job", runtime.Policy{}, nil, pointerMetaJob), func(ctx context.Context, msg *adaptedJob, md runtime.Metadata) runtime.Outcome {
			return runtime.OutcomeOf(pointerMetaJob(ctx, msg, md))
		}},
		{"value-outcome", runtime.HandleJSON[adaptedJob]("Job", runtime.Policy{}, nil, valueOutcomeJob), func(ctx context.Context, msg *adaptedJob, md runtime.Metadata) runtime.Outcome {
			return valueOutcomeJob(ctx, *msg)
		}},
		{"pointer-outcome", runtime.HandleJSON[adaptedJob]("Job", runtime.Policy{}, nil, pointerOutcomeJob), func(ctx context.Context, msg *adaptedJob, md runtime.Metadata) runtime.Outcome {
			return pointerOutcomeJob(ctx, msg)
		}},
		{"value-meta-outcome", runtime.HandleJSON[adaptedJob]("Job", runtime.Policy{}, nil, valueMetaOutcomeJob), func(ctx context.Context, msg *adaptedJob, md runtime.Metadata) runtime.Outcome {
			return valueMetaOutcomeJob(ctx, *msg, md)
		}},
		{"pointer-meta-outcome", runtime.HandleJSON[adaptedJob]("Job", runtime.Policy{}, nil, pointerMetaOutcomeJob), func(ctx context.Context, msg *adaptedJob, md runtime.Metadata) runtime.Outcome {
			return pointerMetaOutcomeJob(ctx, msg, md)
		}},
	} {
		ctx := context.Background()
		md := runtime.Metadata{Subscription: "jobs", MessageID: "m-1", Attempt: 1, Headers: map[string]string{"k": "v"}}
		for _, id := range []int{0, 7} {
			msg := newAdaptedJob()
			msg.ID = id
			b.Run(fmt.Sprintf("%s/job%d/handler", p.name, id), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					p.handler.Call(ctx, msg, md)
				}
			})
			b.Run(fmt.Sprintf("%s/job%d/literal", p.name, id), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					p.previous(ctx, msg, md)
				}
			})
		}
	}
}

// TestAdaptersMountedWithHandle runs adapted handlers as a Consumer does,
// through Handler.Decode and Handler.Call: the decoded body reaches them
// and their result becomes the outcome.
func TestAdaptersMountedWithHandle(t *testing.T) {
	var got []string
	sub := &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{
		runtime.HandleJSON[adaptedJob]("Job", runtime.Policy{MaxAttempts: 3}, nil, (func(ctx context.Context, job adaptedJob) error {
			got = append(got, fmt.Sprintf("Job %d %s", job.ID, job.Name))
			if job.ID == 2 {
				return errBoom
			}
			return nil
		})),
		runtime.HandleJSON[adaptedJob]("Urgent", runtime.Policy{MaxAttempts: 3, DeadLetter: "jobs.dead"}, nil, (func(ctx context.Context, job *adaptedJob, md runtime.Metadata) runtime.Outcome {
			got = append(got, fmt.Sprintf("Urgent %d attempt %d", job.ID, md.Attempt))
			return runtime.DeadLetterNow()
		})),
	}}
	call := func(messageType, body string, attempt int) string {
		h := sub.Handler(messageType)
		v, err := h.Decode(runtime.JSON{}, []byte(body))
		if err != nil {
			t.Fatalf("decode %s: %v", body, err)
		}
		return h.Call(context.Background(), v, runtime.Metadata{MessageType: messageType, Attempt: attempt}).Action().String()
	}
	actions := []string{
		call("Job", `{"id":1,"name":"one"}`, 1),
		call("Job", `{"id":2,"name":"two"}`, 1),
		call("Urgent", `{"id":3}`, 2),
	}
	if want := []string{"ack", "retry", "dead-letter"}; !reflect.DeepEqual(actions, want) {
		t.Errorf("outcomes %v, want %v", actions, want)
	}
	if want := []string{"Job 1 one", "Job 2 two", "Urgent 3 attempt 2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("the handlers saw %q, want %q", got, want)
	}
}

// HandleJSON mounts a handler of any accepted shape; this one takes the
// message by value and returns an error.
func ExampleHandleJSON() {
	type Job struct {
		ID int `json:"id"`
	}
	work := func(ctx context.Context, job Job) error {
		fmt.Println("working on job", job.ID)
		return runtime.RetryAfter(30*time.Second, errors.New("the printer is out of paper"))
	}
	jobs := &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{
		runtime.HandleJSON[Job]("Job", runtime.Policy{MaxAttempts: 5}, nil, work),
	}}
	h := jobs.Handler("Job")
	job, _ := h.Decode(runtime.JSON{}, []byte(`{"id":7}`))
	out := h.Call(context.Background(), job, runtime.Metadata{MessageType: "Job", Attempt: 1, MaxAttempts: 5})
	fmt.Println(out.Action(), out.Delay(), out.Err())
	// Output:
	// working on job 7
	// retry 30s the printer is out of paper
}
