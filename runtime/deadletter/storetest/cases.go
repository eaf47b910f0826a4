package storetest

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/streamgen/streamgen/runtime/deadletter"
)

var cases = slices.Concat([]testCase{
	{"ScanReadsEveryLetterOldestFirstWithItsExplanation", scanReadsEveryLetter},
	{"GroupsCountTheLettersByTypeAndCause", groupsCountTheLetters},
	{"SelectionPicksByEveryField", selectionPicksByEveryField},
	{"ReplaySendsEachLetterAsANewDeliveryToEveryTarget", replaySendsEachLetter},
	{"ReplayDryRunChangesNothing", replayDryRunChangesNothing},
	{"PurgeRemovesTheSelection", purgeRemovesTheSelection},
	{"ExportThenImportGivesTheSameLetters", exportThenImport},
	{"TwoReadersAtOnceSeeEveryLetter", twoReadersAtOnce},
	{"AReaderDuringASlowReplayLosesNothing", readerDuringReplay},
	{"OrderIsKept", orderIsKept},
	{"OddBytesAreKeptExactly", oddBytesAreKept},
}, importCases())

// importCases are a case for each of badLines.
func importCases() []testCase {
	out := make([]testCase, len(badLines))
	for i, b := range badLines {
		out[i] = testCase{"ImportRefuses" + b.name, func(t testing.TB, f Fixture) { importRefuses(t, f, b.line) }}
	}
	return out
}

// Scan gives every letter, oldest first, each with its body, headers,
// properties and the explanation read from its headers; so does a second
// Scan, and Len counts them.
func scanReadsEveryLetter(t testing.TB, f Fixture) {
	w := newWorld(t, f)
	w.expectStore("an empty store", nil)
	letters := sample("", "orders", "billing")
	w.park(letters...)
	w.expectStore("Scan", letters)
	got := w.scan()
	w.expectLetters("a second Scan", got, letters)
	if l := got[0]; l.Reason != "order 1: card declined" || l.Source != "orders" || l.Attempts != 3 || l.Poison ||
		!l.ParkedAt.Equal(minute(1)) || !l.Explained || l.ByBroker {
		t.Errorf("m-1 is explained as %q from %q, %d attempts, poison %v, parked at %v, explained %v, by broker %v; want its headers' explanation",
			l.Reason, l.Source, l.Attempts, l.Poison, l.ParkedAt, l.Explained, l.ByBroker)
	}
	if l := got[5]; l.Explained || l.Reason != "" {
		t.Errorf("m-6, without dead-letter headers, is explained: %q", l.Reason)
	}
}

// Groups gather the letters by type and normalised reason, the largest
// first, with their count, key, types, sources and oldest and newest park
// time.
func groupsCountTheLetters(t testing.TB, f Fixture) {
	w := newWorld(t, f)
	letters := sample("", "orders", "billing")
	w.park(letters...)
	groups, err := w.s.Groups(w.ctx())
	if err != nil {
		t.Fatalf("Groups: %v", err)
	}
	type row struct {
		Key, Reason    string
		Count          int
		Types, Sources string
		Oldest, Newest time.Time
	}
	if len(groups) != 3 {
		t.Fatalf("%d groups, want 3: %+v", len(groups), groups)
	}
	want := []row{
		{deadletter.GroupKey(letters[0]), "order <n>: card declined", 3, "Card", "billing,orders", minute(1), minute(4)},
		{deadletter.GroupKey(letters[2]), "ledger unavailable", 2, "Invoice", "billing,orders", minute(3), minute(3)},
		{deadletter.GroupKey(letters[5]), groups[2].Reason, 1, "Card", "", time.Time{}, time.Time{}},
	}
	for i, g := range groups {
		got := row{g.Key, g.Reason, g.Count, strings.Join(g.Types, ","), strings.Join(g.Sources, ","), g.Oldest, g.Newest}
		if got.Key != want[i].Key || got.Reason != want[i].Reason || got.Count != want[i].Count || got.Types != want[i].Types ||
			got.Sources != want[i].Sources || !got.Oldest.Equal(want[i].Oldest) || !got.Newest.Equal(want[i].Newest) {
			t.Errorf("group %d is %+v, want %+v", i, got, want[i])
		}
	}
	if !strings.Contains(groups[2].Reason, "no dead-letter explanation") {
		t.Errorf("the group of the letter without an explanation reads %q", groups[2].Reason)
	}
}

