package main

import (
	"bufio"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/streamgen/streamgen/internal/brokerurl"
	"github.com/streamgen/streamgen/internal/testsupport/testkit"
)

// serve starts streamgen dlq serve with args and env, and returns the
// lines it printed up to the address, and the address; the command is
// interrupted when the test ends, and must exit 0 then.
func serve(t *testing.T, env []string, madeToken bool, args ...string) (lines []string, addr string) {
	t.Helper()
	lines, addr, _ = serveCmd(t, env, madeToken, args...)
	return lines, addr
}

// serveCmd is serve, and returns what the command writes to standard
// error too, as it writes it.
func serveCmd(t *testing.T, env []string, madeToken bool, args ...string) (lines []string, addr string, stderr *testkit.SyncBuffer) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"dlq", "serve", "-addr", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr = &testkit.SyncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("streamgen dlq serve exited with %v\n%s", err, stderr)
			}
		case <-time.After(testkit.Patience):
			_ = cmd.Process.Kill()
			t.Errorf("streamgen dlq serve did not stop on SIGINT")
		}
	})
	sc := bufio.NewScanner(stdout)
	found := make(chan struct{})
	go func() {
		for sc.Scan() {
			lines = append(lines, sc.Text())
			if m := regexp.MustCompile(`is at (http://\S+)/$`).FindStringSubmatch(sc.Text()); m != nil {
				addr = m[1]
			}
			if addr != "" && (!madeToken || strings.Contains(sc.Text(), "token")) {
				break
			}
		}
		close(found)
		_, _ = io.Copy(io.Discard, stdout)
		exited <- cmd.Wait()
	}()
	select {
	case <-found:
	case <-time.After(testkit.Patience):
		t.Fatalf("streamgen dlq serve printed no address:\n%s", stderr)
	}
	if addr == "" {
		t.Fatalf("streamgen dlq serve printed no address: %q\n%s", lines, stderr)
	}
	return lines, addr, stderr
}

func signedInClient(t *testing.T, addr, token string) *http.Client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: testkit.Patience}
	resp, err := c.PostForm(addr+"/login", url.Values{"token": {token}})
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	return c
}

func getPage(t *testing.T, c *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Without a token, serve makes one and prints it once with the address;
// the console shows the queue's letters to whoever signs in with it.
func TestDLQServeMakesATokenAndServesTheQueue(t *testing.T) {
	conn := testkit.DialRabbitMQ(t, brokerurl.RabbitMQ())
	q := dlqQueue(t, conn, "serve", cliLetter("m1", "Card", "order 1: card declined", "orders", []byte(`{"order":1}`)))
	lines, addr := serve(t, []string{"STREAMGEN_DLQ_TOKEN="}, true, "-url", brokerurl.RabbitMQ(), q)
	m := regexp.MustCompile(`operator token ([0-9a-f]{32}) `).FindStringSubmatch(strings.Join(lines, "\n"))
	if m == nil {
		t.Fatalf("no token printed: %q", lines)
	}
	if strings.Contains(strings.Join(lines, "\n"), "guest:guest") {
		t.Fatalf("the broker password is printed: %q", lines)
	}
	if status, body := getPage(t, &http.Client{Timeout: testkit.Patience}, addr+"/"); status != http.StatusOK || !strings.Contains(body, "Sign in") || strings.Contains(body, "card declined") {
		t.Fatalf("without the token: %d %s", status, body)
	}
	if status, body := getPage(t, signedInClient(t, addr, "wrong-token-here"), addr+"/"); strings.Contains(body, "card declined") {
		t.Fatalf("a wrong token shows the letters: %d", status)
	}
	status, body := getPage(t, signedInClient(t, addr, m[1]), addr+"/")
	if status != http.StatusOK || !strings.Contains(body, q) || !strings.Contains(body, "order &lt;n&gt;: card declined") || strings.Contains(body, "guest:guest") {
		t.Fatalf("the overview: %d %s", status, body)
	}
}

// A token given in the environment is not printed.
func TestDLQServeTakesTheTokenFromTheEnvironment(t *testing.T) {
	conn := testkit.DialRabbitMQ(t, brokerurl.RabbitMQ())
	q := dlqQueue(t, conn, "serve-env")
	lines, addr := serve(t, []string{"STREAMGEN_DLQ_TOKEN=the-operators-token"}, false, "-url", brokerurl.RabbitMQ(), q)
	if strings.Contains(strings.Join(lines, "\n"), "the-operators-token") {
		t.Fatalf("the token is printed: %q", lines)
	}
	if _, body := getPage(t, signedInClient(t, addr, "the-operators-token"), addr+"/"); !strings.Contains(body, "No letters: nothing failed.") {
		t.Fatalf("the overview: %s", body)
	}
}

func TestDLQServeUsage(t *testing.T) {
	if _, stderr, status := dlqRun(t, "", "serve"); status != 2 || !strings.Contains(stderr, "give the dead-letter QUEUEs") {
		t.Fatalf("no queue: %d %s", status, stderr)
	}
	if stdout, _, status := dlqRun(t, "", "serve", "-h"); status != 0 || !strings.Contains(stdout, "operator token") || !strings.Contains(stdout, "127.0.0.1:8089") {
		t.Fatalf("-h: %d %s", status, stdout)
	}
	_, stderr, status := dlqRun(t, "", "serve", "-url", "amqp://app:hunter2@127.0.0.1:1/", "q")
	if status != 1 || strings.Contains(stderr, "hunter2") || !strings.Contains(stderr, "cannot connect") {
		t.Fatalf("a broker that does not answer: %d %s", status, stderr)
	}
}

// -pkg adds the dead-letter queues of the packages' RabbitMQ
// subscriptions, read from their annotations.
func TestDLQServeFindsTheQueuesOfAnnotatedPackages(t *testing.T) {
	conn := testkit.DialRabbitMQ(t, brokerurl.RabbitMQ())
	const q = "streamgen-test.cli.dlqpkg.parked" // testdata/dlqpkg's dead_letter
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclare(q, true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = ch.QueueDelete(q, false, false, false); _ = ch.Close() })
	lines, addr := serve(t, []string{"STREAMGEN_DLQ_TOKEN=the-operators-token"}, false, "-url", brokerurl.RabbitMQ(), "-pkg", "./testdata/dlqpkg")
	if !strings.Contains(lines[0], "console of "+q+" is at") || strings.Contains(lines[0], "zmq") {
		t.Fatalf("serve shows %q", lines)
	}
	if _, body := getPage(t, signedInClient(t, addr, "the-operators-token"), addr+"/"); !strings.Contains(body, q) {
		t.Fatalf("the overview: %s", body)
	}
}

