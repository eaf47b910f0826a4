package zeromq

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/adapter"
	"github.com/streamgen/streamgen/runtime/deadletter"
)

// DeadLetterDir is the directory a ZeroMQ Keeper writes its letters to, and a deadletter.Store:
// ls, show, replay, purge, export and import work on it, also while the
// keeper runs.
//
// The letters are in one append-only file, letters.jsonl: a dirLine
// {"id":..., "letter":{...}} for each letter kept (the letter as Export
// writes it) and a dirLine {"del":[ids]} for letters replayed or purged
// (tombstones). Every dirLine is written with one write and fsync'd before
// the writer goes on, so a letter the keeper wrote survives a SIGKILL or a
// power cut; a dirLine a crash cut short is ignored by readers and cut off by
// the next writer. Writers take an exclusive lock (flock) on the file
// .append.lock for each dirLine; replay and purge also hold .ops.lock for
// their whole run, so that two of them never replay one letter twice.
// Readers take no lock: they read the file as far as its last whole dirLine.
// Once tombstones make up most of the file, a replay or purge rewrites it
// with the live letters only (into a new file, fsync'd, renamed over the
// old one: a reader that has the old one open reads it to its end).
//
// The writers watch the free space of the directory's file system: the
// keeper reads no letter while it has too little room to write it and to
// leave tombstoneFloor for the tombstones of replays and purges, and a
// replay pushes no batch of letters before it made sure there is room to
// record their removal.
type DeadLetterDir struct {
	path string
	// free returns the bytes free on the directory's file system
	// (freeBytes); tests replace it.
	free func() (uint64, error)
	// write writes b at off in the letters file (f.WriteAt); tests
	// replace it.
	write func(f *os.File, b []byte, off int64) error
}

// The files of a DeadLetterDir.
const (
	dirLetters   = "letters.jsonl"
	dirAppend    = ".append.lock"
	dirOps       = ".ops.lock"
	dirKeeper    = ".keeper.lock"
	compactAfter = 1000 // tombstoned letters before a rewrite is worth it
)

// The free space the writers of a directory want on its file system.
const (
	// tombstoneFloor is what the keeper leaves for the tombstones of
	// replays and purges: it writes no letter that would leave less.
	tombstoneFloor = 1 << 20
	// letterRoom is what the keeper wants free beyond tombstoneFloor
	// before it reads a letter: room for one of the usual size.
	letterRoom = 1 << 20
	// replayMargin is what a replay wants free beyond the tombstone of a
	// batch before it pushes the batch: the file system writes whole
	// blocks, and the keeper and others write beside it.
	replayMargin = 64 << 10
	// replayBatch is the most letters a replay pushes before it records
	// their removal.
	replayBatch = 64
	// idLen is the length of a letter's id in the file: 12 random bytes,
	// in hex.
	idLen = 24
)

// tombstoneSize is the most bytes the tombstone of n letters takes.
func tombstoneSize(n int) int { return len(`{"del":[]}`+"\n") + n*(idLen+3) }

var (
	_ deadletter.Store        = (*DeadLetterDir)(nil)
	_ deadletter.TargetKinder = (*DeadLetterDir)(nil)
)

// OpenDeadLetterDir returns the store in directory path, which must exist:
// a path that is not there is taken for a mistyped one, not made into an
// empty store. CreateDeadLetterDir makes the directory.
func OpenDeadLetterDir(path string) (*DeadLetterDir, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, &dirError{msg: fmt.Sprintf("zeromq: dead-letter directory %s does not exist: check the path (streamgen dlq keep creates it)", path), err: err}
	}
	if err != nil {
		return nil, fmt.Errorf("zeromq: dead-letter directory %s: %w", path, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("zeromq: %s is not a directory: give the directory streamgen dlq keep writes", path)
	}
	return newDeadLetterDir(path), nil
}

