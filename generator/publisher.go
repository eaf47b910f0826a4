package generator

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"strconv"
	"strings"

	"github.com/streamgen/streamgen/runtime"
)

// maxShortString is the longest AMQP short string: exchange names,
// routing keys and queue names are short strings.
const maxShortString = 255

// publisherKeys are the keys of //stream:publisher, in the order the
// documentation gives them, each with an example.
var publisherKeys = []struct{ name, example string }{
	{"exchange", "exchange=orders"},
	{"routing_key", "routing_key=order.placed"},
	{"queue", "queue=jobs"},
	{"broker", "broker=rabbitmq"},
	{"type", "type=OrderPlaced"},
	{"codec", "codec=msgpack"},
}

func publisherKeyNames() []string {
	names := make([]string, len(publisherKeys))
	for i, k := range publisherKeys {
		names[i] = k.name
	}
	return names
}

func publisherKeyExample(key string) string {
	for _, k := range publisherKeys {
		if k.name == key {
			return k.example
		}
	}
	return key + "=..."
}

// declared is a //stream:publisher directive on a type declaration: a
// typed publisher for a message type the package sends.
type declared struct {
	slash token.Pos
	spec  *ast.TypeSpec
	// named is the type; set by checkDeclared when the type is usable.
	named *types.Named
	args  []keyArg
	// to is where the publisher sends; wire the message type on the wire;
	// broker the broker it is for (AnyBroker: either).
	to     runtime.Destination
	wire   string
	broker runtime.BrokerKind
	// codec is what it encodes with: its codec=, Protobuf for a protocol
	// buffer message (set by checkDeclared), nil for the publisher's own.
	codec runtime.Codec
	// name is the generated function's name: Publish<Type>.
	name string
	ok   bool
}

func (p *declared) arg(key string) *keyArg {
	for i := range p.args {
		if p.args[i].key == key {
			return &p.args[i]
		}
	}
	return nil
}

// typeDocs maps each comment of a type declaration's doc comment to the
// type it documents; nil for the doc comment of a parenthesized group of
// several types, where a directive names none of them.
func typeDocs(file *ast.File) map[*ast.Comment]*ast.TypeSpec {
	docs := map[*ast.Comment]*ast.TypeSpec{}
	for _, decl := range file.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.TYPE {
			continue
		}
		if gd.Doc != nil {
			var spec *ast.TypeSpec
			if len(gd.Specs) == 1 {
				spec = gd.Specs[0].(*ast.TypeSpec)
			}
			for _, c := range gd.Doc.List {
				docs[c] = spec
			}
		}
		for _, s := range gd.Specs {
			if ts := s.(*ast.TypeSpec); ts.Doc != nil {
				for _, c := range ts.Doc.List {
					docs[c] = ts
				}
			}
		}
	}
	return docs
}

// scanPublishers finds the //stream:publisher directives of a file and
// parses them. Directives anywhere but on one type declaration are
// reported.
func scanPublishers(file *ast.File, ds *diagnostics) []*declared {
	docs := typeDocs(file)
	funcs := map[*ast.Comment]bool{}
	for _, decl := range file.Decls {
		if fd, ok := decl.(*ast.FuncDecl); ok && fd.Doc != nil {
			for _, c := range fd.Doc.List {
				funcs[c] = true
			}
		}
	}
	var out []*declared
	for _, group := range file.Comments {
		for _, c := range group.List {
			d, ok := ast.ParseDirective(c.Slash, c.Text)
			if !ok || d.Tool != directiveTool || d.Name != publisherName {
				continue
			}
			spec, onType := docs[c]
			switch {
			case funcs[c]:
				ds.add(c.Slash, "//%s goes on a type declaration, not on a function: put it above type T struct{...} to generate PublishT; a function that consumes messages takes //%s \"<queue>\"", publisherDirective, directive)
				continue
			case onType && spec == nil:
				ds.add(c.Slash, "//%s is on a group of several types: put it in the doc comment of the one type it is for, inside the parentheses", publisherDirective)
				continue
			case !onType:
				ds.add(c.Slash, "//%s must be in the doc comment of a type declaration, directly above type T struct{...} with no blank line between", publisherDirective)
				continue
			}
			if p := parsePublisher(d, ds); p != nil {
				p.spec = spec
				out = append(out, p)
			}
		}
	}
	return out
}

