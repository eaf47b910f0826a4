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
	"strings"
	"testing"

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