// Every field of a Selection picks, in Select and in a dry run of Purge
// and Replay, the letters it says, in the store's order.
func selectionPicksByEveryField(t testing.TB, f Fixture) {
	w := newWorld(t, f)
	tg := w.sourcedTarget()
	letters := sample("", tg.Queue, tg.Queue)
	w.park(letters...)
	scanned := w.scan()
	for _, c := range []struct {
		what string
		sel  deadletter.Selection
		want []string
	}{
		{"Group", deadletter.Selection{Group: deadletter.GroupKey(letters[0])}, []string{"m-1", "m-2", "m-4"}},
		{"Reason, in another case", deadletter.Selection{Reason: "LEDGER Unavail"}, []string{"m-3", "m-5"}},
		{"Types, one", deadletter.Selection{Types: []string{"Invoice"}}, []string{"m-3", "m-5"}},
		{"Types, two", deadletter.Selection{Types: []string{"Invoice", "Card"}}, []string{"m-1", "m-2", "m-3", "m-4", "m-5", "m-6"}},
		{"Types, none of them", deadletter.Selection{Types: []string{"Refund"}}, nil},
		{"IDs", deadletter.Selection{IDs: []string{"m-5", "m-2", "m-9"}}, []string{"m-2", "m-5"}},
		{"Before", deadletter.Selection{Before: minute(3)}, []string{"m-1", "m-2"}},
		{"After", deadletter.Selection{After: minute(2)}, []string{"m-3", "m-4"}},
		{"After and Before", deadletter.Selection{After: minute(2), Before: minute(4)}, []string{"m-3"}},
		{"Keys", deadletter.Selection{Keys: []string{deadletter.LetterKey(scanned[3]), deadletter.LetterKey(scanned[0])}}, []string{"m-1", "m-4"}},
		{"Limit", deadletter.Selection{Limit: 2}, []string{"m-1", "m-2"}},
		{"Reason and Limit", deadletter.Selection{Reason: "ledger", Limit: 1}, []string{"m-3"}},
		{"Types, After and Limit", deadletter.Selection{Types: []string{"Card"}, After: minute(1), Limit: 5}, []string{"m-2", "m-4"}},
	} {
		if got := w.selectIDs(c.sel); !slices.Equal(got, c.want) {
			t.Errorf("Select by %s picks %v, want %v", c.what, got, c.want)
		}
		if rep := w.purge(c.sel, true); rep.Selected != len(c.want) || rep.Done != len(c.want) || rep.Scanned < len(c.want) {
			t.Errorf("a dry run of Purge by %s reports %+v, want %d selected and done", c.what, rep, len(c.want))
		}
		wantDone := len(c.want)
		if slices.Contains(c.want, "m-6") {
			wantDone-- // it has no source to go back to
		}
		if rep := w.replay(c.sel, deadletter.ReplayOptions{To: tg.To, DryRun: true}); rep.Selected != len(c.want) || rep.Done != wantDone {
			t.Errorf("a dry run of Replay by %s reports %+v, want %d selected, %d done", c.what, rep, len(c.want), wantDone)
		}
	}
	w.expectStore("after the dry runs", letters)
}

