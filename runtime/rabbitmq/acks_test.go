package rabbitmq

import (
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

// brokerAcks stands in for a consuming channel: it keeps the broker's view
// of which deliveries are outstanding, fails the test on any settlement
// the broker would refuse (an unknown or already settled tag, which closes
// a real channel) or that acknowledges a delivery the test did not settle,
// and records the frames sent.
type brokerAcks struct {
	t *testing.T

	mu          sync.Mutex
	outstanding map[uint64]bool
	settled     map[uint64]bool // what the test had the acker settle
	backs       map[uint64]bool // of those, what it had it hand back
	frames      []string
	fail        error
}

func newBrokerAcks(t *testing.T, delivered int) *brokerAcks {
	b := &brokerAcks{t: t, outstanding: map[uint64]bool{}, settled: map[uint64]bool{}, backs: map[uint64]bool{}}
	for tag := range uint64(delivered) {
		b.outstanding[tag+1] = true
	}
	return b
}

// settle records that the handler of tag finished.
func (b *brokerAcks) settle(tag uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.settled[tag] = true
}

// settleBack records that the handler of tag finished and handed it back.
func (b *brokerAcks) settleBack(tag uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.settled[tag] = true
	b.backs[tag] = true
}

func (b *brokerAcks) Ack(tag uint64, multiple bool) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.fail != nil {
		return b.fail
	}
	b.frames = append(b.frames, fmt.Sprintf("ack %d multiple=%v", tag, multiple))
	if !b.outstanding[tag] {
		b.t.Errorf("basic.ack of tag %d, which is not outstanding: the broker closes the channel", tag)
	}
	for t := range b.outstanding {
		if t == tag || multiple && t < tag {
			if !b.settled[t] || b.backs[t] {
				b.t.Errorf("ack %d multiple=%v acknowledges delivery %d, whose handler has not finished or handed it back", tag, multiple, t)
			}
			delete(b.outstanding, t)
		}
	}
	return nil
}

func (b *brokerAcks) Nack(tag uint64, multiple, requeue bool) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.fail != nil {
		return b.fail
	}
	if !multiple {
		b.frames = append(b.frames, fmt.Sprintf("nack %d requeue=%v", tag, requeue))
		if !b.outstanding[tag] || !b.settled[tag] {
			b.t.Errorf("nack %d: not one outstanding settled delivery", tag)
		}
		delete(b.outstanding, tag)
		return nil
	}
	b.frames = append(b.frames, fmt.Sprintf("nack %d multiple=true requeue=%v", tag, requeue))
	if !b.outstanding[tag] || !requeue {
		b.t.Errorf("nack %d multiple=true requeue=%v: tag %d is not outstanding, or a multiple nack drops", tag, requeue, tag)
	}
	for t := range b.outstanding {
		if t <= tag {
			if !b.backs[t] {
				b.t.Errorf("nack %d multiple=true hands back delivery %d, which its handler did not hand back", tag, t)
			}
			delete(b.outstanding, t)
		}
	}
	return nil
}

func (b *brokerAcks) Reject(tag uint64, requeue bool) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.fail != nil {
		return b.fail
	}
	b.frames = append(b.frames, fmt.Sprintf("reject %d requeue=%v", tag, requeue))
	if !b.outstanding[tag] || !b.settled[tag] {
		b.t.Errorf("reject %d: not one outstanding settled delivery", tag)
	}
	delete(b.outstanding, tag)
	return nil
}

func (b *brokerAcks) sent() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Join(b.frames, ", ")
}

func (b *brokerAcks) left() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.outstanding)
}

// testAcker is an acker of prefetch 20 (so one ack in five sends) that
// never flushes on its own.
func testAcker(ch channelAcks) *acker {
	a := newAcker(ch, 20, slog.New(slog.DiscardHandler))
	a.idle = time.Hour
	return a
}

func ackAll(t *testing.T, a *acker, b *brokerAcks, tags ...uint64) {
	t.Helper()
	for _, tag := range tags {
		b.settle(tag)
		if err := a.ack(tag); err != nil {
			t.Fatalf("ack %d: %v", tag, err)
		}
	}
}

