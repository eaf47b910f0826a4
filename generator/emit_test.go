package generator

import (
	"fmt"
	"testing"
	"time"

	"github.com/dave/jennifer/jen"
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
		b    byteSize
		want string
	}{
		{byteSize{65536, 1}, "65536"},
		{byteSize{64, 1 << 10}, "64 * 1024"},
		{byteSize{1, 1 << 10}, "1024"},
		{byteSize{2, 1 << 20}, "2 * 1024 * 1024"},
		{byteSize{1, 1 << 20}, "1024 * 1024"},
	} {
		if got := render(byteSizeCode(tc.b)); got != tc.want {
			t.Errorf("byteSizeCode(%+v) = %q, want %q", tc.b, got, tc.want)
		}
	}
}

func TestGroupImports(t *testing.T) {
	in := "package p\n\nimport (\n\t\"context\"\n\trt \"github.com/streamgen/streamgen/runtime\"\n\t\"example.com/x/orders\"\n\t\"time\"\n\t\"net/http\"\n)\n\nfunc f() {}\n"
	want := "package p\n\nimport (\n\t\"context\"\n\t\"time\"\n\t\"net/http\"\n\n\trt \"github.com/streamgen/streamgen/runtime\"\n\t\"example.com/x/orders\"\n)\n\nfunc f() {}\n"
	if got := string(groupImports([]byte(in))); got != want {
		t.Errorf("groupImports:\n%s\nwant:\n%s", got, want)
	}
	only := "package p\n\nimport (\n\t\"context\"\n\t\"time\"\n)\n"
	if got := string(groupImports([]byte(only))); got != only {
		t.Errorf("standard library only: %q", got)
	}
	single := "package p\n\nimport \"context\"\n"
	if got := string(groupImports([]byte(single))); got != single {
		t.Errorf("single import: %q", got)
	}
}
