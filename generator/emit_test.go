package generator

import (
	"bytes"
	"context"
	"fmt"
	"go/format"
	"go/types"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dave/jennifer/jen"
	"golang.org/x/tools/go/packages"

	"github.com/streamgen/streamgen/generator/internal/gentest"
	"github.com/streamgen/streamgen/runtime"
)

func render(c jen.Code) string { return fmt.Sprintf("%#v", jen.Add(c)) }

func TestDurationCode(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{10 * time.Second, "10 * time.Second"},
		{time.Minute, "time.Minute"},
		{90 * time.Second, "90 * time.Second"},
		{2 * time.Hour, "2 * time.Hour"},
		{1500 * time.Millisecond, "1500 * time.Millisecond"},
		{3 * time.Microsecond, "3 * time.Microsecond"},
		{7, "7 * time.Nanosecond"},
	} {
		if got := render(durationCode(tc.d)); got != tc.want {
			t.Errorf("durationCode(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

func TestByteSizeCode(t *testing.T) {
	for _, tc := range []struct {
		n, unit int
		want    string
	}{
		{65536, 1, "65536"},
		{64 << 10, 1 << 10, "64 * 1024"},
		{1 << 10, 1 << 10, "1024"},
		{2 << 20, 1 << 20, "2 * 1024 * 1024"},
		{1 << 20, 1 << 20, "1024 * 1024"},
		{1500, 1 << 10, "1500"}, // a unit that does not divide the size is not used
	} {
		if got := render(byteSizeCode(tc.n, tc.unit)); got != tc.want {
			t.Errorf("byteSizeCode(%d, %d) = %q, want %q", tc.n, tc.unit, got, tc.want)
		}
	}
}

// variedPackage writes a module with a package of n handlers that combine
// the shapes, the keys of both brokers, ladders, several message types on
// one subscription, types from another package (one with a name the
// package uses too), and names with letters beyond ASCII, so that the
// columns gofmt aligns have rows of different widths.
func variedPackage(t testing.TB, n int) string {
	t.Helper()
	dir := gentest.TempModule(t, "example.com/varied")
	files := map[string]string{
		"other/other.go": "package other\n\n// Order is an order of another package.\ntype Order struct{ ID int }\n\n// Rapport is a report.\ntype Rapport struct{ Text string }\n",
		"mixed/types.go": "package mixed\n\n// Order has the name of another package's type.\ntype Order struct{ ID int }\n",
	}
	var src strings.Builder
	src.WriteString("package mixed\n\nimport (\n\t\"context\"\n\n\t\"example.com/varied/other\"\n\t\"github.com/streamgen/streamgen/runtime\"\n)\n\nvar _ = runtime.Ack\n")
	for i := range n {
		sub := i / 3
		var keys string
		switch sub % 4 {
		case 0:
			keys = fmt.Sprintf("broker=rabbitmq max_attempts=%d retry_delay=1s,10s,1m30s,2h dead_letter=dead.%d prefetch=%d concurrency=%d max_payload_bytes=64KiB queue_type=quorum ack=manual", 2+i%5, sub, 1+sub%50, 1+sub%8)
		case 1:
			keys = "broker=zeromq max_attempts=3 out_retry=self prefetch=4 max_payload_bytes=2MiB"
		case 2:
			keys = fmt.Sprintf("broker=zeromq max_attempts=2 out_retry=later.%d dead_letter=zdead.%d", sub, sub)
		case 3:
			keys = "broker=rabbitmq ack=auto max_payload_bytes=4096"
		}
		msgType := fmt.Sprintf("M%d", i)
		switch i % 7 {
		case 3:
			msgType = "other.Order"
		case 5:
			msgType = "other.Rapport"
		case 6:
			msgType = "Order"
		}
		if msgType != fmt.Sprintf("M%d", i) {
			keys += fmt.Sprintf(" type=wire.%d.ä", i)
		} else {
			fmt.Fprintf(&src, "\n// M%d is a message.\ntype M%d struct{ ID int }\n", i, i)
		}
		ptr, md, res, ret := "", "", "error", "nil"
		if i%2 == 1 {
			ptr = "*"
		}
		if i%3 == 1 {
			md = ", md runtime.Metadata"
		}
		if i%5 == 1 {
			res, ret = "runtime.Outcome", "runtime.Ack()"
		}
		name := fmt.Sprintf("H%d", i)
		if i%4 == 2 {
			name = fmt.Sprintf("Verarbeite_Übung%d", i)
		}
		fmt.Fprintf(&src, "\n//stream:subscriber \"q.%d\" %s\nfunc %s(ctx context.Context, m %s%s%s) %s { return %s }\n", sub, keys, name, ptr, msgType, md, res, ret)
	}
	files["mixed/mixed.go"] = src.String()
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestEmittedFilesAreFormatted generates a varied package and checks that
// the file is exactly as gofmt prints it, with its imports grouped, and
// that it compiles and passes go vet.
func TestEmittedFilesAreFormatted(t *testing.T) {
	dir := variedPackage(t, 60)
	pkgs, err := Generate(context.Background(), Config{Dir: dir, Env: gentest.GoEnv()}, "./mixed")
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) != 1 || pkgs[0].Source == nil {
		for _, p := range pkgs {
			for _, d := range p.Diagnostics {
				t.Error(d.Format(dir))
			}
		}
		t.Fatal("nothing was generated")
	}
	src := pkgs[0].Source
	formatted, err := format.Source(src)
	if err != nil {
		t.Fatalf("the generated file does not parse: %v\n%s", err, src)
	}
	if !bytes.Equal(formatted, src) {
		t.Errorf("the generated file is not as gofmt prints it:\n%s", gentest.LineDiff(string(formatted), string(src)))
	}
	for _, want := range []string{"\t\"time\"\n", "\t\"example.com/varied/other\"\n", "streamgen_Verarbeite_Übung2_changed_run_go_generate ", "RetryDelays:     []time.Duration{time.Second, 10 * time.Second, 90 * time.Second, 2 * time.Hour},"} {
		if !bytes.Contains(src, []byte(want)) {
			t.Errorf("the generated file lacks %q", want)
		}
	}
	if err := pkgs[0].Write(); err != nil {
		t.Fatal(err)
	}
	gentest.RunGo(t, dir, "vet", "./...")
}

func TestImportDecl(t *testing.T) {
	names := map[string]importName{runtimePath: {name: "rt", alias: true}, "example.com/x/orders": {name: "orders"}}
	got := importDecl([]string{"context", "example.com/x/orders", runtimePath, "net/http", "time"}, names)
	want := "import (\n\t\"context\"\n\t\"net/http\"\n\t\"time\"\n\n\t\"example.com/x/orders\"\n\trt \"github.com/streamgen/streamgen/runtime\"\n)\n"
	if got != want {
		t.Errorf("importDecl:\n%s\nwant:\n%s", got, want)
	}
	if got, want := importDecl([]string{"context", "time"}, nil), "import (\n\t\"context\"\n\t\"time\"\n)\n"; got != want {
		t.Errorf("standard library only: %q, want %q", got, want)
	}
}

// TestHandlerFuncHoldsEveryShape checks that runtime.HandlerFunc, the
// constraint of the handler Handle takes, is exactly the sixteen shapes the
// generator accepts (a handler's message by value or pointer, with or
// without the Metadata, with or without a *sql.Tx after the context,
// returning an error or an Outcome), so that a handler the generator
// accepts always compiles in Mount.
func TestHandlerFuncHoldsEveryShape(t *testing.T) {
	pkgs, err := packages.Load(&packages.Config{Mode: packages.NeedName | packages.NeedTypes, Dir: gentest.RepoRoot(t)}, runtimePath)
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) != 1 || len(pkgs[0].Errors) > 0 {
		t.Fatalf("loading %s: %v", runtimePath, pkgs[0].Errors)
	}
	named, ok := pkgs[0].Types.Scope().Lookup("HandlerFunc").Type().(*types.Named)
	if !ok {
		t.Fatal("the runtime has no type HandlerFunc")
	}
	iface, ok := named.Underlying().(*types.Interface)
	if !ok || iface.NumEmbeddeds() != 1 {
		t.Fatalf("runtime.HandlerFunc is %s, not a union of handler shapes", named.Underlying())
	}
	union, ok := iface.EmbeddedType(0).(*types.Union)
	if !ok {
		t.Fatalf("runtime.HandlerFunc embeds %s, not a union of handler shapes", iface.EmbeddedType(0))
	}
	got := map[handlerShape]bool{}
	for i := range union.Len() {
		term := union.Term(i)
		sig, ok := term.Type().(*types.Signature)
		if term.Tilde() || !ok {
			t.Errorf("runtime.HandlerFunc holds %s, not a function type", term)
			continue
		}
		params, results := sig.Params(), sig.Results()
		if params.Len() < 2 || !isNamed(params.At(0).Type(), contextPath, "Context") || results.Len() != 1 {
			t.Errorf("runtime.HandlerFunc holds %s, not func(context.Context, T, ...) result", sig)
			continue
		}
		m := 1 // the message's index
		tx := isSQLTxPointer(params.At(1).Type())
		if tx {
			m = 2
		}
		if params.Len() <= m {
			t.Errorf("runtime.HandlerFunc holds %s, which takes no message", sig)
			continue
		}
		_, pointer := params.At(m).Type().(*types.Pointer)
		shape := handlerShape{
			pointer:  pointer,
			metadata: params.Len() == m+2 && isNamed(params.At(m+1).Type(), runtimePath, "Metadata"),
			outcome:  isNamed(results.At(0).Type(), runtimePath, "Outcome"),
			tx:       tx,
		}
		if got[shape] {
			t.Errorf("runtime.HandlerFunc holds the shape of %s twice", sig)
		}
		got[shape] = true
	}
	for _, tx := range []bool{false, true} {
		for _, pointer := range []bool{false, true} {
			for _, metadata := range []bool{false, true} {
				for _, outcome := range []bool{false, true} {
					if s := (handlerShape{pointer: pointer, metadata: metadata, outcome: outcome, tx: tx}); !got[s] {
						t.Errorf("runtime.HandlerFunc lacks the shape tx %v, pointer %v, metadata %v, outcome %v", tx, pointer, metadata, outcome)
					}
				}
			}
		}
	}
	if len(got) != 16 {
		t.Errorf("runtime.HandlerFunc holds %d shapes, want the 16 the generator accepts", len(got))
	}
}

// TestLiteralWritesEveryFieldKeysSet sets every annotation key and writes
// each field of the runtime.Subscription and runtime.Policy that the keys
// set, as Mount's literal does: a field a key sets is never one the
// emitter cannot write.
func TestLiteralWritesEveryFieldKeysSet(t *testing.T) {
	var f fields
	for _, spec := range keySpecs() {
		if msg := f.set(spec.name, strings.TrimPrefix(spec.example, spec.name+"=")); msg != "" {
			t.Fatalf("%s: %s", spec.example, msg)
		}
	}
	e := &emitter{m: &model{pkg: types.NewPackage("example.com/p", "p")}}
	want := map[string]string{
		"Name":        `"jobs"`,
		"Broker":      "runtime.RabbitMQ",
		"RetryDelays": "[]time.Duration{10 * time.Second}",
		"AutoAck":     "true",
		"Prefetch":    "10",
		"Concurrency": "4",
		"QueueType":   "runtime.QuorumQueue",
		"MaxAttempts": "5",

		"MaxPayloadBytes":      "64 * 1024",
		"DeliveryLimit":        "20",
		"SingleActiveConsumer": "true",
		"Exchange":             `"orders"`,
		"ExchangeType":         "runtime.TopicExchange",
		"Bindings":             `[]string{"order.placed"}`,
		"DeadLetter":           `"jobs.dead"`,
		"OutRetry":             `"self"`,
		"Timeout":              "30 * time.Second",
		"BatchSize":            "100",
		"BatchWait":            "50 * time.Millisecond",
		"Retry":                "runtime.RetryBroker",
	}
	rs := f.sub
	rs.Name = "jobs"
	s := &subscription{rs: &rs, setBy: map[string]*handler{}}
	written := 0
	for _, field := range append(e.subscriptionFields(s), policyFields(f.handler.Policy)...) {
		if field.code == nil {
			continue
		}
		got := render(field.code)
		if e.err != nil {
			t.Fatalf("%s: %v", field.name, e.err)
		}
		if field.name == "MaxPayloadBytes" {
			got = render(byteSizeCode(rs.MaxPayloadBytes, 1024)) // the unit is the annotation's: TestByteSizeCode
		}
		if got != want[field.name] {
			t.Errorf("%s is written %s, want %s", field.name, got, want[field.name])
		}
		written++
	}
	if written != len(want) {
		t.Errorf("%d fields written, want %d", written, len(want))
	}
	if policy := render(e.policyLiteral(f.handler.Policy)); policy != `runtime.Policy{MaxAttempts: 5, DeadLetter: "jobs.dead", OutRetry: "self", Timeout: 30 * time.Second}` {
		t.Errorf("policy literal %s", policy)
	}
	rs.QueueType = "stream"
	e.subscriptionFields(s)
	if e.err == nil || !strings.Contains(e.err.Error(), `cannot write the runtime.QueueType "stream" in Mount's literal`) {
		t.Errorf("a QueueType without a constant: error %v", e.err)
	}
}

// TestSubscriptionFieldsAreEveryField checks that Mount's literal knows
// every exported field of runtime.Subscription and runtime.Policy, in
// declaration order: a field the runtime gains fails here until the
// emitter writes it (or says why it does not).
func TestSubscriptionFieldsAreEveryField(t *testing.T) {
	e := &emitter{m: &model{pkg: types.NewPackage("example.com/p", "p")}}
	notWritten := map[string]bool{"Middleware": true} // set by hand, never by annotations
	for _, c := range []struct {
		typ     reflect.Type
		written []keyed
	}{
		{reflect.TypeFor[runtime.Subscription](), e.subscriptionFields(&subscription{rs: &runtime.Subscription{}})},
		{reflect.TypeFor[runtime.Policy](), policyFields(runtime.Policy{})},
	} {
		var want, got []string
		for _, f := range reflect.VisibleFields(c.typ) {
			if f.IsExported() && !notWritten[f.Name] {
				want = append(want, f.Name)
			}
		}
		for _, f := range c.written {
			got = append(got, f.name)
		}
		if !slices.Equal(got, want) {
			t.Errorf("Mount's literal writes the fields %v of %s, which has %v", got, c.typ, want)
		}
	}
}
