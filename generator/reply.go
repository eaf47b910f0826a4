package generator

import (
	"context"
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"strconv"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/streamgen/streamgen/runtime"
)

// replyShape says what a handler that replies looks like.
const replyShape = "a handler that replies returns (R, error) or (*R, error), R the reply's named message type: func(ctx context.Context, req T) (R, error), with md runtime.Metadata after req if it needs it"

// checkReply checks the two results of a handler that replies, (R,
// error) or (*R, error), and records R in shape. It reports each problem
// and returns false when there is one.
func checkReply(fd *ast.FuncDecl, sig *types.Signature, shape *handlerShape, pkg *types.Package, ds *diagnostics) bool {
	name, qual := handlerName(fd), qualifier(pkg)
	results := sig.Results()
	first, second := results.At(0).Type(), results.At(1).Type()
	written := fmt.Sprintf("(%s, %s)", types.TypeString(first, qual), types.TypeString(second, qual))
	switch {
	case !types.Identical(second, types.Universe.Lookup("error").Type()):
		ds.add(resultPos(fd, 1), "%s returns %s, and its second result is not error: %s", name, written, replyShape)
		return false
	case isNamed(first, runtimePath, "Outcome"):
		ds.add(resultPos(fd, 0), "%s returns %s: return runtime.Outcome alone, or a reply and an error (%s)", name, written, replyShape)
		return false
	case shape.batch:
		ds.add(resultPos(fd, 0), "%s takes a batch and returns a reply: a batch handler cannot answer requests, each message's caller waits for a reply of its own; take one message, or return only an error", name)
		return false
	case shape.tx:
		ds.add(resultPos(fd, 0), "%s takes a *sql.Tx and returns a reply: a request handled once in a transaction is acknowledged without its handler when it comes again, and would have no reply to send; remove the *sql.Tx and begin your own transaction, or return only an error", name)
		return false
	}
	t, pointer := types.Unalias(first), false
	if p, ok := t.(*types.Pointer); ok {
		t, pointer = types.Unalias(p.Elem()), true
	}
	named, ok := t.(*types.Named)
	switch {
	case !ok || named.Obj().Pkg() == nil:
		ds.add(resultPos(fd, 0), "the reply of %s is %s: a reply's message type must be a named type (usually a struct, type Price struct{...}) or a pointer to one (%s)", name, types.TypeString(first, qual), replyShape)
		return false
	case named.TypeArgs().Len() > 0:
		ds.add(resultPos(fd, 0), "the reply type %s of %s is an instance of a generic type: declare a named type for it (type %sReply %s) and return that", types.TypeString(named, qual), name, named.Obj().Name(), types.TypeString(named, qual))
		return false
	case !named.Obj().Exported():
		ds.add(resultPos(fd, 0), "the reply type %s of %s is unexported: the callers in other packages decode it, so export it (%s)", named.Obj().Name(), name, exportedName(named.Obj().Name()))
		return false
	}
	good := true
	for _, problem := range undecodable(named, qual) {
		ds.add(resultPos(fd, 0), "the reply type %s of %s cannot be decoded from JSON by its callers: %s", types.TypeString(named, qual), name, problem)
		good = false
	}
	shape.reply, shape.replyPointer = named, pointer
	return good
}

// resultPos returns the position of the type of the i-th result.
func resultPos(fd *ast.FuncDecl, i int) token.Pos {
	if fd.Type.Results == nil {
		return fd.Type.Params.Closing
	}
	n := 0
	for _, f := range fd.Type.Results.List {
		names := max(len(f.Names), 1)
		if i < n+names {
			return f.Type.Pos()
		}
		n += names
	}
	return fd.Type.Results.Pos()
}

// replyWire is the message type of a handler's replies: its reply type's
// Go name.
func (h *handler) replyWire() string { return h.shape.reply.Obj().Name() }

// replyPlaceholder is the runtime.Handler a handler that replies stands
// as in the subscription Validate checks: one made by HandleReply, so
// that the rules of replies (ZeroMQ has none) hold at generate time.
func replyPlaceholder(wire string, h *handler) runtime.Handler {
	return runtime.HandleReply[struct{}, struct{}](wire, h.replyWire(), h.ann.fields.handler.Policy, nil,
		func(context.Context, struct{}) (struct{}, error) { return struct{}{}, nil })
}

