package rabbitmq

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"amqp://guest:s3cret@127.0.0.1:5672/":        "amqp://guest:xxxxx@127.0.0.1:5672/",
		"amqps://user:p%40ss@broker.example:5671/vh": "amqps://user:xxxxx@broker.example:5671/vh",
		"amqp://127.0.0.1:5672/":                     "amqp://127.0.0.1:5672/",
		"amqp://user@host/":                          "amqp://user@host/",
		"amqp://user:s3cret@host:99999999999/%zz":    "amqp://(unparsable URL)",
		"user:s3cret@%zz":                            "user:xxxxx@%zz",
		"guest:s3cret@localhost:5672":                "guest:xxxxx@localhost:5672",
		"amqp:guest:s3cret@host/vh":                  "amqp:xxxxx@host/vh",
		"%zz:s3cret@host":                            "(unparsable URL)",
		"a:s3cret@b://host/":                         "a:xxxxx@b://host/",
		// Lists, and addresses run together.
		"amqp://guest:S3CRET@h:1/,amqp://guest:S3CRET2@h:5672/": "amqp://guest:xxxxx@h:1/,amqp://guest:xxxxx@h:5672/",
		"amqp://a:s3cret@h1:5672/,amqp://b:s3cret@h2:5672/vh":   "amqp://a:xxxxx@h1:5672/,amqp://b:xxxxx@h2:5672/vh",
		"amqp://a:s3cret@h1/ , amqps://b:s3cret@h2/":            "amqp://a:xxxxx@h1/,amqps://b:xxxxx@h2/",
		"amqp://a:s3cret@h1/;amqp://b:s3cret@h2/":               "amqp://a:xxxxx@h1/(redacted)",
		"amqp://a:s3cret@h1/,b:s3cret@h2/":                      "amqp://a:xxxxx@h1/(redacted)",
		"amqp://a:s3cret@h1/ amqp://b:s3cret@h2/":               "amqp://a:xxxxx@h1/(redacted)",
		"amqp://a:s3cret@h1/vh?x=amqp://b:s3cret@h2/":           "amqp://a:xxxxx@h1/(redacted)",
		"amqp://a:12#b:s3cret@h2/":                              "amqp://a:12/(redacted)",
		"amqp://a:s3cret@h1/,amqp://b:s3cret@h2:notaport/,x:y":  "amqp://a:xxxxx@h1/,amqp://(unparsable URL)",
	} {
		got := RedactURL(in)
		if got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
		if strings.Contains(strings.ToLower(got), "s3cret") || strings.Contains(got, "p%40ss") {
			t.Errorf("RedactURL(%q) leaks the password: %q", in, got)
		}
	}
}

func TestSplitAddresses(t *testing.T) {
	for in, want := range map[string][]string{
		"amqp://h1/":                             {"amqp://h1/"},
		"amqp://h1/,amqp://h2/":                  {"amqp://h1/", "amqp://h2/"},
		" amqp://h1/ ,\tamqps://h2/ , amqp://h3": {"amqp://h1/", "amqps://h2/", "amqp://h3"},
		"amqp://h1/a,b":                          {"amqp://h1/a,b"},
		"amqp://h1/,":                            {"amqp://h1/,"},
	} {
		if got := splitAddresses(in); !slices.Equal(got, want) {
			t.Errorf("splitAddresses(%q) = %q, want %q", in, got, want)
		}
	}
}

