package asyncapi

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/streamgen/streamgen/generator"
	"github.com/streamgen/streamgen/generator/internal/gentest"
)

var update = flag.Bool("update", false, "rewrite the wanted documents of the golden cases under testdata")

// goldenResults generates the golden cases under the module's testdata
// once per test binary, by directory: one load for all of them keeps the
// tests fast.
var goldenResults = sync.OnceValues(func() (map[string]*generator.Package, error) {
	root, err := filepath.Abs("../..")
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(filepath.Join(root, "testdata"))
	if err != nil {
		return nil, err
	}
	var patterns []string
	for _, e := range entries {
		if e.IsDir() {
			patterns = append(patterns, "./testdata/"+e.Name())
		}
	}
	pkgs, err := generator.Generate(context.Background(), generator.Config{Dir: root}, patterns...)
	if err != nil {
		return nil, err
	}
	byDir := map[string]*generator.Package{}
	for _, p := range pkgs {
		byDir[p.Dir] = p
	}
	return byDir, nil
})

// asyncAPIWants are the wanted documents a golden case may have.
var asyncAPIWants = []struct {
	file   string
	format Format
}{{"asyncapi.yaml", YAML}, {"asyncapi.json", JSON}}

// TestAsyncAPIGolden compares the document of each golden case that has a
// want/asyncapi.yaml or want/asyncapi.json with what AsyncAPI writes for
// it; go test ./generator/asyncapi -update rewrites them.
func TestAsyncAPIGolden(t *testing.T) {
	results, err := goldenResults()
	if err != nil {
		t.Fatal(err)
	}
	documents := 0
	dirs, err := filepath.Glob(filepath.Join(gentest.RepoRoot(t), "testdata", "*", "want"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range dirs {
		dir := filepath.Dir(want)
		for _, w := range asyncAPIWants {
			path := filepath.Join(want, w.file)
			want, err := os.ReadFile(path)
			if os.IsNotExist(err) {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			documents++
			t.Run(filepath.Base(dir)+"/"+w.file, func(t *testing.T) {
				p := results[dir]
				if p == nil {
					t.Fatalf("no package was loaded from %s", dir)
				}
				got, err := Generate(context.Background(), []*generator.Package{p}, Options{Format: w.format})
				if err != nil {
					t.Fatal(err)
				}
				if *update {
					if err := os.WriteFile(path, got, 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				if !bytes.Equal(got, want) {
					t.Errorf("the document differs from %s (go test ./generator/asyncapi -update rewrites it):\n%s", path, gentest.LineDiff(string(want), string(got)))
				}
				checkDocument(t, got, w.format)
			})
		}
	}
	if documents < 4 {
		t.Errorf("%d golden AsyncAPI documents, want at least 4", documents)
	}
}

// readDocument reads a document in its format.
func readDocument(t *testing.T, data []byte, format Format) map[string]any {
	t.Helper()
	read := readYAML
	if format == JSON {
		read = readJSON
	}
	v, err := read(data)
	if err != nil {
		t.Fatalf("the document does not read back: %v", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("the document is a %T", v)
	}
	return m
}

// keyPattern is what AsyncAPI 3.0 allows as a component's name; streamgen
// names channels and operations the same way.
var keyPattern = regexp.MustCompile(`^[A-Za-z0-9_.\-]+$`)

// runtimeExpression is the pattern the JSON Schema of AsyncAPI 3.0.0 has
// for a runtime expression (a correlation id's or a reply address's
// location).
var runtimeExpression = regexp.MustCompile(`^\$message\.(header|payload)#(\/(([^\/~])|(~[01]))*)*`)

// checkDocument checks that a document is valid AsyncAPI 3.0.0 as far as
// streamgen writes it: the required fields, operations that receive from a
// channel's own messages, replies on a channel of unknown (null) address
// with a subset of its messages, messages with payloads (but the error
// reply, which has none), runtime expressions of the specification's form,
// every $ref resolving, names AsyncAPI accepts, schemas made of known
// keywords and types, AMQP bindings of version 0.3.0 on queues.
func checkDocument(t *testing.T, data []byte, format Format) map[string]any {
	t.Helper()
	doc := readDocument(t, data, format)
	str := func(v any, what string) string {
		s, ok := v.(string)
		if !ok || s == "" {
			t.Errorf("%s is %#v, want a non-empty string", what, v)
		}
		return s
	}
	obj := func(v any, what string) map[string]any {
		m, ok := v.(map[string]any)
		if !ok {
			t.Errorf("%s is %#v, want an object", what, v)
		}
		return m
	}
	if doc["asyncapi"] != SpecVersion {
		t.Errorf("asyncapi is %#v, want %q", doc["asyncapi"], SpecVersion)
	}
	info := obj(doc["info"], "info")
	str(info["title"], "info.title")
	str(info["version"], "info.version")
	for k := range doc {
		if !slices.Contains([]string{"asyncapi", "info", "servers", "defaultContentType", "channels", "operations", "components"}, k) {
			t.Errorf("the document has the field %s, which AsyncAPI 3.0.0 does not", k)
		}
	}
	// Every $ref resolves.
	var refs []string
	walk(doc, func(m map[string]any) {
		if r, ok := m["$ref"].(string); ok {
			refs = append(refs, r)
		}
	})
	if len(refs) == 0 {
		t.Error("the document has no $ref")
	}
	for _, r := range refs {
		if resolve(doc, r) == nil {
			t.Errorf("$ref %s does not resolve", r)
		}
	}
	for name, s := range obj(doc["servers"], "servers") {
		server := obj(s, "server "+name)
		str(server["host"], "servers."+name+".host")
		str(server["protocol"], "servers."+name+".protocol")
	}
	channels := obj(doc["channels"], "channels")
	replyChannels := map[string]bool{} // whether an operation replies on it
	for id, c := range channels {
		if !keyPattern.MatchString(id) {
			t.Errorf("channel name %q", id)
		}
		ch := obj(c, "channel "+id)
		if address, ok := ch["address"]; ok && address == nil {
			// A reply channel: its address is each request's reply_to,
			// which only the operation's reply.address says where to find.
			if ch["bindings"] != nil || ch["x-streamgen-replies-to"] == nil {
				t.Errorf("channels.%s has a null address and is no reply channel: %v", id, ch)
			}
			replyChannels[id] = false
		} else {
			str(ch["address"], "channels."+id+".address")
		}
		for mid, m := range obj(ch["messages"], "channels."+id+".messages") {
			ref := str(obj(m, "message")["$ref"], "channels."+id+".messages."+mid+".$ref")
			if !strings.HasPrefix(ref, "#/components/messages/") {
				t.Errorf("channels.%s.messages.%s refers to %s", id, mid, ref)
			}
		}
		if b, ok := ch["bindings"].(map[string]any); ok {
			amqp := obj(b["amqp"], "channels."+id+".bindings.amqp")
			if amqp["bindingVersion"] != amqpBindingVersion {
				t.Errorf("channels.%s.bindings.amqp is %v", id, amqp)
			}
			switch amqp["is"] {
			case "queue":
				queue := obj(amqp["queue"], "channels."+id+".bindings.amqp.queue")
				if amqp["exchange"] != nil || queue["name"] != ch["address"] || queue["durable"] != true ||
					queue["exclusive"] != false || queue["autoDelete"] != false || queue["vhost"] != "/" {
					t.Errorf("channels.%s.bindings.amqp is %v", id, amqp)
				}
			case "routingKey":
				// An exchange: its type, when known, is one the bindings
				// allow.
				x := obj(amqp["exchange"], "channels."+id+".bindings.amqp.exchange")
				typ, typed := x["type"]
				if amqp["queue"] != nil || x["name"] != ch["address"] || x["vhost"] != "/" ||
					(typed && !slices.Contains([]any{"topic", "direct", "fanout"}, typ)) {
					t.Errorf("channels.%s.bindings.amqp is %v", id, amqp)
				}
			default:
				t.Errorf("channels.%s.bindings.amqp.is is %v", id, amqp["is"])
			}
			for k := range amqp {
				if !strings.HasPrefix(k, "x-") && !slices.Contains([]string{"is", "queue", "exchange", "bindingVersion"}, k) {
					t.Errorf("channels.%s.bindings.amqp has the field %s", id, k)
				}
			}
		}
	}
	for id, o := range obj(doc["operations"], "operations") {
		if !keyPattern.MatchString(id) {
			t.Errorf("operation name %q", id)
		}
		op := obj(o, "operation "+id)
		if op["action"] != "receive" && op["action"] != "send" {
			t.Errorf("operations.%s.action is %v", id, op["action"])
		}
		if b, ok := op["bindings"].(map[string]any); ok {
			// The fields of an AMQP operation binding, 0.3.0: ack only on
			// receive, mandatory and deliveryMode only on send.
			amqp := obj(b["amqp"], "operations."+id+".bindings.amqp")
			allowed := []string{"bindingVersion", "ack"}
			if op["action"] == "send" {
				allowed = []string{"bindingVersion", "cc", "deliveryMode", "mandatory"}
			}
			for k := range amqp {
				if !slices.Contains(allowed, k) {
					t.Errorf("operations.%s.bindings.amqp has the field %s", id, k)
				}
			}
			if amqp["bindingVersion"] != amqpBindingVersion {
				t.Errorf("operations.%s.bindings.amqp is %v", id, amqp)
			}
		}
		chRef := str(obj(op["channel"], "operations."+id+".channel")["$ref"], "operations."+id+".channel.$ref")
		msgs, _ := op["messages"].([]any)
		if len(msgs) == 0 && op["x-streamgen-every-message-type"] != true {
			t.Errorf("operations.%s has no messages", id) // only a handler of every message type may name none: it takes any
		}
		for _, m := range msgs {
			ref := str(obj(m, "message")["$ref"], "operations."+id+".messages[]")
			if !strings.HasPrefix(ref, chRef+"/messages/") {
				t.Errorf("operations.%s receives %s, which is not a message of its channel %s", id, ref, chRef)
			}
		}
		if r, ok := op["reply"]; ok {
			checkReply(t, doc, "operations."+id+".reply", obj(r, "operations."+id+".reply"), replyChannels)
			if op["action"] != "receive" {
				t.Errorf("operations.%s sends and has a reply", id)
			}
		}
		for k := range op {
			if !strings.HasPrefix(k, "x-") && !slices.Contains([]string{"action", "channel", "messages", "summary", "description", "bindings", "reply"}, k) {
				t.Errorf("operations.%s has the field %s", id, k)
			}
		}
	}
	for id, used := range replyChannels {
		if !used {
			t.Errorf("no operation replies on channels.%s", id)
		}
	}
	components := obj(doc["components"], "components")
	for id, m := range obj(components["messages"], "components.messages") {
		if !keyPattern.MatchString(id) {
			t.Errorf("message name %q", id)
		}
		msg := obj(m, "message "+id)
		str(msg["name"], "components.messages."+id+".name")
		if c, ok := msg["correlationId"]; ok {
			checkRuntimeExpression(t, "components.messages."+id+".correlationId", obj(c, "correlationId"))
		}
		if h, ok := msg["headers"]; ok {
			checkSchema(t, "components.messages."+id+".headers", obj(h, "headers"))
		}
		if _, ok := msg["payload"]; !ok {
			// The error reply: no body, no content type, the reason in a
			// header.
			if msg["contentType"] != nil || msg["headers"] == nil || msg["bindings"] != nil {
				t.Errorf("components.messages.%s has no payload: %v", id, msg)
			}
			continue
		}
		switch msg["contentType"] {
		case "application/json", "application/protobuf", "application/msgpack", "application/cbor":
		default:
			t.Errorf("components.messages.%s.contentType is %v", id, msg["contentType"])
		}
		payload := obj(msg["payload"], "payload")
		if format, ok := payload["schemaFormat"]; ok {
			// A protocol buffer message: a Multi Format Schema Object whose
			// schema is the message's definition.
			if schema, _ := payload["schema"].(string); format != protobufSchemaFormat || msg["contentType"] == "application/msgpack" || !strings.HasPrefix(schema, "syntax = ") || len(payload) != 2 {
				t.Errorf("components.messages.%s.payload is %v", id, payload)
			}
			continue
		}
		checkSchema(t, "components.messages."+id+".payload", payload)
	}
	for id, s := range obj(components["schemas"], "components.schemas") {
		if !keyPattern.MatchString(id) {
			t.Errorf("schema name %q", id)
		}
		checkSchema(t, "components.schemas."+id, obj(s, "schema"))
	}
	return doc
}

// checkReply checks the reply r of a receive operation, at path: its
// address a runtime expression, its channel one whose address is null (as
// AsyncAPI requires of a reply with an address), recorded in
// replyChannels, and its messages some of that channel's.
func checkReply(t *testing.T, doc map[string]any, path string, r map[string]any, replyChannels map[string]bool) {
	t.Helper()
	for k := range r {
		if !strings.HasPrefix(k, "x-") && !slices.Contains([]string{"address", "channel", "messages"}, k) {
			t.Errorf("%s has the field %s", path, k)
		}
	}
	address, _ := r["address"].(map[string]any)
	if address == nil {
		t.Errorf("%s has no address", path)
	} else {
		checkRuntimeExpression(t, path+".address", address)
	}
	channel, _ := r["channel"].(map[string]any)
	ref, _ := channel["$ref"].(string)
	id, ok := strings.CutPrefix(ref, "#/channels/")
	if _, isReply := replyChannels[id]; !ok || !isReply {
		t.Errorf("%s.channel is %v, want a channel whose address is null", path, r["channel"])
	}
	replyChannels[id] = true
	msgs, _ := r["messages"].([]any)
	if len(msgs) == 0 {
		t.Errorf("%s has no messages", path)
	}
	for _, m := range msgs {
		mm, _ := m.(map[string]any)
		mref, _ := mm["$ref"].(string)
		if !strings.HasPrefix(mref, ref+"/messages/") || resolve(doc, mref) == nil {
			t.Errorf("%s.messages has %s, which is not a message of its channel %s", path, mref, ref)
		}
	}
}

// checkRuntimeExpression checks a Correlation ID Object or an Operation
// Reply Address Object: a location of the specification's form and an
// optional description, nothing else.
func checkRuntimeExpression(t *testing.T, path string, o map[string]any) {
	t.Helper()
	if loc, _ := o["location"].(string); !runtimeExpression.MatchString(loc) {
		t.Errorf("%s.location is %v, not a runtime expression", path, o["location"])
	}
	for k := range o {
		if !strings.HasPrefix(k, "x-") && k != "location" && k != "description" {
			t.Errorf("%s has the field %s", path, k)
		}
	}
}

// checkSchema checks that a schema uses only the keywords the validator of
// jsonschema_test.go knows and JSON Schema's type names.
func checkSchema(t *testing.T, path string, s map[string]any) {
	t.Helper()
	for k, v := range s {
		switch {
		case !slices.Contains(knownKeywords, k):
			t.Errorf("%s has the keyword %s", path, k)
		case k == "type":
			names := []any{v}
			if l, ok := v.([]any); ok {
				names = l
			}
			for _, n := range names {
				if !slices.Contains([]any{"object", "array", "string", "integer", "number", "boolean", "null"}, n) {
					t.Errorf("%s.type has %v", path, n)
				}
			}
		case k == "items" || k == "additionalProperties" || k == "propertyNames":
			checkSchema(t, path+"."+k, v.(map[string]any))
		case k == "properties":
			for name, p := range v.(map[string]any) {
				checkSchema(t, path+".properties."+name, p.(map[string]any))
			}
		case k == "oneOf":
			for i, a := range v.([]any) {
				checkSchema(t, fmt.Sprintf("%s.oneOf[%d]", path, i), a.(map[string]any))
			}
		}
	}
}

// walk calls f on every object of v.
func walk(v any, f func(map[string]any)) {
	switch v := v.(type) {
	case map[string]any:
		f(v)
		for _, x := range v {
			walk(x, f)
		}
	case []any:
		for _, x := range v {
			walk(x, f)
		}
	}
}

// resolve returns what the local reference ref ("#/a/b") points to, or
// nil.
func resolve(doc map[string]any, ref string) any {
	if !strings.HasPrefix(ref, "#/") {
		return nil
	}
	var cur any = doc
	for _, part := range strings.Split(ref[2:], "/") {
		part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		if cur, ok = m[part]; !ok {
			return nil
		}
	}
	return cur
}

// goldenPackages returns the generated golden cases named.
func goldenPackages(t *testing.T, names ...string) []*generator.Package {
	t.Helper()
	results, err := goldenResults()
	if err != nil {
		t.Fatal(err)
	}
	var out []*generator.Package
	for _, n := range names {
		p := results[filepath.Join(gentest.RepoRoot(t), "testdata", n)]
		if p == nil {
			t.Fatalf("no golden case %s", n)
		}
		out = append(out, p)
	}
	return out
}

// TestAsyncAPIYAMLAndJSONAgree writes one document of several packages
// both ways and reads both back to the same tree, valid.
func TestAsyncAPIYAMLAndJSONAgree(t *testing.T) {
	pkgs := goldenPackages(t, "zeromq_basic", "asyncapi_rabbitmq", "asyncapi_types", "both_brokers", "any_broker", "imported_type", "decodable", "several_subscribers", "request_reply", "asyncapi_reply")
	ctx := context.Background()
	y, err := Generate(ctx, pkgs, Options{Format: YAML})
	if err != nil {
		t.Fatal(err)
	}
	j, err := Generate(ctx, pkgs, Options{Format: JSON})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(y, []byte("# "+Header+"\n")) {
		t.Errorf("the YAML document does not start with the generated comment:\n%s", y[:min(len(y), 100)])
	}
	fromYAML, fromJSON := checkDocument(t, y, YAML), checkDocument(t, j, JSON)
	if !reflect.DeepEqual(fromYAML, fromJSON) {
		t.Error("the YAML and JSON documents differ")
	}
	info := fromYAML["info"].(map[string]any)
	if info["title"] != "github.com/streamgen/streamgen" || info["version"] != DefaultVersion {
		t.Errorf("info: %v; want the module's path and version %s", info, DefaultVersion)
	}
	servers := fromYAML["servers"].(map[string]any)
	if servers["rabbitmq"].(map[string]any)["protocol"] != "amqp" || servers["zeromq"].(map[string]any)["protocol"] != "zmq" {
		t.Errorf("servers: %v", servers)
	}
	// Two handlers named Work, in two packages, get names of their own.
	ops := fromYAML["operations"].(map[string]any)
	for _, name := range []string{"billing.Work", "mixed.Work", "payments.Pong", "Capture"} {
		if ops[name] == nil {
			t.Errorf("no operation %s among %v", name, sortedKeys(ops))
		}
	}
}

// TestAsyncAPIDeterministic generates the document twice from separate
// loads, with the packages in another order: the same bytes.
func TestAsyncAPIDeterministic(t *testing.T) {
	ctx := context.Background()
	root := gentest.RepoRoot(t)
	gen := func(patterns ...string) []byte {
		pkgs, err := generator.Generate(ctx, generator.Config{Dir: root}, patterns...)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := Generate(ctx, pkgs, Options{Title: "shop", Version: "1.2.3"})
		if err != nil {
			t.Fatal(err)
		}
		return doc
	}
	a := gen("./testdata/asyncapi_types", "./testdata/multi_type_queue", "./testdata/zeromq_basic", "./testdata/asyncapi_exchange", "./testdata/publisher_only")
	b := gen("./testdata/publisher_only", "./testdata/zeromq_basic", "./testdata/asyncapi_exchange", "./testdata/asyncapi_types", "./testdata/multi_type_queue")
	if !bytes.Equal(a, b) {
		t.Errorf("two runs differ:\n%s", gentest.LineDiff(string(a), string(b)))
	}
	if !bytes.Contains(a, []byte("  title: shop\n  version: \"1.2.3\"\n")) {
		t.Error("the title and version given are not in info")
	}
}

// TestAsyncAPIContent checks what the document says about a RabbitMQ
// subscription with a ladder, per-type policies and a consumed dead-letter
// queue, and about the types of the types case.
func TestAsyncAPIContent(t *testing.T) {
	doc, err := Generate(context.Background(), goldenPackages(t, "asyncapi_rabbitmq", "asyncapi_types"), Options{Format: JSON})
	if err != nil {
		t.Fatal(err)
	}
	d := checkDocument(t, doc, JSON)
	at := func(path string) any {
		t.Helper()
		v := resolve(d, "#/"+path)
		if v == nil {
			t.Fatalf("nothing at %s", path)
		}
		return v
	}
	for _, tc := range []struct {
		path string
		want string // %v of the value
	}{
		{"operations/Capture/x-streamgen-max-attempts", "5"},
		{"operations/Capture/x-streamgen-retry-delay", "[1s 10s 1m]"},
		{"operations/Capture/x-streamgen-dead-letter", "payments.dead"},
		{"operations/Capture/x-streamgen-queue-type", "quorum"},
		{"operations/Capture/x-streamgen-prefetch", "20"},
		{"operations/Capture/x-streamgen-concurrency", "4"},
		{"operations/Capture/x-streamgen-max-payload-bytes", "65536"},
		{"operations/Capture/bindings/amqp/ack", "true"},
		{"operations/Capture/description", "Capture charges a card. A declined card is worth a few more tries."},
		{"operations/GiveBack/x-streamgen-max-attempts", "3"},
		{"operations/GiveBack/x-streamgen-dead-letter", "payments.refunds.dead"},
		{"operations/GiveBack/messages", "[map[$ref:#/channels/payments/messages/refund.v1]]"},
		{"operations/Pong/x-streamgen-max-attempts", "1"},
		{"operations/Inspect/x-streamgen-ack", "auto"},
		{"operations/Inspect/bindings/amqp/ack", "false"},
		{"channels/payments/x-streamgen-queue-arguments/x-queue-type", "quorum"},
		{"channels/payments.retry.10s/x-streamgen-queue-arguments/x-message-ttl", "10000"},
		{"channels/payments.retry.10s/x-streamgen-queue-arguments/x-dead-letter-routing-key", "payments"},
		{"channels/payments.dead/x-streamgen-dead-letter-queue-of", "[payments]"},
		// A quorum dead-letter queue has no delivery limit on RabbitMQ 4,
		// which would give it one of its own; the queue payments.dead is
		// declared as Inspect's classic queue, which has no arguments.
		{"channels/payments.refunds.dead/x-streamgen-queue-arguments", "map[x-queue-type:quorum]"},
		{"channels/payments.refunds.dead/x-streamgen-queue-arguments-rabbitmq-4.0-and-later", "map[x-delivery-limit:-1 x-queue-type:quorum]"},
		{"components/messages/refund.v1/bindings/amqp/messageType", "refund.v1"},
		{"components/messages/Product.Product/x-go-type", "github.com/streamgen/streamgen/testdata/asyncapi_types.Product"},
		{"components/messages/Product.Archived/name", "Product"},
		{"components/schemas/money.Amount/properties/currency/$ref", "#/components/schemas/Currency"},
		{"components/schemas/Product/properties/price/description", "Price is what the product costs."},
		{"components/schemas/Level/properties/warehouses/additionalProperties/$ref", "#/components/schemas/Level"},
	} {
		if got := fmt.Sprint(at(tc.path)); got != tc.want {
			t.Errorf("%s = %s, want %s", tc.path, got, tc.want)
		}
	}
	// The wait queues hold the messages that retry; Ping does not.
	for _, step := range []string{"1s", "10s", "1m"} {
		msgs := sortedKeys(at("channels/payments.retry." + step + "/messages").(map[string]any))
		if !slices.Equal(msgs, []string{"Charge", "refund.v1"}) {
			t.Errorf("wait queue %s holds %v", step, msgs)
		}
	}
	// A parked copy's headers are described where a message may be parked.
	if at("components/messages/Charge/headers/properties/x-streamgen-reason") == nil {
		t.Error("Charge has no x-streamgen-reason header")
	}
	if resolve(d, "#/components/messages/Ping/headers/properties/x-streamgen-reason") != nil {
		t.Error("Ping, never parked, has the parked copy's headers")
	}
}

func TestAsyncAPIErrors(t *testing.T) {
	ctx := context.Background()
	if _, err := Generate(ctx, goldenPackages(t, "unknown_key"), Options{}); err == nil || !strings.Contains(err.Error(), "has problems") {
		t.Errorf("a package with diagnostics: %v", err)
	}
	if _, err := Generate(ctx, nil, Options{}); err == nil || !strings.Contains(err.Error(), "no package with //stream:subscriber or //stream:publisher annotations") {
		t.Errorf("no packages: %v", err)
	}
}

func TestFormatFor(t *testing.T) {
	for _, tc := range []struct {
		name   string
		format Format
		ok     bool
	}{
		{"asyncapi.yaml", YAML, true},
		{"docs/API.YML", YAML, true},
		{"asyncapi.json", JSON, true},
		{"-", YAML, true},
		{"asyncapi.txt", 0, false},
		{"asyncapi", 0, false},
	} {
		f, err := FormatFor(tc.name)
		if (err == nil) != tc.ok || (tc.ok && f != tc.format) {
			t.Errorf("FormatFor(%q) = %v, %v", tc.name, f, err)
		}
	}
}

// TestAsyncAPIExchanges checks what the document says about two queues
// bound to one topic exchange, the declared publishers, and the copies a
// subscription sends itself; and that a package that only publishes still
// gets channels.
func TestAsyncAPIExchanges(t *testing.T) {
	doc, err := Generate(context.Background(), goldenPackages(t, "asyncapi_exchange"), Options{Format: JSON})
	if err != nil {
		t.Fatal(err)
	}
	d := checkDocument(t, doc, JSON)
	for _, tc := range []struct {
		path string
		want string // %v of the value
	}{
		{"channels/orders/address", "orders"},
		{"channels/orders/bindings/amqp/is", "routingKey"},
		{"channels/orders/bindings/amqp/exchange/name", "orders"},
		{"channels/orders/bindings/amqp/exchange/type", "topic"},
		{"channels/orders/bindings/amqp/exchange/durable", "true"},
		{"channels/orders/x-streamgen-bindings", "[map[bindingKeys:[order.placed order.cancelled] queue:shipping.orders] map[bindingKeys:[order.#] queue:audit]]"},
		{"channels/shipping.orders/bindings/amqp/is", "queue"},
		{"channels/shipping.orders/x-streamgen-exchange", "orders"},
		{"channels/shipping.orders/x-streamgen-binding-keys", "[order.placed order.cancelled]"},
		{"channels/audit/x-streamgen-binding-keys", "[order.#]"},
		// Publishers send to their exchange or queue.
		{"operations/PublishShipped/action", "send"},
		{"operations/PublishShipped/channel/$ref", "#/channels/shipping"},
		{"operations/PublishShipped/bindings/amqp/cc", "[parcel.shipped]"},
		{"operations/PublishShipped/bindings/amqp/mandatory", "true"},
		{"operations/PublishReceipt/channel/$ref", "#/channels/receipts"},
		// An exchange named like a queue: the queue keeps its key.
		{"channels/receipts/bindings/amqp/is", "queue"},
		{"channels/receipts.exchange/address", "receipts"},
		{"channels/receipts.exchange/bindings/amqp/is", "routingKey"},
		{"operations/PublishRefund/channel/$ref", "#/channels/receipts.exchange"},
		// A publisher for either broker, to a queue no one here consumes.
		{"operations/PublishNote/channel/$ref", "#/channels/notes"},
		{"channels/notes/x-streamgen-broker", "any"},
		// Retry copies go to the wait queues, dead letters to the
		// dead-letter queue, never to the exchange.
		{"operations/send.shipping.orders.retry.1s/action", "send"},
		{"operations/send.shipping.orders.retry.1s/messages", "[map[$ref:#/channels/shipping.orders.retry.1s/messages/OrderPlaced]]"},
		{"operations/send.shipping.orders.retry.10s/x-streamgen-copy", "retry"},
		{"operations/send.shipping.dead/x-streamgen-copy", "dead-letter"},
		{"operations/send.shipping.dead/x-streamgen-copies-of", "shipping.orders"},
	} {
		v := resolve(d, "#/"+tc.path)
		if got := fmt.Sprint(v); v == nil || got != tc.want {
			t.Errorf("%s = %v, want %s", tc.path, v, tc.want)
		}
	}
	// The exchange that only a publisher names has no type or durability
	// the document could know.
	if x := resolve(d, "#/channels/shipping/bindings/amqp/exchange").(map[string]any); x["type"] != nil || x["durable"] != nil {
		t.Errorf("the publisher's exchange: %v", x)
	}
	sends := 0
	for id, o := range d["operations"].(map[string]any) {
		op := o.(map[string]any)
		if op["action"] == "send" {
			sends++
			if ref := op["channel"].(map[string]any)["$ref"]; ref == "#/channels/orders" {
				t.Errorf("operation %s sends to the exchange the service consumes from", id)
			}
		}
	}
	if sends != 7 {
		t.Errorf("%d send operations, want 7 (four publishers, two wait queues, one dead-letter queue)", sends)
	}

	only, err := Generate(context.Background(), goldenPackages(t, "publisher_only"), Options{Format: JSON})
	if err != nil {
		t.Fatal(err)
	}
	d = checkDocument(t, only, JSON)
	if got := sortedKeys(d["channels"].(map[string]any)); !slices.Equal(got, []string{"pings", "shipping"}) {
		t.Errorf("a package that only publishes: channels %v", got)
	}
	if got := sortedKeys(d["operations"].(map[string]any)); !slices.Equal(got, []string{"PublishPing", "PublishShipped"}) {
		t.Errorf("a package that only publishes: operations %v", got)
	}
}
