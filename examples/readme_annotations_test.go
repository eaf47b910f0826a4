package examples_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/streamgen/streamgen/generator"
)

// Every annotated Go block of the README and the guide generates, as
// written, without a diagnostic; and the audit of docs/exchanges.md, which
// takes a runtime.Delivery, gets every order event its queue is bound for,
// run through its generated Mount on the in-process broker.
func TestReadmeAnnotatedBlocksGenerate(t *testing.T) {
	_, blocks := quickStart(t)
	mod := t.TempDir()
	mustGo(t, mod, "mod", "init", "example.com/readme")
	mustGo(t, mod, "mod", "edit", "-replace", "github.com/streamgen/streamgen="+repoRoot(t), "-require", "github.com/streamgen/streamgen@v0.0.0")
	dirs := map[string]codeBlock{}
	audit := ""
	for i, b := range blocks {
		if !strings.Contains(b.text, "//stream:") {
			continue
		}
		dir := fmt.Sprintf("block%d", i)
		dirs[dir] = b
		if err := os.MkdirAll(filepath.Join(mod, dir), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(mod, dir, "block.go"), []byte(b.text), 0o644); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(b.text, `//stream:subscriber "audit.orders"`) {
			audit = dir
		}
	}
	if len(dirs) < 5 || audit == "" {
		t.Fatalf("found %d annotated Go blocks in the README and the guide, and the audit in %q; the extraction is broken", len(dirs), audit)
	}
	mustGo(t, mod, "mod", "tidy")
	pkgs, err := generator.Generate(context.Background(), generator.Config{Dir: mod, Env: goEnv()}, "./...")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pkgs {
		b := dirs[filepath.Base(p.Dir)]
		for _, d := range p.Diagnostics {
			t.Errorf("the Go block at %s does not generate: %s", b.at(), d.Format(p.Dir))
		}
		if len(p.Diagnostics) == 0 {
			if err := p.Write(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if t.Failed() {
		return
	}
	if err := os.WriteFile(filepath.Join(mod, audit, "audit_test.go"), []byte(auditTest), 0o644); err != nil {
		t.Fatal(err)
	}
	mustGo(t, mod, "mod", "tidy")
	mustGo(t, mod, "vet", "./...")
	if out := mustGo(t, mod, "test", "-count=1", "-v", "./"+audit); !strings.Contains(out, "--- PASS: TestAuditTakesEveryEvent") {
		t.Fatalf("the audit's test did not pass:\n%s", out)
	}
}

// auditTest runs the shipping and audit handlers of docs/exchanges.md: the audit gets
// a copy of each order event, of both types, with the shipping queue's
// handlers each taking its own.
const auditTest = `package shipping

import (
	"testing"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

func TestAuditTakesEveryEvent(t *testing.T) {
	h := streamtest.New(t, runtime.RabbitMQ, streamtest.WithQuietLogs())
	Mount(h.App(), h.Broker())
	h.Start()
	ctx := t.Context()
	if err := runtime.Publish(ctx, h.Broker(), runtime.Exchange("orders", "order.placed"), "OrderPlaced", OrderPlaced{ID: "o-1"}); err != nil {
		t.Fatal(err)
	}
	if err := runtime.Publish(ctx, h.Broker(), runtime.Exchange("orders", "order.cancelled"), "OrderCancelled", OrderCancelled{ID: "o-1"}); err != nil {
		t.Fatal(err)
	}
	h.Wait()
	var types []string
	for _, d := range h.Deliveries("audit.orders") {
		if d.Verdict.Kind != streamtest.VerdictAck {
			t.Errorf("the audit's delivery of %s: %v (%s)", d.MessageType, d.Verdict.Kind, d.Verdict.Reason)
		}
		types = append(types, d.MessageType)
	}
	if len(types) != 2 || types[0] != "OrderPlaced" || types[1] != "OrderCancelled" {
		t.Errorf("the audit got %v, want OrderPlaced and OrderCancelled", types)
	}
	if n := len(h.Deliveries("shipping.orders")); n != 2 {
		t.Errorf("the shipping queue got %d messages, want 2", n)
	}
}
`