// unreachable returns an address on this machine where nothing listens.
func unreachable(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// Every address's password stays out of every error and log line, for
// lists of every shape: well formed, run together, with an address that
// does not parse, with different users.
func TestNoPasswordOfAnyAddressLeaks(t *testing.T) {
	testkit.NoLeaks(t)
	down1, down2, down3 := unreachable(t), unreachable(t), unreachable(t)
	passwords := []string{"S3CRET", "S3CRET2", "S3CRET3"}
	for _, list := range []string{
		"amqp://guest:S3CRET@" + down1 + "/,amqp://guest:S3CRET2@" + down2 + "/",
		"amqp://guest:S3CRET@" + down1 + "/, amqp://guest:S3CRET2@" + down2 + "/ ,amqp://guest:S3CRET3@" + down3 + "/",
		"amqp://guest:S3CRET@" + down1 + "/;amqp://guest:S3CRET2@" + down2 + "/",
		"amqp://guest:S3CRET@" + down1 + "/,guest:S3CRET2@" + down2 + "/",
		"amqp://guest:S3CRET@" + down1 + " amqp://guest:S3CRET2@" + down2 + "/",
		"amqp://guest:S3CRET@" + down1 + "/,amqp://guest:S3CRET2@127.0.0.1:notaport/,amqp://guest:S3CRET3@" + down3 + "/",
		"amqp://guest:S3CRET@" + down1 + "/,http://guest:S3CRET2@" + down2 + "/",
		"amqp://guest:S3CRET@" + down1 + "/,amqp://other:S3CRET2@" + down2 + "/,amqp://guest:S3CRET3@" + down3 + "/%zz",
		"amqp://guest:S3CRET@" + down1 + "/vh?heartbeat=amqp://guest:S3CRET2@" + down2 + "/",
	} {
		logs := streamtest.NewLogRecorder(nil)
		b := New(list, WithLogger(logs.Logger()), WithReconnectBackoff(time.Millisecond, time.Millisecond, 0))
		a := startApp(t, b, 10*time.Second, sub("never-declared", 0, handler("Job", runtime.Policy{}, &calls{}, alwaysAck)))
		select {
		case <-a.done:
		case <-time.After(patience):
			t.Fatalf("%s: the App neither started nor failed", RedactURL(list))
		}
		errs := []error{a.err}
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		p := New(list, WithLogger(logs.Logger()))
		errs = append(errs, runtime.Publish(ctx, p, runtime.Queue("q"), "Job", job{ID: 1}))
		cancel()
		_ = p.Close()
		for _, err := range errs {
			if err == nil {
				t.Errorf("%s: connected to addresses where nothing listens", RedactURL(list))
				continue
			}
			for _, pw := range passwords {
				if strings.Contains(err.Error(), pw) {
					t.Errorf("the error for %s shows a password: %v", RedactURL(list), err)
				}
			}
		}
		for _, r := range logs.Records() {
			for _, pw := range passwords {
				if strings.Contains(r.String(), pw) {
					t.Errorf("a log line shows a password: %s", r)
				}
			}
		}
	}
}

func TestAddressListErrorsSayWhatIsWrong(t *testing.T) {
	testkit.NoLeaks(t)
	for list, want := range map[string]string{
		"amqp://guest:pw@h1/;amqp://guest:pw2@h2/":    "its virtual host looks like another address",
		"amqp://guest:pw@h1/,amqp://other:pw2@h2/":    `amqp://other:xxxxx@h2/ has the user "other", but amqp://guest:xxxxx@h1/ has "guest": every address must use the same user`,
		"amqp://guest:pw@h1/,http://guest:pw2@h2/":    "broker addresses are not valid: http://guest:xxxxx@h2/: ",
		"amqp://guest:pw@127.0.0.1:notaport/":         "rabbitmq: broker URL amqp://(unparsable URL) is not valid: ",
		"amqp://guest:pw@h1/,amqp://guest:pw2@h2:x/a": "broker addresses are not valid: amqp://(unparsable URL): ",
	} {
		err := newDialer(list, nil, "x", true).err
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want it to say %q", RedactURL(list), err, want)
		}
	}
}

// The addresses are shuffled once per Broker unless asked to keep them in
// order; every address stays in the list once.
func TestAddressOrder(t *testing.T) {
	var list []string
	for i := range 8 {
		list = append(list, "amqp://guest:guest@h"+string(rune('1'+i))+":5672/")
	}
	joined := strings.Join(list, ",")
	if got := newDialer(joined, nil, "x", true).redacted; got != RedactURL(joined) {
		t.Errorf("in order: %s, want %s", got, RedactURL(joined))
	}
	shuffled := 0
	for range 5 {
		d := newDialer(joined, nil, "x", false)
		var got []string
		for _, a := range d.addrs {
			got = append(got, a.url)
		}
		if !slices.Equal(got, list) {
			shuffled++
		}
		slices.Sort(got)
		if !slices.Equal(got, list) {
			t.Fatalf("shuffled list %q is not a permutation of %q", got, list)
		}
	}
	if shuffled == 0 {
		t.Error("five Brokers all kept the 8 addresses in the order given; they are to be shuffled")
	}
}

// twoAddresses returns two addresses of the test broker that the dialer
// tells apart: one by IP address, one by host name.
func twoAddresses(t *testing.T) (string, string) {
	t.Helper()
	first := brokerURL()
	second := strings.Replace(first, "@127.0.0.1:", "@localhost:", 1)
	if second == first {
		t.Fatalf("the test broker URL %s does not name 127.0.0.1; these tests need the local broker", RedactURL(first))
	}
	return first, second
}

