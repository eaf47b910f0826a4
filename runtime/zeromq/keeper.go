package zeromq

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/deadletter"
)

// errLocked is what lockFile returns when it does not wait for a lock.
var errLocked = errors.New("locked by another process")

// Keeper keeps the dead letters of ZeroMQ services: it binds the address
// their dead_letter queue dials (a PULL) and writes each letter it
// receives to a DeadLetterDir, durably (fsync'd), before it reads the next one from
// that connection. A letter it wrote survives a SIGKILL; ZeroMQ has no
// acknowledgements, so one still on its way (in the kernel's buffers, or
// read and not yet written) is lost with the keeper, as any message a
// PUSH sent to a reader that died.
//
// A message that is not in streamgen's framing is kept all the same, its
// frames as its body and the reason the keeper could not read it.
type Keeper struct {
	// Bind is the address to bind (tcp://host:port; port 0 picks one).
	Bind string
	// Dir is the directory to write to (CreateDeadLetterDir).
	Dir *DeadLetterDir
	// Logger, when set, is told of letters kept and of errors.
	Logger *slog.Logger

	mu    sync.Mutex
	addr  string
	ready chan struct{}
	once  sync.Once
}

func (k *Keeper) readyChan() chan struct{} {
	k.once.Do(func() { k.ready = make(chan struct{}) })
	return k.ready
}

// Ready is closed once the keeper is bound; it stays open when Run fails
// before that (wait for Run's error too).
func (k *Keeper) Ready() <-chan struct{} { return k.readyChan() }

// Addr is the address the keeper is bound at, once Ready.
func (k *Keeper) Addr() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.addr
}

// Run keeps letters until ctx ends, and then returns nil; or until a
// letter cannot be written (a full disk), and then returns why. Only one
// keeper runs on a directory at a time.
func (k *Keeper) Run(ctx context.Context) error {
	if k.Dir == nil {
		return errors.New("zeromq: keeper: no Dir: set it to CreateDeadLetterDir(path)")
	}
	log := k.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	unlock, err := lockFile(ctx, filepath.Join(k.Dir.path, dirKeeper), false)
	if err != nil {
		return fmt.Errorf("zeromq: keeper: directory %s: %w: another keeper runs on it; stop it, or give another directory", k.Dir.path, err)
	}
	defer unlock()
	w, err := k.Dir.writer()
	if err != nil {
		return err
	}
	defer w.close()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	in, err := listenInbox(k.Bind, func(_ context.Context, frames [][]byte) bool {
		if ctx.Err() != nil {
			return false
		}
		l := keptLetter(frames)
		if err := w.put(l); err != nil {
			log.Error("zeromq: keeper: cannot write a letter; stopping", "dir", k.Dir.path, "message_id", l.MessageID(), "err", err)
			cancel(err)
			return false
		}
		log.Debug("zeromq: letter kept", "dir", k.Dir.path, "message_id", l.MessageID(), "source", l.Source, "reason", l.Reason)
		return true
	}, log)
	if err != nil {
		return fmt.Errorf("zeromq: keeper: %w", err)
	}
	k.mu.Lock()
	k.addr = in.Addr()
	k.mu.Unlock()
	close(k.readyChan())
	log.Info("zeromq: keeper bound", "endpoint", in.Addr(), "dir", k.Dir.path)
	<-ctx.Done()
	in.Close()
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) && !errors.Is(cause, context.DeadlineExceeded) {
		return cause
	}
	return nil
}

// keptLetter is the letter of a message the keeper received.
func keptLetter(frames [][]byte) *deadletter.Letter {
	env, err := ParseEnvelope(frames)
	if err == nil {
		return letterOf(env)
	}
	var body []byte
	for i, f := range frames {
		if i > 0 {
			body = append(body, '\n')
		}
		body = append(body, f...)
	}
	return deadletter.NewLetter(body, map[string]any{
		runtime.HeaderDeadLetterReason: "the keeper could not read this message (its frames are the body): " + err.Error(),
	}, deadletter.Properties{})
}