// -dir serves a ZeroMQ keeper's directory with the same pages; a directory
// that is not there is an error, not an empty one made.
func TestDLQServeAKeepersDirectory(t *testing.T) {
	dir := t.TempDir()
	letters := `{"body":"{\"order\":1}","headers":{"x-streamgen-reason":"order 1: card declined","x-streamgen-source":"orders"},"properties":{"message_id":"m1","type":"Card"}}` + "\n"
	if _, stderr, status := dlqRun(t, letters, "import", "-dir", dir); status != 0 {
		t.Fatalf("import into %s: %d %s", dir, status, stderr)
	}
	_, addr := serve(t, []string{"STREAMGEN_DLQ_TOKEN=the-operators-token"}, false, "-dir", dir)
	if status, body := getPage(t, signedInClient(t, addr, "the-operators-token"), addr+"/"); status != http.StatusOK || !strings.Contains(body, "order &lt;n&gt;: card declined") {
		t.Fatalf("the overview of %s: %d %s", dir, status, body)
	}
	missing := dir + "/not-there"
	if _, stderr, status := dlqRun(t, "", "serve", "-dir", missing); status != 1 || !strings.Contains(stderr, "is not a directory a keeper writes") {
		t.Fatalf("a missing directory: %d %s", status, stderr)
	}
	if _, err := os.Stat(missing); err == nil {
		t.Fatal("serve made the missing directory")
	}
}

// serve answers only to the address it serves, and to the names given
// with -allow-host: another Host (a page that reached the console by DNS
// rebinding) is refused with 421, and the refusal names the flag.
func TestDLQServeAnswersToTheHostsAllowed(t *testing.T) {
	dir := t.TempDir()
	letters := `{"body":"{}","headers":{"x-streamgen-reason":"declined","x-streamgen-source":"orders"},"properties":{"message_id":"m1","type":"Card"}}` + "\n"
	if _, stderr, status := dlqRun(t, letters, "import", "-dir", dir); status != 0 {
		t.Fatalf("import into %s: %d %s", dir, status, stderr)
	}
	_, addr := serve(t, []string{"STREAMGEN_DLQ_TOKEN=the-operators-token"}, false, "-dir", dir, "-allow-host", "dlq.example:8443")
	get := func(host string) (int, string) {
		t.Helper()
		req, err := http.NewRequest("GET", addr+"/login", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		resp, err := (&http.Client{Timeout: testkit.Patience}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if status, body := get(strings.TrimPrefix(addr, "http://")); status != http.StatusOK {
		t.Fatalf("the address served: %d\n%s", status, body)
	}
	if status, body := get("dlq.example:8443"); status != http.StatusOK {
		t.Fatalf("a host allowed with -allow-host: %d\n%s", status, body)
	}
	if status, body := get("evil.example"); status != http.StatusMisdirectedRequest || !strings.Contains(body, "-allow-host") {
		t.Fatalf("another host: %d, want 421 naming -allow-host:\n%s", status, body)
	}
}