// A replay sends each letter picked to the target as a new delivery of the
// original message: the same body byte for byte, the same properties,
// the user headers, none of the headers of its past deliveries, and the
// replay count one more than the letter carried. The letter leaves the
// store; the others stay in their order. A letter without a source, sent
// to its source, is reported failed and stays.
func replaySendsEachLetter(t testing.TB, f Fixture) {
	w := newWorld(t, f)
	for i, tg := range w.in.Targets {
		prefix := fmt.Sprintf("t%d-", i)
		letters := sample(prefix, sourceFor(tg), sourceFor(tg))
		w.park(letters...)
		picked := pick(letters, prefix+"m-1", prefix+"m-4", prefix+"m-6")
		sent, failed := picked, 0
		if tg.sourced() {
			sent, failed = picked[:2], 1
		}
		rep := w.replay(deadletter.Selection{IDs: ids(picked)}, deadletter.ReplayOptions{To: tg.To})
		if rep.Selected != 3 || rep.Done != len(sent) || rep.Failed != failed || len(rep.Errors) != failed || rep.Scanned < 3 {
			t.Errorf("a replay of 3 letters to %s reports %+v, want 3 selected, %d done, %d failed with its error", tg, rep, len(sent), failed)
		}
		if failed > 0 && len(rep.Errors) > 0 && !strings.Contains(rep.Errors[0], prefix+"m-6") {
			t.Errorf("the replay's error %q does not name the letter without a source, %sm-6", rep.Errors[0], prefix)
		}
		w.expectReplays(tg, w.awaitArrivals(tg, len(sent)), sent)
		w.expectStore(fmt.Sprintf("after the replay to %s", tg), without(letters, ids(sent)...))
		if rep := w.purge(deadletter.Selection{}, false); rep.Done != len(letters)-len(sent) {
			t.Errorf("purging the rest reports %+v, want %d done", rep, len(letters)-len(sent))
		}
		w.expectLen(0)
		if got := w.arrived(tg); len(got) != len(sent) {
			t.Errorf("%d messages arrived at %s in the end, want %d", len(got), tg, len(sent))
		}
	}
}

// A dry run of Replay reports what it would do, sends nothing and leaves
// every letter in the store.
func replayDryRunChangesNothing(t testing.TB, f Fixture) {
	w := newWorld(t, f)
	src := w.sourcedTarget()
	letters := sample("", src.Queue, src.Queue)
	w.park(letters...)
	for _, tg := range w.in.Targets {
		want := deadletter.Report{Scanned: 6, Selected: 6, Done: 6}
		if tg.sourced() {
			want.Done, want.Failed = 5, 1 // m-6 has no source
		}
		rep := w.replay(deadletter.Selection{}, deadletter.ReplayOptions{To: tg.To, DryRun: true})
		if rep.Scanned != want.Scanned || rep.Selected != want.Selected || rep.Done != want.Done || rep.Failed != want.Failed {
			t.Errorf("a dry run of a replay to %s reports %+v, want %+v", tg, rep, want)
		}
	}
	w.expectStore("after the dry runs", letters)
	// A real replay of one letter: what arrives first is that letter, so
	// the dry runs sent nothing before it.
	if rep := w.replay(deadletter.Selection{IDs: []string{"m-2"}}, deadletter.ReplayOptions{To: src.To}); rep.Done != 1 {
		t.Fatalf("a replay of m-2 reports %+v", rep)
	}
	w.expectReplays(src, w.awaitArrivals(src, 1), pick(letters, "m-2"))
	for _, tg := range w.in.Targets {
		if got := w.arrived(tg); tg.Queue != src.Queue && len(got) != 0 {
			t.Errorf("%d messages arrived at %s after dry runs", len(got), tg)
		}
	}
	w.expectStore("after the replay of m-2", without(letters, "m-2"))
}

// Purge removes the letters a selection picks, the others staying in
// their order; a dry run only counts them.
func purgeRemovesTheSelection(t testing.TB, f Fixture) {
	w := newWorld(t, f)
	letters := sample("", "orders", "billing")
	w.park(letters...)
	byReason := deadletter.Selection{Reason: "card declined"}
	if rep := w.purge(byReason, true); rep.Selected != 3 || rep.Done != 3 || rep.Failed != 0 {
		t.Errorf("a dry run of a purge of 3 reports %+v", rep)
	}
	w.expectStore("after a dry run of Purge", letters)
	if rep := w.purge(byReason, false); rep.Selected != 3 || rep.Done != 3 || rep.Failed != 0 {
		t.Errorf("a purge of 3 reports %+v", rep)
	}
	left := without(letters, "m-1", "m-2", "m-4")
	w.expectStore("after a purge by reason", left)
	if rep := w.purge(deadletter.Selection{IDs: []string{"m-5"}}, false); rep.Done != 1 {
		t.Errorf("a purge of m-5 reports %+v", rep)
	}
	left = without(left, "m-5")
	w.expectStore("after a purge of m-5", left)
	if rep := w.purge(deadletter.Selection{Limit: 1}, false); rep.Done != 1 {
		t.Errorf("a purge of the oldest letter reports %+v", rep)
	}
	left = without(left, "m-3")
	w.expectStore("after a purge of the oldest letter", left)
	if rep := w.purge(deadletter.Selection{}, false); rep.Done != 1 {
		t.Errorf("a purge of every letter reports %+v, want 1 done", rep)
	}
	w.expectStore("after a purge of every letter", nil)
}

