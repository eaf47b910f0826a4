package generator

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/rabbitmq"
	"github.com/streamgen/streamgen/runtime/zeromq"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite docs/annotations.md and doc.go's key list from the key table (make docs)")

// keyDocFiles are the files written from the key table, with the function
// that writes each.
var keyDocFiles = []struct {
	path  string // from this package's directory
	write func([]byte) ([]byte, error)
}{
	{filepath.Join("..", "docs", "annotations.md"), withKeyReference},
	{"doc.go", withKeyList},
}

// The annotation reference and doc.go's key list are what the key table
// says now: a key added, removed or changed in keys.go fails this until
// make docs rewrites them.
func TestKeyDocsAreCurrent(t *testing.T) {
	for _, f := range keyDocFiles {
		old, err := os.ReadFile(f.path)
		if err != nil {
			t.Fatal(err)
		}
		current, err := f.write(old)
		if err != nil {
			t.Fatalf("%s: %v", f.path, err)
		}
		switch {
		case bytes.Equal(old, current):
		case *updateDocs:
			if err := os.WriteFile(f.path, current, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("rewrote %s", f.path)
		default:
			t.Errorf("%s is stale: the key table in generator/keys.go says otherwise; run make docs (go test ./generator -run TestKeyDocsAreCurrent -args -update-docs) and commit it", f.path)
		}
	}
}

// Every key documents itself in full: one line of Markdown each, fit for a
// table cell, a guide that links a page of docs/ that exists, and every
// key is in the reference, in its own section, and in doc.go's list.
func TestEveryKeyIsDocumented(t *testing.T) {
	link := regexp.MustCompile(`^\[[^\]]+\]\(([a-z0-9-]+\.md)(#[a-z0-9_-]+)?\)$`)
	ref := keyReference()
	list := strings.Join(keyList(), "\n")
	for _, k := range keySpecs() {
		for field, text := range map[string]string{"summary": k.doc.summary, "values": k.doc.values, "default": k.doc.dflt, "guide": k.doc.guide} {
			if strings.TrimSpace(text) == "" || strings.ContainsAny(text, "|\n") {
				t.Errorf("%s: its %s %q is empty, or holds a | or a line break", k.name, field, text)
			}
		}
		if strings.HasSuffix(k.doc.summary, ".") || k.doc.summary != strings.ToLower(k.doc.summary[:1])+k.doc.summary[1:] {
			t.Errorf("%s: its summary %q must be a phrase in lower case without a final period (the reference makes it a sentence)", k.name, k.doc.summary)
		}
		m := link.FindStringSubmatch(k.doc.guide)
		if m == nil {
			t.Errorf("%s: its guide %q is not a link [title](page.md#anchor)", k.name, k.doc.guide)
		} else if _, err := os.Stat(filepath.Join("..", "docs", m[1])); err != nil {
			t.Errorf("%s: its guide links %s, which docs/ lacks", k.name, m[1])
		}
		for _, want := range []string{"\n### `" + k.name + "`\n", "| [`" + k.name + "`](#" + k.name + ") |", "`//stream:subscriber \"jobs\" "} {
			if !strings.Contains(ref, want) {
				t.Errorf("the reference lacks %q for %s", want, k.name)
			}
		}
		if !regexp.MustCompile(`(?m)^//\t` + regexp.QuoteMeta(k.name) + ` +`).MatchString(list) {
			t.Errorf("doc.go's key list lacks %s", k.name)
		}
	}
}

// The example directive of each key, as the reference shows it, is a
// valid set of keys: each parses, and together they pass the cross-key
// rules.
func TestKeyReferenceExamplesAreValid(t *testing.T) {
	for _, k := range keySpecs() {
		directive := exampleDirective(k)
		if !strings.Contains(directive, k.name+"=") {
			t.Errorf("%s: the example %q does not set it", k.name, directive)
		}
		var f fields
		for kv := range strings.FieldsSeq(directive) {
			key, value, _ := strings.Cut(kv, "=")
			if _, ok := lookupKey(key); !ok {
				t.Fatalf("%s: the example %q has the unknown key %s", k.name, directive, key)
			}
			if msg := f.set(key, value); msg != "" {
				t.Errorf("%s: %s in its example is refused: %s", k.name, kv, msg)
			}
		}
		sub := f.sub
		sub.Name = "jobs"
		policy := f.handler.Policy
		if policy.DeadLetter == "" {
			policy.DeadLetter = "jobs.dead"
		}
		var h runtime.Handler
		if sub.BatchSize > 0 {
			h = runtime.HandleBatch[exampleJob]("Job", policy, nil, func(context.Context, []exampleJob) error { return nil })
		} else {
			h = runtime.HandleJSON[exampleJob]("Job", policy, nil, func(context.Context, exampleJob) error { return nil })
		}
		if f.handler.Codec != nil {
			h = h.WithCodec(f.handler.Codec)
		}
		sub.Handlers = []runtime.Handler{h}
		kind := sub.Broker
		if kind == "" {
			kind = runtime.RabbitMQ
		}
		if err := sub.Validate(kind); err != nil {
			t.Errorf("%s: the example %q is refused: %v", k.name, directive, err)
		}
	}
}

// exampleJob is the message type of the example directives' handlers.
type exampleJob struct{ ID int }

// What the reference says of prefetch's default is each broker's.
func TestKeyReferencePrefetchDefault(t *testing.T) {
	spec, _ := lookupKey("prefetch")
	for _, want := range []string{"RabbitMQ " + strconv.Itoa(rabbitmq.DefaultPrefetch), "ZeroMQ " + strconv.Itoa(zeromq.DefaultPrefetch)} {
		if !strings.Contains(spec.doc.dflt, want) {
			t.Errorf("prefetch's default %q does not say %q", spec.doc.dflt, want)
		}
	}
}

// A page or a doc.go without the place for the key docs is an error, not
// a file rewritten wrong.
func TestKeyDocsNeedTheirPlace(t *testing.T) {
	if _, err := withKeyReference([]byte("# Annotations\n")); !errors.Is(err, errNoRegion) {
		t.Errorf("withKeyReference without markers: %v, want errNoRegion", err)
	}
	if _, err := withKeyList([]byte("package generator\n")); !errors.Is(err, errNoRegion) {
		t.Errorf("withKeyList without the intro: %v, want errNoRegion", err)
	}
	page := []byte("# A\n\n" + keyReferenceBegin + "\nold\n" + keyReferenceEnd + "\n\nafter\n")
	got, err := withKeyReference(page)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(got, []byte("# A\n\n"+keyReferenceBegin+"\n\n| key |")) || !bytes.HasSuffix(got, []byte("\n"+keyReferenceEnd+"\n\nafter\n")) || bytes.Contains(got, []byte("old")) {
		t.Errorf("withKeyReference gave:\n%s", got)
	}
}
