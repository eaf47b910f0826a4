package generator

import (
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"

	"github.com/streamgen/streamgen/generator/internal/gentest"
)

// TestImportable follows the go command's rule for internal directories.
func TestImportable(t *testing.T) {
	cases := []struct {
		from, to string
		want     bool
	}{
		{"example.com/a", "example.com/b", true},
		{"example.com/a", "example.com/a/internal", true},
		{"example.com/a/b", "example.com/a/internal/x", true},
		{"example.com/a", "example.com/a/internal/x", true},
		{"example.com/b", "example.com/a/internal/x", false},
		{"example.com/ab", "example.com/a/internal/x", false},
		{"example.com/a/x/y", "example.com/a/x/internal", true},
		{"example.com/a", "example.com/a/x/internal", false},
		{"example.com/a", "internal/poll", false},
		{"net", "internal/poll", true},
		{"example.com/a", "example.com/a/internal/b/internal/c", false},
		{"example.com/a/internal/b/d", "example.com/a/internal/b/internal/c", true},
	}
	for _, c := range cases {
		if got := importable(c.from, c.to); got != c.want {
			t.Errorf("importable(%q, %q) = %v, want %v", c.from, c.to, got, c.want)
		}
	}
}

// With NoJSONDecoders (streamgen -json-decoders=false) no decoder is
// written: every handler is made with a nil decoder, so encoding/json
// decodes every body, and the file compiles without package jsondecode.
func TestNoJSONDecoders(t *testing.T) {
	root := gentest.RepoRoot(t)
	for _, off := range []bool{false, true} {
		pkgs, err := Generate(t.Context(), Config{Dir: root, NoJSONDecoders: off}, "./testdata/json_decoders")
		if err != nil {
			t.Fatal(err)
		}
		if len(pkgs) != 1 || len(pkgs[0].Diagnostics) > 0 || pkgs[0].Source == nil {
			t.Fatalf("generated %+v", pkgs)
		}
		src := string(pkgs[0].Source)
		if got := strings.Contains(src, "streamgen_decode_") || strings.Contains(src, "/runtime/jsondecode\""); got == off {
			t.Errorf("NoJSONDecoders %v: the file has JSON decoders: %v, want %v", off, got, !off)
		}
		if off && !strings.Contains(src, `runtime.HandleJSON[Msg]("Msg", runtime.Policy{}, nil, Take)`) {
			t.Errorf("NoJSONDecoders: Take is not made without a decoder:\n%s", src)
		}
		lp, err := packages.Load(&packages.Config{
			Mode:    packages.NeedName | packages.NeedTypes,
			Dir:     root,
			Overlay: map[string][]byte{pkgs[0].File: pkgs[0].Source},
		}, "./testdata/json_decoders")
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range lp {
			for _, e := range p.Errors {
				t.Errorf("NoJSONDecoders %v: the generated file does not compile: %v", off, e)
			}
		}
	}
}