// Acks settled in order go out as one basic.ack with multiple=true once a
// quarter of the prefetch waits, and the rest on flush.
func TestAckerCoalescesAcksInOrder(t *testing.T) {
	b := newBrokerAcks(t, 7)
	a := testAcker(b)
	ackAll(t, a, b, 1, 2, 3, 4)
	if got := b.sent(); got != "" {
		t.Fatalf("sent %q after four acks, want nothing yet", got)
	}
	ackAll(t, a, b, 5, 6, 7)
	if got := b.sent(); got != "ack 5 multiple=true" {
		t.Fatalf("sent %q, want one multiple ack up to 5", got)
	}
	if err := a.flush(); err != nil {
		t.Fatal(err)
	}
	if got := b.sent(); got != "ack 5 multiple=true, ack 7 multiple=true" {
		t.Errorf("sent %q, want the rest up to 7 on flush", got)
	}
	if b.left() != 0 {
		t.Errorf("%d deliveries left outstanding", b.left())
	}
}

// Deliveries handed back are held and coalesced as acks are: each run of
// one kind in tag order is one frame with multiple=true.
func TestAckerCoalescesHandBacks(t *testing.T) {
	b := newBrokerAcks(t, 9)
	a := testAcker(b)
	ackAll(t, a, b, 1, 2)
	for _, tag := range []uint64{3, 4, 5} {
		b.settleBack(tag)
		if err := a.handBack(tag); err != nil {
			t.Fatal(err)
		}
	}
	ackAll(t, a, b, 6, 7)
	b.settleBack(9) // 8 still runs
	if err := a.handBack(9); err != nil {
		t.Fatal(err)
	}
	if got := b.sent(); got != "ack 2 multiple=true, nack 5 multiple=true requeue=true" {
		t.Fatalf("sent %q, want the acks, then the hand-backs, each in one frame", got)
	}
	if err := a.flush(); err != nil {
		t.Fatal(err)
	}
	if got := b.sent(); got != "ack 2 multiple=true, nack 5 multiple=true requeue=true, ack 7 multiple=true, nack 9 requeue=true" {
		t.Errorf("sent %q, want the rest on flush, 9 alone beyond the running 8", got)
	}
	if b.left() != 1 {
		t.Errorf("%d deliveries left outstanding, want 8 alone", b.left())
	}
}

// A delivery still running holds the multiple ack back below it.
func TestAckerNeverAcksADeliveryStillRunning(t *testing.T) {
	b := newBrokerAcks(t, 12)
	a := testAcker(b)
	ackAll(t, a, b, 1, 2, 4, 5, 6) // 3 runs
	if got := b.sent(); got != "ack 2 multiple=true" {
		t.Fatalf("sent %q, want a multiple ack up to 2, below the running 3", got)
	}
	ackAll(t, a, b, 3)
	ackAll(t, a, b, 7, 8)
	if got := b.sent(); got != "ack 2 multiple=true, ack 7 multiple=true" {
		t.Errorf("sent %q, want a multiple ack up to 7 once 3 is done", got)
	}
}

// Acks held back behind a delivery still running wait for it, until it
// has held them back for stuckTicks idles and they are half the prefetch:
// then the tick sends them one by one, so a slow handler never fills the
// prefetch window with settled deliveries.
// Deliveries that only finish out of order share a multiple ack.
func TestAckerSendsAcksHeldBackByASlowHandlerOneByOne(t *testing.T) {
	b := newBrokerAcks(t, 30)
	a := testAcker(b)                               // prefetch 20; the test ticks itself
	ackAll(t, a, b, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11) // 1 runs; half the prefetch is held back
	next := uint64(12)
	for range stuckTicks - 1 {
		a.tick()
		ackAll(t, a, b, next)
		next++
	}
	if got := b.sent(); got != "" {
		t.Fatalf("sent %q after %d ticks, want nothing: 1 may just be descheduled", got, stuckTicks-1)
	}
	a.tick()
	want := ""
	for tag := uint64(2); tag < next; tag++ {
		want += fmt.Sprintf(", ack %d multiple=false", tag)
	}
	if got := b.sent(); got != want[2:] {
		t.Fatalf("sent %q, want each of 2 to %d alone once 1 held them back for %d ticks", got, next-1, stuckTicks)
	}
	ackAll(t, a, b, 1, next, next+2) // next+1 runs
	a.tick()
	ackAll(t, a, b, next+1)
	a.tick()
	if got := b.sent(); got != want[2:] {
		t.Errorf("sent %q, want nothing more while settlements go on and few are held back", got)
	}
	a.tick() // idle
	if got := b.sent(); got != want[2:]+fmt.Sprintf(", ack %d multiple=true", next+2) {
		t.Errorf("sent %q, want one multiple ack up to %d once idle", got, next+2)
	}
	if b.left() != int(30-next-2) {
		t.Errorf("%d deliveries outstanding, want %d (those never settled)", b.left(), 30-next-2)
	}
}

