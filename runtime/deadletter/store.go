package deadletter

import (
	"context"
	"io"
)

// Store is a place dead letters are kept: a RabbitMQ dead-letter queue
// (Queue), or the directory a ZeroMQ keeper writes. The streamgen dlq
// command and the console work on any Store.
//
// Every operation reads the letters present when it starts and leaves the
// others as they were; a letter leaves the store only by Replay (once its
// new delivery was confirmed) or Purge.
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

var _ Store = (*Queue)(nil)
