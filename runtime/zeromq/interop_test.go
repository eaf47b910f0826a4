package zeromq_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/streamtest"
	"github.com/streamgen/streamgen/runtime/zeromq"
)

// python is Debian's interpreter, where apt installs python3-zmq.
const python = "/usr/bin/python3"

// requirePyzmq fails the test loudly when the libzmq peer cannot run.
func requirePyzmq(t *testing.T) {
	t.Helper()
	out, err := exec.Command(python, "-c", "import zmq; print(zmq.zmq_version())").CombinedOutput()
	if err != nil {
		t.Fatalf("the interop test needs libzmq for Python (%s with python3-zmq): %v\n%s\ninstall it with: apt-get install -y python3-zmq", python, err, out)
	}
	t.Logf("libzmq %s", strings.TrimSpace(string(out)))
}

// peerMessage is one message the Python peer read.
type peerMessage struct {
	Socket string   `json:"socket"`
	Frames []string `json:"frames"`
}

// TestInteropWithLibzmq runs a pyzmq peer (testdata/peer.py) that follows
// doc.go's framing: it sends three messages to a queue bound here, reads
// the retry copy and the dead letter on PULL sockets it binds, and reads a
// job from this service's ventilator with a PULL that dials in.
func TestInteropWithLibzmq(t *testing.T) {
	testkit.NoLeaks(t)
	requirePyzmq(t)
	jobsEP, retryEP, deadEP, ventEP := freeEndpoint(t), freeEndpoint(t), freeEndpoint(t), freeEndpoint(t)

	rec := newRecorder()
	app := runtime.NewApp("interop")
	zq := zeromq.New(
		zeromq.Queue("jobs", zeromq.Bind(jobsEP)),
		zeromq.Queue("jobs.retry", zeromq.Bind(retryEP)),
		zeromq.Queue("jobs.dead", zeromq.Bind(deadEP)),
		zeromq.Queue("work", zeromq.Ventilator(ventEP)),
	)
	app.Mount(zq, &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{
		jobHandler(rec, runtime.Policy{MaxAttempts: 2, OutRetry: "jobs.retry", DeadLetter: "jobs.dead"}, func(j *Job, _ runtime.Metadata) error {
			if j.ID == 1 {
				return errors.New("job 1 fails")
			}
			return nil
		}),
	}})
	streamtest.RunApp(t, app)

	plan := map[string]any{
		"bind":    map[string]string{"retry": retryEP, "dead": deadEP},
		"dial":    map[string]string{"vent": ventEP},
		"send_to": jobsEP,
		"messages": [][3]string{
			{"jobs", "type: job\nmessage-id: py-1\nx-tenant: py", `{"id":1}`},
			{"jobs", "message-id: py-2", `{"id":`},
			{"jobs", "", `{"id":3}`},
		},
		"expect": map[string]int{"retry": 1, "dead": 1, "vent": 1},
	}
	planJSON, err := json.Marshal(plan)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, "testdata/peer.py", string(planJSON))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	cmd.WaitDelay = 5 * time.Second
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() || lines.Text() != "ready" {
		_ = cmd.Wait()
		t.Fatalf("the peer did not get ready: %q\n%s", lines.Text(), stderr.String())
	}
	testkit.Eventually(t, "the peer's PULL dialled the ventilator", func() bool { return zq.Connections("work") == 1 })
	publishJob(t, zq, "work", Job{ID: 50}, runtime.WithMessageID("for-python"))

	got := map[string]peerMessage{}
	for lines.Scan() {
		var m peerMessage
		if err := json.Unmarshal(lines.Bytes(), &m); err != nil {
			t.Fatalf("peer printed %q: %v", lines.Text(), err)
		}
		got[m.Socket] = m
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("peer: %v\n%s", err, stderr.String())
	}

	// What the Go handler received from libzmq.
	handled := rec.waitFor(t, "jobs", 2)
	if handled[0].Body != "1" || handled[0].MD.MessageID != "py-1" || handled[0].MD.Headers["x-tenant"] != "py" || handled[0].MD.Attempt != 1 {
		t.Fatalf("first delivery = %+v", handled[0])
	}
	if handled[1].Body != "3" || handled[1].MD.MessageType != "job" {
		t.Fatalf("a message with no headers at all = %+v", handled[1])
	}

	// The retry copy, as libzmq read it.
	retry := got["retry"].Frames
	wantRetry := []string{"jobs.retry", "type: job\nmessage-id: py-1\nx-tenant: py\nx-retry-count: 1", `{"id":1}`}
	if !reflect.DeepEqual(retry, wantRetry) {
		t.Fatalf("retry copy read by libzmq:\n got %q\nwant %q", retry, wantRetry)
	}

	// The dead letter of the undecodable body.
	dead := got["dead"].Frames
	if len(dead) != 3 || dead[0] != "jobs.dead" || dead[2] != `{"id":` {
		t.Fatalf("dead letter read by libzmq: %q", dead)
	}
	headers, err := zeromq.ParseHeaders([]byte(dead[1]))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"message-id": "py-2", "x-streamgen-poison": "true", "x-streamgen-source": "jobs", "x-streamgen-attempts": "1"}
	for _, h := range headers {
		if v, ok := want[h.Name]; ok && v == h.Value {
			delete(want, h.Name)
		}
	}
	if len(want) != 0 {
		t.Fatalf("dead letter headers %q lack %v", dead[1], want)
	}

	// The job a libzmq worker took from the ventilator.
	vent := got["vent"].Frames
	if len(vent) != 3 || vent[0] != "work" || vent[2] != `{"id":50}` || !strings.Contains(vent[1], "message-id: for-python") {
		t.Fatalf("ventilated job read by libzmq: %q", vent)
	}
}

// startPeer runs testdata/peer.py with plan and waits until its sockets are
// set up. It returns the peer's output lines, and wait, which waits for the
// peer to exit and fails the test when it failed.
func startPeer(t *testing.T, plan map[string]any) (*bufio.Scanner, func()) {
	t.Helper()
	planJSON, err := json.Marshal(plan)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitLimit)
	cmd := exec.CommandContext(ctx, python, "testdata/peer.py", string(planJSON))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	cmd.WaitDelay = 5 * time.Second
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	waited := false
	wait := func() {
		t.Helper()
		if waited {
			return
		}
		waited = true
		defer cancel()
		if err := cmd.Wait(); err != nil {
			t.Fatalf("peer: %v\n%s", err, stderr.String())
		}
	}
	t.Cleanup(func() {
		if !waited {
			cancel()
			_ = cmd.Wait()
		}
	})
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() || lines.Text() != "ready" {
		t.Fatalf("the peer did not get ready: %q\n%s", lines.Text(), stderr.String())
	}
	return lines, wait
}

// peerCounts reads the summary line of a peer run with "summary": the
// messages each of its sockets read.
func peerCounts(t *testing.T, lines *bufio.Scanner) map[string]int {
	t.Helper()
	var got struct {
		Counts map[string]int `json:"counts"`
	}
	for lines.Scan() {
		if err := json.Unmarshal(lines.Bytes(), &got); err != nil {
			t.Fatalf("peer printed %q: %v", lines.Text(), err)
		}
	}
	if got.Counts == nil {
		t.Fatal("the peer printed no counts")
	}
	return got.Counts
}