// On the channel of a batch subscription (holdGaps), an idle sends the
// acks up to the contiguous tag, and those behind a delivery still running
// wait for it rather than going one by one: once it settles, one multiple
// ack covers them all. The stuck rule still sends them one by one when they
// hold back half the prefetch.
func TestAckerOfABatchSubscriptionHoldsGapsAtAnIdle(t *testing.T) {
	b := newBrokerAcks(t, 40)
	a := testAcker(b) // prefetch 20; the test ticks itself
	a.holdGaps = true
	ackAll(t, a, b, 1, 2, 4) // 3 runs, in the next batch
	a.tick()                 // settlements came since the timer was set
	a.tick()                 // idle
	if got := b.sent(); got != "ack 2 multiple=true" {
		t.Fatalf("sent %q at an idle, want the ack of 1 and 2 only, 4 waiting for 3", got)
	}
	for range 2 * stuckTicks {
		a.tick()
	}
	if got := b.sent(); got != "ack 2 multiple=true" {
		t.Fatalf("sent %q after more idles, want 4 still waiting: it holds back less than half the prefetch", got)
	}
	ackAll(t, a, b, 3)
	a.tick()
	a.tick()
	if got := b.sent(); got != "ack 2 multiple=true, ack 4 multiple=true" {
		t.Fatalf("sent %q, want one multiple ack of 3 and 4 once 3 settled", got)
	}

	// 5 runs; 6 to 15 (half the prefetch) wait behind it.
	ackAll(t, a, b, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)
	for range stuckTicks + 1 {
		a.tick()
	}
	want := "ack 2 multiple=true, ack 4 multiple=true"
	for tag := 6; tag <= 15; tag++ {
		want += fmt.Sprintf(", ack %d multiple=false", tag)
	}
	if got := b.sent(); got != want {
		t.Errorf("sent %q, want each of 6 to 15 alone once 5 held half the prefetch back for %d ticks", got, stuckTicks)
	}
}

// A nack goes out after every ack settled before it.
func TestAckerSendsWaitingAcksBeforeANack(t *testing.T) {
	b := newBrokerAcks(t, 6)
	a := testAcker(b)
	ackAll(t, a, b, 1, 2, 4)
	b.settle(5)
	if err := a.nack(5, false); err != nil {
		t.Fatal(err)
	}
	if got := b.sent(); got != "ack 2 multiple=true, ack 4 multiple=false, nack 5 requeue=false" {
		t.Errorf("sent %q, want the acks of 1, 2 and 4 before the nack of 5", got)
	}
	ackAll(t, a, b, 3)
	b.settle(6)
	if err := a.nack(6, true); err != nil {
		t.Fatal(err)
	}
	if got := b.sent(); !strings.HasSuffix(got, ", ack 3 multiple=true, nack 6 requeue=true") {
		t.Errorf("sent %q, want the ack of 3 before the requeue of 6", got)
	}
	if b.left() != 0 {
		t.Errorf("%d deliveries left outstanding", b.left())
	}
}

// A millisecond after the last settlement, every waiting ack goes out,
// those behind a running delivery too. Nothing but the idle timer sends
// them: a quarter of the prefetch is 5. On a busy machine the timer may
// also fire between two of the settlements: then the ack of 1 goes out on
// its own first, and the rest as before.
func TestAckerFlushesWhenIdle(t *testing.T) {
	b := newBrokerAcks(t, 4)
	a := newAcker(b, 20, slog.New(slog.DiscardHandler))
	t.Cleanup(a.close)
	ackAll(t, a, b, 1, 2, 4)
	testkit.Eventually(t, "the idle flush", func() bool { return b.left() == 1 })
	const flushed = "ack 2 multiple=true, ack 4 multiple=false"
	if got := b.sent(); got != flushed && got != "ack 1 multiple=true, "+flushed {
		t.Errorf("sent %q, want %q (or the ack of 1 before it, when the timer fired in between)", got, flushed)
	}
	if a.waiting() != 0 {
		t.Errorf("%d acks still waiting", a.waiting())
	}
}

