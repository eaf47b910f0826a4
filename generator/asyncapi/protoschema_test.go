package asyncapi

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/streamgen/streamgen/internal/testsupport/testpb"
)

// The Go names protoc-gen-go gives protocol buffer names.
func TestGoCamelCase(t *testing.T) {
	for in, want := range map[string]string{
		"Order": "Order", "order_item": "OrderItem", "Order.Line": "Order_Line", "Order.line_item": "OrderLineItem",
		"_private": "XPrivate", "v2_event": "V2Event", "HTTPRequest": "HTTPRequest",
	} {
		if got := goCamelCase(in); got != want {
			t.Errorf("goCamelCase(%q) = %q, want %q", in, got, want)
		}
	}
}

// A message is written with what it uses of its file, nested messages,
// proto2 labels and imports; a message the file lacks is not found.
func TestProtoWriter(t *testing.T) {
	file := &descriptorpb.FileDescriptorProto{
		Name:       proto.String("shop.proto"),
		Package:    proto.String("shop"),
		Dependency: []string{"google/protobuf/timestamp.proto"},
		MessageType: []*descriptorpb.DescriptorProto{
			{Name: proto.String("Unused")},
			{
				Name: proto.String("Basket"),
				NestedType: []*descriptorpb.DescriptorProto{{
					Name:  proto.String("Line"),
					Field: []*descriptorpb.FieldDescriptorProto{{Name: proto.String("sku"), Number: proto.Int32(1), Label: descriptorpb.FieldDescriptorProto_LABEL_REQUIRED.Enum(), Type: descriptorpb.FieldDescriptorProto_TYPE_STRING.Enum()}},
				}},
				Field: []*descriptorpb.FieldDescriptorProto{
					{Name: proto.String("lines"), Number: proto.Int32(1), Label: descriptorpb.FieldDescriptorProto_LABEL_REPEATED.Enum(), Type: descriptorpb.FieldDescriptorProto_TYPE_MESSAGE.Enum(), TypeName: proto.String(".shop.Basket.Line")},
					{Name: proto.String("at"), Number: proto.Int32(2), Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(), Type: descriptorpb.FieldDescriptorProto_TYPE_MESSAGE.Enum(), TypeName: proto.String(".google.protobuf.Timestamp")},
					{Name: proto.String("kind"), Number: proto.Int32(3), Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(), Type: descriptorpb.FieldDescriptorProto_TYPE_ENUM.Enum(), TypeName: proto.String(".shop.Kind")},
				},
				ReservedRange: []*descriptorpb.DescriptorProto_ReservedRange{{Start: proto.Int32(4), End: proto.Int32(5)}, {Start: proto.Int32(8), End: proto.Int32(11)}},
			},
		},
		EnumType: []*descriptorpb.EnumDescriptorProto{{Name: proto.String("Kind"), Value: []*descriptorpb.EnumValueDescriptorProto{{Name: proto.String("KIND_UNKNOWN"), Number: proto.Int32(0)}}}},
	}
	got, ok := (&protoWriter{file: file}).messageText("Basket_Line")
	want := `syntax = "proto2";

package shop;

import "google/protobuf/timestamp.proto";

// The payload is shop.Basket.Line, declared in shop.Basket.

message Basket {
  message Line {
    required string sku = 1;
  }
  repeated Basket.Line lines = 1;
  optional google.protobuf.Timestamp at = 2;
  optional Kind kind = 3;
  reserved 4;
  reserved 8 to 10;
}

enum Kind {
  KIND_UNKNOWN = 0;
}
`
	if !ok || got != want {
		t.Errorf("Basket_Line is written\n%s\nwant\n%s", got, want)
	}
	if _, ok := (&protoWriter{file: file}).messageText("Missing"); ok {
		t.Error("a message the file lacks was found")
	}
}

// The descriptor protoc-gen-go writes, as a string constant or as a
// []byte variable, is read from the source, and gives the message's
// definition.
func TestDescriptorsFromTheSource(t *testing.T) {
	raw, err := proto.Marshal(protodesc.ToFileDescriptorProto(testpb.File_internal_testsupport_testpb_testpb_proto))
	if err != nil {
		t.Fatal(err)
	}
	var bytesLit string
	for i, b := range raw {
		if i > 0 {
			bytesLit += ", "
		}
		bytesLit += "0x" + string("0123456789abcdef"[b>>4]) + string("0123456789abcdef"[b&15])
	}
	src := "package p\n\nconst file_a_proto_rawDesc = \"\" +\n\t" + quoteHalves(string(raw)) + "\n\nvar file_b_proto_rawDesc = []byte{" + bytesLit + "}\n\nvar other = []byte{1}\n"
	f, err := parser.ParseFile(token.NewFileSet(), "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	ix := docIndex{}
	ix.indexDescriptors("example.com/p", nil)
	if len(ix) != 0 {
		t.Fatal("descriptors from no files")
	}
	ix.indexDocs("example.com/p", []*ast.File{f})
	n := 0
	for k, v := range ix {
		if k.pkg == "example.com/p" && v == string(raw) {
			n++
		}
	}
	if n != 2 {
		t.Errorf("%d descriptors read back, want 2 (the constant and the variable)", n)
	}
}

// quoteHalves writes s as two Go string literals joined by +, as
// protoc-gen-go writes a long descriptor.
func quoteHalves(s string) string {
	h := len(s) / 2
	return strconv.Quote(s[:h]) + " +\n\t" + strconv.Quote(s[h:])
}
