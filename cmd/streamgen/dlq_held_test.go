package main

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/internal/brokerurl"
	"github.com/streamgen/streamgen/internal/testsupport/testkit"
)

// dlq ls during a replay (another process) waits its turn, then says
// that another operation reads the queue, how many letters the queue
// counts beside those, and to run it again; never that the queue holds no
// letters, and never a listing out of order: with 300 letters the replay
// holds them all, with 800 the 512 its consumer read (the first letter,
// read by basic.get, it replayed at once, the next comes 10 s later).
func TestDLQLsDuringAReplaySaysTheReplayHoldsLetters(t *testing.T) {
	for _, tc := range []struct {
		letters, ready int // ready: not held by the replay, nor replayed
		want           string
	}{
		{300, 0, "dead-letter queue %s: another operation (a replay, purge or listing under way) is reading the store: run this again when it ends; the queue counts 0 letters beside those it holds"},
		{800, 287, "dead-letter queue %s: another operation (a replay, purge or listing under way) is reading the store: run this again when it ends; the queue counts 287 letters beside those it holds"},
	} {
		t.Run(fmt.Sprint(tc.letters), func(t *testing.T) {
			conn := testkit.DialRabbitMQ(t, brokerurl.RabbitMQ())
			target := dlqQueue(t, conn, "held-target")
			var msgs []amqp.Publishing
			for i := range tc.letters {
				msgs = append(msgs, cliLetter(fmt.Sprintf("m-%03d", i), "Card", "boom", target, []byte("{}")))
			}
			dl := dlqQueue(t, conn, "held", msgs...)
			replay := exec.Command(binary, "dlq", "replay", "-yes", "-rate", "0.1", dl)
			if err := replay.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = replay.Process.Kill(); _ = replay.Wait() }()
			testkit.Eventually(t, "the replay under way", func() bool { return count(t, conn, target) == 1 && count(t, conn, dl) == tc.ready })
			out, errOut, status := dlqRun(t, "", "ls", dl)
			want := fmt.Sprintf(tc.want, dl)
			if status != 1 || strings.Contains(out+errOut, "holds no letters") || !strings.Contains(errOut, want) {
				t.Fatalf("ls during a replay: status %d\n%s%s\nwant status 1 and a line %q", status, out, errOut, want)
			}
		})
	}
}
