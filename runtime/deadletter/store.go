package deadletter

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Store is a place dead letters are kept: a RabbitMQ dead-letter queue
// (rabbitmq.DeadLetterQueue), the directory a ZeroMQ keeper writes
// (zeromq.DeadLetterDir), or one of your own. The streamgen dlq command
// and the console work on any Store; package storetest checks that one
// behaves as they expect.
//
// Every operation reads the letters present when it starts and leaves the
// others as they were; a letter leaves the store only by Replay (once its
// new delivery was confirmed, or written, where the broker has no
// confirms) or Purge. In a HoldingStore, an operation does not see the
// letters another reader holds at that moment (Holders says when some
// are held).
type Store interface {
	// Name names the store in messages: the queue's name, the directory.
	Name() string
	// Len is the number of letters the store holds.
	Len(ctx context.Context) (int, error)
	// Scan calls fn with every letter, oldest first.
	Scan(ctx context.Context, fn func(*Letter) error) error
	// Select calls fn with every letter sel picks, up to its limit.
	Select(ctx context.Context, sel Selection, fn func(*Letter) error) error
	// Groups gathers the letters by type and normalised reason.
	Groups(ctx context.Context) ([]Group, error)
	// Replay publishes the letters sel picks as new deliveries.
	Replay(ctx context.Context, sel Selection, opts ReplayOptions) (Report, error)
	// Purge removes the letters sel picks.
	Purge(ctx context.Context, sel Selection, dryRun bool) (Report, error)
	// Export writes the letters sel picks as JSON Lines.
	Export(ctx context.Context, w io.Writer, sel Selection) (int, error)
	// Import adds the letters of a JSON Lines stream to the store.
	Import(ctx context.Context, r io.Reader) (int, error)
	// Close releases what the store holds open.
	Close() error
}

// ErrBusy is what an operation of a store returns when another operation
// (a replay, a purge, a listing; in this process or another) reads the
// store and did not end within the operation's patience: run it again
// when that one ends. A store whose readers hold letters from each other
// lets one operation read at a time, so that none sees another's letters
// out of their order.
var ErrBusy = errors.New("another operation (a replay, purge or listing under way) is reading the store")

// Scanner is what Select, GroupsOf and Export need of a store.
type Scanner interface {
	Scan(ctx context.Context, fn func(*Letter) error) error
}

// Select calls fn with each letter of s that sel picks, up to its limit:
// a Store's Select.
func Select(ctx context.Context, s Scanner, sel Selection, fn func(*Letter) error) error {
	n := 0
	return s.Scan(ctx, func(l *Letter) error {
		if !sel.Matches(l) || sel.Limit > 0 && n >= sel.Limit {
			return nil
		}
		n++
		return fn(l)
	})
}

// GroupsOf scans s and returns its groups (Grouper.Groups): a Store's
// Groups.
func GroupsOf(ctx context.Context, s Scanner) ([]Group, error) {
	var g Grouper
	if err := s.Scan(ctx, func(l *Letter) error { g.Add(l); return nil }); err != nil {
		return nil, err
	}
	return g.Groups(), nil
}

// Export writes each letter of s that sel picks to w as JSON Lines, one
// Letter.MarshalJSON a line, and returns the number written: a Store's
// Export. name names the store in an error.
func Export(ctx context.Context, s Scanner, name string, w io.Writer, sel Selection) (int, error) {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	n := 0
	err := Select(ctx, s, sel, func(l *Letter) error {
		if err := enc.Encode(l); err != nil {
			return fmt.Errorf("deadletter: %s: export: %w", name, err)
		}
		n++
		return nil
	})
	if ferr := bw.Flush(); err == nil && ferr != nil {
		err = fmt.Errorf("deadletter: %s: export: %w", name, ferr)
	}
	return n, err
}

// HoldingStore is a Store whose readers hold the letters they read from
// each other until they hand them back, as RabbitMQ's consumers do: a
// Scan, a replay or a purge does not see a letter another reader holds at
// that moment. Nothing is lost, but a listing taken then is incomplete,
// and a tool must say so rather than count what it saw as all there is.
type HoldingStore interface {
	Store
	// Holders is how many readers other than the caller's own finished
	// operations hold letters now.
	Holders(ctx context.Context) (int, error)
}

// Holders returns how many other readers hold letters of s now (see
// HoldingStore); 0 for a store whose readers hold nothing from each other
// (a directory, memory).
func Holders(ctx context.Context, s Store) (int, error) {
	if h, ok := s.(HoldingStore); ok {
		return h.Holders(ctx)
	}
	return 0, nil
}