// nameRequesters gives each usable handler that replies its typed
// client: Request<Name>, Name the function's or the method's; two that
// would share it take the receiver's name (RequestPricingQuote), and two
// that still would are reported, as is a name the package declares
// already. (Typed publishers are named Publish<Type>: none can take it.)
func (m *model) nameRequesters(ds *diagnostics) {
	var hs []*handler
	count := map[string]int{}
	for _, h := range m.handlers {
		if h.ok && h.shape.reply != nil && !h.duplicate && h.ann.name != "" {
			hs = append(hs, h)
			count["Request"+h.fn.Name.Name]++
		}
	}
	taken := map[string]*handler{}
	scope := m.pkg.Scope()
	for _, h := range hs {
		name := "Request" + h.fn.Name.Name
		if count[name] > 1 && h.recv != nil {
			name = "Request" + h.recv.Obj().Name() + h.fn.Name.Name
		}
		if prev := taken[name]; prev != nil {
			ds.addRelated(h.ann.namePos, prev.ann.namePos, "the other is for "+prev.name(), "the typed clients of %s and %s would both be named %s: rename one of the handlers", prev.name(), h.name(), name)
			continue
		}
		if obj := scope.Lookup(name); obj != nil {
			ds.addRelated(h.ann.namePos, obj.Pos(), "yours is declared",
				"streamgen generates the typed client %s of %s, and the package declares %s already: rename yours", name, h.name(), name)
			continue
		}
		taken[name] = h
		h.requester = name
	}
}

// requesterNames returns the names of the typed clients m generates.
func (m *model) requesterNames() []string {
	var out []string
	for _, h := range m.handlers {
		if h.requester != "" {
			out = append(out, h.requester)
		}
	}
	return out
}

// replyType writes the reply type as the handler returns it: R or *R.
func (e *emitter) replyType(h *handler) *jen.Statement {
	obj := h.shape.reply.Obj()
	t := jen.Qual(obj.Pkg().Path(), obj.Name())
	if h.shape.replyPointer {
		return jen.Op("*").Add(t)
	}
	return t
}

// handleReply writes runtime.HandleReply[T, R](type, replyType, policy,
// decoder, handler) for h, a handler that replies, and its
// runtime.Handler rh.
func (e *emitter) handleReply(h *handler, rh runtime.Handler, decoder jen.Code) *jen.Statement {
	obj := h.shape.reply.Obj()
	return jen.Qual(runtimePath, "HandleReply").Types(e.typeName(h), jen.Qual(obj.Pkg().Path(), obj.Name())).Call(
		jen.Lit(rh.MessageType),
		jen.Lit(h.replyWire()),
		e.policyLiteral(rh.Policy),
		decoder,
		e.handlerValue(h),
	)
}

// replyJSONDecoded reports whether the typed client of h, a handler that
// replies, reads its replies with a generated JSON decoder
// (runtime.RequestJSON): when its requests go in the requester's codec,
// whose replies come back in it (JSON unless the requester has another),
// and the reply is a value, not a pointer, which a reply of JSON null
// would leave nil. A protocol buffer message has no JSON decoder of its
// own: its codec reads it.
func (h *handler) replyJSONDecoded() bool {
	return h.codec() == nil && !h.shape.replyPointer && !IsProtoMessage(h.shape.reply)
}

// requesters writes the typed client of each handler that replies:
// Request<Name>(ctx, client, req, opts...) returning the reply, through
// runtime.Request to the handler's subscription, runtime.RequestJSON with
// the reply's generated JSON decoder when it has one (replyJSONDecoded),
// or runtime.RequestWith in the handler's codec when it has one, as its
// typed publisher (encodingOf).
func (e *emitter) requesters(w *codeWriter) {
	rt := e.qual(runtimePath)
	for _, h := range e.m.handlers {
		if h.requester == "" {
			continue
		}
		local := e.locals()
		ctx, client, req, opts := freshName("ctx", local), freshName("client", local), freshName("req", local), freshName("opts", local)
		value := "&" + req
		if h.shape.pointer {
			value = req
		}
		reply := e.namedText(h.shape.reply)
		if h.shape.replyPointer {
			reply = "*" + reply
		}
		enc := e.encodingOf(h.codec(), req)
		w.blank()
		w.comment(fmt.Sprintf("// %s sends %s to %q as a request of type %q,\n"+
			"// which %s answers, and returns the reply (see runtime.Request). Its error\n"+
			"// is a *%s.RemoteError when %s failed for good (errors.Is\n"+
			"// %s.ErrParked once the request is parked), and wraps ctx's error when no\n"+
			"// reply came before ctx ended.%s",
			h.requester, req, h.ann.name, h.wire, h.name(), rt, h.name(), rt, enc.doc))
		w.open("func %s(%s %s.Context, %s %s.Requester, %s %s, %s ...%s.PublishOption) (%s, error) {",
			h.requester, ctx, e.qual(contextPath), client, rt, req, e.messageTypeText(h), opts, rt, reply)
		args := append(append([]string{ctx, client}, enc.args...), rt+".Queue("+strconv.Quote(h.ann.name)+")", strconv.Quote(h.wire), value)
		call := "Request" + enc.suffix
		if decoder := e.json.decoderFor(h.shape.reply); decoder != "" && h.replyJSONDecoded() {
			call, args = "RequestJSON", append(args, decoder)
		}
		w.line("return %s.%s[%s](%s)", rt, call, reply, strings.Join(append(args, opts+"..."), ", "))
		w.close("}")
	}
}
