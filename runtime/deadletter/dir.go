package deadletter

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
	"strconv"
	"time"

	"github.com/streamgen/streamgen/runtime/zeromq"
)

// Dir is the directory a ZeroMQ Keeper writes its letters to, and a Store:
// ls, show, replay, purge, export and import work on it, also while the
// keeper runs.
//
// The letters are in one append-only file, letters.jsonl: a line
// {"id":..., "letter":{...}} for each letter kept (the letter as Export
// writes it) and a line {"del":[ids]} for letters replayed or purged
// (tombstones). Every line is written with one write and fsync'd before
// the writer goes on, so a letter the keeper wrote survives a SIGKILL or a
// power cut; a line a crash cut short is ignored by readers and cut off by
// the next writer. Writers take an exclusive lock (flock) on the file
// .append.lock for each line; replay and purge also hold .ops.lock for
// their whole run, so that two of them never replay one letter twice.
// Readers take no lock: they read the file as far as its last whole line.
// Once tombstones make up most of the file, a replay or purge rewrites it
// with the live letters only (into a new file, fsync'd, renamed over the
// old one: a reader that has the old one open reads it to its end).
type Dir struct {
	path string
}

// The files of a Dir.
const (
	dirLetters   = "letters.jsonl"
	dirAppend    = ".append.lock"
	dirOps       = ".ops.lock"
	dirKeeper    = ".keeper.lock"
	compactAfter = 1000 // tombstoned letters before a rewrite is worth it
)

var _ Store = (*Dir)(nil)

// OpenDir returns the store in directory path, creating it when it does
// not exist.
func OpenDir(path string) (*Dir, error) {
	if err := os.MkdirAll(path, 0o750); err != nil {
		return nil, fmt.Errorf("deadletter: directory %s: %w", path, err)
	}
	return &Dir{path: path}, nil
}

// Name is the directory.
func (d *Dir) Name() string { return d.path }

// Close does nothing: a Dir holds nothing open between operations.
func (d *Dir) Close() error { return nil }

// line is one line of letters.jsonl.
type line struct {
	ID     string          `json:"id,omitempty"`
	Letter json.RawMessage `json:"letter,omitempty"`
	Del    []string        `json:"del,omitempty"`
}

// entry is a live letter and its id.
type entry struct {
	id string
	l  *Letter
}

// scan calls fn with each live letter, oldest first: a first pass over the
// file gathers the tombstones, a second reads the letters. What was
// appended after the first pass is not read.
func (d *Dir) scan(ctx context.Context, fn func(entry) error) error {
	f, err := os.Open(filepath.Join(d.path, dirLetters))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return d.wrap("read the letters", err)
	}
	defer func() { _ = f.Close() }()
	deleted := map[string]bool{}
	end, err := d.lines(ctx, f, -1, func(ln line) error {
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
	progress, read := progressOf(ctx), 0
	_, err = d.lines(ctx, f, end, func(ln line) error {
		if ln.ID == "" || deleted[ln.ID] {
			return nil
		}
		var l Letter
		if err := l.UnmarshalJSON(ln.Letter); err != nil {
			return d.wrap("read letter "+ln.ID, err)
		}
		err := fn(entry{ln.ID, &l})
		read++
		progress(read)
		return err
	})
	return err
}

// lines calls fn with each whole line of r up to limit bytes (-1: to the
// end) and returns how many bytes the whole lines took.
func (d *Dir) lines(ctx context.Context, r io.Reader, limit int64, fn func(line) error) (int64, error) {
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
			return off, nil // a line without its newline is still being written, or was cut short
		}
		if err != nil {
			return off, d.wrap("read the letters", err)
		}
		off += int64(len(b))
		var ln line
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		if err := json.Unmarshal(b, &ln); err != nil {
			return off, fmt.Errorf("deadletter: directory %s: %s line %d is not a letter: %v: move the file aside", d.path, dirLetters, n, err)
		}
		if err := fn(ln); err != nil {
			return off, err
		}
	}
}

// Len is the number of letters kept.
func (d *Dir) Len(ctx context.Context) (int, error) {
	n := 0
	err := d.scan(ctx, func(entry) error { n++; return nil })
	return n, err
}

// Scan calls fn with every letter, oldest first.
func (d *Dir) Scan(ctx context.Context, fn func(*Letter) error) error {
	return d.scan(ctx, func(e entry) error { return fn(e.l) })
}

// Select calls fn with every letter sel picks, up to its limit.
func (d *Dir) Select(ctx context.Context, sel Selection, fn func(*Letter) error) error {
	n := 0
	return d.Scan(ctx, func(l *Letter) error {
		if !sel.Matches(l) || sel.Limit > 0 && n >= sel.Limit {
			return nil
		}
		n++
		return fn(l)
	})
}

