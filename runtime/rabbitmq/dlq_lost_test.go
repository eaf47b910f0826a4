package rabbitmq_test

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime/deadletter"
	"github.com/streamgen/streamgen/runtime/rabbitmq"
)

// A replay whose connection the broker closes mid-way ends at once with
// an error that says to run it again; every letter is then replayed or
// still parked (both only for the few whose replay was under way: a crash
// allows that), and a second replay moves the rest. (Before package rabbitmq
// published on its confirm channel, the replay read its closed channel of
// returns in a loop that never ended.)
func TestAReplayWhoseConnectionIsLostEndsAndARerunFinishesIt(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"classic", "quorum"} {
		t.Run(kind, func(t *testing.T) {
			e := newEnv(t)
			dl, target := e.name("lost-"+kind), e.name("lost-target-"+kind)
			args := amqp.Table{}
			if kind == "quorum" {
				args = e.quorumArgs()
			}
			e.declare(dl, args)
			e.declare(target, nil)
			const n = 3000
			want := make([]string, n)
			msgs := make([]amqp.Publishing, n)
			for i := range msgs {
				want[i] = fmt.Sprintf("m-%04d", i)
				msgs[i] = parked(want[i], i)
			}
			e.publish(dl, msgs...)
			dq, err := rabbitmq.DialDeadLetterQueue(opCtx(t), e.url, dl)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = dq.Close() }()

			// 100 letters a second: the replay takes 30 s, and the
			// connection closes after 2 or so.
			type result struct {
				rep deadletter.Report
				err error
				at  time.Time
			}
			ended := make(chan result, 1)
			go func() {
				rep, err := dq.Replay(opCtx(t), deadletter.Selection{}, deadletter.ReplayOptions{To: deadletter.Target{Queue: target}, Rate: 100})
				ended <- result{rep, err, time.Now()}
			}()
			testkit.Eventually(t, "200 letters replayed", func() bool { return e.ready(target) >= 200 })
			if closed := testkit.CloseConnections(t, "streamgen dlq "+dl); closed != 1 {
				t.Fatalf("%d connections closed, want the replay's", closed)
			}
			closedAt := time.Now()
			var r result
			select {
			case r = <-ended:
			case <-time.After(20 * time.Second):
				t.Fatal("the replay did not end within 20 s of its connection closing")
			}
			t.Logf("the replay ended %v after its connection closed: %+v replayed, %v", max(0, r.at.Sub(closedAt)), r.rep.Done, r.err)
			if r.err == nil || !containsAll(r.err.Error(), dl, "stopped after it replayed "+deadletter.Letters(r.rep.Done), "still parked", "run the same replay again") {
				t.Fatalf("a replay whose connection closed returned %+v, %v; want an error that says to run it again", r.rep, r.err)
			}
			if r.rep.Done == 0 || r.rep.Done >= n {
				t.Fatalf("the replay replayed %d of %d letters before its connection closed: not mid-way", r.rep.Done, n)
			}

			// Every letter is replayed or parked again (the broker hands
			// back the letters the replay held once their connection
			// closed).
			testkit.Eventually(t, "every letter replayed or parked", func() bool { return e.ready(dl)+e.ready(target) >= n })
			replayed, parked := scanIDs(t, e, target), scanIDs(t, e, dl)
			both := countBoth(t, replayed, parked, want)
			t.Logf("%d replayed, %d parked, %d both", len(replayed), len(parked), both)
			if len(replayed) < r.rep.Done {
				t.Fatalf("the replay reports %d replayed, the target holds %d", r.rep.Done, len(replayed))
			}
			// Replayed and still parked: only letters whose replay was
			// under way (awaiting its confirm, or its removal), at most
			// the replay's window of 256.
			if both > 256 {
				t.Fatalf("%d letters are both replayed and parked, want at most the 256 a replay has under way", both)
			}

			rep, err := dq.Replay(opCtx(t), deadletter.Selection{}, deadletter.ReplayOptions{To: deadletter.Target{Queue: target}})
			if err != nil || rep.Done != len(parked) || rep.Failed != 0 {
				t.Fatalf("the second replay = %+v, %v; want the %d letters parked replayed", rep, err, len(parked))
			}
			testkit.Eventually(t, "the dead-letter queue empty", func() bool { return e.ready(dl) == 0 })
			got := ids(e.drain(target))
			if len(got) != n+both {
				t.Fatalf("the target holds %d letters after both replays, want %d and the %d replayed twice", len(got), n, both)
			}
			slices.Sort(got)
			if got = slices.Compact(got); !slices.Equal(got, want) {
				t.Fatalf("the target holds %d distinct letters after both replays, want each of the %d", len(got), n)
			}
		})
	}
}

