package rabbitmq

import (
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
)

// A first address that accepts TCP and never speaks costs one short
// handshake timeout, with a warning naming it, and only once: the
// publishing connection, opened next, skips the address the consuming one
// found dead.
func TestAFrozenFirstAddressCostsOneShortHandshakeTimeout(t *testing.T) {
	testkit.NoLeaks(t)
	adm := newAdmin(t)
	frozen := "amqp://guest:" + secret + "@" + silentListener(t) + "/"
	b := New(frozen+","+brokerURL(), WithAddressesInOrder(), WithConnectionName("streamgen-test-frozen-first-"+randomHex(4)))
	q := adm.queue("frozen-first")
	var c calls
	began := time.Now()
	a := runApp(t, b, sub(q, 0, handler("Job", runtime.Policy{}, &c, alwaysAck)))
	took := time.Since(began)
	// One default handshake timeout (5 s) and the real broker's connects;
	// the timeout paid twice would be 10 s, the old 30 s one 60 s.
	if took < DefaultHandshakeTimeout || took >= 2*DefaultHandshakeTimeout {
		t.Errorf("startup took %v, want one handshake timeout (%v) and a little", took, DefaultHandshakeTimeout)
	}
	warned := a.logs.Find(slog.LevelWarn, "rabbitmq: a broker address did not answer; trying the next one")
	if len(warned) != 1 {
		t.Fatalf("warnings about the frozen address: %v, want 1 (the publishing connection skips it)", warned)
	}
	if w := warned[0]; w.Attr("url") != RedactURL(frozen) || w.Attr("connection") != roleConsume || !strings.Contains(w.Attr("err"), "no AMQP handshake within 5s") {
		t.Errorf("warning = %v, want the consuming connection, the redacted frozen address and the handshake timeout", w)
	}
	for _, r := range a.logs.Records() {
		if strings.Contains(r.String(), secret) {
			t.Errorf("a log line shows the password: %v", r)
		}
	}
	publishJob(t, b, q, "Job", job{ID: 1})
	testkit.Eventually(t, "job 1 to be handled", func() bool { return c.len() == 1 })
}

// WithHandshakeTimeout sets the bound of an attempt, in the error too.
func TestHandshakeTimeoutIsConfigurable(t *testing.T) {
	testkit.NoLeaks(t)
	b := New("amqp://guest:"+secret+"@"+silentListener(t)+"/", WithHandshakeTimeout(300*time.Millisecond))
	defer b.Close()
	began := time.Now()
	err := b.Publish(t.Context(), "never-declared", runtime.Message{Type: "Job", Body: []byte("{}")})
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("the publish failed after %v, want about 300ms", took)
	}
	if err == nil || !strings.Contains(err.Error(), "no AMQP handshake within 300ms (WithHandshakeTimeout)") {
		t.Errorf("Publish = %v, want the handshake timeout", err)
	}
}

// With WaitForBroker, Start waits for a broker that comes up after it,
// logging each failed try with the redacted address, and then runs.
func TestWaitForBrokerWaitsForABrokerThatComesUpLater(t *testing.T) {
	testkit.NoLeaks(t)
	adm := newAdmin(t)
	addr := unreachable(t) // refuses, until the proxy listens there
	url := "amqp://guest:guest@" + addr + "/"
	b := New(url, WaitForBroker(time.Minute), WithReconnectBackoff(50*time.Millisecond, 200*time.Millisecond, 0),
		WithConnectionName("streamgen-test-wait-"+randomHex(4)))
	q := adm.queue("wait-for-broker")
	var c calls
	a := startApp(t, b, 20*time.Second, sub(q, 0, handler("Job", runtime.Policy{}, &c, alwaysAck)))
	testkit.Eventually(t, "three failed tries", func() bool {
		return len(a.logs.Find(slog.LevelWarn, "rabbitmq: the broker does not answer yet; waiting for it")) >= 3
	})
	if ready, reason := b.Ready(); ready || !strings.Contains(reason, "waiting for the broker") {
		t.Errorf("Ready() = %v, %q while waiting, want not ready, waiting for the broker", ready, reason)
	}
	startProxy(t, addr, brokerAddr())
	a.waitReady()
	tries := a.logs.Find(slog.LevelWarn, "rabbitmq: the broker does not answer yet; waiting for it")
	for _, w := range tries {
		if w.Attr("url") != RedactURL(url) || strings.Contains(w.String(), "guest:guest") || !strings.Contains(w.Attr("err"), "connection refused") {
			t.Errorf("try logged as %v, want the redacted address and the refusal", w)
		}
	}
	publishJob(t, b, q, "Job", job{ID: 1})
	testkit.Eventually(t, "job 1 to be handled", func() bool { return c.len() == 1 })
}

// Once WaitForBroker's bound passes, Start fails with an error saying so.
func TestWaitForBrokerGivesUpAtItsBound(t *testing.T) {
	testkit.NoLeaks(t)
	url := "amqp://guest:" + secret + "@" + unreachable(t) + "/"
	b := New(url, WaitForBroker(time.Second), WithReconnectBackoff(50*time.Millisecond, 200*time.Millisecond, 0))
	began := time.Now()
	a := startApp(t, b, 10*time.Second, sub("never-declared", 0, handler("Job", runtime.Policy{}, &calls{}, alwaysAck)))
	select {
	case <-a.done:
	case <-time.After(patience):
		t.Fatal("Run still waiting for the broker long after the bound")
	}
	if took := time.Since(began); took < time.Second {
		t.Errorf("Run failed after %v, before the 1s bound", took)
	}
	var unreachable unreachableError
	if a.err == nil || !strings.Contains(a.err.Error(), "rabbitmq: the broker did not answer within 1s (WaitForBroker), after ") ||
		!strings.Contains(a.err.Error(), RedactURL(url)) || strings.Contains(a.err.Error(), secret) || !errors.As(a.err, &unreachable) {
		t.Errorf("Run = %v, want the bound, the tries and the redacted address", a.err)
	}
	if n := len(a.logs.Find(slog.LevelWarn, "rabbitmq: the broker does not answer yet; waiting for it")); n < 2 {
		t.Errorf("%d failed tries logged, want several", n)
	}
}

// Waiting does not mend refused credentials: Start fails on them at once.
func TestWaitForBrokerDoesNotWaitOnRefusedCredentials(t *testing.T) {
	testkit.NoLeaks(t)
	wrong := strings.Replace(brokerURL(), "guest:guest@", "guest:"+secret+"@", 1)
	b := New(wrong, WaitForBroker(time.Minute))
	began := time.Now()
	a := startApp(t, b, 10*time.Second, sub("never-declared", 0, handler("Job", runtime.Policy{}, &calls{}, alwaysAck)))
	select {
	case <-a.done:
	case <-time.After(patience):
		t.Fatal("Run still waiting on refused credentials")
	}
	if took := time.Since(began); took > 10*time.Second {
		t.Errorf("Run failed after %v, want at once", took)
	}
	if a.err == nil || strings.Contains(a.err.Error(), "WaitForBroker") || strings.Contains(a.err.Error(), secret) {
		t.Errorf("Run = %v, want the refusal, without waiting", a.err)
	}
}
