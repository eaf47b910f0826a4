package generator

import (
	"go/ast"
	"go/parser"
	"go/token"
	"testing"
)

func TestCamel(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"jobs", "Jobs"}, {"jobs.urgent", "JobsUrgent"}, {"order-events", "OrderEvents"},
		{"a_b c/d:e", "ABCDE"}, {"event.v2", "EventV2"}, {"2fa", "2fa"}, {"émission", "Émission"}, {"...", ""},
	} {
		if got := camel(tc.in); got != tc.want {
			t.Errorf("camel(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestFreshName(t *testing.T) {
	outer := map[string]bool{"ctx": true}
	taken := nameSet{outer: outer, own: map[string]bool{"ctx2": true}}
	if got := freshName("ctx", taken); got != "ctx3" {
		t.Errorf("freshName = %q, want ctx3", got)
	}
	if !taken.own["ctx3"] || outer["ctx3"] {
		t.Error("the fresh name was not recorded as the function's own")
	}
	if got := freshName("msg", taken); got != "msg" {
		t.Errorf("freshName = %q, want msg", got)
	}
}

func TestGuardNameTellsWhatToDo(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "x.go", "package p\nfunc Work() {}\nfunc (s *Service) Work() {}\nfunc (s Service) Bill() {}\n", 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"streamgen_Work_changed_run_go_generate", "streamgen_Service_Work_changed_run_go_generate", "streamgen_Service_Bill_changed_run_go_generate"} {
		if got := guardName(&handler{fn: f.Decls[i].(*ast.FuncDecl)}); got != want {
			t.Errorf("guardName = %q, want %q", got, want)
		}
	}
}

func TestRecvParamName(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"Service", "service"}, {"HTTPServer", "httpServer"}, {"URL", "url"}, {"ID", "id"},
		{"A", "a"}, {"service", "service"}, {"Über", "über"}, {"Func", "recvFunc"}, {"Type", "recvType"},
	} {
		if got := recvParamName(tc.in); got != tc.want {
			t.Errorf("recvParamName(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