// CreateDeadLetterDir returns the store in directory path, creating it
// when it does not exist: for a Keeper, or to import letters into a new
// directory.
func CreateDeadLetterDir(path string) (*DeadLetterDir, error) {
	if err := os.MkdirAll(path, 0o750); err != nil {
		return nil, fmt.Errorf("zeromq: dead-letter directory %s: %w", path, err)
	}
	return OpenDeadLetterDir(path)
}

func newDeadLetterDir(path string) *DeadLetterDir {
	return &DeadLetterDir{path: path,
		free: func() (uint64, error) { return freeBytes(path) },
		write: func(f *os.File, b []byte, off int64) error {
			_, err := f.WriteAt(b, off)
			return err
		},
	}
}

// room returns the bytes free on the directory's file system, and an
// error when fewer than need are.
func (d *DeadLetterDir) room(need int) (uint64, error) {
	free, err := d.free()
	if err != nil {
		return 0, d.wrap("read the free space", err)
	}
	if free < uint64(need) {
		return free, fmt.Errorf("zeromq: dead-letter directory %s is full: %d bytes are free, %d wanted", d.path, free, need)
	}
	return free, nil
}

// dirError is an error whose text says all, wrapping the error it comes
// of for errors.Is.
type dirError struct {
	msg string
	err error
}

func (e *dirError) Error() string { return e.msg }
func (e *dirError) Unwrap() error { return e.err }

// Name is the directory.
func (d *DeadLetterDir) Name() string { return d.path }

// Close does nothing: a DeadLetterDir holds nothing open between operations.
func (d *DeadLetterDir) Close() error { return nil }

// dirLine is one line of letters.jsonl.
type dirLine struct {
	ID     string          `json:"id,omitempty"`
	Letter json.RawMessage `json:"letter,omitempty"`
	Del    []string        `json:"del,omitempty"`
}

// dirEntry is a live letter and its id.
type dirEntry struct {
	id string
	l  *deadletter.Letter
}

// scan calls fn with each live letter, oldest first: a first pass over the
// file gathers the tombstones, a second reads the letters. What was
// appended after the first pass is not read.
func (d *DeadLetterDir) scan(ctx context.Context, fn func(dirEntry) error) error {
	f, err := os.Open(filepath.Join(d.path, dirLetters))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return d.wrap("read the letters", err)
	}
	defer func() { _ = f.Close() }()
	deleted := map[string]bool{}
	end, err := d.lines(ctx, f, -1, func(ln dirLine) error {
		for _, id := range ln.Del {
			deleted[id] = true
		}
		return nil
	})
	if err != nil {
		return err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return d.wrap("read the letters", err)
	}
	progress, read := deadletter.Progress(ctx), 0
	_, err = d.lines(ctx, f, end, func(ln dirLine) error {
		if ln.ID == "" || deleted[ln.ID] {
			return nil
		}
		var l deadletter.Letter
		if err := l.UnmarshalJSON(ln.Letter); err != nil {
			return d.wrap("read letter "+ln.ID, err)
		}
		err := fn(dirEntry{ln.ID, &l})
		read++
		progress(read)
		return err
	})
	return err
}

// lines calls fn with each whole dirLine of r up to limit bytes (-1: to the
// end) and returns how many bytes the whole lines took.
func (d *DeadLetterDir) lines(ctx context.Context, r io.Reader, limit int64, fn func(dirLine) error) (int64, error) {
	if limit >= 0 {
		r = io.LimitReader(r, limit)
	}
	br := bufio.NewReaderSize(r, 64<<10)
	var off int64
	for n := 1; ; n++ {
		if n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return off, err
			}
		}
		b, err := br.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			return off, nil // a dirLine without its newline is still being written, or was cut short
		}
		if err != nil {
			return off, d.wrap("read the letters", err)
		}
		off += int64(len(b))
		var ln dirLine
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		if err := json.Unmarshal(b, &ln); err != nil {
			return off, fmt.Errorf("zeromq: dead-letter directory %s: %s line %d is not a letter: %v: move the file aside", d.path, dirLetters, n, err)
		}
		if err := fn(ln); err != nil {
			return off, err
		}
	}
}

