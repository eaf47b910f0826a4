package benchpair

import (
	"fmt"
	"math"
	goruntime "runtime"
	"runtime/debug"
	"testing"
	"time"
)

// LiveHeap returns the heap in use after full collections: the smallest of
// five readings 20 ms apart, so that the buffer of a message still in
// flight (an original settling after its handler) is not counted.
func LiveHeap() uint64 {
	least := uint64(math.MaxUint64)
	for range 5 {
		time.Sleep(20 * time.Millisecond)
		goruntime.GC()
		debug.FreeOSMemory() // a second, full collection, and scavenge
		var ms goruntime.MemStats
		goruntime.ReadMemStats(&ms)
		least = min(least, ms.HeapAlloc)
	}
	return least
}

// ReportHeapGrowth reports the live heap after a warm-up (heap-warm-B) and
// at the end (heap-end-B) of a run of msgs messages, and the growth
// between them, in percent and per message.
func ReportHeapGrowth(b *testing.B, warm, end uint64, msgs int) {
	b.ReportMetric(float64(warm), "heap-warm-B")
	b.ReportMetric(float64(end), "heap-end-B")
	b.ReportMetric(100*(float64(end)-float64(warm))/float64(warm), "growth-%")
	b.ReportMetric((float64(end)-float64(warm))/float64(msgs), "growth-B/msg")
}

// MiB writes a byte count in MiB.
func MiB(n uint64) string { return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20)) }
