package console

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/streamgen/streamgen/runtime/deadletter"
)

// summary is the index one scan of a store builds: its groups, the chart
// of when their letters were parked, and a row of each letter (what a
// group page shows of it) in its group, newest first, with the letter
// whole for the newest of them, so that the pages are served from it
// without reading the store again. Its memory is bounded whatever the
// store holds: maxRows rows (a few hundred bytes each: the first line of
// the reason is cut at 160 characters), maxWhole bytes of letters whole,
// and the groups; past maxRows letters a group page reads the store.
type summary struct {
	Letters int
	// Held is how many other readers held letters when the scan ended
	// (deadletter.Holders): the scan did not see theirs.
	Held    int
	Groups  []deadletter.Group // the largest first (Grouper.Groups)
	Chart   *histogram
	Started time.Time // when the scan started: it saw no action that ended later
	At      time.Time // when it ended
	Took    time.Duration
	// rows are each group's letters, newest first, when Complete.
	rows     map[string][]*entry
	byKey    map[string][]*entry
	Complete bool // rows and byKey hold every letter read
}

// entry is a letter in the index.
type entry struct {
	row   letterRow
	group string // its group's key
	seq   int    // its place in the scan
	whole []byte // the letter as JSON (Letter.MarshalJSON); nil when past maxWhole
}

// The index's bounds (variables for the tests).
var (
	maxRows  = 250_000  // letters with a row in the index
	maxWhole = 32 << 20 // bytes of letters kept whole, the newest read
)

// summaryCache holds a store's latest summary. One scan at a time reads
// the store again, in the background: a page that has no summary, or
// one read before the last action ended, waits for it a moment
// (Options.Wait), then shows what it has and refreshes itself.
type summaryCache struct {
	mu      sync.Mutex
	sum     *summary
	err     error
	at      time.Time     // when sum or err was read
	acted   time.Time     // when the last action on the store ended
	action  string        // what it was: "replay", "purge"
	running chan struct{} // closed when the scan under way ends; nil when none
	read    atomic.Int64  // the letters the scan under way has read
}

// summaryState is what a page shows of a store's summary.
type summaryState struct {
	sum     *summary  // the latest; nil until the first scan ends
	err     error     // of the latest scan
	reading bool      // a scan is under way
	read    int       // the letters it has read
	stale   string    // the action that ended after sum was read, if any
	acted   time.Time // when it ended
}

func (c *Console) cache(name string) *summaryCache {
	c.mu.Lock()
	defer c.mu.Unlock()
	sc, ok := c.summaries[name]
	if !ok {
		sc = &summaryCache{}
		c.summaries[name] = sc
	}
	return sc
}

// acted records that an action on s ended, which makes the summary read
// before it out of date, and reads s again at once (once the scan under
// way ends, if one is: it may have read letters the action moved).
func (c *Console) acted(s deadletter.Store, action string) {
	sc := c.cache(s.Name())
	sc.mu.Lock()
	sc.acted, sc.action = time.Now(), action
	c.startScan(s, sc)
	sc.mu.Unlock()
}

// due reports whether the summary should be read again: there is none,
// an action ended after it was read, or it is older than Options.Fresh
// (and older than five times the scan took, so that a large store is not
// read over and over). sc.mu is held.
func (c *Console) due(sc *summaryCache) bool {
	switch {
	case sc.at.IsZero() || sc.sum == nil && sc.err == nil:
		return true
	case sc.sum != nil && sc.sum.Started.Before(sc.acted):
		return true
	case sc.err != nil:
		return time.Since(sc.at) >= c.opts.Fresh
	}
	return time.Since(sc.at) >= max(c.opts.Fresh, 5*sc.sum.Took)
}

// startScan starts a scan of s unless one is under way. sc.mu is held.
func (c *Console) startScan(s deadletter.Store, sc *summaryCache) {
	if sc.running != nil || c.ctx.Err() != nil {
		return
	}
	done := make(chan struct{})
	sc.running = done
	sc.read.Store(0)
	c.scans.Add(1)
	go func() {
		defer c.scans.Done()
		c.scan(s, sc, done)
	}()
}

