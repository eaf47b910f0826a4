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

// summary is what one scan of a store learns: its groups and the chart
// of when their letters were parked. Its memory grows with the number of
// groups, never with the number of letters.
type summary struct {
	Letters int
	Groups  []deadletter.Group // newest first
	Chart   *histogram
	At      time.Time
	Took    time.Duration
}

// summaryCache holds a store's latest summary. One scan at a time reads
// the store again, in the background: a page waits for it a moment
// (Options.Wait), then shows what it has and refreshes itself.
type summaryCache struct {
	mu      sync.Mutex
	sum     *summary
	err     error
	at      time.Time     // when sum or err was read; zero: read it again
	gen     int           // counts forget
	running chan struct{} // closed when the scan under way ends; nil when none
	read    atomic.Int64  // the letters the scan under way has read
}

// summaryState is what a page shows of a store's summary.
type summaryState struct {
	sum     *summary // the latest; nil until the first scan ends
	err     error    // of the latest scan
	reading bool     // a scan is under way
	read    int      // the letters it has read
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

// forget makes the next summary of name read the store again, and drops
// the result of a scan under way, which may have read letters an action
// has since moved.
func (c *Console) forget(name string) {
	sc := c.cache(name)
	sc.mu.Lock()
	sc.at = time.Time{}
	sc.gen++
	sc.mu.Unlock()
}

// summarize returns the summary of s, starting a scan when the last one
// is older than Options.Fresh, and waiting for it up to Options.Wait.
func (c *Console) summarize(ctx context.Context, s deadletter.Store) summaryState {
	sc := c.cache(s.Name())
	sc.mu.Lock()
	if sc.running == nil && (sc.at.IsZero() || time.Since(sc.at) >= c.opts.Fresh) {
		done := make(chan struct{})
		sc.running = done
		sc.read.Store(0)
		gen := sc.gen
		c.scans.Add(1)
		go func() {
			defer c.scans.Done()
			c.scan(s, sc, gen, done)
		}()
	}
	running := sc.running
	sc.mu.Unlock()
	if running != nil {
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
	return summaryState{sum: sc.sum, err: sc.err, reading: sc.running != nil, read: int(sc.read.Load())}
}

// scan reads s into its summary, under the console's context: it goes on
// when the page that started it is closed, and ends on Close.
func (c *Console) scan(s deadletter.Store, sc *summaryCache, gen int, done chan struct{}) {
	start := time.Now()
	var g deadletter.Grouper
	h := newHistogram()
	n := 0
	err := s.Scan(c.ctx, func(l *deadletter.Letter) error {
		n++
		sc.read.Add(1)
		h.add(g.Add(l), l.ParkedAt)
		return nil
	})
	var sum *summary
	if err == nil {
		h.extend(time.Now())
		groups := g.Groups()
		slices.SortStableFunc(groups, func(a, b deadletter.Group) int { return b.Newest.Compare(a.Newest) })
		sum = &summary{Letters: n, Groups: groups, Chart: h, At: time.Now(), Took: time.Since(start)}
	}
	sc.mu.Lock()
	if err == nil {
		sc.sum = sum
	}
	sc.err = err
	sc.at = time.Now()
	if sc.gen != gen {
		sc.at = time.Time{} // an action moved letters meanwhile: read again
	}
	sc.running = nil
	sc.mu.Unlock()
	close(done)
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
	minBuckets = 24
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
// shows whether letters still come; it counts nothing.
func (h *histogram) extend(t time.Time) {
	if !h.empty {
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
	// A short span still gets a chart of minBuckets, ending at its end.
	lo := min(h.lo, h.hi-minBuckets+1)
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
