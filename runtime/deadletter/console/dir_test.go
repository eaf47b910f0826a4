package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime/deadletter"
	"github.com/streamgen/streamgen/runtime/deadletter/console"
	"github.com/streamgen/streamgen/runtime/zeromq"
)

// The same pages work over the directory a ZeroMQ keeper writes: the
// overview groups its letters, a letter's page shows it, and a purge
// removes it from the directory.
func TestTheSamePagesWorkForAKeepersDirectory(t *testing.T) {
	dir := ordersDir(t)
	s := newSite(t, console.Options{}, dir)
	s.signIn()
	if a := s.get("/"); !strings.Contains(a.body, "order &lt;n&gt;: card declined") || !strings.Contains(a.body, "<svg") {
		t.Fatalf("the overview of a keeper's directory:\n%s", a.body)
	}
	var key string
	if err := dir.Scan(context.Background(), func(l *deadletter.Letter) error {
		if l.MessageID() == "m2" {
			key = deadletter.LetterKey(l)
		}
		return nil
	}); err != nil || key == "" {
		t.Fatalf("m2 in the directory: %q, %v", key, err)
	}
	_, form := s.confirm(dir.Name(), "action=purge&key="+key)
	if a := s.post("/q/"+url.PathEscape(dir.Name())+"/purge", form); !strings.Contains(a.body, "1 letter purged") {
		t.Fatalf("purge: %s", a.body)
	}
	left := map[string]bool{}
	if err := dir.Scan(context.Background(), func(l *deadletter.Letter) error { left[l.MessageID()] = true; return nil }); err != nil {
		t.Fatal(err)
	}
	if len(left) != 3 || left["m2"] {
		t.Fatalf("the directory holds %v after the purge of m2", left)
	}
}

// ordersDir is a keeper's directory in a temporary folder, holding the
// four letters of orders.
func ordersDir(t *testing.T) *zeromq.DeadLetterDir {
	t.Helper()
	dir, err := zeromq.OpenDeadLetterDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var lines bytes.Buffer
	for _, l := range orders().snapshot() {
		b, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		lines.Write(append(b, '\n'))
	}
	if n, err := dir.Import(context.Background(), &lines); err != nil || n != 4 {
		t.Fatalf("Import = %d, %v", n, err)
	}
	return dir
}

// A replay from a keeper's directory goes to an address: the confirm
// page asks for it (tcp://host:port), a form without one or with one
// that is not an address is refused in the page's words, with the page
// to mend it and nothing replayed, and with one the letters arrive where
// it says, each framed with its source queue.
func TestReplayFromAKeepersDirectoryAsksForTheAddress(t *testing.T) {
	dir := ordersDir(t)
	s := newSite(t, console.Options{}, dir)
	s.signIn()
	group := groupOfDir(t, dir, "m1")
	q := "/q/" + url.PathEscape(dir.Name())
	page, form := s.confirm(dir.Name(), "action=replay&group="+group)
	if !strings.Contains(page.body, `name="address"`) || !strings.Contains(page.body, "tcp://host:port") ||
		!strings.Contains(page.body, "Replay <strong>3</strong> of the 4 letters") || !strings.Contains(page.body, "source queue at the address below") {
		t.Fatalf("the confirm page does not ask for the address:\n%s", page.body)
	}
	for _, c := range []struct{ address, says string }{
		{"", "give the address to replay to: tcp://host:port, where the source queue is bound"},
		{"localhost:5557", "&#34;localhost:5557&#34; is not an address to replay to: write tcp://host:port"},
		{"tcp://127.0.0.1:99999", "is not an address to replay to"},
	} {
		form.Set("address", c.address)
		a := s.post(q+"/replay", form)
		if a.status != http.StatusBadRequest || !strings.Contains(a.body, c.says) || !strings.Contains(a.body, `name="address"`) {
			t.Fatalf("replay to address %q: %d, want 400 saying %q and the form again:\n%s", c.address, a.status, c.says, a.body)
		}
		if strings.Contains(a.body, "-to") {
			t.Fatalf("the page names a command's flag:\n%s", a.body)
		}
		// The page again, with a fresh token to send the form with.
		m := confirmCSRF.FindStringSubmatch(a.body)
		if m == nil {
			t.Fatalf("no confirm form in\n%s", a.body)
		}
		form.Set("csrf", m[1])
	}
	if n, err := dir.Len(context.Background()); err != nil || n != 4 {
		t.Fatalf("after the refused forms, the directory holds %d (%v)", n, err)
	}
	addr, got := pullAt(t)
	form.Set("address", addr)
	a := s.post(q+"/replay", form)
	if want := "3 letters replayed to each letter&#39;s source queue at " + addr + ", of 3 selected"; a.status != http.StatusOK || !strings.Contains(a.body, want) || !strings.Contains(a.body, `id="left">1<`) {
		t.Fatalf("replay to %s: %d, want %q:\n%s", addr, a.status, want, a.body)
	}
	for _, env := range receiveEnvelopes(t, got, 3) {
		if id, _ := env.Header(zeromq.HeaderMessageID); env.Subscription != "orders" || !strings.HasPrefix(id, "m") {
			t.Fatalf("replayed %s to queue %s", id, env.Subscription)
		}
	}
}