// parsePublisher reads the key=value arguments of a //stream:publisher
// directive and checks them against each other. Every problem is
// reported; nil is returned when the directive cannot be used.
func parsePublisher(d ast.Directive, ds *diagnostics) *declared {
	args, err := d.ParseArgs()
	if err != nil {
		ds.add(d.ArgsPos, "%v: write the arguments of //%s as key=value without spaces, such as exchange=orders routing_key=order.placed", err, publisherDirective)
		return nil
	}
	p := &declared{slash: d.Slash, ok: true}
	seen := map[string]token.Pos{}
	for _, a := range args {
		i := int(a.Pos - d.ArgsPos)
		if i >= 0 && i < len(d.Args) && (d.Args[i] == '"' || d.Args[i] == '`') {
			ds.add(a.Pos, "//%s takes no quoted name: write where it publishes as key=value, such as exchange=orders routing_key=order.placed or queue=%s", publisherDirective, a.Arg)
			p.ok = false
			continue
		}
		text := d.Args[i:]
		if j := strings.IndexAny(text, " \t"); j >= 0 {
			text = text[:j]
		}
		key, value, hasValue := strings.Cut(text, "=")
		if !isPublisherKey(key) {
			p.ok = false
			switch guess := closest(key, publisherKeyNames()); {
			case key == "":
				ds.add(a.Pos, "%q has no key before =: write key=value without spaces, such as exchange=orders", text)
			case guess != "":
				ds.add(a.Pos, "unknown key %s for //%s; did you mean %s?", key, publisherDirective, guess)
			default:
				hint := ""
				if _, sub := lookupKey(key); sub {
					hint = fmt.Sprintf(" (%s is a key of //%s, which configures how a queue is consumed)", key, directive)
				}
				ds.add(a.Pos, "unknown key %s for //%s%s: its keys are %s", key, publisherDirective, hint, strings.Join(publisherKeyNames(), ", "))
			}
			continue
		}
		if prev, dup := seen[key]; dup {
			ds.addRelated(a.Pos, prev, "the first is", "%s is set twice in one //%s: keep one", key, publisherDirective)
			p.ok = false
			continue
		}
		seen[key] = a.Pos
		if strings.HasPrefix(value, "\"") || strings.HasPrefix(value, "`") {
			v, err := strconv.Unquote(value)
			if err != nil {
				ds.add(a.Pos+token.Pos(len(key)+1), "bad quoted value for %s: write it as %s", key, publisherKeyExample(key))
				p.ok = false
				continue
			}
			value = v
		}
		if !hasValue || value == "" {
			ds.add(a.Pos, "%s needs a value: write it as %s", key, publisherKeyExample(key))
			p.ok = false
			continue
		}
		p.args = append(p.args, keyArg{key: key, value: value, pos: a.Pos})
	}
	if !p.ok {
		return nil
	}
	if !p.checkKeys(ds) {
		return nil
	}
	return p
}

func isPublisherKey(key string) bool {
	for _, k := range publisherKeys {
		if k.name == key {
			return true
		}
	}
	return false
}

