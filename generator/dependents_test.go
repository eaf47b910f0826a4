package generator

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/streamgen/streamgen/generator/internal/gentest"
)

// shopMain uses the generated Mount and publisher of package billing.
const shopMain = `package main

import (
	"context"

	"example.com/dependents/billing"
	"github.com/streamgen/streamgen/runtime"
)

func main() {
	app := runtime.NewApp("shop")
	var zq runtime.Broker
	billing.Mount(app, zq)
	if p, ok := zq.(runtime.Publisher); ok {
		_ = billing.PublishJob(context.Background(), p, billing.Job{ID: 1})
	}
	_ = billing.Missing
}
`

// TestWildcardWithAPackageThatUsesGeneratedNames loads an annotated package
// and a main that calls its Mount with one pattern, as streamgen -check
// ./... does in a service's module. The generated file is left out of the
// load, but the main's uses of its names are not errors; its other errors
// still are.
func TestWildcardWithAPackageThatUsesGeneratedNames(t *testing.T) {
	dir := gentest.TempModule(t, "example.com/dependents")
	copyCase(t, "zeromq_basic", dir, "billing")
	if err := os.MkdirAll(filepath.Join(dir, "cmd", "shop"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cmd", "shop", "main.go"), []byte(shopMain), 0o644); err != nil {
		t.Fatal(err)
	}
	gentest.RunGo(t, dir, "mod", "tidy")
	pkgs, err := Generate(context.Background(), Config{Dir: dir, Env: gentest.GoEnv()}, "./...")
	if err != nil {
		t.Fatal(err)
	}
	byPath := map[string]*Package{}
	for _, p := range pkgs {
		byPath[p.Path] = p
	}
	billing, shop := byPath["example.com/dependents/billing"], byPath["example.com/dependents/cmd/shop"]
	if billing == nil || shop == nil {
		t.Fatalf("loaded %v, want billing and cmd/shop", pkgs)
	}
	if len(billing.Diagnostics) > 0 || !billing.Current() {
		t.Errorf("billing: diagnostics %v, current %v; want none and current", billing.Diagnostics, billing.Current())
	}
	if len(shop.Diagnostics) != 1 || shop.Diagnostics[0].Msg != "undefined: billing.Missing" {
		t.Errorf("cmd/shop diagnostics %v, want only undefined: billing.Missing", shop.Diagnostics)
	}
}

// ordersSrc is an annotated package that sends billing jobs with billing's
// generated publisher, and calls a function of billing that does too.
const ordersSrc = `package orders

import (
	"context"

	"example.com/dependents/billing"
	"github.com/streamgen/streamgen/runtime"
)

// Order is an order.
type Order struct{ ID int }

//stream:subscriber "orders" broker=zeromq
func Take(ctx context.Context, o Order) error { return nil }

// Bill sends the order's job with billing's publisher.
func Bill(ctx context.Context, p runtime.Publisher, o Order) error {
	if err := billing.PublishJob(ctx, p, billing.Job{ID: uint64(o.ID)}); err != nil {
		return err
	}
	return billing.Enqueue(ctx, p, billing.Job{})
}
`

// enqueueSrc is a file of billing that calls its own generated publisher.
const enqueueSrc = `package billing

import (
	"context"

	"github.com/streamgen/streamgen/runtime"
)

// Enqueue sends a job.
func Enqueue(ctx context.Context, p runtime.Publisher, j Job) error { return PublishJob(ctx, p, j) }
`

// TestAnnotatedPackageUsesAnotherPackagesGeneratedNames generates an
// annotated package on its own that calls the typed publisher of another
// annotated package, whose generated file is on disk: the load leaves that
// file out too, but the uses of what it declares are not errors. A name it
// does not declare still is.
func TestAnnotatedPackageUsesAnotherPackagesGeneratedNames(t *testing.T) {
	dir := gentest.TempModule(t, "example.com/dependents")
	copyCase(t, "zeromq_basic", dir, "billing")
	write := func(name, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("billing/enqueue.go", enqueueSrc)
	write("orders/orders.go", ordersSrc)
	gentest.RunGo(t, dir, "mod", "tidy")
	for _, patterns := range [][]string{{"./orders"}, {"./..."}} {
		pkgs, err := Generate(context.Background(), Config{Dir: dir, Env: gentest.GoEnv()}, patterns...)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pkgs {
			if len(p.Diagnostics) > 0 || p.Source == nil {
				t.Errorf("%v: %s: diagnostics %v", patterns, p.Path, p.Diagnostics)
			}
		}
	}
	write("orders/typo.go", "package orders\n\nimport \"example.com/dependents/billing\"\n\nvar _ = billing.PublishJb\n")
	pkgs, err := Generate(context.Background(), Config{Dir: dir, Env: gentest.GoEnv()}, "./orders")
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) != 1 || len(pkgs[0].Diagnostics) != 1 || pkgs[0].Diagnostics[0].Msg != "undefined: billing.PublishJb" {
		t.Errorf("diagnostics %v, want only undefined: billing.PublishJb", pkgs[0].Diagnostics)
	}
}