// Len is the number of letters kept.
func (d *DeadLetterDir) Len(ctx context.Context) (int, error) {
	n := 0
	err := d.scan(ctx, func(dirEntry) error { n++; return nil })
	return n, err
}

// Scan calls fn with every letter, oldest first.
func (d *DeadLetterDir) Scan(ctx context.Context, fn func(*deadletter.Letter) error) error {
	return d.scan(ctx, func(e dirEntry) error { return fn(e.l) })
}

// Select calls fn with every letter sel picks, up to its limit.
func (d *DeadLetterDir) Select(ctx context.Context, sel deadletter.Selection, fn func(*deadletter.Letter) error) error {
	return deadletter.Select(ctx, d, sel, fn)
}

// Groups gathers the letters by type and normalised reason.
func (d *DeadLetterDir) Groups(ctx context.Context) ([]deadletter.Group, error) {
	return deadletter.GroupsOf(ctx, d)
}

// Export writes the letters sel picks as JSON Lines.
func (d *DeadLetterDir) Export(ctx context.Context, w io.Writer, sel deadletter.Selection) (int, error) {
	return deadletter.Export(ctx, d, "directory "+d.path, w, sel)
}

// Import adds the letters of r (JSON Lines as Export writes them), each
// written durably before the next is read.
func (d *DeadLetterDir) Import(ctx context.Context, r io.Reader) (int, error) {
	w, err := d.writer()
	if err != nil {
		return 0, err
	}
	defer w.close()
	n := 0
	err = deadletter.ReadLetters(r, func(l *deadletter.Letter) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := w.put(l); err != nil {
			return err
		}
		n++
		return nil
	})
	return n, err
}

// Purge removes the letters sel picks (with dryRun, only counts them).
func (d *DeadLetterDir) Purge(ctx context.Context, sel deadletter.Selection, dryRun bool) (deadletter.Report, error) {
	var rep deadletter.Report
	err := d.operate(ctx, func(w *dirWriter) error {
		var ids []string
		err := d.scan(ctx, func(e dirEntry) error {
			if !rep.Pick(sel, e.l) {
				return nil
			}
			if dryRun {
				rep.Done++
				return nil
			}
			ids = append(ids, e.id)
			if len(ids) >= 512 {
				if err := w.del(ids); err != nil {
					return err
				}
				rep.Done += len(ids)
				ids = ids[:0]
			}
			return nil
		})
		if len(ids) > 0 && err == nil {
			if err = w.del(ids); err == nil {
				rep.Done += len(ids)
			}
		}
		return err
	})
	return rep, err
}