// Export writes the letters a selection picks as JSON Lines, each line
// the letter as Scan gives it; Import of what Export wrote gives the same
// letters again: body, headers with their types, properties, explanation.
func exportThenImport(t testing.TB, f Fixture) {
	w := newWorld(t, f)
	letters := sample("", "orders", "billing")
	w.park(letters...)
	part, n := w.export(deadletter.Selection{Types: []string{"Invoice"}})
	if n != 2 || lineCount(part) != 2 {
		t.Errorf("Export of the Invoice letters says %d and wrote %d lines, want 2", n, lineCount(part))
	}
	w.expectLetters("the Invoice letters Export wrote", readLetters(t, part), pick(letters, "m-3", "m-5"))
	all, n := w.export(deadletter.Selection{})
	if n != 6 || lineCount(all) != 6 {
		t.Fatalf("Export of every letter says %d and wrote %d lines, want 6", n, lineCount(all))
	}
	w.expectLetters("the letters Export wrote", readLetters(t, all), letters)
	w.expectStore("after the exports", letters)
	w.purge(deadletter.Selection{}, false)
	w.expectLen(0)
	n, err := w.s.Import(w.ctx(), bytes.NewReader(all))
	if err != nil || n != 6 {
		t.Fatalf("Import of 6 letters: %d, %v", n, err)
	}
	w.expectStore("after the import", letters)
}

// readLetters reads the letters of JSON Lines b.
func readLetters(t testing.TB, b []byte) []*deadletter.Letter {
	t.Helper()
	var out []*deadletter.Letter
	if err := deadletter.ReadLetters(bytes.NewReader(b), func(l *deadletter.Letter) error { out = append(out, l); return nil }); err != nil {
		t.Fatalf("what Export wrote does not read back: %v", err)
	}
	return out
}

// badLines are lines Import must refuse: what is not a letter, and what
// JSON decoding would read as other bytes than the line holds (U+FFFD for
// bytes that are not UTF-8 or for half a surrogate pair).
var badLines = []struct{ name, line string }{
	{"Null", `null`},
	{"AnEmptyObject", `{}`},
	{"ALetterWithoutABody", `{"body_encoding":"text","properties":{"message_id":"x"}}`},
	{"ANullBody", `{"body":null,"body_encoding":"text"}`},
	{"AnArray", `[{"body":"x"}]`},
	{"NotJSON", `body: x`},
	{"ATextBodyThatIsNotUTF8", "{\"body\":\"caf\xe9\",\"body_encoding\":\"text\"}"},
	{"ATextBodyWithHalfASurrogatePair", `{"body":"a\ud800b","body_encoding":"text"}`},
	{"AnUnknownBodyEncoding", `{"body":"eA==","body_encoding":"rot13"}`},
	{"ABase64BodyThatIsNotBase64", `{"body":"%%%","body_encoding":"base64"}`},
	{"AHeaderThatIsNotUTF8", "{\"body\":\"x\",\"body_encoding\":\"text\",\"headers\":{\"x-h\":\"caf\xe9\"}}"},
	{"AHeaderWithHalfASurrogatePair", `{"body":"x","body_encoding":"text","headers":{"x-h":"a\udc00"}}`},
	{"APropertyThatIsNotUTF8", "{\"body\":\"x\",\"body_encoding\":\"text\",\"properties\":{\"message_id\":\"caf\xe9\"}}"},
	{"AHeaderOfAnUnknownType", `{"body":"x","body_encoding":"text","headers":{"x-h":{"type":"int128","value":1}}}`},
}

