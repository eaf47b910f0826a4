package zeromq

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"time"

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
// It reads no letter it has no room to keep: before it binds, and after
// each letter it wrote, it waits until the directory's file system has
// room for a letter and for the tombstones of replays and purges, so that
// on a full disk the letters wait with their senders. A letter it read
// and cannot write (the disk filled meanwhile, a letter larger than the
// room, an error writing) it holds and writes again, with a growing pause,
// until it is written, reading nothing more meanwhile; it is lost only
// when the keeper is stopped first, and then logged and returned by Run.
// (With several services connected, each connection may have one letter
// read and waiting its turn: it is held and written the same way.)
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
	lost  []string // the letters read and not written when Run ended
	ready chan struct{}
	once  sync.Once
}

// The pauses of a keeper between two tries to write a letter, or two
// looks at the free space.
const (
	keeperRetryFirst = 10 * time.Millisecond
	keeperRetryMax   = 5 * time.Second
)

func (k *Keeper) readyChan() chan struct{} {
	k.once.Do(func() { k.ready = make(chan struct{}) })
	return k.ready
}

// Ready is closed once the keeper is bound; it stays open when Run fails
// before that (wait for Run's error too), and while Run waits for room on
// a full disk before it binds.
func (k *Keeper) Ready() <-chan struct{} { return k.readyChan() }

// Addr is the address the keeper is bound at, once Ready.
func (k *Keeper) Addr() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.addr
}

// Run keeps letters until ctx ends. It returns nil then, or an error
// naming the letters it read and could not write before ctx ended (or
// could not encode), which are lost. Only one keeper runs on a directory
// at a time.
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
	k.mu.Lock()
	k.lost = nil
	k.mu.Unlock()
	w, err := k.Dir.writer()
	if err != nil {
		return err
	}
	defer w.close()
	if !k.waitRoom(ctx, log) {
		return nil
	}
	in, err := listenInbox(k.Bind, func(_ context.Context, frames [][]byte) bool {
		l := keptLetter(frames)
		if err := k.keep(ctx, w, l, log); err != nil {
			log.Error("zeromq: keeper: a letter it read could not be written: the letter is lost (ZeroMQ has no acknowledgements: its sender kept no copy)",
				"dir", k.Dir.path, "message_id", l.MessageID(), "type", l.Type(), "source", l.Source, "reason", l.Reason, "err", err)
			k.mu.Lock()
			k.lost = append(k.lost, letterName(l))
			k.mu.Unlock()
			return ctx.Err() == nil // a letter that cannot be encoded: read on
		}
		log.Debug("zeromq: letter kept", "dir", k.Dir.path, "message_id", l.MessageID(), "source", l.Source, "reason", l.Reason)
		// Read the next letter only once there is room to keep it, and
		// not once stopped.
		return ctx.Err() == nil && k.waitRoom(ctx, log)
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
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.lost) > 0 {
		return fmt.Errorf("zeromq: keeper: directory %s: it lost %s it read and could not write: %s", k.Dir.path, deadletter.Letters(len(k.lost)), strings.Join(k.lost, ", "))
	}
	return nil
}

// keep writes l, and when it cannot, holds it and tries again after a
// growing pause, until it is written or ctx ends; it logs a failure once,
// and once more when the letter is written after all. It returns the
// last error when ctx ended first. A letter is written only when it
// leaves tombstoneFloor free.
func (k *Keeper) keep(ctx context.Context, w *dirWriter, l *deadletter.Letter, log *slog.Logger) error {
	rec, err := w.record(l)
	if err != nil {
		return err
	}
	pause, failing := keeperRetryFirst, false
	for {
		_, err := k.Dir.room(len(rec) + 1 + tombstoneFloor)
		if err == nil {
			err = w.append(rec)
		}
		if err == nil {
			if failing {
				log.Info("zeromq: keeper: the letter it held is written; reading letters again", "dir", k.Dir.path, "message_id", l.MessageID())
			}
			return nil
		}
		if !failing {
			log.Error("zeromq: keeper: cannot write a letter: holding it, reading no other, and trying again until it is written", "dir", k.Dir.path, "message_id", l.MessageID(), "err", err)
			failing = true
		}
		if deadletter.Sleep(ctx, pause) != nil {
			return err
		}
		pause = min(2*pause, keeperRetryMax)
	}
}

// waitRoom waits until the directory's file system has room to keep a
// letter (letterRoom beyond tombstoneFloor), logging once when it has not
// and once when it has again. It returns false when ctx ended first.
func (k *Keeper) waitRoom(ctx context.Context, log *slog.Logger) bool {
	pause, waiting := keeperRetryFirst, false
	for {
		free, err := k.Dir.room(tombstoneFloor + letterRoom)
		if err == nil {
			if waiting {
				log.Info("zeromq: keeper: room again: reading letters", "dir", k.Dir.path, "free_bytes", free)
			}
			return true
		}
		if !waiting {
			log.Warn("zeromq: keeper: reading no letter until there is room to keep it: free space in the directory", "dir", k.Dir.path, "err", err)
			waiting = true
		}
		if deadletter.Sleep(ctx, pause) != nil {
			return false
		}
		pause = min(2*pause, keeperRetryMax)
	}
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