// Replay pushes each letter sel picks, as a new delivery of the original
// message (the headers Replayed keeps and resets), to opts.To.Address,
// framed with the letter's source queue (or opts.To.Queue), and removes it
// once it is written to the connection. ZeroMQ has no confirms: a letter
// written and not yet read when the reader dies is lost with the reader,
// as any message a service pushes. A crash of the replay itself may
// leave a letter both replayed and still kept, never neither.
//
// It pushes the letters in batches, and records the removal of each
// batch (a tombstone) before it pushes the next. Before a batch, it makes
// sure the directory's file system has room for the tombstone, and stops
// when it has not, before it pushes a letter of the batch. Should the
// tombstone fail all the same, the letters of the batch were replayed and
// are still kept: Report.ReplayedKept and the error name them.
func (d *DeadLetterDir) Replay(ctx context.Context, sel deadletter.Selection, opts deadletter.ReplayOptions) (deadletter.Report, error) {
	var rep deadletter.Report
	if opts.To.Address == "" {
		return rep, fmt.Errorf("zeromq: dead-letter directory %s: a replay needs the address to push to: the address (tcp://host:port) the source queue is bound at", d.path)
	}
	if opts.To.Exchange != "" {
		return rep, fmt.Errorf("zeromq: dead-letter directory %s: a ZeroMQ replay has no exchange: give an address and, if need be, a queue", d.path)
	}
	var out *outlet
	if !opts.DryRun {
		var err error
		if out, err = dialOutlet(opts.To.Address, nil); err != nil {
			return rep, fmt.Errorf("zeromq: dead-letter directory %s: %w", d.path, err)
		}
		defer func() {
			cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = out.Close(cctx)
		}()
	}
	start := time.Now()
	err := d.operate(ctx, func(w *dirWriter) error {
		// The letters pushed and not yet recorded as removed: their ids
		// in the file, and their names for the operator.
		var ids, names []string
		flush := func() error {
			if len(ids) == 0 {
				return nil
			}
			err := w.del(ids)
			if err != nil {
				rep.ReplayedKept = append(rep.ReplayedKept, names...)
				err = fmt.Errorf("%w: so it replayed and still keeps %s: %s: purge them once there is room, or a later replay sends them again",
					err, deadletter.Letters(len(names)), strings.Join(names, ", "))
			}
			ids, names = ids[:0], names[:0]
			return err
		}
		err := d.scan(ctx, func(e dirEntry) error {
			_, queue, send := rep.Plan(sel, opts, e.l) // no exchange: Replay refused one
			if !send {
				return nil
			}
			if len(ids) == 0 {
				if _, err := d.room(tombstoneSize(replayBatch) + replayMargin); err != nil {
					return fmt.Errorf("%w to record which letters it replays: no more letters were pushed: free space in %s, then run the replay again", err, d.path)
				}
			}
			if err := opts.Pace(ctx, start, rep.Selected); err != nil {
				return err
			}
			env, err := replayedEnvelope(queue, e.l)
			if err != nil {
				rep.Fail("letter %s: %v", e.l.MessageID(), err)
				return nil
			}
			if err := out.Send(ctx, env); err != nil {
				if ctx.Err() != nil {
					return err
				}
				rep.Fail("letter %s: %v", e.l.MessageID(), err)
				return nil
			}
			rep.Done++
			ids, names = append(ids, e.id), append(names, letterName(e.l))
			if len(ids) >= replayBatch {
				return flush()
			}
			return nil
		})
		return errors.Join(err, flush())
	})
	return rep, err
}

// letterName names l for the operator: by its message id, or by its key
// when it has none.
func letterName(l *deadletter.Letter) string {
	if id := l.MessageID(); id != "" {
		return id
	}
	return "key " + deadletter.LetterKey(l)
}

// TargetKinds says where a replay of the directory goes: to each letter's
// source queue, or to one queue, at an address (Target.Address).
func (d *DeadLetterDir) TargetKinds() []deadletter.TargetKind {
	return []deadletter.TargetKind{deadletter.ToSourceAt, deadletter.ToQueueAt}
}

// replayedEnvelope is the message a ZeroMQ replay of l sends to queue:
// deadletter.Replayed(l), framed by letterEnvelope.
func replayedEnvelope(queue string, l *deadletter.Letter) (*Envelope, error) {
	return letterEnvelope(queue, deadletter.Replayed(l))
}

// letterEnvelope frames the message of letter l for queue as a service
// frames a message it publishes (envelopeOf), its headers as text
// (deadletter.HeaderText).
func letterEnvelope(queue string, l *deadletter.Letter) (*Envelope, error) {
	p := l.Properties
	msg := runtime.Message{ID: p.MessageID, Type: p.Type, ContentType: p.ContentType, Body: l.Body,
		Headers: make(map[string]string, len(l.Headers)),
		Properties: runtime.Properties{CorrelationID: p.CorrelationID, ReplyTo: p.ReplyTo, Priority: p.Priority,
			Timestamp: p.Timestamp, AppID: p.AppID}}
	for k, v := range l.Headers {
		msg.Headers[k] = deadletter.HeaderText(v)
	}
	return envelopeOf(queue, msg)
}

