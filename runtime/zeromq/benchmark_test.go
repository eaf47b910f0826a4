package zeromq_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/zeromq"
)

// BenchmarkRoundTrip measures messages per second from Publish to an acked
// handler call over loopback TCP, against zmq4's own PUSH and PULL sockets
// moving the same three frames: the ratio is the runtime's cost.
func BenchmarkRoundTrip(b *testing.B) {
	body := []byte(`{"id":12345,"note":"a small job"}`)
	b.Run("streamgen", func(b *testing.B) {
		var handled atomic.Int64
		app := runtime.NewApp("bench")
		zq := zeromq.New(zeromq.Queue("jobs", zeromq.Bind(freeEndpoint(b))))
		app.Mount(zq, &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{
			runtime.Handle("job", runtime.Policy{}, func(context.Context, *Job, runtime.Metadata) runtime.Outcome {
				handled.Add(1)
				return runtime.Ack()
			}),
		}})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- app.Run(ctx) }()
		<-app.Ready()
		msg := runtime.Message{ID: "m", Type: "job", ContentType: "application/json", Body: body}
		b.ResetTimer()
		for range b.N {
			if err := zq.Publish(ctx, "jobs", msg); err != nil {
				b.Fatal(err)
			}
		}
		for handled.Load() < int64(b.N) {
			time.Sleep(50 * time.Microsecond)
		}
		b.StopTimer()
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msg/s")
		cancel()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	})
	b.Run("zmq4", func(b *testing.B) {
		ep := freeEndpoint(b)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		pull := zmq4.NewPull(ctx)
		defer pull.Close()
		if err := pull.Listen(ep); err != nil {
			b.Fatal(err)
		}
		push := zmq4.NewPush(ctx)
		defer push.Close()
		if err := push.Dial(ep); err != nil {
			b.Fatal(err)
		}
		frames := zmq4.NewMsgFrom([]byte("jobs"), []byte("type: job\ncontent-type: application/json\nmessage-id: m"), body)
		received := make(chan error, 1)
		n := b.N
		b.ResetTimer()
		go func() {
			for range n {
				if _, err := pull.Recv(); err != nil {
					received <- err
					return
				}
			}
			received <- nil
		}()
		for range b.N {
			if err := push.Send(frames); err != nil {
				b.Fatal(err)
			}
		}
		if err := <-received; err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msg/s")
	})
}

// BenchmarkVentilator measures a ventilator handing jobs to two dialing
// workers, each job to one.
func BenchmarkVentilator(b *testing.B) {
	ep := freeEndpoint(b)
	vent := zeromq.New(zeromq.Queue("work", zeromq.Ventilator(ep)))
	if err := vent.Listen(); err != nil {
		b.Fatal(err)
	}
	var handled atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	var dones []chan error
	for range 2 {
		app := runtime.NewApp("worker")
		app.Mount(zeromq.New(zeromq.Queue("work", zeromq.Dial(ep))), &runtime.Subscription{Name: "work", Handlers: []runtime.Handler{
			runtime.Handle("job", runtime.Policy{}, func(context.Context, *Job, runtime.Metadata) runtime.Outcome {
				handled.Add(1)
				return runtime.Ack()
			}),
		}})
		done := make(chan error, 1)
		go func() { done <- app.Run(ctx) }()
		<-app.Ready()
		dones = append(dones, done)
	}
	for vent.Connections("work") < 2 {
		time.Sleep(time.Millisecond)
	}
	msg := runtime.Message{ID: "m", Type: "job", Body: []byte(`{"id":1}`)}
	b.ResetTimer()
	for range b.N {
		if err := vent.Publish(ctx, "work", msg); err != nil {
			b.Fatal(err)
		}
	}
	for handled.Load() < int64(b.N) {
		time.Sleep(50 * time.Microsecond)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msg/s")
	cancel()
	for _, d := range dones {
		if err := <-d; err != nil {
			b.Fatal(err)
		}
	}
	if err := vent.Shutdown(context.Background()); err != nil {
		b.Fatal(err)
	}
}