// A store that replays through its broker refuses an address, and one
// that replays to an address refuses a replay without; neither confirm
// page promises what it cannot do.
func TestAReplayTargetAStoreDoesNotTakeIsRefused(t *testing.T) {
	st := orders()
	dir := ordersDir(t)
	s := newSite(t, console.Options{}, st, dir)
	s.signIn()
	a := s.get("/q/orders.parked/confirm?action=replay&all=1&address=tcp://127.0.0.1:5557")
	if a.status != http.StatusBadRequest || !strings.Contains(a.body, "orders.parked replays through its broker, not to an address: leave the address empty") {
		t.Fatalf("confirm a replay of a broker's queue to an address: %d\n%s", a.status, a.body)
	}
	if a := s.get("/q/orders.parked/confirm?action=replay&all=1"); strings.Contains(a.body, `name="address"`) {
		t.Fatalf("the confirm page of a broker's queue asks for an address:\n%s", a.body)
	}
	_, form := s.confirm("orders.parked", "action=replay&all=1")
	form.Set("address", "tcp://127.0.0.1:5557")
	if a := s.post("/q/orders.parked/replay", form); a.status != http.StatusBadRequest || !strings.Contains(a.body, "not to an address") || len(st.sent) != 0 {
		t.Fatalf("replay of a broker's queue to an address: %d, sent %s\n%s", a.status, st.state(), a.body)
	}
}

// confirmCSRF finds the CSRF token of a confirm page's form.
var confirmCSRF = regexp.MustCompile(`class="confirm">\s*<input type="hidden" name="csrf" value="([^"]+)">`)

// groupOfDir is the group key of the letter id of dir.
func groupOfDir(t *testing.T, dir *zeromq.DeadLetterDir, id string) string {
	t.Helper()
	var g string
	if err := dir.Scan(context.Background(), func(l *deadletter.Letter) error {
		if l.MessageID() == id {
			g = deadletter.GroupKey(l)
		}
		return nil
	}); err != nil || g == "" {
		t.Fatalf("letter %s in the directory: %q, %v", id, g, err)
	}
	return g
}

// pullAt binds a PULL at a free address, as a ZeroMQ queue is bound, and
// returns the address and what arrives there.
func pullAt(t *testing.T) (string, <-chan *zeromq.Envelope) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := "tcp://" + ln.Addr().String()
	_ = ln.Close()
	pull := zmq4.NewPull(context.Background())
	if err := pull.Listen(addr); err != nil {
		t.Fatal(err)
	}
	got := make(chan *zeromq.Envelope, 100)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			msg, err := pull.Recv()
			if err != nil {
				return // closed
			}
			env, err := zeromq.ParseEnvelope(msg.Frames)
			if err != nil {
				t.Errorf("a replayed letter: %v", err)
				return
			}
			got <- env
		}
	}()
	t.Cleanup(func() { _ = pull.Close(); <-done })
	return addr, got
}

// receiveEnvelopes returns the next n messages of got.
func receiveEnvelopes(t *testing.T, got <-chan *zeromq.Envelope, n int) []*zeromq.Envelope {
	t.Helper()
	var envs []*zeromq.Envelope
	for len(envs) < n {
		select {
		case env := <-got:
			envs = append(envs, env)
		case <-time.After(testkit.Patience):
			t.Fatalf("%d letters arrived, want %d", len(envs), n)
		}
	}
	return envs
}
