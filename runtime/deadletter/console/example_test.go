package console_test

import (
	"context"
	"log"
	"net/http"
	"os"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/deadletter"
	"github.com/streamgen/streamgen/runtime/deadletter/console"
	"github.com/streamgen/streamgen/runtime/rabbitmq"
)

// A service serves the console of its own dead-letter queues beside its
// health endpoint, on loopback.
func ExampleForApp() {
	ctx := context.Background()
	url := "amqp://guest:guest@127.0.0.1:5672/"
	app := runtime.NewApp("orders")
	// orders.Mount(app, rabbitmq.New(url)): the generated Mount function.
	dlq, err := console.ForApp(ctx, app, rabbitmq.DeadLetterOpener(url), console.Options{
		Prefix: "/dlq",
		Token:  os.Getenv("STREAMGEN_DLQ_TOKEN"),
		Redact: rabbitmq.RedactURL,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer dlq.Close()
	mux := http.NewServeMux()
	mux.Handle("/readyz", app.Health())
	mux.Handle("/dlq/", dlq)
	log.Fatal(http.ListenAndServe("127.0.0.1:8080", mux))
}

// The console of two dead-letter queues named outright.
func ExampleNew() {
	url := "amqp://guest:guest@127.0.0.1:5672/"
	var stores []deadletter.Store
	for _, name := range []string{"orders.parked", "billing.parked"} {
		q, err := rabbitmq.DialDeadLetterQueue(context.Background(), url, name)
		if err != nil {
			log.Fatal(err)
		}
		stores = append(stores, q)
	}
	c, err := console.New(stores, console.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	log.Printf("sign in at http://127.0.0.1:8089/ with the token %s", c.Token())
	log.Fatal(http.ListenAndServe("127.0.0.1:8089", c))
}