// Groups gathers the letters by type and normalised reason.
func (d *Dir) Groups(ctx context.Context) ([]Group, error) {
	var g Grouper
	if err := d.Scan(ctx, func(l *Letter) error { g.Add(l); return nil }); err != nil {
		return nil, err
	}
	return g.Groups(), nil
}

// Export writes the letters sel picks as JSON Lines.
func (d *Dir) Export(ctx context.Context, w io.Writer, sel Selection) (int, error) {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	n := 0
	err := d.Select(ctx, sel, func(l *Letter) error {
		if err := enc.Encode(l); err != nil {
			return d.wrap("export", err)
		}
		n++
		return nil
	})
	if ferr := bw.Flush(); err == nil && ferr != nil {
		err = d.wrap("export", ferr)
	}
	return n, err
}

// Import adds the letters of r (JSON Lines as Export writes them), each
// written durably before the next is read.
func (d *Dir) Import(ctx context.Context, r io.Reader) (int, error) {
	w, err := d.writer()
	if err != nil {
		return 0, err
	}
	defer w.close()
	n := 0
	err = ReadLetters(r, func(l *Letter) error {
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
func (d *Dir) Purge(ctx context.Context, sel Selection, dryRun bool) (Report, error) {
	var rep Report
	err := d.operate(ctx, func(w *dirWriter) error {
		var ids []string
		err := d.scan(ctx, func(e entry) error {
			rep.Scanned++
			if !sel.Matches(e.l) || sel.Limit > 0 && rep.Selected >= sel.Limit {
				return nil
			}
			rep.Selected++
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
func (d *Dir) Replay(ctx context.Context, sel Selection, opts ReplayOptions) (Report, error) {
	var rep Report
	if opts.To.Address == "" {
		return rep, fmt.Errorf("deadletter: directory %s: replay needs the address to push to: give -to ADDR (tcp://host:port of the source queue)", d.path)
	}
	if opts.To.Exchange != "" {
		return rep, fmt.Errorf("deadletter: directory %s: a ZeroMQ replay has no exchange: give an address and, if need be, a queue", d.path)
	}
	var out *zeromq.Outlet
	if !opts.DryRun {
		var err error
		if out, err = zeromq.DialOutlet(opts.To.Address, nil); err != nil {
			return rep, fmt.Errorf("deadletter: directory %s: %w", d.path, err)
		}
		defer func() {
			cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = out.Close(cctx)
		}()
	}
	start := time.Now()
	err := d.operate(ctx, func(w *dirWriter) error {
		var ids []string
		flush := func() error {
			if len(ids) == 0 {
				return nil
			}
			if err := w.del(ids); err != nil {
				return err
			}
			rep.Done += len(ids)
			ids = ids[:0]
			return nil
		}
		err := d.scan(ctx, func(e entry) error {
			rep.Scanned++
			if !sel.Matches(e.l) || sel.Limit > 0 && rep.Selected >= sel.Limit {
				return nil
			}
			rep.Selected++
			queue := opts.To.Queue
			if queue == "" {
				queue = e.l.Source
			}
			if queue == "" {
				rep.fail("letter %s: no source queue to replay to: give a queue", e.l.MessageID())
				return nil
			}
			if opts.DryRun {
				rep.Done++
				return nil
			}
			if opts.Rate > 0 {
				due := start.Add(time.Duration(float64(rep.Selected-1) / opts.Rate * float64(time.Second)))
				if err := sleep(ctx, time.Until(due)); err != nil {
					return err
				}
			}
			if err := out.Send(ctx, replayedEnvelope(queue, e.l)); err != nil {
				if ctx.Err() != nil {
					return err
				}
				rep.fail("letter %s: %v", e.l.MessageID(), err)
				return nil
			}
			ids = append(ids, e.id)
			if len(ids) >= 64 {
				return flush()
			}
			return nil
		})
		return firstErr(err, flush())
	})
	return rep, err
}

// replayedEnvelope is the message a ZeroMQ replay of l sends to queue: its
// properties as the property headers, its headers but those Replayed
// drops, and HeaderReplays one more than l carried.
func replayedEnvelope(queue string, l *Letter) *zeromq.Envelope {
	p := l.Properties
	env := &zeromq.Envelope{Subscription: queue, Body: l.Body}
	for _, h := range []zeromq.Header{{Name: zeromq.HeaderType, Value: p.Type}, {Name: zeromq.HeaderContentType, Value: p.ContentType},
		{Name: zeromq.HeaderMessageID, Value: p.MessageID}, {Name: zeromq.HeaderCorrelationID, Value: p.CorrelationID},
		{Name: zeromq.HeaderReplyTo, Value: p.ReplyTo}, {Name: zeromq.HeaderAppID, Value: p.AppID}} {
		if h.Value != "" {
			env.Headers = append(env.Headers, h)
		}
	}
	if p.Priority != 0 {
		env.SetHeader(zeromq.HeaderPriority, strconv.Itoa(int(p.Priority)))
	}
	if !p.Timestamp.IsZero() {
		env.SetHeader(zeromq.HeaderTimestamp, p.Timestamp.UTC().Format(time.RFC3339Nano))
	}
	for _, k := range headerNames(l.Headers) {
		if resetOnReplay(k) || k == HeaderReplays {
			continue
		}
		env.SetHeader(k, headerText(l.Headers[k]))
	}
	env.SetHeader(HeaderReplays, strconv.Itoa(l.Replays()+1))
	return env
}

// headerText is a header value as a ZeroMQ header's text.
func headerText(v any) string {
	if s := headerString(v); s != "" {
		return s
	}
	switch x := v.(type) {
	case nil:
		return ""
	case bool:
		return strconv.FormatBool(x)
	}
	b, _ := json.Marshal(encodeValue(v))
	return string(b)
}

// LetterOf makes a Letter of a message in streamgen's ZeroMQ framing, as a
// service pushes it to its dead_letter queue: the property headers (type,
// message-id...) become its Properties, the others its Headers, from
// which its explanation is read.
func LetterOf(env *zeromq.Envelope) *Letter {
	l := &Letter{Body: env.Body, Headers: map[string]any{}}
	for _, h := range env.Headers {
		p := &l.Properties
		switch h.Name {
		case zeromq.HeaderType:
			p.Type = h.Value
		case zeromq.HeaderContentType:
			p.ContentType = h.Value
		case zeromq.HeaderMessageID:
			p.MessageID = h.Value
		case zeromq.HeaderCorrelationID:
			p.CorrelationID = h.Value
		case zeromq.HeaderReplyTo:
			p.ReplyTo = h.Value
		case zeromq.HeaderAppID:
			p.AppID = h.Value
		case zeromq.HeaderPriority:
			n, err := strconv.ParseUint(h.Value, 10, 8)
			if err != nil {
				l.Headers[h.Name] = h.Value
				continue
			}
			p.Priority = uint8(n)
		case zeromq.HeaderTimestamp:
			t, err := time.Parse(time.RFC3339Nano, h.Value)
			if err != nil {
				l.Headers[h.Name] = h.Value
				continue
			}
			p.Timestamp = t
		default:
			l.Headers[h.Name] = h.Value
		}
	}
	l.explain()
	return l
}

// operate runs f holding the operations lock and a writer, then rewrites
// the file when tombstones make up most of it.
func (d *Dir) operate(ctx context.Context, f func(*dirWriter) error) error {
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
func (d *Dir) compact(ctx context.Context) error {
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
	if _, err := d.lines(ctx, f, -1, func(ln line) error {
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
	tmp := name + ".new"
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o640)
	if err != nil {
		return d.wrap("rewrite the letters", err)
	}
	bw := bufio.NewWriter(out)
	err = d.scan(WithProgress(ctx, nil), func(e entry) error {
		b, err := json.Marshal(e.l)
		if err != nil {
			return err
		}
		rec, err := json.Marshal(line{ID: e.id, Letter: b})
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
	d *Dir
	f *os.File
}

func (d *Dir) writer() (*dirWriter, error) {
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
func (w *dirWriter) put(l *Letter) error {
	b, err := json.Marshal(l)
	if err != nil {
		return w.d.wrap("write a letter", err)
	}
	id := make([]byte, 12)
	_, _ = rand.Read(id)
	rec, err := json.Marshal(line{ID: hex.EncodeToString(id), Letter: b})
	if err != nil {
		return w.d.wrap("write a letter", err)
	}
	return w.append(rec)
}

// del appends a tombstone for ids.
func (w *dirWriter) del(ids []string) error {
	rec, err := json.Marshal(line{Del: ids})
	if err != nil {
		return w.d.wrap("remove letters", err)
	}
	return w.append(rec)
}

// append writes rec and a newline with one write at the end of the file
// and fsyncs it, under the append lock. It opens the file again when it
// was replaced by a rewrite, and cuts off a last line a crash left short.
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
	if _, err := w.f.WriteAt(append(rec, '\n'), end); err != nil {
		return w.d.wrap("write", err)
	}
	if err := w.f.Sync(); err != nil {
		return w.d.wrap("sync", err)
	}
	return nil
}

// wholeLines returns the length of f up to the end of its last whole line,
// cutting off what follows (a line a crash left short).
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

func (d *Dir) wrap(doing string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("deadletter: directory %s: cannot %s: %w", d.path, doing, err)
}
