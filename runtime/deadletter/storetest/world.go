package storetest

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/streamgen/streamgen/runtime/deadletter"
)

// world is one case's store, made by the fixture.
type world struct {
	t  testing.TB
	f  Fixture
	in Instance
	s  deadletter.Store
}

// newWorld asks the fixture for a fresh store and checks what it gave.
// The store is closed in t's cleanup, before the fixture's own cleanup
// runs.
func newWorld(t testing.TB, f Fixture) *world {
	t.Helper()
	in := f.New(t)
	switch {
	case in.Store == nil:
		t.Fatal("storetest: Fixture.New returned no Store")
	case in.Park == nil:
		t.Fatal("storetest: Fixture.New returned no Park")
	case !slices.ContainsFunc(in.Targets, Target.sourced):
		t.Fatal("storetest: Fixture.New returned no Target that sends each letter to its source queue (To with no Queue and no Exchange)")
	}
	for _, tg := range in.Targets {
		if tg.Arrived == nil || tg.Queue == "" {
			t.Fatalf("storetest: target %s has no Arrived or no Queue", tg)
		}
		if !slices.Contains(deadletter.TargetKinds(in.Store), tg.To.Kind()) {
			t.Fatalf("storetest: target %s is %s, which %s does not replay to (deadletter.TargetKinds)", tg, tg.To.Kind(), in.Store.Name())
		}
	}
	for _, k := range deadletter.TargetKinds(in.Store) {
		if !slices.ContainsFunc(in.Targets, func(tg Target) bool { return tg.To.Kind() == k }) {
			t.Fatalf("storetest: Fixture.New returned no Target of kind %q, which %s replays to (deadletter.TargetKinds): the replay cases send to one of each", k, in.Store.Name())
		}
	}
	t.Cleanup(func() {
		if err := in.Store.Close(); err != nil {
			t.Errorf("close %s: %v", in.Store.Name(), err)
		}
	})
	return &world{t: t, f: f, in: in, s: in.Store}
}

// ctx is a context for one operation or wait, bounded by the timeout.
func (w *world) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), w.f.Timeout)
	w.t.Cleanup(cancel)
	return ctx
}

// park parks letters and checks the store counts them.
func (w *world) park(letters ...*deadletter.Letter) {
	w.t.Helper()
	before := w.count()
	if err := w.in.Park(w.ctx(), letters...); err != nil {
		w.t.Fatalf("park %d letters in %s: %v", len(letters), w.s.Name(), err)
	}
	w.expectLen(before + len(letters))
}

// count is what Len says now.
func (w *world) count() int {
	w.t.Helper()
	n, err := w.s.Len(w.ctx())
	if err != nil {
		w.t.Fatalf("Len of %s: %v", w.s.Name(), err)
	}
	return n
}

