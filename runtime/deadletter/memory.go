package deadletter

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// MemoryStore is a Store that keeps its letters in memory, for tests of
// code that works on a Store (a console, a command, a program's own
// tools) without a broker. Its Replay sends nothing anywhere: it records
// each message it sends (Sent), or hands it to Deliver.
//
// It behaves as the broker stores do (package storetest checks it as it
// checks them): every operation reads the letters present when it starts,
// oldest first; several may run at once, and a Replay or a Purge waits
// for the one under way, so that no letter is replayed twice.
type MemoryStore struct {
	name string

	// Deliver, when set before the store is first used, is called with
	// each message Replay sends, from Replay's goroutine. An error leaves
	// the letter in the store, counted in Report.Failed with the error's
	// text. When nil, every message is delivered. A delivered message is
	// recorded (Sent) and its letter leaves the store.
	Deliver func(ctx context.Context, s Sent) error

	ops sync.Mutex // held by Replay and Purge for their whole run

	mu      sync.Mutex
	letters []*memoryLetter
	gone    int // letters removed and not yet compacted away
	sent    []Sent
	closed  bool
}

// memoryLetter is a letter kept, and whether it was removed.
type memoryLetter struct {
	l    *Letter
	gone bool
}

// Sent is a message a MemoryStore's Replay sent: Replayed(l) of a letter
// l, and where it went (Target.Route).
type Sent struct {
	// Exchange and Key are where the message went: an exchange and its
	// routing key, or, with Exchange empty, the queue Key.
	Exchange, Key string
	// Address is the replay's Target.Address (a ZeroMQ target), if any.
	Address string
	// Message is the message sent.
	Message *Letter
}

var _ Store = (*MemoryStore)(nil)

// NewMemoryStore returns a store named name holding letters (copies of
// them), oldest first.
func NewMemoryStore(name string, letters ...*Letter) *MemoryStore {
	m := &MemoryStore{name: name}
	m.Add(letters...)
	return m
}

// Add parks copies of letters in the store, after those it holds, as a
// broker parks messages.
func (m *MemoryStore) Add(letters ...*Letter) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, l := range letters {
		m.letters = append(m.letters, &memoryLetter{l: copyLetter(l)})
	}
}

// Sent returns the messages Replay sent so far, in the order it sent
// them.
func (m *MemoryStore) Sent() []Sent {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Sent, len(m.sent))
	for i, s := range m.sent {
		s.Message = copyLetter(s.Message)
		out[i] = s
	}
	return out
}

// Name names the store.
func (m *MemoryStore) Name() string { return m.name }

// Len is the number of letters the store holds.
func (m *MemoryStore) Len(context.Context) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(); err != nil {
		return 0, err
	}
	return len(m.letters) - m.gone, nil
}

// check fails once the store is closed; the caller holds mu.
func (m *MemoryStore) check() error {
	if m.closed {
		return fmt.Errorf("deadletter: memory store %s is closed", m.name)
	}
	return nil
}

// present returns the letters the store holds now, oldest first.
func (m *MemoryStore) present() ([]*memoryLetter, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(); err != nil {
		return nil, err
	}
	out := make([]*memoryLetter, 0, len(m.letters)-m.gone)
	for _, e := range m.letters {
		if !e.gone {
			out = append(out, e)
		}
	}
	return out, nil
}

// visit calls fn with each letter present when it starts, and a copy of
// it that fn may keep, reporting progress.
func (m *MemoryStore) visit(ctx context.Context, fn func(e *memoryLetter, l *Letter) error) error {
	letters, err := m.present()
	if err != nil {
		return err
	}
	progress := Progress(ctx)
	for i, e := range letters {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(e, copyLetter(e.l)); err != nil {
			return err
		}
		progress(i + 1)
	}
	return nil
}

// Scan calls fn with every letter, oldest first. A letter is fn's to keep.
func (m *MemoryStore) Scan(ctx context.Context, fn func(*Letter) error) error {
	return m.visit(ctx, func(_ *memoryLetter, l *Letter) error { return fn(l) })
}