// An import whose connection the broker closes mid-way ends with an error
// that says how many letters it imported: those are in the queue, in
// their order, and importing the lines after them finishes the job.
func TestAnImportWhoseConnectionIsLostSaysHowManyItImported(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	src, dl := e.name("import-src"), e.name("import-lost")
	e.declare(src, nil)
	e.declare(dl, nil)
	const n, before = 2000, 700
	want := make([]string, n)
	msgs := make([]amqp.Publishing, n)
	for i := range msgs {
		want[i] = fmt.Sprintf("m-%04d", i)
		msgs[i] = parked(want[i], i)
	}
	e.publish(src, msgs...)
	var lines bytes.Buffer
	if k, err := e.queue(src).Export(opCtx(t), &lines, deadletter.Selection{}); err != nil || k != n {
		t.Fatalf("Export = %d, %v", k, err)
	}
	all := lines.Bytes()
	cut := 0 // the end of line before
	for range before {
		cut += bytes.IndexByte(all[cut:], '\n') + 1
	}
	dq, err := rabbitmq.DialDeadLetterQueue(opCtx(t), e.url, dl)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = dq.Close() }()
	// The reader gives the first lines, then waits for the connection to
	// close before it gives the rest.
	held := make(chan struct{})
	release := make(chan struct{})
	r := io.MultiReader(bytes.NewReader(all[:cut]), readerFunc(func(p []byte) (int, error) {
		close(held)
		<-release
		return 0, io.EOF
	}), bytes.NewReader(all[cut:]))
	type result struct {
		n   int
		err error
	}
	ended := make(chan result, 1)
	go func() {
		k, err := dq.Import(opCtx(t), r)
		ended <- result{k, err}
	}()
	<-held
	testkit.Eventually(t, "the first lines imported", func() bool { return e.ready(dl) == before })
	if closed := testkit.CloseConnections(t, "streamgen dlq "+dl); closed != 1 {
		t.Fatalf("%d connections closed, want the import's", closed)
	}
	close(release)
	var res result
	select {
	case res = <-ended:
	case <-time.After(20 * time.Second):
		t.Fatal("the import did not end within 20 s of its connection closing")
	}
	if res.err == nil || res.n != before || !containsAll(res.err.Error(), dl, fmt.Sprintf("import stopped after %d letters", before), "import the lines after those again") {
		t.Fatalf("an import whose connection closed returned %d, %v; want an error that says %d letters were imported", res.n, res.err, before)
	}
	t.Logf("the import returned %d, %v", res.n, res.err)
	if got := e.ready(dl); got != res.n {
		t.Fatalf("the queue holds %d letters, the import says %d", got, res.n)
	}
	// The lines after those imported, imported again, finish the job.
	k, err := dq.Import(opCtx(t), bytes.NewReader(all[cut:]))
	if err != nil || k != n-before {
		t.Fatalf("importing the rest = %d, %v", k, err)
	}
	if got := ids(e.drain(dl)); !slices.Equal(got, want) {
		t.Fatalf("the queue holds %d letters, the %s out of order", len(got), misplaced(got, want, firstDifference(got, want)))
	}
}

// readerFunc is a function as an io.Reader.
type readerFunc func(p []byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

// scanIDs lists the ids of the letters of queue q.
func scanIDs(t *testing.T, e *env, q string) []string {
	t.Helper()
	var out []string
	if err := e.queue(q).Scan(opCtx(t), func(l *deadletter.Letter) error { out = append(out, l.MessageID()); return nil }); err != nil {
		t.Fatalf("scan %s: %v", q, err)
	}
	return out
}

// countBoth checks that replayed and parked hold each letter of want, each
// at most once, and no other, and returns how many are in both.
func countBoth(t *testing.T, replayed, parked, want []string) int {
	t.Helper()
	seen := map[string]int{}
	for _, id := range replayed {
		seen[id]++
	}
	for _, id := range parked {
		seen[id] += 2
	}
	both := 0
	for _, id := range want {
		switch seen[id] {
		case 1, 2:
		case 3:
			both++
		case 0:
			t.Fatalf("letter %s is neither replayed nor parked: lost", id)
		default:
			t.Fatalf("letter %s is in the target or the dead-letter queue more than once", id)
		}
		delete(seen, id)
	}
	if len(seen) > 0 {
		t.Fatalf("%d letters that were never parked", len(seen))
	}
	return both
}