// expectLen waits until Len says n: a broker may report a count a moment
// old.
func (w *world) expectLen(n int) {
	w.t.Helper()
	deadline := time.Now().Add(w.f.Timeout)
	for {
		got := w.count()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("Len of %s is %d, want %d", w.s.Name(), got, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// scan returns every letter Scan gives.
func (w *world) scan() []*deadletter.Letter {
	w.t.Helper()
	var out []*deadletter.Letter
	if err := w.s.Scan(w.ctx(), func(l *deadletter.Letter) error {
		out = append(out, l)
		return nil
	}); err != nil {
		w.t.Fatalf("Scan of %s: %v", w.s.Name(), err)
	}
	return out
}

// selectIDs returns the message ids of the letters Select gives for sel.
func (w *world) selectIDs(sel deadletter.Selection) []string {
	w.t.Helper()
	var out []*deadletter.Letter
	if err := w.s.Select(w.ctx(), sel, func(l *deadletter.Letter) error {
		out = append(out, l)
		return nil
	}); err != nil {
		w.t.Fatalf("Select %+v of %s: %v", sel, w.s.Name(), err)
	}
	return ids(out)
}

// expectStore checks that the store holds want, in its order, each as
// parked (diffLetter), and that Len agrees.
func (w *world) expectStore(what string, want []*deadletter.Letter) {
	w.t.Helper()
	w.expectLetters(what, w.scan(), want)
	w.expectLen(len(want))
}

// expectLetters checks that got are want, in order, each as parked.
func (w *world) expectLetters(what string, got, want []*deadletter.Letter) {
	w.t.Helper()
	if !slices.Equal(ids(got), ids(want)) {
		w.t.Fatalf("%s: letters %v, want %v", what, ids(got), ids(want))
	}
	for i := range want {
		if d := diffLetter(want[i], got[i], true); d != "" {
			w.t.Errorf("%s: letter %s differs from the one parked:%s", what, want[i].MessageID(), d)
		}
	}
}

// replay runs Replay and fails on an error.
func (w *world) replay(sel deadletter.Selection, opts deadletter.ReplayOptions) deadletter.Report {
	w.t.Helper()
	rep, err := w.s.Replay(w.ctx(), sel, opts)
	if err != nil {
		w.t.Fatalf("Replay %+v to %s: %v (report %+v)", sel, opts.To, err, rep)
	}
	return rep
}

// purge runs Purge and fails on an error.
func (w *world) purge(sel deadletter.Selection, dryRun bool) deadletter.Report {
	w.t.Helper()
	rep, err := w.s.Purge(w.ctx(), sel, dryRun)
	if err != nil {
		w.t.Fatalf("Purge %+v (dry run %v) of %s: %v (report %+v)", sel, dryRun, w.s.Name(), err, rep)
	}
	return rep
}

// export returns what Export writes for sel.
func (w *world) export(sel deadletter.Selection) ([]byte, int) {
	w.t.Helper()
	var b bytes.Buffer
	n, err := w.s.Export(w.ctx(), &b, sel)
	if err != nil {
		w.t.Fatalf("Export %+v of %s: %v", sel, w.s.Name(), err)
	}
	return b.Bytes(), n
}

// arrived returns what arrived at tg so far.
func (w *world) arrived(tg Target) []Arrival {
	w.t.Helper()
	got, err := tg.Arrived(w.ctx())
	if err != nil {
		w.t.Fatalf("read what arrived at %s: %v", tg, err)
	}
	return got
}

// awaitArrivals waits until n messages arrived at tg and returns them all.
func (w *world) awaitArrivals(tg Target, n int) []Arrival {
	w.t.Helper()
	deadline := time.Now().Add(w.f.Timeout)
	for {
		got := w.arrived(tg)
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("%d messages arrived at %s after %v, want %d", len(got), tg, w.f.Timeout, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// expectReplays checks that arrivals are the replays of letters (as
// parked), in order, each sent to tg's queue.
func (w *world) expectReplays(tg Target, got []Arrival, letters []*deadletter.Letter) {
	w.t.Helper()
	gotIDs := make([]string, len(got))
	for i, a := range got {
		gotIDs[i] = a.Message.MessageID()
	}
	if !slices.Equal(gotIDs, ids(letters)) {
		w.t.Fatalf("messages %v arrived at %s, want the replays of %v", gotIDs, tg, ids(letters))
	}
	for i, l := range letters {
		a := got[i]
		if a.Queue != tg.Queue {
			w.t.Errorf("the replay of %s was sent to queue %q, want %q", l.MessageID(), a.Queue, tg.Queue)
		}
		if d := diffLetter(replayOf(l), a.Message, false); d != "" {
			w.t.Errorf("the replay of %s at %s is not the message it should be:%s", l.MessageID(), tg, d)
		}
		for k := range a.Message.Headers {
			if pastHeader(k) {
				w.t.Errorf("the replay of %s carries %s, a header of its past deliveries", l.MessageID(), k)
			}
		}
	}
}

// sourcedTarget is the first target that sends each letter to its source.
func (w *world) sourcedTarget() Target {
	i := slices.IndexFunc(w.in.Targets, Target.sourced)
	return w.in.Targets[i]
}

// sourceFor is the source queue the suite gives letters replayed to tg.
func sourceFor(tg Target) string {
	if tg.sourced() {
		return tg.Queue
	}
	return "orders"
}

// ids returns the message ids of letters.
func ids(letters []*deadletter.Letter) []string {
	out := make([]string, len(letters))
	for i, l := range letters {
		out[i] = l.MessageID()
	}
	return out
}

// pick returns the letters of all with the given message ids, in the
// order of all.
func pick(all []*deadletter.Letter, id ...string) []*deadletter.Letter {
	var out []*deadletter.Letter
	for _, l := range all {
		if slices.Contains(id, l.MessageID()) {
			out = append(out, l)
		}
	}
	return out
}

// without returns the letters of all without the given message ids.
func without(all []*deadletter.Letter, id ...string) []*deadletter.Letter {
	var out []*deadletter.Letter
	for _, l := range all {
		if !slices.Contains(id, l.MessageID()) {
			out = append(out, l)
		}
	}
	return out
}

// lineCount is the number of lines of JSON Lines b.
func lineCount(b []byte) int {
	return strings.Count(strings.TrimSpace(string(b)), "\n") + min(1, len(bytes.TrimSpace(b)))
}
