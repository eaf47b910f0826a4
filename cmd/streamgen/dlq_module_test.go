package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/internal/brokerurl"
	"github.com/streamgen/streamgen/internal/testsupport/testkit"
)

// dlqCards is the package of the user module of TestDLQFromAUserModule: a
// RabbitMQ subscription on queue %[1]s that parks every charge into
// %[1]s.parked, until the program says it is fixed.
const dlqCards = `// Package cards charges cards.
package cards

//go:generate go tool streamgen

import (
	"context"
	"fmt"

	"github.com/streamgen/streamgen/runtime"
)

// Charge is one card charge.
type Charge struct {
	Order int ` + "`json:\"order\"`" + `
}

// Fixed is set once the bug is fixed.
var Fixed bool

// Handled gets a line for each charge handled.
var Handled = make(chan string, 100)

//stream:subscriber "%[1]s" broker=rabbitmq max_attempts=2 retry_delay=10ms dead_letter=%[1]s.parked
func Handle(ctx context.Context, c Charge, md runtime.Metadata) error {
	Handled <- fmt.Sprintf("%%s attempt %%d replays %%s", md.MessageID, md.Attempt, md.Headers["x-streamgen-replays"])
	if !Fixed {
		return fmt.Errorf("order %%d: card declined", c.Order)
	}
	return nil
}
`

// dlqMain parks three charges (park), or handles the replays (serve).
const dlqMain = `// Command shop runs the cards subscription.
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"example.com/shop/cards"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/rabbitmq"
)

func main() {
	b := rabbitmq.New(os.Getenv("STREAMGEN_RABBITMQ_URL"))
	app := runtime.NewApp("shop")
	cards.Mount(app, b)
	cards.Fixed = os.Args[1] == "serve"
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx) }()
	<-app.Ready()
	want := 3
	if os.Args[1] == "park" {
		want = 6 // two attempts each
		for i := range 3 {
			if err := cards.PublishCharge(ctx, b, cards.Charge{Order: 100 + i}, runtime.WithMessageID(fmt.Sprintf("charge-%d", i))); err != nil {
				log.Fatal(err)
			}
		}
	}
	for range want {
		select {
		case line := <-cards.Handled:
			fmt.Println(line)
		case <-time.After(30 * time.Second):
			log.Fatal("not handled in time")
		}
	}
	time.Sleep(200 * time.Millisecond) // the last park or ack goes out
	cancel()
	if err := <-done; err != nil && ctx.Err() == nil {
		log.Fatal(err)
	}
}
`

// The way docs/dead-letters.md tells, end to end, from a user module: a real subscription
// parks three charges; streamgen dlq ls groups them, show shows one,
// replay puts them back after the fix, where they are handled as attempt 1
// with the replay counted; the dead-letter queue is then empty.
func TestDLQFromAUserModule(t *testing.T) {
	root := repoRoot(t)
	url := brokerurl.RabbitMQ()
	conn := testkit.DialRabbitMQ(t, url)
	queue := testkit.UniqueName("streamgen-test.dlq-module")
	parked := queue + ".parked"
	t.Cleanup(func() {
		if ch, err := conn.Channel(); err == nil {
			for _, q := range []string{queue, queue + ".retry", queue + ".suspect", parked} {
				_, _ = ch.QueueDelete(q, false, false, false)
			}
			_ = ch.Close()
		}
	})
	mod := t.TempDir()
	writeFile(t, filepath.Join(mod, "go.mod"), "module example.com/shop\n\ngo 1.26\n")
	writeFile(t, filepath.Join(mod, "go.sum"), readFile(t, filepath.Join(root, "go.sum")))
	mustRun(t, mod, "go", "mod", "edit",
		"-replace", "github.com/streamgen/streamgen="+root,
		"-require", "github.com/streamgen/streamgen@v0.0.0",
		"-tool", "github.com/streamgen/streamgen/cmd/streamgen")
	writeFile(t, filepath.Join(mod, "cards", "cards.go"), fmt.Sprintf(dlqCards, queue))
	writeFile(t, filepath.Join(mod, "cmd", "shop", "main.go"), dlqMain)
	mustRun(t, mod, "go", "mod", "tidy")
	mustRun(t, mod, "go", "generate", "./...")
	shop := filepath.Join(t.TempDir(), "shop")
	mustRun(t, mod, "go", "build", "-o", shop, "./cmd/shop")
	t.Setenv(brokerurl.EnvVar, url)

	if out := mustRun(t, mod, shop, "park"); strings.Count(out, "attempt 2") != 3 {
		t.Fatalf("park: want each charge tried twice:\n%s", out)
	}
	testkit.Eventually(t, "three letters parked", func() bool { return count(t, conn, parked) == 3 })
	out, errOut, status := dlqRun(t, "", "ls", parked)
	if status != 0 || !containsAll(out, " 3 ", "Charge", queue, "order <n>: card declined") {
		t.Fatalf("ls: status %d\n%s%s", status, out, errOut)
	}
	out, errOut, status = dlqRun(t, "", "show", "-id", "charge-1", parked)
	if status != 0 || !containsAll(out, "message charge-1 (type Charge)", `"order": 101`, "order 101: card declined", "x-streamgen-attempts") {
		t.Fatalf("show: status %d\n%s%s", status, out, errOut)
	}
	// After the fix: the service runs, the letters are replayed into it.
	served := make(chan result, 1)
	go func() { served <- command(t, mod, shop, "serve") }()
	testkit.Eventually(t, "the service consuming", func() bool { return consumers(t, conn, queue) > 0 })
	out, errOut, status = dlqRun(t, "", "replay", "-yes", parked)
	if status != 0 || !strings.Contains(out, "replayed 3 letters") {
		t.Fatalf("replay: status %d\n%s%s", status, out, errOut)
	}
	r := <-served
	if r.code != 0 || strings.Count(r.out, "attempt 1 replays 1") != 3 {
		t.Fatalf("the replays were handled as:\n%s", r.out)
	}
	if n := count(t, conn, parked); n != 0 {
		t.Fatalf("%d letters still parked after the replay", n)
	}
}

// consumers returns the number of consumers of queue q.
func consumers(t *testing.T, conn *amqp.Connection, q string) int {
	t.Helper()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ch.Close() }()
	info, err := ch.QueueDeclarePassive(q, true, false, false, false, nil)
	if err != nil {
		return 0
	}
	return info.Consumers
}
