package storetest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/streamgen/streamgen/runtime/deadletter"
)

// The memory store passes the suite.
func TestMemoryStoreConformance(t *testing.T) {
	Run(t, Fixture{New: memoryFixture(nil)})
}

// memoryFixture makes fresh MemoryStores, wrapped by wrap when not nil.
// Their replays are recorded (Sent): a target reads those sent to its
// queue, or to its exchange, which is bound to the queue "bound".
func memoryFixture(wrap func(*deadletter.MemoryStore) deadletter.Store) func(testing.TB) Instance {
	return func(testing.TB) Instance {
		m := deadletter.NewMemoryStore("letters")
		var s deadletter.Store = m
		if wrap != nil {
			s = wrap(m)
		}
		return Instance{
			Store: s,
			Park: func(_ context.Context, letters ...*deadletter.Letter) error {
				m.Add(letters...)
				return nil
			},
			Targets: []Target{
				{To: deadletter.Target{}, Queue: "source", Arrived: sentTo(m, "", "source")},
				{To: deadletter.Target{Queue: "other"}, Queue: "other", Arrived: sentTo(m, "", "other")},
				{To: deadletter.Target{Exchange: "ex", RoutingKey: "rk"}, Queue: "bound", Arrived: sentTo(m, "ex", "rk")},
			},
		}
	}
}

// sentTo reads the messages m sent to exchange with key.
func sentTo(m *deadletter.MemoryStore, exchange, key string) func(context.Context) ([]Arrival, error) {
	return func(context.Context) ([]Arrival, error) {
		var out []Arrival
		for _, s := range m.Sent() {
			if s.Exchange != exchange || s.Key != key {
				continue
			}
			queue := s.Key
			if s.Exchange != "" {
				queue = "bound"
			}
			out = append(out, Arrival{Queue: queue, Message: s.Message})
		}
		return out, nil
	}
}

// Each case fails on a store that breaks its rule.
func TestCasesFailOnBrokenStores(t *testing.T) {
	for _, c := range []struct {
		store string
		wrap  func(*deadletter.MemoryStore) deadletter.Store
		cases []string
	}{
		{"that reads newest first", func(m *deadletter.MemoryStore) deadletter.Store { return newestFirst{m} },
			[]string{"ScanReadsEveryLetterOldestFirstWithItsExplanation", "OrderIsKept", "SelectionPicksByEveryField"}},
		{"whose replayed letters come back", func(m *deadletter.MemoryStore) deadletter.Store { return comeBack{m} },
			[]string{"ReplaySendsEachLetterAsANewDeliveryToEveryTarget", "OrderIsKept", "AReaderDuringASlowReplayLosesNothing"}},
		{"that hides its letters from a second reader", func(m *deadletter.MemoryStore) deadletter.Store { return &oneReader{MemoryStore: m} },
			[]string{"TwoReadersAtOnceSeeEveryLetter"}},
		{"that hides its letters from a second reader and says nobody holds them", func(m *deadletter.MemoryStore) deadletter.Store { return silentHolder{&oneReader{MemoryStore: m}} },
			[]string{"TwoReadersAtOnceSeeEveryLetter"}},
		{"that reads bodies as text", func(m *deadletter.MemoryStore) deadletter.Store { return asText{m} },
			[]string{"OddBytesAreKeptExactly"}},
		{"that imports as it used to", func(m *deadletter.MemoryStore) deadletter.Store { return oldImport{m} },
			[]string{"ImportRefusesNull", "ImportRefusesAnEmptyObject", "ImportRefusesATextBodyThatIsNotUTF8", "ImportRefusesAHeaderThatIsNotUTF8"}},
		{"whose dry runs replay", func(m *deadletter.MemoryStore) deadletter.Store { return wetDryRun{m} },
			[]string{"ReplayDryRunChangesNothing", "SelectionPicksByEveryField"}},
	} {
		for _, name := range c.cases {
			i := slices.IndexFunc(cases, func(tc testCase) bool { return tc.name == name })
			if i < 0 {
				t.Fatalf("no case %s", name)
			}
			if failures := runCase(t, cases[i], Fixture{New: memoryFixture(c.wrap)}); len(failures) == 0 {
				t.Errorf("%s passes on a store %s", name, c.store)
			} else {
				t.Logf("%s, on a store %s: %s", name, c.store, failures[0])
			}
		}
	}
}

// A fixture must give a Target of each kind its store replays to, and
// none of a kind it does not: the replay cases send to each.
func TestFixtureNamesATargetOfEachKindTheStoreTakes(t *testing.T) {
	c := cases[slices.IndexFunc(cases, func(tc testCase) bool { return tc.name == "ReplaySendsEachLetterAsANewDeliveryToEveryTarget" })]
	for _, f := range []struct {
		name string
		edit func([]Target) []Target
		want string
	}{
		{"without an exchange", func(ts []Target) []Target {
			return slices.DeleteFunc(ts, func(tg Target) bool { return tg.To.Exchange != "" })
		}, `no Target of kind "an exchange"`},
		{"with an address", func(ts []Target) []Target {
			return append(ts, Target{To: deadletter.Target{Address: "tcp://127.0.0.1:1", Queue: "q"}, Queue: "q", Arrived: ts[0].Arrived})
		}, "a queue at an address, which letters does not replay to"},
	} {
		fixture := memoryFixture(nil)
		failures := runCase(t, c, Fixture{New: func(t testing.TB) Instance {
			in := fixture(t)
			in.Targets = f.edit(in.Targets)
			return in
		}})
		if len(failures) == 0 || !strings.Contains(failures[0], f.want) {
			t.Errorf("a fixture %s: failures %q, want one that says %q", f.name, failures, f.want)
		}
	}
}

