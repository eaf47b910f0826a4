package zeromq_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/deadletter"
	"github.com/streamgen/streamgen/runtime/zeromq"
)

// jsonl returns n letters as JSON Lines, ids d-0000 on.
func jsonl(t *testing.T, from, n int) string {
	t.Helper()
	var b strings.Builder
	for i := from; i < from+n; i++ {
		l := &deadletter.Letter{Body: fmt.Appendf(nil, `{"order":%d}`, i), Headers: map[string]any{
			runtime.HeaderDeadLetterReason: fmt.Sprintf("order %d: card declined", i), runtime.HeaderDeadLetterSource: "cards",
		}, Properties: deadletter.Properties{MessageID: fmt.Sprintf("d-%04d", i), Type: "Card"}}
		line, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.String()
}

// A line a crash cut short is not read, and the next writer cuts it off.
func TestDirIgnoresALineCutShort(t *testing.T) {
	ctx := context.Background()
	path := t.TempDir()
	d, err := zeromq.OpenDeadLetterDir(path)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := d.Import(ctx, strings.NewReader(jsonl(t, 0, 2))); err != nil || n != 2 {
		t.Fatalf("Import: %d, %v", n, err)
	}
	f, err := os.OpenFile(filepath.Join(path, "letters.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString(`{"id":"cut","letter":{"body":"half`)
	_ = f.Close()
	if n, err := d.Len(ctx); err != nil || n != 2 {
		t.Fatalf("with a line cut short, Len = %d, %v; want 2", n, err)
	}
	if n, err := d.Import(ctx, strings.NewReader(jsonl(t, 2, 1))); err != nil || n != 1 {
		t.Fatalf("Import after the cut: %d, %v", n, err)
	}
	var ids []string
	if err := d.Scan(ctx, func(l *deadletter.Letter) error { ids = append(ids, l.MessageID()); return nil }); err != nil {
		t.Fatal(err)
	}
	if strings.Join(ids, ",") != "d-0000,d-0001,d-0002" {
		t.Fatalf("letters %v", ids)
	}
	data, _ := os.ReadFile(filepath.Join(path, "letters.jsonl"))
	if bytes.Contains(data, []byte("half")) {
		t.Fatal("the line cut short is still in the file")
	}
}

// Once tombstones are most of the file, a purge rewrites it with the live
// letters only, in their order.
func TestDirRewritesItselfAfterAPurge(t *testing.T) {
	ctx := context.Background()
	path := t.TempDir()
	d, err := zeromq.OpenDeadLetterDir(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Import(ctx, strings.NewReader(jsonl(t, 0, 1300))); err != nil {
		t.Fatal(err)
	}
	rep, err := d.Purge(ctx, deadletter.Selection{Limit: 1200}, false)
	if err != nil || rep.Done != 1200 {
		t.Fatalf("Purge: %+v, %v", rep, err)
	}
	data, err := os.ReadFile(filepath.Join(path, "letters.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(data, []byte("\n")); n != 100 {
		t.Fatalf("after purging 1200 of 1300, the file has %d lines, want the 100 live letters", n)
	}
	var ids []string
	if err := d.Scan(ctx, func(l *deadletter.Letter) error { ids = append(ids, l.MessageID()); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(ids) != 100 || ids[0] != "d-1200" || ids[99] != "d-1299" {
		t.Fatalf("%d letters left, from %v", len(ids), ids[:min(len(ids), 3)])
	}
}

// Opening a directory that is not there fails and creates nothing: a
// mistyped path is not an empty store. CreateDeadLetterDir makes it.
func TestOpenDirRefusesADirectoryThatIsNotThere(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mistyped")
	_, err := zeromq.OpenDeadLetterDir(path)
	want := "directory " + path + " does not exist: check the path (streamgen dlq keep creates it)"
	if err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("OpenDeadLetterDir(%s) = %v; want an error saying %q", path, err, want)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("opening it made the directory: %v", err)
	}
	file := filepath.Join(t.TempDir(), "letters")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := zeromq.OpenDeadLetterDir(file); err == nil || !strings.Contains(err.Error(), "is not a directory") {
		t.Fatalf("OpenDeadLetterDir of a file = %v", err)
	}
	d, err := zeromq.CreateDeadLetterDir(path)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := d.Len(context.Background()); err != nil || n != 0 {
		t.Fatalf("a new directory: Len = %d, %v", n, err)
	}
	if _, err := zeromq.OpenDeadLetterDir(path); err != nil {
		t.Fatalf("once created, OpenDeadLetterDir = %v", err)
	}
}

// pullAt binds a PULL at a free address, as a source queue is bound, and
// returns the address and the message ids of the letters replayed to it,
// as they arrive.
func pullAt(t *testing.T) (string, <-chan string) {
	t.Helper()
	addr := freeEndpoint(t)
	pull := zmq4.NewPull(context.Background())
	if err := pull.Listen(addr); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1000)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			msg, err := pull.Recv()
			if err != nil {
				return // closed
			}
			env, err := zeromq.ParseEnvelope(msg.Frames)
			if err != nil {
				t.Errorf("a replayed letter: %v", err)
				return
			}
			id, _ := env.Header(zeromq.HeaderMessageID)
			got <- id
		}
	}()
	t.Cleanup(func() { _ = pull.Close(); <-done })
	return addr, got
}

// receive returns the next n message ids from got.
func receive(t *testing.T, got <-chan string, n int) []string {
	t.Helper()
	var ids []string
	for len(ids) < n {
		select {
		case id := <-got:
			ids = append(ids, id)
		case <-time.After(testkit.Patience):
			t.Fatalf("%d letters arrived, want %d: %v", len(ids), n, ids)
		}
	}
	return ids
}

// letterIDs is the message ids of the letters of d, oldest first.
func letterIDs(t *testing.T, d *zeromq.DeadLetterDir) []string {
	t.Helper()
	var ids []string
	if err := d.Scan(context.Background(), func(l *deadletter.Letter) error { ids = append(ids, l.MessageID()); return nil }); err != nil {
		t.Fatal(err)
	}
	return ids
}

func idRange(from, n int) []string {
	var ids []string
	for i := from; i < from+n; i++ {
		ids = append(ids, fmt.Sprintf("d-%04d", i))
	}
	return ids
}

// A replay on a file system that has no room left to record the removal
// of the letters it pushes stops before it pushes one more, and says how
// to go on; once there is room, a replay sends the others, each once.
func TestDirReplayStopsBeforePushingWhatItCouldNotRecord(t *testing.T) {
	ctx := context.Background()
	d, err := zeromq.OpenDeadLetterDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Import(ctx, strings.NewReader(jsonl(t, 0, 100))); err != nil {
		t.Fatal(err)
	}
	// Room for one batch of 64, and then none.
	var looks atomic.Int32
	zeromq.SetDirFree(d, func() (uint64, error) {
		if looks.Add(1) > 1 {
			return 10 << 10, nil
		}
		return 1 << 30, nil
	})
	addr, got := pullAt(t)
	rep, err := d.Replay(ctx, deadletter.Selection{}, deadletter.ReplayOptions{To: deadletter.Target{Address: addr}})
	want := "directory " + d.Name() + " is full: 10240 bytes are free"
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "free space in "+d.Name()+", then run the replay again") {
		t.Fatalf("Replay on a full disk: %+v, %v; want an error saying %q and how to go on", rep, err, want)
	}
	if rep.Done != 64 || len(rep.ReplayedKept) != 0 {
		t.Fatalf("Replay on a disk that filled after a batch: %+v", rep)
	}
	if ids := receive(t, got, 64); !slices.Equal(ids, idRange(0, 64)) {
		t.Fatalf("replayed %v", ids)
	}
	if ids := letterIDs(t, d); !slices.Equal(ids, idRange(64, 36)) {
		t.Fatalf("the directory holds %v, want the 36 not replayed", ids)
	}
	// With room again, the others go, and only they (to a PULL of its
	// own: zmq4's takes no second connection).
	zeromq.SetDirFree(d, func() (uint64, error) { return 1 << 30, nil })
	addr, got = pullAt(t)
	if rep, err := d.Replay(ctx, deadletter.Selection{}, deadletter.ReplayOptions{To: deadletter.Target{Address: addr}}); err != nil || rep.Done != 36 {
		t.Fatalf("Replay with room: %+v, %v", rep, err)
	}
	if ids := receive(t, got, 36); !slices.Equal(ids, idRange(64, 36)) {
		t.Fatalf("replayed %v after the room was made, want the 36 left", ids)
	}
	if n, err := d.Len(ctx); err != nil || n != 0 {
		t.Fatalf("after both replays, Len = %d, %v", n, err)
	}
}

// When the removal of letters a replay pushed cannot be written all the
// same, the replay names them, as replayed and still kept, stops, and
// fails; they are still in the directory.
func TestDirReplayNamesTheLettersItPushedAndCouldNotRemove(t *testing.T) {
	ctx := context.Background()
	d, err := zeromq.OpenDeadLetterDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Import(ctx, strings.NewReader(jsonl(t, 0, 100))); err != nil {
		t.Fatal(err)
	}
	zeromq.FailDirWrites(d, func(line []byte) error {
		if bytes.HasPrefix(line, []byte(`{"del"`)) {
			return syscall.ENOSPC
		}
		return nil
	})
	addr, got := pullAt(t)
	rep, err := d.Replay(ctx, deadletter.Selection{}, deadletter.ReplayOptions{To: deadletter.Target{Address: addr}})
	if err == nil || !strings.Contains(err.Error(), "so it replayed and still keeps 64 letters: d-0000, d-0001, ") ||
		!strings.Contains(err.Error(), "no space left on device") || !strings.Contains(err.Error(), "free space in "+d.Name()) ||
		!strings.Contains(err.Error(), strings.Join(idRange(0, 64), ", ")) {
		t.Fatalf("Replay whose tombstone fails: %v", err)
	}
	if rep.Done != 64 || !slices.Equal(rep.ReplayedKept, idRange(0, 64)) {
		t.Fatalf("Replay whose tombstone fails: Done %d, ReplayedKept %v", rep.Done, rep.ReplayedKept)
	}
	if ids := receive(t, got, 64); !slices.Equal(ids, idRange(0, 64)) {
		t.Fatalf("replayed %v", ids)
	}
	if n, err := d.Len(ctx); err != nil || n != 100 {
		t.Fatalf("after the failed tombstone, Len = %d, %v; want the 100", n, err)
	}
}
