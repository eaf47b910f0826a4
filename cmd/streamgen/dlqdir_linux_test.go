package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime/zeromq"
)

// On a disk too full to record the removal of what it replays, dlq
// replay -dir pushes no letter (a letter pushed and kept would be
// replayed twice), says how to go on and fails; once there is room, the
// replay sends each letter once.
func TestDLQReplayDirOnAFullDisk(t *testing.T) {
	mnt := testkit.Tmpfs(t, 1<<20)
	dir := filepath.Join(mnt, "dlq")
	var letters strings.Builder
	for _, id := range []string{"f-1", "f-2", "f-3", "f-4"} {
		letters.WriteString(`{"properties":{"message_id":"` + id + `","type":"Card"},"reason":"declined","source":"cards","body":"{}","body_encoding":"text"}` + "\n")
	}
	if o, e, status := dlqRun(t, letters.String(), "import", "-dir", dir); status != 0 {
		t.Fatalf("import: status %d\n%s%s", status, o, e)
	}
	// The letters fill their file's last block with blank lines (which
	// readers skip), so that a tombstone needs a new block, which the
	// full disk refuses.
	name := filepath.Join(dir, "letters.jsonl")
	info, err := os.Stat(name)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(name, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(strings.Repeat("\n", int(4096-info.Size()%4096))); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	unfill := testkit.Fill(t, filepath.Join(mnt, "filler"))

	addr := freeTCP(t)
	pull := zmq4.NewPull(context.Background())
	defer func() { _ = pull.Close() }()
	if err := pull.Listen(addr); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 10)
	go func() {
		for {
			msg, err := pull.Recv()
			if err != nil {
				return // closed
			}
			env, err := zeromq.ParseEnvelope(msg.Frames)
			if err != nil {
				t.Errorf("replayed: %v", err)
				return
			}
			id, _ := env.Header(zeromq.HeaderMessageID)
			got <- id
		}
	}()

	o, e, status := dlqRun(t, "", "replay", "-dir", dir, "-yes", "-to", addr)
	if status != 1 || !strings.Contains(o, "replayed 0 letters") || !strings.Contains(e, "is full") ||
		!strings.Contains(e, "free space in "+dir+", then run the replay again") {
		t.Fatalf("replay on a full disk: status %d\n%s%s", status, o, e)
	}
	select {
	case id := <-got:
		t.Fatalf("letter %s was pushed by a replay that could not record its removal", id)
	case <-time.After(time.Second):
	}
	if o, _, _ := dlqRun(t, "", "ls", "-dir", dir); !strings.Contains(o, " 4 ") {
		t.Fatalf("ls after the replay on a full disk:\n%s", o)
	}

	unfill()
	if o, e, status := dlqRun(t, "", "replay", "-dir", dir, "-yes", "-to", addr); status != 0 || !strings.Contains(o, "replayed 4 letters") {
		t.Fatalf("replay with room: status %d\n%s%s", status, o, e)
	}
	seen := map[string]int{}
	for range 4 {
		select {
		case id := <-got:
			seen[id]++
		case <-time.After(testkit.Patience):
			t.Fatalf("the replay did not arrive: %v", seen)
		}
	}
	if len(seen) != 4 {
		t.Fatalf("replayed %v, want f-1 to f-4 once each", seen)
	}
	if o, _, _ := dlqRun(t, "", "ls", "-dir", dir); !strings.Contains(o, "holds no letters") {
		t.Fatalf("ls after the replay:\n%s", o)
	}
}