// The first address that answers is used; each reconnect starts at the
// next address; consuming and publishing move on independently.
func TestDialFailsOverPerRole(t *testing.T) {
	testkit.NoLeaks(t)
	newAdmin(t)
	a, b := twoAddresses(t)
	down := "amqp://guest:guest@" + unreachable(t) + "/"
	d := newDialer(strings.Join([]string{down, a, b}, ","), nil, "streamgen-test-failover", true)
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	var got []string
	dial := func(role string) {
		t.Helper()
		c, err := d.dial(ctx, role)
		if err != nil {
			t.Fatalf("dial %s: %v", role, err)
		}
		got = append(got, role+" "+c.addr)
		_ = c.Close()
	}
	dial(roleConsume) // down does not answer: a
	dial(roleConsume) // b
	dial(rolePublish) // a: the publishing side has its own place, and skips down, which the consuming side found dead
	dial(roleConsume) // wraps round: down is tried last, so a
	dial(rolePublish) // b
	want := []string{
		roleConsume + " " + RedactURL(a),
		roleConsume + " " + RedactURL(b),
		rolePublish + " " + RedactURL(a),
		roleConsume + " " + RedactURL(a),
		rolePublish + " " + RedactURL(b),
	}
	if !slices.Equal(got, want) {
		t.Errorf("connected to\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// With the first address down, the Broker starts on the next one, and
// after losing its consuming connection it reconnects to the address after
// that one.
func TestBrokerFailsOverAtStartAndOnReconnect(t *testing.T) {
	testkit.NoLeaks(t)
	adm := newAdmin(t)
	a, b := twoAddresses(t)
	down := "amqp://guest:guest@" + unreachable(t) + "/"
	name := "streamgen-test-failover-" + randomHex(4)
	br := New(strings.Join([]string{down, a, b}, ","), WithAddressesInOrder(), WithConnectionName(name),
		WithReconnectBackoff(50*time.Millisecond, time.Second, 0.2))
	q := adm.queue("failover")
	var c calls
	ra := runApp(t, br, sub(q, 0, handler("Job", runtime.Policy{}, &c, alwaysAck)))
	started := ra.logs.Find(slog.LevelInfo, "rabbitmq: consuming")
	if len(started) != 1 || started[0].Attr("url") != RedactURL(a) {
		t.Fatalf("started on %v, want %s: the first address does not answer", started, RedactURL(a))
	}
	publishJob(t, br, q, "Job", job{ID: 1})
	testkit.Eventually(t, "job 1 to be handled", func() bool { return c.len() == 1 })
	if n := testkit.CloseConnections(t, name+" (consume)"); n != 1 {
		t.Fatalf("closed %d consuming connections, want 1", n)
	}
	testkit.Eventually(t, "the reconnect", func() bool {
		return len(ra.logs.Find(slog.LevelInfo, "rabbitmq: reconnected; consuming again")) == 1
	})
	if u := ra.logs.Find(slog.LevelInfo, "rabbitmq: reconnected; consuming again")[0].Attr("url"); u != RedactURL(b) {
		t.Errorf("reconnected to %s, want the next address %s", u, RedactURL(b))
	}
	publishJob(t, br, q, "Job", job{ID: 2})
	testkit.Eventually(t, "job 2 to be handled after the failover", func() bool { return c.len() == 2 })
}

// silentListener accepts connections and never says a word, as a frozen
// broker does; it returns its address.
func silentListener(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var conns []net.Conn
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

// A cancelled context ends a connection attempt at once, in the AMQP
// handshake too: not after the 30 s handshake timeout.
func TestStartEndsWhenItsContextIsCancelledDuringTheHandshake(t *testing.T) {
	testkit.NoLeaks(t)
	b := New("amqp://guest:"+secret+"@"+silentListener(t)+"/", WithConnectionName("streamgen-test-silent"))
	a := startApp(t, b, 10*time.Second, sub("never-declared", 0, handler("Job", runtime.Policy{}, &calls{}, alwaysAck)))
	time.Sleep(300 * time.Millisecond) // into the handshake, which the listener never answers
	a.cancel()
	cancelled := time.Now()
	select {
	case <-a.done:
		if !errors.Is(a.err, context.Canceled) {
			t.Errorf("Run = %v, want a startup error wrapping context.Canceled", a.err)
		}
		if a.err != nil && strings.Contains(a.err.Error(), secret) {
			t.Errorf("the error shows the password: %v", a.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("Start still connecting %v after its context was cancelled", time.Since(cancelled))
	}
}

// Shutdown during a reconnect to a broker that accepts and never answers
// returns at once: the reconnect follows the Broker's run, which Shutdown
// ends.
func TestShutdownEndsAReconnectStuckInTheHandshake(t *testing.T) {
	testkit.NoLeaks(t)
	adm := newAdmin(t)
	name := "streamgen-test-frozen-" + randomHex(4)
	b := New(brokerURL()+",amqp://guest:guest@"+silentListener(t)+"/", WithAddressesInOrder(), WithConnectionName(name),
		WithReconnectBackoff(10*time.Millisecond, 10*time.Millisecond, 0))
	q := adm.queue("frozen")
	a := startApp(t, b, 20*time.Second, sub(q, 0, handler("Job", runtime.Policy{}, &calls{}, alwaysAck)))
	a.waitReady()
	if n := testkit.CloseConnections(t, name+" (consume)"); n != 1 {
		t.Fatalf("closed %d consuming connections, want 1", n)
	}
	testkit.Eventually(t, "the reconnect to begin", func() bool {
		return len(a.logs.Find(slog.LevelWarn, "rabbitmq: consuming was interrupted; reconnecting")) == 1
	})
	time.Sleep(300 * time.Millisecond) // into the silent address's handshake
	stopped := make(chan error, 1)
	go func() { stopped <- a.stop() }()
	select {
	case err := <-stopped:
		if err != nil {
			t.Errorf("Run = %v, want a clean stop", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the App still stopping 10 s after it was told to: the reconnect ignores the shutdown")
	}
}
