package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/streamgen/streamgen/runtime/deadletter"
	"github.com/streamgen/streamgen/runtime/deadletter/console"
	"github.com/streamgen/streamgen/runtime/zeromq"
)

// The same pages work over the directory a ZeroMQ keeper writes: the
// overview groups its letters, a letter's page shows it, and a purge
// removes it from the directory.
func TestTheSamePagesWorkForAKeepersDirectory(t *testing.T) {
	dir := ordersDir(t)
	s := newSite(t, console.Options{}, dir)
	s.signIn()
	if a := s.get("/"); !strings.Contains(a.body, "order &lt;n&gt;: card declined") || !strings.Contains(a.body, "<svg") {
		t.Fatalf("the overview of a keeper's directory:\n%s", a.body)
	}
	var key string
	if err := dir.Scan(context.Background(), func(l *deadletter.Letter) error {
		if l.MessageID() == "m2" {
			key = deadletter.LetterKey(l)
		}
		return nil
	}); err != nil || key == "" {
		t.Fatalf("m2 in the directory: %q, %v", key, err)
	}
	_, form := s.confirm(dir.Name(), "action=purge&key="+key)
	if a := s.post("/q/"+url.PathEscape(dir.Name())+"/purge", form); !strings.Contains(a.body, "1 letters purged") {
		t.Fatalf("purge: %s", a.body)
	}
	left := map[string]bool{}
	if err := dir.Scan(context.Background(), func(l *deadletter.Letter) error { left[l.MessageID()] = true; return nil }); err != nil {
		t.Fatal(err)
	}
	if len(left) != 3 || left["m2"] {
		t.Fatalf("the directory holds %v after the purge of m2", left)
	}
}

// ordersDir is a keeper's directory in a temporary folder, holding the
// four letters of orders.
func ordersDir(t *testing.T) *zeromq.DeadLetterDir {
	t.Helper()
	dir, err := zeromq.OpenDeadLetterDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var lines bytes.Buffer
	for _, l := range orders().snapshot() {
		b, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		lines.Write(append(b, '\n'))
	}
	if n, err := dir.Import(context.Background(), &lines); err != nil || n != 4 {
		t.Fatalf("Import = %d, %v", n, err)
	}
	return dir
}