// Select calls fn with every letter sel picks, up to its limit.
func (m *MemoryStore) Select(ctx context.Context, sel Selection, fn func(*Letter) error) error {
	return Select(ctx, m, sel, fn)
}

// Groups gathers the letters by type and normalised reason.
func (m *MemoryStore) Groups(ctx context.Context) ([]Group, error) {
	return GroupsOf(ctx, m)
}

// Export writes the letters sel picks as JSON Lines.
func (m *MemoryStore) Export(ctx context.Context, w io.Writer, sel Selection) (int, error) {
	return Export(ctx, m, "memory store "+m.name, w, sel)
}

// Import parks each letter of r (JSON Lines as Export writes them) after
// those the store holds. A line that is not a letter stops it: the
// letters before that line are imported, none after, and the error names
// the line and says how many were.
func (m *MemoryStore) Import(ctx context.Context, r io.Reader) (int, error) {
	n := 0
	err := readLetters(r, func(l *Letter) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		if err := m.check(); err != nil {
			return err
		}
		m.letters = append(m.letters, &memoryLetter{l: l})
		n++
		return nil
	})
	var le *lineError
	if errors.As(err, &le) {
		err = fmt.Errorf("deadletter: memory store %s: import stopped after %s: %w: fix that line and import the lines from it on again", m.name, Letters(n), err)
	}
	return n, err
}

// Replay sends each letter sel picks as a new delivery of the original
// message (Replayed) to opts.To, through Deliver, and removes it from the
// store once delivered. A letter with no source queue to go back to,
// when opts.To names no queue or exchange, stays and is counted as
// failed, as is one Deliver refused.
func (m *MemoryStore) Replay(ctx context.Context, sel Selection, opts ReplayOptions) (Report, error) {
	var rep Report
	m.ops.Lock()
	defer m.ops.Unlock()
	start := time.Now()
	err := m.visit(ctx, func(e *memoryLetter, l *Letter) error {
		exchange, key, send := rep.Plan(sel, opts, l)
		if !send {
			return nil
		}
		if err := opts.Pace(ctx, start, rep.Selected); err != nil {
			return err
		}
		s := Sent{Exchange: exchange, Key: key, Address: opts.To.Address, Message: Replayed(l)}
		if m.Deliver != nil {
			if err := m.Deliver(ctx, s); err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				rep.Fail("letter %s: not delivered to %s: %v", l.MessageID(), opts.To, err)
				return nil
			}
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		m.sent = append(m.sent, s)
		m.remove(e)
		rep.Done++
		return nil
	})
	return rep, err
}

// Purge removes the letters sel picks (with dryRun, only counts them).
func (m *MemoryStore) Purge(ctx context.Context, sel Selection, dryRun bool) (Report, error) {
	var rep Report
	m.ops.Lock()
	defer m.ops.Unlock()
	err := m.visit(ctx, func(e *memoryLetter, l *Letter) error {
		if !rep.Pick(sel, l) {
			return nil
		}
		if !dryRun {
			m.mu.Lock()
			m.remove(e)
			m.mu.Unlock()
		}
		rep.Done++
		return nil
	})
	return rep, err
}

// remove takes e out of the store; the caller holds mu. Removed letters
// are dropped from the list once they are most of it.
func (m *MemoryStore) remove(e *memoryLetter) {
	if e.gone {
		return
	}
	e.gone = true
	m.gone++
	if m.gone > 64 && 2*m.gone > len(m.letters) {
		kept := m.letters[:0]
		for _, e := range m.letters {
			if !e.gone {
				kept = append(kept, e)
			}
		}
		clear(m.letters[len(kept):])
		m.letters, m.gone = kept, 0
	}
}

// Close closes the store: the operations after it fail.
func (m *MemoryStore) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	return nil
}

// copyLetter returns a copy of l whose body and header map are its own.
func copyLetter(l *Letter) *Letter {
	c := l.clone()
	c.Body = bytes.Clone(l.Body)
	if c.Headers == nil {
		c.Headers = map[string]any{}
	}
	return c
}
