package rows

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/streamgen/streamgen/runtime"
)

//go:generate go tool streamgen
//go:generate go tool streamgen -asyncapi asyncapi.yaml

// ErrTableDown is why a whole insert fails while the table is unavailable.
var ErrTableDown = errors.New("the readings table is unavailable")

// Reading is one meter reading.
type Reading struct {
	Meter string  `json:"meter"`
	Value float64 `json:"value"`
}

// Table is where readings are written: a stand-in for a database table,
// which takes many rows in one insert.
type Table struct {
	mu   sync.Mutex
	rows []Reading
	// inserts counts the inserts, one per batch.
	inserts int
	// down makes the next inserts fail, as an unavailable database would.
	down int
}

// FailNext makes the next n inserts fail with ErrTableDown.
func (t *Table) FailNext(n int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.down = n
}

// Insert writes rs in one insert, or none of them.
func (t *Table) Insert(_ context.Context, rs []Reading) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.inserts++
	if t.down > 0 {
		t.down--
		return ErrTableDown
	}
	t.rows = append(t.rows, rs...)
	return nil
}

// Rows returns the readings written, and how many inserts wrote them.
func (t *Table) Rows() ([]Reading, int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]Reading(nil), t.rows...), t.inserts
}

// Store writes readings into its Table.
type Store struct {
	Table *Table
}

// Insert writes a batch of up to 100 readings in one insert. A reading
// without a meter is parked alone on readings.dead; when the insert
// fails, every reading of the batch is retried.
//
//stream:subscriber "readings" broker=rabbitmq batch_size=100 batch_wait=50ms max_attempts=5 retry_delay=1s dead_letter=readings.dead
func (s *Store) Insert(ctx context.Context, rs []Reading, mds []runtime.Metadata) error {
	var failed runtime.BatchFailures
	good := make([]Reading, 0, len(rs))
	for i, r := range rs {
		if r.Meter == "" {
			failed.Fail(i, runtime.DeadLetter(fmt.Errorf("reading %s has no meter", mds[i].MessageID)))
			continue
		}
		good = append(good, r)
	}
	if len(good) > 0 {
		if err := s.Table.Insert(ctx, good); err != nil {
			return fmt.Errorf("insert %d readings: %w", len(good), err)
		}
	}
	return failed.Err()
}