// checkKeys checks the keys of p against each other and sets its
// destination, wire type and broker. It reports every problem and returns
// false when there was one.
func (p *declared) checkKeys(ds *diagnostics) bool {
	ok := true
	bad := func(pos token.Pos, format string, args ...any) {
		ds.add(pos, format, args...)
		ok = false
	}
	exchange, routingKey, queue := p.arg("exchange"), p.arg("routing_key"), p.arg("queue")
	if b := p.arg("broker"); b != nil {
		switch k := runtime.BrokerKind(b.value); k {
		case runtime.RabbitMQ, runtime.ZeroMQ:
			p.broker = k
		default:
			bad(b.pos, "broker=%s is not a broker streamgen knows: use broker=rabbitmq or broker=zeromq", b.value)
		}
	}
	switch {
	case exchange != nil && queue != nil:
		later := queue
		if exchange.pos > later.pos {
			later = exchange
		}
		bad(later.pos, "a publisher sends to an exchange or to a queue, not both: keep exchange=%s (with routing_key) or queue=%s, and remove the other", exchange.value, queue.value)
	case exchange == nil && queue == nil && routingKey == nil:
		bad(p.slash, "//%s needs a destination: write exchange=<name> routing_key=<key> to publish through a RabbitMQ exchange, or queue=<name>", publisherDirective)
	case routingKey != nil && exchange == nil:
		bad(routingKey.pos, "routing_key needs an exchange: add exchange=<name>; to publish to a queue by name write queue=<name> without routing_key")
	}
	if p.broker == runtime.ZeroMQ {
		for _, a := range []*keyArg{exchange, routingKey} {
			if a != nil {
				bad(a.pos, "%s is for rabbitmq: ZeroMQ has no exchanges or routing keys; publish to a subscription with queue=<name>, or use broker=rabbitmq", a.key)
			}
		}
	}
	if p.broker != runtime.ZeroMQ {
		for _, a := range []*keyArg{exchange, routingKey, queue} {
			if a != nil && len(a.value) > maxShortString {
				bad(a.pos, "the %s is %d bytes long: RabbitMQ allows at most %d", strings.ReplaceAll(a.key, "_", " "), len(a.value), maxShortString)
			}
		}
	}
	if !ok {
		return false
	}
	switch {
	case exchange != nil:
		key := ""
		if routingKey != nil {
			key = routingKey.value
		}
		p.to = runtime.Exchange(exchange.value, key)
		if p.broker == runtime.AnyBroker {
			p.broker = runtime.RabbitMQ
		}
	default:
		p.to = runtime.Queue(queue.value)
	}
	if t := p.arg("type"); t != nil {
		p.wire = t.value
	}
	if c := p.arg("codec"); c != nil {
		codec, msg := parseCodec(c.value)
		if msg != "" {
			ds.add(c.pos+token.Pos(len("codec=")), "%s", msg)
			return false
		}
		p.codec = codec
	}
	return true
}

// checkDeclared checks the type of each publisher directive: a named type
// of the package that is not an alias, not generic, exported, and that a
// consumer can decode from JSON. One type has one publisher directive.
func (m *model) checkDeclared(info *types.Info, ds *diagnostics) {
	byType := map[*types.TypeName]*declared{}
	for _, p := range m.declared {
		obj, _ := info.Defs[p.spec.Name].(*types.TypeName)
		if obj == nil {
			p.ok = false
			continue
		}
		name := obj.Name()
		if prev := byType[obj]; prev != nil {
			ds.addRelated(p.slash, prev.slash, "the first is", "%s has two //%s directives: keep one; to send it elsewhere as well, call runtime.Publish", name, publisherDirective)
			p.ok = false
			continue
		}
		byType[obj] = p
		named, _ := types.Unalias(obj.Type()).(*types.Named)
		switch {
		case p.spec.Assign.IsValid():
			ds.add(p.spec.Name.Pos(), "%s is an alias: put //%s on the type it stands for", name, publisherDirective)
		case p.spec.TypeParams != nil:
			ds.add(p.spec.Name.Pos(), "%s is generic, and a publisher sends one message type: declare a type for an instance (type %sEvent %s[...]) and put //%s on it", name, name, name, publisherDirective)
		case !obj.Exported():
			ds.add(p.spec.Name.Pos(), "message type %s is unexported: the generated Publish%s takes it, and other packages cannot name it; export it (%s)", name, exportedName(name), exportedName(name))
		case named == nil:
		default:
			good := true
			if !IsProtoMessage(named) {
				for _, problem := range undecodable(named, qualifier(m.pkg)) {
					ds.add(p.spec.Name.Pos(), "message type %s cannot be sent as JSON a consumer decodes: %s", name, problem)
					good = false
				}
			}
			if c := p.arg("codec"); c != nil {
				if msg := codecProblem(p.codec, named, qualifier(m.pkg)); msg != "" {
					ds.add(c.pos, "%s", msg)
					good = false
				}
			} else if IsProtoMessage(named) {
				p.codec = runtime.Protobuf{}
			}
			if good {
				p.named = named
				if p.wire == "" {
					p.wire = name
				}
				p.name = "Publish" + name
				continue
			}
		}
		p.ok = false
	}
}

// usableDeclared returns the publisher directives that generate a
// publisher, in source order.
func (m *model) usableDeclared() []*declared {
	var out []*declared
	for _, p := range m.declared {
		if p.ok && p.named != nil {
			out = append(out, p)
		}
	}
	return out
}
