package console_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/deadletter"
)

// memStore is a deadletter.Store in memory: the console's pages are
// written over the interface, and the same pages serve a RabbitMQ queue
// and a ZeroMQ keeper's directory.
type memStore struct {
	name string
	// err, when set, is what every operation fails with.
	err error
	// gate, when set, holds Scan before each letter until it receives.
	gate chan struct{}

	mu      sync.Mutex
	letters []*deadletter.Letter
	sent    map[string][]*deadletter.Letter // replays, by target queue
	ops     int                             // operations that changed the store
	reads   int                             // operations that read every letter
	closed  bool
}

func newMemStore(name string, letters ...*deadletter.Letter) *memStore {
	return &memStore{name: name, letters: letters, sent: map[string][]*deadletter.Letter{}}
}

// letter makes a letter parked from source with reason, as a
// subscription parks it.
func letter(id, typ, source, reason string, parked time.Time, body string, headers ...any) *deadletter.Letter {
	h := map[string]any{
		runtime.HeaderDeadLetterReason:   reason,
		runtime.HeaderDeadLetterSource:   source,
		runtime.HeaderDeadLetterAttempts: "3",
		runtime.HeaderDeadLetterTime:     parked.UTC().Format(time.RFC3339Nano),
	}
	for i := 0; i+1 < len(headers); i += 2 {
		h[headers[i].(string)] = headers[i+1]
	}
	return deadletter.NewLetter([]byte(body), h, deadletter.Properties{MessageID: id, Type: typ, ContentType: "application/json"})
}

func (m *memStore) Name() string { return m.name }

// add parks l.
func (m *memStore) add(l *deadletter.Letter) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.letters = append(m.letters, l)
}

// readings is the number of operations that read every letter so far.
func (m *memStore) readings() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.reads
}

func (m *memStore) Len(context.Context) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return 0, m.err
	}
	return len(m.letters), nil
}

func (m *memStore) snapshot() []*deadletter.Letter {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]*deadletter.Letter(nil), m.letters...)
}

func (m *memStore) Scan(ctx context.Context, fn func(*deadletter.Letter) error) error {
	if m.err != nil {
		return m.err
	}
	m.mu.Lock()
	m.reads++
	m.mu.Unlock()
	for _, l := range m.snapshot() {
		if m.gate != nil {
			select {
			case <-m.gate:
			case <-ctx.Done():
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(l); err != nil {
			return err
		}
	}
	return nil
}

func (m *memStore) Select(ctx context.Context, sel deadletter.Selection, fn func(*deadletter.Letter) error) error {
	n := 0
	return m.Scan(ctx, func(l *deadletter.Letter) error {
		if !sel.Matches(l) || sel.Limit > 0 && n >= sel.Limit {
			return nil
		}
		n++
		return fn(l)
	})
}

func (m *memStore) Groups(ctx context.Context) ([]deadletter.Group, error) {
	var g deadletter.Grouper
	err := m.Scan(ctx, func(l *deadletter.Letter) error { g.Add(l); return nil })
	return g.Groups(), err
}

// take removes the letters sel picks for which do succeeds.
func (m *memStore) take(sel deadletter.Selection, dry bool, do func(*deadletter.Letter) error) (deadletter.Report, error) {
	var rep deadletter.Report
	if m.err != nil {
		return rep, m.err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reads++
	var kept []*deadletter.Letter
	for _, l := range m.letters {
		rep.Scanned++
		if !sel.Matches(l) || sel.Limit > 0 && rep.Selected >= sel.Limit {
			kept = append(kept, l)
			continue
		}
		rep.Selected++
		if dry {
			rep.Done++
			kept = append(kept, l)
			continue
		}
		if err := do(l); err != nil {
			rep.Failed++
			rep.Errors = append(rep.Errors, err.Error())
			kept = append(kept, l)
			continue
		}
		rep.Done++
	}
	if !dry {
		m.letters = kept
		m.ops++
	}
	return rep, nil
}

func (m *memStore) Replay(_ context.Context, sel deadletter.Selection, opts deadletter.ReplayOptions) (deadletter.Report, error) {
	return m.take(sel, opts.DryRun, func(l *deadletter.Letter) error {
		to := l.Source
		if opts.To.Queue != "" {
			to = opts.To.Queue
		}
		if to == "" || to == "missing" {
			return fmt.Errorf("letter %s: nothing takes it at queue %s", l.MessageID(), to)
		}
		m.sent[to] = append(m.sent[to], l)
		return nil
	})
}

func (m *memStore) Purge(_ context.Context, sel deadletter.Selection, dryRun bool) (deadletter.Report, error) {
	return m.take(sel, dryRun, func(*deadletter.Letter) error { return nil })
}

func (m *memStore) Export(ctx context.Context, w io.Writer, sel deadletter.Selection) (int, error) {
	n := 0
	err := m.Select(ctx, sel, func(l *deadletter.Letter) error {
		b, err := l.MarshalJSON()
		if err != nil {
			return err
		}
		n++
		_, err = w.Write(append(b, '\n'))
		return err
	})
	return n, err
}

func (m *memStore) Import(_ context.Context, r io.Reader) (int, error) {
	n := 0
	err := deadletter.ReadLetters(r, func(l *deadletter.Letter) error {
		m.mu.Lock()
		m.letters = append(m.letters, l)
		m.mu.Unlock()
		n++
		return nil
	})
	return n, err
}

func (m *memStore) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return errors.New("closed twice")
	}
	m.closed = true
	return nil
}

// state is what the store holds and sent, to compare before and after.
func (m *memStore) state() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := strconv.Itoa(len(m.letters)) + " letters, ops " + strconv.Itoa(m.ops)
	for q, ls := range m.sent {
		s += fmt.Sprintf(", %d sent to %s", len(ls), q)
	}
	return s
}

var _ deadletter.Store = (*memStore)(nil)
