package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"io"
	"log/slog"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/streamgen/streamgen/examples/internal/demo"
	"github.com/streamgen/streamgen/examples/orders"
	"github.com/streamgen/streamgen/internal/brokerurl"
	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/rabbitmq"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The service on the test broker, under queue names of this test's own.
func TestServiceConfirmsAnOrderAndServesItsCounters(t *testing.T) {
	url := brokerurl.RabbitMQ()
	testkit.RequireRabbitMQ(t, url)
	b := demo.Prefix(rabbitmq.New(url, rabbitmq.WithConnectionName("orders-cmd-test")), "test-orders-cmd-"+rand.Text()[:10]+".")
	var logs testkit.SyncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	testkit.RestoreDefaultLogger(t)
	slog.SetDefault(logger)

	t.Cleanup(func() { // registered first, so it runs once the service has stopped
		if err := demo.Delete(url, rabbitmq.QueueNames(b.Subscriptions()...)); err != nil {
			t.Errorf("cleanup: %v", err)
		}
		if err := demo.DeleteExchanges(url, b.Exchanges()); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	svc := testkit.Start(t, func(ctx context.Context) error { return serve(ctx, config{metrics: "127.0.0.1:0"}, b, logger) })
	testkit.Eventually(t, "the service consuming", func() bool { return strings.Contains(logs.String(), `msg="rabbitmq: consuming"`) })
	if strings.Contains(logs.String(), "guest:guest") {
		t.Errorf("the log shows the broker's password:\n%s", logs.String())
	}

	if err := orders.PublishOrderPlaced(t.Context(), b, orders.OrderPlaced{ID: "o-1", Customer: "ada", TotalCents: 1250}, runtime.WithMessageID("o-1")); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the order confirmed", func() bool {
		return strings.Contains(logs.String(), `msg="order confirmed"`) && strings.Contains(logs.String(), "message_id=o-1 attempt=1 max_attempts=5 order=o-1 customer=ada total=12.50")
	})
	testkit.WaitForMetrics(t, testkit.MetricsURL(t, logs.String()), "the acked order in the metrics",
		`message_type="OrderPlaced",outcome="acked",subscription="`+b.Name("orders.received")+`"} 1`)

	svc.Stop()
}

func TestAnUnreachableBrokerStopsTheServiceWithoutShowingThePassword(t *testing.T) {
	testkit.RestoreDefaultLogger(t)
	var logs testkit.SyncBuffer
	err := run(context.Background(), []string{"-url", "amqp://orders:s3cret@127.0.0.1:1/"}, &logs)
	if err == nil {
		t.Fatal("run against a closed port succeeded")
	}
	if strings.Contains(err.Error()+logs.String(), "s3cret") {
		t.Fatalf("the password shows in %v or in the log:\n%s", err, logs.String())
	}
}

func TestTheURLComesFromTheEnvironmentUnlessAFlagSaysOtherwise(t *testing.T) {
	t.Setenv("STREAMGEN_RABBITMQ_URL", "amqp://env:5672/")
	cfg, err := parseFlags(nil, io.Discard)
	if err != nil || cfg.url != "amqp://env:5672/" {
		t.Errorf("parseFlags() = %+v, %v; want the URL of the environment", cfg, err)
	}
	cfg, err = parseFlags([]string{"-url", "amqp://flag:5672/"}, io.Discard)
	if err != nil || cfg.url != "amqp://flag:5672/" {
		t.Errorf("parseFlags(-url) = %+v, %v; want the flag's URL", cfg, err)
	}
	t.Setenv("STREAMGEN_RABBITMQ_URL", "")
	if cfg, _ := parseFlags(nil, io.Discard); cfg.url != brokerurl.DefaultRabbitMQ {
		t.Errorf("without the variable the URL is %q, want %q", cfg.url, brokerurl.DefaultRabbitMQ)
	}
}

func TestBadCommandLinesAreUsageErrors(t *testing.T) {
	for _, args := range [][]string{{"-nope"}, {"-log-level", "loud"}, {"extra"}} {
		err := run(context.Background(), args, io.Discard)
		var usage *usageError
		if !errors.As(err, &usage) {
			t.Errorf("run %q = %v, want a usage error", args, err)
		}
	}
	if err := run(context.Background(), []string{"-h"}, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("run -h = %v, want flag.ErrHelp", err)
	}
}
