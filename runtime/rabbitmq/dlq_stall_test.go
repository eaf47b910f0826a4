package rabbitmq_test

import (
	"fmt"
	"io"
	"net"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime/deadletter"
	"github.com/streamgen/streamgen/runtime/rabbitmq"
)

// A listing whose deliveries pause mid-way (a busy broker, a slow
// network) keeps the letters' order, classic or quorum. The pause made the
// listing look for letters with basic.get while its consumer was still
// reading: the letter it got was the one after the consumer's, and the
// consumer's nack handed it back first (RabbitMQ hands back the letters of
// one nack basic.get first, then consumer by consumer), so a quorum
// queue, which puts letters handed back at its head in the order it gets
// them, moved it before the consumer's letters: the 514th letter became
// the 2nd. (Seen on RabbitMQ 4.3 as the 3,586th letter moving to the
// 1,538th in 30 listings, the pause a busy machine's.)
func TestAListingWhoseDeliveriesPauseKeepsTheOrder(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"classic", "quorum"} {
		t.Run(kind, func(t *testing.T) {
			e := newEnv(t)
			q := e.name("pause-" + kind)
			args := amqp.Table{}
			if kind == "quorum" {
				args = e.quorumArgs()
			}
			e.declare(q, args)
			const n = 2000
			want := make([]string, n)
			msgs := make([]amqp.Publishing, n)
			for i := range msgs {
				want[i] = fmt.Sprintf("m-%04d", i)
				msgs[i] = parked(want[i], i)
			}
			e.publish(q, msgs...)
			// The deliveries pause for a second once 100 kB came: a
			// few hundred letters into the first consumer's 512.
			p := startPausingProxy(t, e.url, 100<<10, 0, time.Second)
			conn, err := amqp.Dial(p.url)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = conn.Close() }()
			var got []string
			if err := rabbitmq.NewDeadLetterQueue(conn, q).Scan(opCtx(t), func(l *deadletter.Letter) error {
				got = append(got, l.MessageID())
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if p.pauses.Load() == 0 {
				t.Fatal("the deliveries did not pause: the test tests nothing")
			}
			if !slices.Equal(got, want) {
				t.Errorf("the listing read %d letters, the %s out of order", len(got), misplaced(got, want, firstDifference(got, want)))
			}
			testkit.Eventually(t, "every letter back", func() bool { return e.ready(q) == n })
			if got := ids(e.drain(q)); !slices.Equal(got, want) {
				t.Fatalf("after the listing the queue holds %d letters, the %s out of order", len(got), misplaced(got, want, firstDifference(got, want)))
			}
		})
	}
}

// pausingProxy forwards connections to the test broker and holds what the
// broker sends for a while after a number of bytes, as a busy broker or
// network may.
type pausingProxy struct {
	url    string
	pauses atomic.Int64 // the pauses so far
}

// startPausingProxy starts a proxy to the broker at brokerURL on a free
// port of 127.0.0.1, which holds the broker's bytes for pause once the
// first bytes came, and then after every further every bytes (with every
// 0, only once), and returns it with its URL in url.
func startPausingProxy(t *testing.T, brokerURL string, first, every int64, pause time.Duration) *pausingProxy {
	t.Helper()
	u, err := url.Parse(brokerURL)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	target := u.Host
	u.Host = ln.Addr().String()
	p := &pausingProxy{url: u.String()}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				_ = c.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, c, up)
			mu.Unlock()
			wg.Go(func() { _, _ = io.Copy(up, c); _ = up.Close() })
			wg.Go(func() {
				defer func() { _ = c.Close() }()
				next := first // the bytes sent at the next pause; 0 after the last
				var sent int64
				buf := make([]byte, 4096)
				for {
					n, err := up.Read(buf)
					if n > 0 {
						if _, werr := c.Write(buf[:n]); werr != nil {
							return
						}
						if sent += int64(n); next > 0 && sent >= next {
							p.pauses.Add(1)
							time.Sleep(pause)
							next = sent + every
							if every == 0 {
								next = 0
							}
						}
					}
					if err != nil {
						return
					}
				}
			})
		}
	})
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return p
}