// newestFirst reads its letters newest first.
type newestFirst struct{ *deadletter.MemoryStore }

func (s newestFirst) Scan(ctx context.Context, fn func(*deadletter.Letter) error) error {
	var all []*deadletter.Letter
	if err := s.MemoryStore.Scan(ctx, func(l *deadletter.Letter) error { all = append(all, l); return nil }); err != nil {
		return err
	}
	slices.Reverse(all)
	for _, l := range all {
		if err := fn(l); err != nil {
			return err
		}
	}
	return nil
}

func (s newestFirst) Select(ctx context.Context, sel deadletter.Selection, fn func(*deadletter.Letter) error) error {
	return deadletter.Select(ctx, s, sel, fn)
}

// comeBack parks each letter it replayed again, at the end.
type comeBack struct{ *deadletter.MemoryStore }

func (s comeBack) Replay(ctx context.Context, sel deadletter.Selection, opts deadletter.ReplayOptions) (deadletter.Report, error) {
	var picked []*deadletter.Letter
	_ = s.Select(ctx, sel, func(l *deadletter.Letter) error { picked = append(picked, l); return nil })
	rep, err := s.MemoryStore.Replay(ctx, sel, opts)
	if !opts.DryRun {
		s.Add(picked...)
	}
	return rep, err
}

// oneReader gives a Scan nothing while another runs, as a store whose
// readers hold the letters they read.
type oneReader struct {
	*deadletter.MemoryStore
	mu sync.Mutex
}

func (s *oneReader) Scan(ctx context.Context, fn func(*deadletter.Letter) error) error {
	if !s.mu.TryLock() {
		return nil
	}
	defer s.mu.Unlock()
	return s.MemoryStore.Scan(ctx, fn)
}

// asText reads each body as text, bytes that are not UTF-8 as U+FFFD.
type asText struct{ *deadletter.MemoryStore }

func (s asText) Scan(ctx context.Context, fn func(*deadletter.Letter) error) error {
	return s.MemoryStore.Scan(ctx, func(l *deadletter.Letter) error {
		l.Body = []byte(strings.ToValidUTF8(string(l.Body), "\ufffd"))
		return fn(l)
	})
}

// oldImport reads each line into a record of its own: null and {} are
// empty letters, a text body and headers go through JSON strings.
type oldImport struct{ *deadletter.MemoryStore }

func (s oldImport) Import(_ context.Context, r io.Reader) (int, error) {
	sc := bufio.NewScanner(r)
	n := 0
	for line := 1; sc.Scan(); line++ {
		var rec struct {
			Body       string
			Headers    map[string]any
			Properties deadletter.Properties
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return n, fmt.Errorf("line %d: %w", line, err)
		}
		s.Add(deadletter.NewLetter([]byte(rec.Body), rec.Headers, rec.Properties))
		n++
	}
	return n, sc.Err()
}

// wetDryRun replays for real when asked for a dry run.
type wetDryRun struct{ *deadletter.MemoryStore }

func (s wetDryRun) Replay(ctx context.Context, sel deadletter.Selection, opts deadletter.ReplayOptions) (deadletter.Report, error) {
	opts.DryRun = false
	return s.MemoryStore.Replay(ctx, sel, opts)
}

// recordingTB runs a case and records its failures instead of failing
// the test.
type recordingTB struct {
	testing.TB
	name string

	mu       sync.Mutex
	failures []string
	cleanups []func()
}

func (r *recordingTB) Name() string        { return r.TB.Name() + "/" + r.name }
func (r *recordingTB) Helper()             {}
func (r *recordingTB) Logf(string, ...any) {}
func (r *recordingTB) Log(...any)          {}
func (r *recordingTB) Error(args ...any)   { r.record(fmt.Sprint(args...)) }
func (r *recordingTB) Errorf(format string, args ...any) {
	r.record(fmt.Sprintf(format, args...))
}
func (r *recordingTB) Fatal(args ...any) { r.record(fmt.Sprint(args...)); goruntime.Goexit() }
func (r *recordingTB) Fatalf(format string, args ...any) {
	r.record(fmt.Sprintf(format, args...))
	goruntime.Goexit()
}

func (r *recordingTB) Cleanup(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cleanups = append(r.cleanups, f)
}

func (r *recordingTB) record(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failures = append(r.failures, msg)
}

// runCase runs c against f and returns its failures.
func runCase(t *testing.T, c testCase, f Fixture) []string {
	if f.Timeout <= 0 {
		f.Timeout = 10e9
	}
	r := &recordingTB{TB: t, name: c.name}
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.run(r, f)
	}()
	<-done
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.failures)
}

// silentHolder hides the letters a reader holds from the others, as a
// RabbitMQ queue does, but says no reader holds any.
type silentHolder struct{ *oneReader }

func (silentHolder) Holders(context.Context) (int, error) { return 0, nil }
