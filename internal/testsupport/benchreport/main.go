package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	goruntime "runtime"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/internal/brokerurl"
)

func main() {
	url := flag.String("rabbitmq", brokerurl.RabbitMQ(), "the broker whose version the machine line names")
	flag.Parse()

	var in io.Reader = os.Stdin
	if flag.NArg() > 0 {
		var readers []io.Reader
		for _, name := range flag.Args() {
			f, err := os.Open(name)
			if err != nil {
				fmt.Fprintln(os.Stderr, "benchreport:", err)
				os.Exit(2)
			}
			defer f.Close()
			readers = append(readers, f)
		}
		in = io.MultiReader(readers...)
	}
	res, err := Parse(in)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchreport:", err)
		os.Exit(2)
	}
	m := Machine{CPU: res.CPU, CPUs: goruntime.NumCPU(), Go: goruntime.Version(), Broker: brokerVersion(*url)}
	missing := Write(os.Stdout, m, res, Cases)
	if missing > 0 {
		fmt.Fprintf(os.Stderr, "benchreport: %d cases were not run (see the benchmark output for why)\n", missing)
		os.Exit(1)
	}
}

// brokerVersion asks the broker at url for its product and version.
func brokerVersion(url string) string {
	conn, err := amqp.DialConfig(url, amqp.Config{Dial: amqp.DefaultDial(5 * time.Second)})
	if err != nil {
		var ae *amqp.Error
		if errors.As(err, &ae) {
			return "RabbitMQ (version unknown: " + ae.Reason + ")"
		}
		return "RabbitMQ (not reachable)"
	}
	defer conn.Close()
	product, _ := conn.Properties["product"].(string)
	version, _ := conn.Properties["version"].(string)
	if product == "" {
		product = "RabbitMQ"
	}
	return product + " " + version
}