// Import refuses a line that is not a letter, with an error that names
// the line: the letters before it are imported, and counted, none after.
func importRefuses(t testing.TB, f Fixture, line string) {
	w := newWorld(t, f)
	letters := sample("", "orders", "billing")
	var in bytes.Buffer
	for i, l := range letters[:3] {
		if i == 2 {
			in.WriteString(line + "\n")
		}
		b, err := l.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		in.Write(append(b, '\n'))
	}
	n, err := w.s.Import(w.ctx(), &in)
	if err == nil {
		t.Fatalf("Import took the line %q as a letter (%d letters imported)", line, n)
	}
	if !strings.Contains(err.Error(), "line 3") {
		t.Errorf("Import's error does not name line 3: %v", err)
	}
	if n != 2 {
		t.Errorf("Import says %d letters were imported before line 3, want 2 (%v)", n, err)
	}
	w.expectStore("after an import refused at line 3", letters[:2])
}

// Two Scans at once, each holding its first letter until the other has
// started (or for a second: a store may let one operation read at a time),
// both see every letter in order; the store is as it was after. In a
// HoldingStore (RabbitMQ), a reader may not see the letters the other
// holds, but then Holders says someone holds letters, what it saw is in
// order, and the two saw every letter between them.
func twoReadersAtOnce(t testing.TB, f Fixture) {
	w := newWorld(t, f)
	letters := numbered(40, "orders")
	w.park(letters...)
	var (
		started [2]chan struct{} // closed when a reader has its first letter, or is done
		got     [2][]*deadletter.Letter
		errs    [2]error
		holders [2]int // what Holders said while the reader held its first letter
		wg      sync.WaitGroup
	)
	started[0], started[1] = make(chan struct{}), make(chan struct{})
	ctx := w.ctx()
	for i := range 2 {
		var once sync.Once
		begin := func() { once.Do(func() { close(started[i]) }) }
		wg.Go(func() {
			defer begin()
			errs[i] = w.s.Scan(ctx, func(l *deadletter.Letter) error {
				if len(got[i]) == 0 {
					begin()
					select { // hold until the other reader has started, or waits its turn
					case <-started[1-i]:
					case <-time.After(time.Second):
					case <-ctx.Done():
					}
					n, err := deadletter.Holders(ctx, w.s)
					if err != nil {
						t.Errorf("reader %d: Holders: %v", i+1, err)
					}
					holders[i] = n
				}
				got[i] = append(got[i], l)
				return nil
			})
		})
	}
	wg.Wait()
	_, holding := w.s.(deadletter.HoldingStore)
	seen := map[string]bool{}
	for i := range 2 {
		if errs[i] != nil {
			t.Errorf("reader %d: Scan: %v", i+1, errs[i])
		}
		for _, l := range got[i] {
			seen[l.MessageID()] = true
		}
		switch {
		case !holding && !slices.Equal(ids(got[i]), ids(letters)):
			t.Errorf("reader %d, reading while the other did, saw %d of the %d letters, in this order: %v; want every letter, oldest first", i+1, len(got[i]), len(letters), ids(got[i]))
		case holding && !inOrder(ids(got[i]), ids(letters)):
			t.Errorf("reader %d saw %v: want the letters it saw oldest first", i+1, ids(got[i]))
		case holding && len(got[i]) < len(letters) && holders[i] == 0:
			// A HoldingStore may hide from one reader the letters the
			// other holds, but must say that someone holds letters.
			t.Errorf("reader %d saw %d of the %d letters, and Holders said 0 while the other reader held some", i+1, len(got[i]), len(letters))
		}
	}
	if len(seen) != len(letters) {
		t.Errorf("the two readers saw %d of the %d letters between them", len(seen), len(letters))
	}
	w.expectStore("after two readers", letters)
}

// inOrder reports whether got is want with some elements left out.
func inOrder(got, want []string) bool {
	j := 0
	for _, g := range got {
		for j < len(want) && want[j] != g {
			j++
		}
		if j == len(want) {
			return false
		}
		j++
	}
	return true
}