// summarize returns the summary of s, starting a scan when it is due
// (see due). A page waits for the scan up to Options.Wait when it has no
// summary, or one from before the last action, and is served at once
// from the one it has otherwise.
func (c *Console) summarize(ctx context.Context, s deadletter.Store) summaryState {
	sc := c.cache(s.Name())
	sc.mu.Lock()
	if c.due(sc) {
		c.startScan(s, sc)
	}
	running := sc.running
	wait := sc.sum == nil || sc.sum.Started.Before(sc.acted)
	sc.mu.Unlock()
	if running != nil && wait {
		t := time.NewTimer(c.opts.Wait)
		defer t.Stop()
		select {
		case <-running:
		case <-t.C:
		case <-ctx.Done():
		}
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	st := summaryState{sum: sc.sum, err: sc.err, reading: sc.running != nil, read: int(sc.read.Load())}
	if st.sum != nil && st.sum.Started.Before(sc.acted) {
		st.stale, st.acted = sc.action, sc.acted
	}
	return st
}

// scan reads s into its summary, under the console's context: it goes on
// when the page that started it is closed, and ends on Close. When an
// action ended while it read, it starts the next scan at once.
func (c *Console) scan(s deadletter.Store, sc *summaryCache, done chan struct{}) {
	start := time.Now()
	var g deadletter.Grouper
	h := newHistogram()
	n := 0
	ix := newIndexer()
	err := s.Scan(c.ctx, func(l *deadletter.Letter) error {
		n++
		sc.read.Add(1)
		key := g.Add(l)
		h.add(key, l.ParkedAt)
		ix.add(key, l)
		return nil
	})
	var sum *summary
	if err == nil {
		h.extend(time.Now())
		groups := g.Groups() // the largest first
		sum = &summary{Letters: n, Groups: groups, Chart: h, Started: start, At: time.Now(), Took: time.Since(start)}
		ix.finish(sum)
		sum.Held, err = deadletter.Holders(c.ctx, s)
		if err != nil {
			sum = nil
		}
	}
	sc.mu.Lock()
	if err == nil {
		sc.sum = sum
	}
	sc.err = err
	sc.at = time.Now()
	sc.running = nil
	if start.Before(sc.acted) {
		c.startScan(s, sc) // an action ended meanwhile: read again
	}
	sc.mu.Unlock()
	close(done)
}

// indexer builds a summary's rows in a scan.
type indexer struct {
	entries []*entry
	groups  map[string][]*entry
	strs    map[string]string // types and sources, kept once
	whole   int               // bytes of letters whole held
	first   int               // the oldest entry still whole
	over    bool              // past maxRows
}

func newIndexer() *indexer {
	return &indexer{groups: map[string][]*entry{}, strs: map[string]string{}}
}

func (ix *indexer) intern(s string) string {
	if v, ok := ix.strs[s]; ok {
		return v
	}
	if len(ix.strs) < 10_000 {
		ix.strs[s] = s
	}
	return s
}

func (ix *indexer) add(group string, l *deadletter.Letter) {
	if ix.over || len(ix.entries) >= maxRows {
		ix.over, ix.entries, ix.groups = true, nil, nil
		return
	}
	key, b := deadletter.LetterKeyJSON(l)
	r := rowKeyed(l, key)
	r.Type, r.Source = ix.intern(r.Type), ix.intern(r.Source)
	e := &entry{row: r, group: group, seq: len(ix.entries)}
	if b != nil && len(b) <= maxWhole/8 {
		e.whole = b
		ix.whole += len(b)
		for ix.whole > maxWhole { // keep the newest read whole
			ix.whole -= len(ix.entries[ix.first].whole)
			ix.entries[ix.first].whole = nil
			ix.first++
		}
	}
	ix.entries = append(ix.entries, e)
	ix.groups[group] = append(ix.groups[group], e)
}

// finish puts the rows in sum: each group's newest first (by park time,
// then the last read first; letters without a park time last).
func (ix *indexer) finish(sum *summary) {
	if ix.over {
		return
	}
	sum.Complete = true
	sum.rows = ix.groups
	sum.byKey = make(map[string][]*entry, len(ix.entries))
	for _, e := range ix.entries {
		sum.byKey[e.row.Key] = append(sum.byKey[e.row.Key], e)
	}
	for _, es := range sum.rows {
		slices.SortFunc(es, newestFirst)
	}
}

func newestFirst(a, b *entry) int {
	if az, bz := a.row.Parked.IsZero(), b.row.Parked.IsZero(); az != bz {
		if az {
			return 1
		}
		return -1
	}
	return cmp.Or(b.row.Parked.Compare(a.row.Parked), cmp.Compare(b.seq, a.seq))
}

// The chart's buckets: each width divides the next, so that letters
// counted in buckets of one width add up into buckets of the next.
var widths = []time.Duration{
	time.Minute, 5 * time.Minute, 15 * time.Minute, time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour,
	24 * time.Hour, 48 * time.Hour, 96 * time.Hour, 192 * time.Hour, 384 * time.Hour, 768 * time.Hour,
	1536 * time.Hour, 3072 * time.Hour, 6144 * time.Hour, 12288 * time.Hour, 24576 * time.Hour,
}

const (
	maxBuckets = 48 // across the chart
	minBuckets = 24 // the chart's width is drawn for at least these
	maxSeries  = 64 // groups counted apart; the rest are "other"
	otherKey   = ""
)

// histogram counts letters by park time and group in a streaming scan:
// it widens its buckets as the park times spread, so that at most
// maxBuckets cover them all. Its memory is bounded by maxSeries ×
// maxBuckets, whatever the number of letters or groups.
type histogram struct {
	width   int // index in widths
	lo, hi  int64
	series  map[string]map[int64]int // group key: bucket: count
	undated int
	empty   bool
}

func newHistogram() *histogram {
	return &histogram{series: map[string]map[int64]int{}, empty: true}
}

func (h *histogram) bucket(t time.Time) int64 {
	w := int64(widths[h.width] / time.Second)
	u := t.Unix()
	if u < 0 {
		return (u - w + 1) / w
	}
	return u / w
}

func (h *histogram) add(group string, t time.Time) {
	if t.IsZero() {
		h.undated++
		return
	}
	b := h.place(t)
	s, ok := h.series[group]
	if !ok {
		if len(h.series) >= maxSeries {
			group = otherKey
			s = h.series[otherKey]
		}
		if s == nil {
			s = map[int64]int{}
			h.series[group] = s
		}
	}
	s[b]++
}

// extend makes the chart reach t (the time it was read), so that it
// shows whether letters still come; it counts nothing. It never starts
// the chart earlier: a t before the letters (a clock behind the one that
// parked them) is left out.
func (h *histogram) extend(t time.Time) {
	if !h.empty && h.bucket(t) > h.hi {
		h.place(t)
	}
}

// place widens the buckets until t's fits among at most maxBuckets, and
// returns it.
func (h *histogram) place(t time.Time) int64 {
	b := h.bucket(t)
	if h.empty {
		h.lo, h.hi, h.empty = b, b, false
	}
	for max(b, h.hi)-min(b, h.lo) >= maxBuckets && h.width < len(widths)-1 {
		h.widen()
		b = h.bucket(t)
	}
	h.lo, h.hi = min(h.lo, b), max(h.hi, b)
	return b
}

// widen moves to the next width, adding up the buckets.
func (h *histogram) widen() {
	ratio := int64(widths[h.width+1] / widths[h.width])
	div := func(b int64) int64 {
		if b < 0 {
			return (b - ratio + 1) / ratio
		}
		return b / ratio
	}
	h.width++
	for g, s := range h.series {
		n := make(map[int64]int, len(s))
		for b, count := range s {
			n[div(b)] += count
		}
		h.series[g] = n
	}
	h.lo, h.hi = div(h.lo), div(h.hi)
}

// chartSeries is one group's line of the chart.
type chartSeries struct {
	Key    string
	Counts []int // per bucket, from the oldest
	Total  int
}

// series returns the chart's buckets' start times and, for the top
// groups, the counts per bucket; the rest are added into "other".
func (h *histogram) result(top int) (starts []time.Time, series []chartSeries) {
	if h.empty {
		return nil, nil
	}
	// The chart starts at the first letter's bucket (a short span is
	// drawn with wider bars: see chart).
	lo := h.lo
	n := int(h.hi-lo) + 1
	w := widths[h.width]
	for i := range n {
		starts = append(starts, time.Unix((lo+int64(i))*int64(w/time.Second), 0).UTC())
	}
	for key, s := range h.series {
		cs := chartSeries{Key: key, Counts: make([]int, n)}
		for b, count := range s {
			cs.Counts[b-lo] += count
			cs.Total += count
		}
		series = append(series, cs)
	}
	slices.SortFunc(series, func(a, b chartSeries) int {
		if (a.Key == otherKey) != (b.Key == otherKey) {
			if a.Key == otherKey {
				return 1
			}
			return -1
		}
		return cmp.Or(cmp.Compare(b.Total, a.Total), cmp.Compare(a.Key, b.Key))
	})
	if len(series) > top {
		other := chartSeries{Key: otherKey, Counts: make([]int, n)}
		for _, s := range series[top:] {
			for i, c := range s.Counts {
				other.Counts[i] += c
			}
			other.Total += s.Total
		}
		series = append(series[:top], other)
	}
	return starts, series
}
