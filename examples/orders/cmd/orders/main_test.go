package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"go.uber.org/goleak"

	"github.com/streamgen/streamgen/examples/internal/demo"
	"github.com/streamgen/streamgen/examples/orders"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/rabbitmq"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// syncBuffer collects what the service logs while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

var metricsLine = regexp.MustCompile(`msg="metrics served" url=(\S+)`)

// The service on the test broker, under queue names of this test's own.
func TestServiceConfirmsAnOrderAndServesItsCounters(t *testing.T) {
	url := demo.RabbitMQURL()
	if conn, err := amqp.Dial(url); err != nil {
		t.Fatalf("RabbitMQ does not answer at %s (%v): start one with rabbitmq-server -detached, or point STREAMGEN_RABBITMQ_URL at one",
			runtime.RedactURL(url), err)
	} else {
		conn.Close()
	}
	b := demo.Prefix(rabbitmq.New(url, rabbitmq.WithConnectionName("orders-cmd-test")), "test-orders-cmd-"+rand.Text()[:10]+".")
	var logs syncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	previous := slog.Default()
	slog.SetDefault(logger)
	t.Cleanup(func() { slog.SetDefault(previous) })

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- serve(ctx, config{metrics: "127.0.0.1:0"}, b, logger) }()
	t.Cleanup(func() {
		if err := demo.Delete(url, demo.QueuesOf(b.Subscriptions())); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	eventually(t, "the service consuming", func() bool { return strings.Contains(logs.String(), `msg="rabbitmq: consuming"`) })
	if strings.Contains(logs.String(), "guest:guest") {
		t.Errorf("the log shows the broker's password:\n%s", logs.String())
	}

	if err := orders.PublishOrderPlaced(ctx, b, orders.OrderPlaced{ID: "o-1", Customer: "ada", TotalCents: 1250}, runtime.WithMessageID("o-1")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the order confirmed", func() bool {
		return strings.Contains(logs.String(), `msg="order confirmed"`) && strings.Contains(logs.String(), "message_id=o-1 attempt=1 max_attempts=5 order=o-1 customer=ada total=12.50")
	})
	m := metricsLine.FindStringSubmatch(logs.String())
	if m == nil {
		t.Fatalf("no metrics URL in the log:\n%s", logs.String())
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	eventually(t, "the acked order in the metrics", func() bool {
		resp, err := client.Get(m[1])
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Contains(string(body), `subscription="`+b.Name("orders.received")+`",outcome="acked"} 1`)
	})

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve after a graceful stop: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the service did not stop within 30s of its context ending")
	}
}

func TestAnUnreachableBrokerStopsTheServiceWithoutShowingThePassword(t *testing.T) {
	previous := slog.Default()
	t.Cleanup(func() { slog.SetDefault(previous) })
	var logs syncBuffer
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
	if cfg, _ := parseFlags(nil, io.Discard); cfg.url != defaultURL {
		t.Errorf("without the variable the URL is %q, want %q", cfg.url, defaultURL)
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
