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
// ./... does in a service's module. The generated file is set aside while
// loading, but the main's uses of its names are not errors; its other
// errors still are.
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