// A Scan while a slow replay runs loses nothing: once both end, every
// letter was either replayed or is still in the store, none twice, the
// others in their order.
func readerDuringReplay(t testing.TB, f Fixture) {
	w := newWorld(t, f)
	tg := w.sourcedTarget()
	letters := numbered(30, tg.Queue)
	w.park(letters...)
	var picked []string
	for i := 0; i < len(letters); i += 3 {
		picked = append(picked, letters[i].MessageID())
	}
	var (
		rep       deadletter.Report
		replayErr error
		ended     atomic.Bool
		done      = make(chan struct{})
	)
	go func() {
		defer close(done)
		defer ended.Store(true)
		rep, replayErr = w.s.Replay(w.ctx(), deadletter.Selection{IDs: picked}, deadletter.ReplayOptions{To: tg.To, Rate: 10})
	}()
	w.awaitArrivals(tg, 1) // the replay is under way: it takes a second
	overlapped := !ended.Load()
	var seen []*deadletter.Letter
	scanErr := w.s.Scan(w.ctx(), func(l *deadletter.Letter) error { seen = append(seen, l); return nil })
	<-done
	if replayErr != nil || rep.Done != len(picked) || rep.Failed != 0 {
		t.Fatalf("the slow replay of %d letters: %+v, %v", len(picked), rep, replayErr)
	}
	if !overlapped {
		t.Errorf("the replay ended before the Scan started: the case did not run a reader during a replay")
	}
	if scanErr != nil {
		t.Errorf("the Scan during the replay: %v", scanErr)
	}
	if s := ids(seen); len(slices.Compact(slices.Sorted(slices.Values(s)))) != len(s) {
		t.Errorf("the Scan during the replay saw a letter twice: %v", s)
	}
	w.expectReplays(tg, w.awaitArrivals(tg, len(picked)), pick(letters, picked...))
	w.expectStore("after a Scan during a replay", without(letters, picked...))
}

// The letters keep their order: Scan after Scan, and after a replay and a
// purge of some.
func orderIsKept(t testing.TB, f Fixture) {
	w := newWorld(t, f)
	tg := w.sourcedTarget()
	letters := numbered(20, tg.Queue)
	w.park(letters...)
	for i := range 3 {
		w.expectLetters(fmt.Sprintf("Scan %d", i+1), w.scan(), letters)
	}
	replayed := []string{"r-03", "r-07", "r-12"}
	if rep := w.replay(deadletter.Selection{IDs: replayed}, deadletter.ReplayOptions{To: tg.To}); rep.Done != 3 {
		t.Fatalf("a replay of 3 letters reports %+v", rep)
	}
	left := without(letters, replayed...)
	w.expectStore("after a replay of 3 letters", left)
	w.expectStore("a second Scan after the replay", left)
	if rep := w.purge(deadletter.Selection{IDs: []string{"r-00", "r-10", "r-19"}}, false); rep.Done != 3 {
		t.Fatalf("a purge of 3 letters reports %+v", rep)
	}
	w.expectStore("after a purge of 3 letters", without(left, "r-00", "r-10", "r-19"))
}

// Bodies that are not UTF-8, hold NUL bytes, are 1 MiB of random bytes or
// empty, and headers with odd values come back byte for byte from Scan,
// from Export and Import, and in their replays, to every target.
func oddBytesAreKept(t testing.TB, f Fixture) {
	w := newWorld(t, f)
	for _, tg := range w.in.Targets {
		letters := oddLetters(sourceFor(tg), w.in.Text)
		w.park(letters...)
		w.expectStore("Scan", letters)
		all, n := w.export(deadletter.Selection{})
		if n != len(letters) {
			t.Fatalf("Export wrote %d letters, want %d", n, len(letters))
		}
		w.purge(deadletter.Selection{}, false)
		w.expectLen(0)
		if n, err := w.s.Import(w.ctx(), bytes.NewReader(all)); err != nil || n != len(letters) {
			t.Fatalf("Import of what Export wrote: %d, %v", n, err)
		}
		w.expectStore("after Export and Import", letters)
		if rep := w.replay(deadletter.Selection{}, deadletter.ReplayOptions{To: tg.To}); rep.Done != len(letters) {
			t.Fatalf("a replay of every letter to %s reports %+v", tg, rep)
		}
		w.expectReplays(tg, w.awaitArrivals(tg, len(letters)), letters)
		w.expectLen(0)
	}
}