// letterOf makes a deadletter.Letter of a message in streamgen's ZeroMQ
// framing, as a service pushes it to its dead_letter queue, read as a
// subscriber reads a delivery (readEnvelope): the property headers (type,
// message-id...) become its Properties, the others its Headers, from which
// its explanation is read.
func letterOf(env *Envelope) *deadletter.Letter {
	var d adapter.Delivery
	readEnvelope(&d, env)
	h := make(map[string]any, len(d.Headers))
	for k, v := range d.Headers {
		h[k] = v
	}
	return deadletter.NewLetter(env.Body, h, deadletter.Properties{
		Type: d.Type, ContentType: d.ContentType, MessageID: d.MessageID, CorrelationID: d.CorrelationID,
		ReplyTo: d.ReplyTo, AppID: d.AppID, Priority: d.Priority, Timestamp: d.Timestamp,
	})
}

// operate runs f holding the operations lock and a writer, then rewrites
// the file when tombstones make up most of it.
func (d *DeadLetterDir) operate(ctx context.Context, f func(*dirWriter) error) error {
	unlock, err := lockFile(ctx, filepath.Join(d.path, dirOps), true)
	if err != nil {
		return d.wrap("wait for another replay or purge", err)
	}
	defer unlock()
	w, err := d.writer()
	if err != nil {
		return err
	}
	err = f(w)
	w.close()
	if err == nil {
		err = d.compact(ctx)
	}
	return err
}

// compact rewrites the file with the live letters only when more than
// compactAfter letters and more than half of the lines are tombstoned.
// The caller holds the operations lock; compact takes the append lock, so
// the keeper waits for it.
func (d *DeadLetterDir) compact(ctx context.Context) error {
	unlock, err := lockFile(ctx, filepath.Join(d.path, dirAppend), true)
	if err != nil {
		return d.wrap("lock the letters", err)
	}
	defer unlock()
	name := filepath.Join(d.path, dirLetters)
	f, err := os.Open(name)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return d.wrap("read the letters", err)
	}
	defer func() { _ = f.Close() }()
	puts, dels := 0, 0
	if _, err := d.lines(ctx, f, -1, func(ln dirLine) error {
		if ln.ID != "" {
			puts++
		}
		dels += len(ln.Del)
		return nil
	}); err != nil {
		return err
	}
	if dels <= compactAfter || 2*dels <= puts {
		return nil
	}
	// The rewrite takes at most the size of the file: without that room
	// (and the keeper's floor), the tombstones stay until a later one.
	info, err := f.Stat()
	if err != nil {
		return d.wrap("read the letters", err)
	}
	if _, err := d.room(int(info.Size()) + tombstoneFloor); err != nil {
		return nil
	}
	tmp := name + ".new"
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o640)
	if err != nil {
		return d.wrap("rewrite the letters", err)
	}
	bw := bufio.NewWriter(out)
	err = d.scan(deadletter.WithProgress(ctx, nil), func(e dirEntry) error {
		b, err := json.Marshal(e.l)
		if err != nil {
			return err
		}
		rec, err := json.Marshal(dirLine{ID: e.id, Letter: b})
		if err != nil {
			return err
		}
		_, err = bw.Write(append(rec, '\n'))
		return err
	})
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, name)
	}
	if err == nil {
		err = syncDir(d.path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return d.wrap("rewrite the letters", err)
	}
	return nil
}

// dirWriter appends lines to the file, each under the append lock and
// fsync'd.
type dirWriter struct {
	d *DeadLetterDir
	f *os.File
}

func (d *DeadLetterDir) writer() (*dirWriter, error) {
	w := &dirWriter{d: d}
	return w, nil
}