// Settling a delivery twice is refused, and sends nothing: the broker
// would close the channel.
func TestAckerRefusesASecondSettlement(t *testing.T) {
	b := newBrokerAcks(t, 3)
	a := testAcker(b)
	ackAll(t, a, b, 1, 3)
	for _, tag := range []uint64{1, 3} {
		if err := a.ack(tag); err == nil {
			t.Errorf("second ack of %d accepted", tag)
		}
		if err := a.nack(tag, true); err == nil {
			t.Errorf("nack of the acked %d accepted", tag)
		}
	}
	if err := a.flush(); err != nil {
		t.Fatal(err)
	}
	if got := b.sent(); got != "ack 1 multiple=true, ack 3 multiple=false" {
		t.Errorf("sent %q", got)
	}
}

// Once the channel fails, the acks waiting are dropped with a warning,
// and every later settlement fails.
func TestAckerFailsOnceTheChannelFails(t *testing.T) {
	logs := streamtest.NewLogRecorder(slog.DiscardHandler)
	b := newBrokerAcks(t, 10)
	a := newAcker(b, 20, logs.Logger())
	a.idle = time.Hour
	ackAll(t, a, b, 1, 2)
	b.mu.Lock()
	b.fail = errors.New("channel/connection is not open")
	b.mu.Unlock()
	ackAll(t, a, b, 3, 4)
	b.settle(5)
	if err := a.ack(5); !errors.Is(err, errAcksClosed) {
		t.Fatalf("ack on a failed channel = %v, want errAcksClosed", err)
	}
	if err := a.ack(6); !errors.Is(err, errAcksClosed) {
		t.Errorf("ack after the failure = %v, want errAcksClosed", err)
	}
	if err := a.nack(7, true); !errors.Is(err, errAcksClosed) {
		t.Errorf("nack after the failure = %v, want errAcksClosed", err)
	}
	warned := logs.Find(slog.LevelWarn, "rabbitmq: acks not sent before the consuming channel closed; the broker delivers those messages again")
	if len(warned) != 1 || warned[0].Attr("messages") != "5" {
		t.Errorf("warnings %v, want one naming the 5 acks dropped", warned)
	}
}

// close drops what waits, and settles nothing more.
func TestAckerCloseDropsWhatWaits(t *testing.T) {
	b := newBrokerAcks(t, 3)
	a := testAcker(b)
	ackAll(t, a, b, 1)
	a.close()
	if err := a.ack(2); !errors.Is(err, errAcksClosed) {
		t.Errorf("ack after close = %v", err)
	}
	if got := b.sent(); got != "" {
		t.Errorf("sent %q after close", got)
	}
}

// Many deliveries settled in a random order by concurrent handlers, acks
// and nacks mixed, with random flushes: the broker never sees an ack of a
// delivery still running, nor a settlement it would refuse, and after the
// last flush nothing settled is left outstanding.
func TestAckerHoldsUnderRandomSettlement(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			const n = 500
			rng := rand.New(rand.NewPCG(seed, 7))
			b := newBrokerAcks(t, n)
			a := newAcker(b, 1+rng.IntN(100), slog.New(slog.DiscardHandler))
			a.idle = time.Duration(rng.IntN(3)) * time.Millisecond
			t.Cleanup(a.close)
			// Tags are handed out in order and settle out of order: each
			// of 4 workers takes the next tag and settles it after a few
			// steps of the others.
			tags := make(chan uint64, n)
			for tag := range uint64(n) {
				if tag+1 != 42 { // 42 never settles: a handler still running
					tags <- tag + 1
				}
			}
			close(tags)
			var wg sync.WaitGroup
			for w := range 4 {
				seedW := seed*10 + uint64(w)
				wg.Go(func() {
					rng := rand.New(rand.NewPCG(seedW, 9))
					for tag := range tags {
						for range rng.IntN(50) {
							_ = rng.Int() // work
						}
						b.settle(tag)
						var err error
						switch r := rng.IntN(20); {
						case r < 4:
							b.settleBack(tag)
							err = a.handBack(tag)
						case r == 4:
							err = a.nack(tag, true)
						case r == 1:
							err = a.nack(tag, false)
						case r == 2:
							err = a.ack(tag)
							if err == nil {
								err = a.flush()
							}
						default:
							err = a.ack(tag)
						}
						if err != nil {
							t.Errorf("settle %d: %v", tag, err)
						}
					}
				})
			}
			wg.Wait()
			if err := a.flush(); err != nil {
				t.Fatal(err)
			}
			if b.left() != 1 {
				t.Errorf("%d deliveries outstanding after the last flush, want 1 (42, never settled)", b.left())
			}
		})
	}
}
