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

// dlq ls during a replay (another process) says that the replay holds
// letters it could not list, and to run it again, never that the queue
// holds no letters: with 300 letters the replay holds them all, with 800
// the 512 its consumer read (the first letter, read by basic.get, it
// replayed at once, the next comes 10 s later).
func TestDLQLsDuringAReplaySaysTheReplayHoldsLetters(t *testing.T) {
	for _, tc := range []struct {
		letters, ready int // ready: not held by the replay, nor replayed
		want           string
	}{
		{300, 0, "no letter listed: the letters of %s are held by another reader (a replay or listing under way): run ls again when it ends"},
		{800, 287, "287 letters listed; more are held by another reader (a replay or listing under way): run ls again when it ends"},
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
			if status != 0 {
				t.Fatalf("ls during a replay: status %d\n%s%s", status, out, errOut)
			}
			want := tc.want
			if strings.Contains(want, "%s") {
				want = fmt.Sprintf(want, dl)
			}
			if strings.Contains(out, "holds no letters") || !strings.Contains(out, want) {
				t.Fatalf("ls during a replay wrote\n%s\nwant a line %q", out, want)
			}
		})
	}
}