func (w *dirWriter) close() {
	if w.f != nil {
		_ = w.f.Close()
		w.f = nil
	}
}

// put appends a letter.
func (w *dirWriter) put(l *deadletter.Letter) error {
	rec, err := w.record(l)
	if err != nil {
		return err
	}
	return w.append(rec)
}

// record is the dirLine of a letter, with a new id, without its newline.
func (w *dirWriter) record(l *deadletter.Letter) ([]byte, error) {
	b, err := json.Marshal(l)
	if err != nil {
		return nil, w.d.wrap("write a letter", err)
	}
	id := make([]byte, idLen/2)
	_, _ = rand.Read(id)
	rec, err := json.Marshal(dirLine{ID: hex.EncodeToString(id), Letter: b})
	if err != nil {
		return nil, w.d.wrap("write a letter", err)
	}
	return rec, nil
}

// del appends a tombstone for ids.
func (w *dirWriter) del(ids []string) error {
	rec, err := json.Marshal(dirLine{Del: ids})
	if err != nil {
		return w.d.wrap("remove letters", err)
	}
	return w.append(rec)
}

// append writes rec and a newline with one write at the end of the file
// and fsyncs it, under the append lock. It opens the file again when it
// was replaced by a rewrite, and cuts off a last dirLine a crash left short.
func (w *dirWriter) append(rec []byte) error {
	unlock, err := lockFile(context.Background(), filepath.Join(w.d.path, dirAppend), true)
	if err != nil {
		return w.d.wrap("lock the letters", err)
	}
	defer unlock()
	name := filepath.Join(w.d.path, dirLetters)
	if w.f != nil && !sameFile(w.f, name) {
		w.close()
	}
	if w.f == nil {
		created := false
		if _, err := os.Stat(name); errors.Is(err, os.ErrNotExist) {
			created = true
		}
		f, err := os.OpenFile(name, os.O_CREATE|os.O_RDWR, 0o640)
		if err != nil {
			return w.d.wrap("open the letters", err)
		}
		w.f = f
		if created {
			if err := syncDir(w.d.path); err != nil {
				return w.d.wrap("create the letters", err)
			}
		}
	}
	end, err := wholeLines(w.f)
	if err != nil {
		return w.d.wrap("read the letters", err)
	}
	if err := w.d.write(w.f, append(rec, '\n'), end); err != nil {
		return w.d.wrap("write", err)
	}
	if err := w.f.Sync(); err != nil {
		return w.d.wrap("sync", err)
	}
	return nil
}

// wholeLines returns the length of f up to the end of its last whole dirLine,
// cutting off what follows (a dirLine a crash left short).
func wholeLines(f *os.File) (int64, error) {
	info, err := f.Stat()
	if err != nil {
		return 0, err
	}
	size := info.Size()
	if size == 0 {
		return 0, nil
	}
	last := make([]byte, 1)
	if _, err := f.ReadAt(last, size-1); err != nil {
		return 0, err
	}
	if last[0] == '\n' {
		return size, nil
	}
	// Find the last newline, a block at a time from the end.
	buf := make([]byte, 64<<10)
	for end := size; end > 0; {
		start := max(0, end-int64(len(buf)))
		b := buf[:end-start]
		if _, err := f.ReadAt(b, start); err != nil {
			return 0, err
		}
		if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
			size = start + int64(i) + 1
			return size, f.Truncate(size)
		}
		end = start
	}
	return 0, f.Truncate(0)
}

func syncDir(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	return f.Sync()
}

func sameFile(f *os.File, name string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Stat(name)
	return err == nil && os.SameFile(a, b)
}

func (d *DeadLetterDir) wrap(doing string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if isNoSpace(err) {
		return fmt.Errorf("zeromq: dead-letter directory %s: cannot %s: %w: free space in %s", d.path, doing, err, d.path)
	}
	return fmt.Errorf("zeromq: dead-letter directory %s: cannot %s: %w", d.path, doing, err)
}
