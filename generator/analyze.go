package generator

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"slices"
	"strings"

	"github.com/streamgen/streamgen/runtime"
)

// handler is one annotation on one function or method: a message type
// handled on a subscription.
type handler struct {
	fn  *ast.FuncDecl
	ann *annotation
	// recv is the receiver type of a method, nil for a function or a
	// receiver that was reported; pointerRecv is set when the method has a
	// pointer receiver.
	recv        *types.Named
	pointerRecv bool
	// shape is the handler's signature; usable only when ok.
	shape handlerShape
	ok    bool
	// wire is the message type name on the wire.
	wire string
	// publisher is the name of the typed publisher for it.
	publisher string
	// requester is the name of its typed client, for a handler that
	// replies (see nameRequesters).
	requester string
	// duplicate is set when an earlier handler of the subscription takes
	// the same message type (reported).
	duplicate bool
}

// name returns the handler as the package names it: Work for a function,
// Service.Work for a method.
func (h *handler) name() string { return handlerName(h.fn) }

// handlerName returns the name of a function, or of a method qualified by
// its receiver type: Work, Service.Work.
func handlerName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	return strings.TrimPrefix(recvString(fd.Recv.List[0].Type), "*") + "." + fd.Name.Name
}

// isMethod reports whether the handler is a method.
func (h *handler) isMethod() bool { return h.fn.Recv != nil }

// subscription is the handlers that name one subscription, and the
// subscription's own settings.
type subscription struct {
	name     string
	handlers []*handler
	// queue holds the queue-level keys, each from the first handler that
	// set it; setBy says which handler that was.
	queue fields
	setBy map[string]*handler
	// rs is the runtime.Subscription s stands for, built and validated by
	// validate: what Mount registers, with placeholder handler functions;
	// index[i] is the handler rs.Handlers[i] stands for.
	rs    *runtime.Subscription
	index []*handler
	// broker is the broker the subscription runs on (AnyBroker: whichever
	// it is mounted on); undetermined is set when that could not be decided
	// (already reported).
	broker       runtime.BrokerKind
	undetermined bool
	// conflicts holds queue-level keys whose handlers disagree (reported).
	conflicts []string
}

// model is what a package asks to be generated.
type model struct {
	pkg      *types.Package
	handlers []*handler // source order
	subs     []*subscription
	// kinds are the broker kinds Mount takes, rabbitmq before zeromq;
	// empty when every subscription runs on any broker.
	kinds []runtime.BrokerKind
	// receivers are the types whose methods are handlers, by name: Mount
	// takes a value of each after the brokers.
	receivers []*receiver
	// declared are the //stream:publisher directives, in source order.
	declared []*declared
	// noJSONDecoders is Config.NoJSONDecoders.
	noJSONDecoders bool
}

// receiver is a type whose methods are handlers.
type receiver struct {
	named *types.Named
	// pointer is set when a handler method has a pointer receiver: Mount
	// then takes a *T, else a T.
	pointer bool
	// methods are the names of the handler methods, in source order.
	methods []string
}

// analyze finds the annotated handlers of a package, checks them, and
// groups them into subscriptions. Problems go to ds.
func analyze(pkg *types.Package, info *types.Info, fset *token.FileSet, files []*ast.File, ds *diagnostics) *model {
	m := &model{pkg: pkg}
	for _, f := range files {
		m.declared = append(m.declared, scanPublishers(f, ds)...)
		for _, af := range scanFile(f, ds) {
			if af.fn.Name.Name == "_" {
				ds.add(af.fn.Name.Pos(), "a handler needs a name the generated code can call: rename func _")
				continue
			}
			obj, _ := info.Defs[af.fn.Name].(*types.Func)
			if obj == nil {
				continue
			}
			h := &handler{fn: af.fn, ann: af.ann}
			recvOK := true
			if h.isMethod() {
				h.recv, h.pointerRecv, recvOK = checkReceiver(af.fn, obj, pkg, ds)
			}
			h.shape, h.ok = checkShape(af.fn, obj, pkg, ds)
			h.ok = h.ok && recvOK
			h.wire = af.ann.fields.handler.MessageType
			if h.wire == "" && h.shape.msg != nil {
				h.wire = h.shape.msg.Obj().Name()
			}
			m.handlers = append(m.handlers, h)
		}
	}
	slices.SortStableFunc(m.handlers, func(a, b *handler) int {
		pa, pb := fset.Position(a.ann.slash), fset.Position(b.ann.slash)
		return cmp.Or(cmp.Compare(pa.Filename, pb.Filename), cmp.Compare(pa.Offset, pb.Offset))
	})
	slices.SortStableFunc(m.declared, func(a, b *declared) int {
		pa, pb := fset.Position(a.slash), fset.Position(b.slash)
		return cmp.Or(cmp.Compare(pa.Filename, pb.Filename), cmp.Compare(pa.Offset, pb.Offset))
	})
	m.checkMessageKinds(ds)
	m.checkDeclared(info, ds)
	m.collectReceivers()
	m.group(ds)
	m.resolveBrokers(ds)
	for _, s := range m.subs {
		s.checkDuplicateTypes(ds)
		s.validate(ds)
	}
	return m
}

// collectReceivers lists the receiver types of the usable method handlers,
// ordered by name.
func (m *model) collectReceivers() {
	byType := map[*types.Named]*receiver{}
	for _, h := range m.handlers {
		if !h.ok || h.recv == nil {
			continue
		}
		r := byType[h.recv]
		if r == nil {
			r = &receiver{named: h.recv}
			byType[h.recv] = r
			m.receivers = append(m.receivers, r)
		}
		r.pointer = r.pointer || h.pointerRecv
		if !slices.Contains(r.methods, h.fn.Name.Name) {
			r.methods = append(r.methods, h.fn.Name.Name)
		}
	}
	slices.SortFunc(m.receivers, func(a, b *receiver) int { return cmp.Compare(a.named.Obj().Name(), b.named.Obj().Name()) })
}

// checkReceiver checks the receiver of a handler method: a type that is not
// generic, exported unless the package is a main (other packages call
// Mount, which takes a value of it). It returns the receiver's named type,
// whether the receiver is a pointer, and false when there is a problem,
// which it reports.
func checkReceiver(fd *ast.FuncDecl, fn *types.Func, pkg *types.Package, ds *diagnostics) (*types.Named, bool, bool) {
	recv := fn.Signature().Recv()
	if recv == nil || len(fd.Recv.List) == 0 {
		return nil, false, false
	}
	t, pointer := types.Unalias(recv.Type()), false
	if p, ok := t.(*types.Pointer); ok {
		t, pointer = types.Unalias(p.Elem()), true
	}
	named, ok := t.(*types.Named)
	if !ok || named.Obj().Pkg() != pkg {
		return nil, false, false // the type checker reported it
	}
	pos := fd.Recv.List[0].Type.Pos()
	written := named.Obj().Name()
	if pointer {
		written = "*" + written
	}
	switch {
	case named.TypeParams().Len() > 0:
		ds.add(pos, "%s is a method of the generic type %s: Mount cannot take one without its type arguments; annotate a method of a type that is not generic, or a top-level function that calls this one", methodName(fd), named.Obj().Name())
		return nil, false, false
	case !named.Obj().Exported() && pkg.Name() != "main":
		ds.add(pos, "%s is a method of the unexported type %s: Mount takes a %s, which the packages that call Mount cannot name; export the type (%s)",
			methodName(fd), named.Obj().Name(), written, exportedName(named.Obj().Name()))
		return nil, false, false
	}
	return named, pointer, true
}

// group collects the handlers into subscriptions, in the order each
// subscription is first named, and merges the queue-level keys.
func (m *model) group(ds *diagnostics) {
	byName := map[string]*subscription{}
	for _, h := range m.handlers {
		s := byName[h.ann.name]
		if s == nil {
			s = &subscription{name: h.ann.name, setBy: map[string]*handler{}}
			byName[h.ann.name] = s
			m.subs = append(m.subs, s)
		}
		s.handlers = append(s.handlers, h)
		for _, a := range h.ann.args {
			if spec, _ := lookupKey(a.key); spec.level != queueLevel {
				continue
			}
			first := s.setBy[a.key]
			if first == nil {
				s.setBy[a.key] = h
				s.queue.set(a.key, a.value)
				continue
			}
			fa := first.ann.arg(a.key)
			if !sameValue(a.key, fa.value, a.value) {
				ds.addRelated(a.pos, fa.pos, fmt.Sprintf("%s=%s is set on %s", a.key, fa.value, first.name()),
					"%s=%s disagrees with another handler of subscription %q: %s applies to the whole subscription, so set it on one handler or give them the same value",
					a.key, a.value, s.name, a.key)
				if !slices.Contains(s.conflicts, a.key) {
					s.conflicts = append(s.conflicts, a.key)
				}
			}
		}
	}
}

// resolveBrokers decides the broker of every subscription: its broker=
// key; else the package's broker when every broker= in it agrees; else the
// broker its broker-specific keys exist for; else any broker, which becomes
// the package's broker when the package uses exactly one. A package that
// uses both needs broker= wherever that leaves a doubt.
func (m *model) resolveBrokers(ds *diagnostics) {
	var explicit []runtime.BrokerKind
	for _, s := range m.subs {
		if s.setBy["broker"] != nil && !slices.Contains(s.conflicts, "broker") && !slices.Contains(explicit, s.queue.sub.Broker) {
			explicit = append(explicit, s.queue.sub.Broker)
		}
	}
	for _, s := range m.subs {
		switch {
		case slices.Contains(s.conflicts, "broker") || s.badKey("broker"):
			s.undetermined = true
		case s.setBy["broker"] != nil:
			s.broker = s.queue.sub.Broker
		case len(explicit) == 1:
			s.broker = explicit[0]
		default:
			s.broker = s.brokerFromKeys(ds)
		}
	}
	var kinds []runtime.BrokerKind
	for _, s := range m.subs {
		if s.broker != runtime.AnyBroker && !slices.Contains(kinds, s.broker) {
			kinds = append(kinds, s.broker)
		}
	}
	for _, s := range m.subs {
		if s.broker != runtime.AnyBroker || s.undetermined {
			continue
		}
		switch len(kinds) {
		case 1:
			s.broker = kinds[0]
		case 2:
			s.undetermined = true
			for _, h := range s.handlers {
				ds.add(h.ann.namePos, "this package mounts on rabbitmq and zeromq: add broker=rabbitmq or broker=zeromq to say where %q runs", s.name)
			}
		}
	}
	for _, k := range []runtime.BrokerKind{runtime.RabbitMQ, runtime.ZeroMQ} {
		if slices.Contains(kinds, k) {
			m.kinds = append(m.kinds, k)
		}
	}
}

// badKey reports whether a handler of s wrote key with a reported bad value.
func (s *subscription) badKey(key string) bool {
	for _, h := range s.handlers {
		if h.ann.isBad(key) {
			return true
		}
	}
	return false
}

// brokerFromKeys infers the broker from the broker-specific keys the
// handlers of s set, or returns AnyBroker. Keys of both brokers are
// reported.
func (s *subscription) brokerFromKeys(ds *diagnostics) runtime.BrokerKind {
	var first [2]*keyArg // rabbitmq, zeromq
	for _, h := range s.handlers {
		for i := range h.ann.args {
			a := &h.ann.args[i]
			spec, _ := lookupKey(a.key)
			switch {
			case spec.only == runtime.RabbitMQ && first[0] == nil:
				first[0] = a
			case spec.only == runtime.ZeroMQ && first[1] == nil:
				first[1] = a
			}
		}
	}
	switch {
	case first[0] != nil && first[1] != nil:
		s.undetermined = true
		later, earlier := first[0], first[1]
		if later.pos < earlier.pos {
			later, earlier = earlier, later
		}
		ds.addRelated(later.pos, earlier.pos, earlier.key+" is set", "subscription %q sets %s, which only %s has, and %s, which only %s has: add broker=rabbitmq or broker=zeromq and remove the other broker's key",
			s.name, first[0].key, runtime.RabbitMQ, first[1].key, runtime.ZeroMQ)
	case first[0] != nil:
		return runtime.RabbitMQ
	case first[1] != nil:
		return runtime.ZeroMQ
	}
	return runtime.AnyBroker
}

// checkDuplicateTypes reports a message type handled twice on s.
func (s *subscription) checkDuplicateTypes(ds *diagnostics) {
	for i, h := range s.handlers {
		if h.wire == "" {
			continue
		}
		for _, prev := range s.handlers[:i] {
			if prev.wire == h.wire && prev.fn == h.fn {
				ds.addRelated(h.ann.namePos, prev.ann.namePos, "the other is",
					"%s is annotated twice for subscription %q: remove one of the two annotations", h.name(), s.name)
				h.duplicate = true
				break
			}
			if prev.wire == h.wire && h.every() {
				ds.addRelated(h.fn.Name.Pos(), prev.fn.Name.Pos(), "the other is "+prev.name(),
					"%s and %s both take every message type of subscription %q: keep one, or give one a subscription of its own", h.name(), prev.name(), s.name)
				h.duplicate = true
				break
			}
			if prev.wire == h.wire {
				pos := h.ann.namePos
				if a := h.ann.arg("type"); a != nil {
					pos = a.pos
				}
				ds.addRelated(pos, prev.fn.Name.Pos(), "the other is "+prev.name(),
					"message type %s is handled twice on subscription %s: give one handler another type= or another subscription", h.wire, s.name)
				h.duplicate = true
				break
			}
		}
	}
}

// validate builds the runtime.Subscription that s stands for and runs
// (*runtime.Subscription).Validate on it for its broker, reporting each
// problem at the annotation key it is about. Handlers that repeat a message
// type are left out (they were reported).
func (s *subscription) validate(ds *diagnostics) {
	s.rs, s.index = s.runtimeSubscription()
	rs, kind := s.rs, s.broker
	if s.undetermined {
		// The broker is in doubt (reported): check what holds on any.
		onAny := *s.rs
		onAny.Broker = runtime.AnyBroker
		rs, kind = &onAny, runtime.AnyBroker
	}
	if h := s.setBy["ack"]; h != nil && kind == runtime.ZeroMQ && !rs.AutoAck {
		// ack=manual sets no field for Validate to see.
		ds.add(h.ann.arg("ack").pos, "subscription %q: ack is for rabbitmq: zeromq has no acknowledgements; remove ack", rs.Name)
	}
	err := rs.Validate(kind)
	if err == nil {
		return
	}
	for _, e := range independentOfBadValues(rs, kind, s.index, problems(err)) {
		ds.add(s.keyPos(s.index, e.Handler, e.Key), "%s", e.Error())
	}
}

// problems returns the problems of err, an error of Subscription.Validate.
func problems(err error) []*runtime.ValidationError {
	var out []*runtime.ValidationError
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		out = append(out, e.(*runtime.ValidationError))
	}
	return out
}

// validationKey identifies a validation error across runs.
type validationKey struct {
	handler int
	key     string
	msg     string
}

func keyOf(e *runtime.ValidationError) validationKey {
	return validationKey{e.Handler, e.Key, e.Msg}
}

// independentOfBadValues returns the errors of rs (validated for kind) that
// hold whatever valid value each badly written key would have had. A key
// written with a bad value is checked both ways, not set and set to its
// alternative (see keySpec): an error that appears only one way depends on
// the bad value and would only repeat its report (with max_attempts=five,
// "out_retry needs max_attempts" is noise).
func independentOfBadValues(rs *runtime.Subscription, kind runtime.BrokerKind, index []*handler, errs []*runtime.ValidationError) []*runtime.ValidationError {
	keep := map[validationKey]bool{}
	for _, e := range errs {
		keep[keyOf(e)] = true
	}
	for i, h := range index {
		for _, bad := range h.ann.bad {
			spec, _ := lookupKey(bad)
			if spec.alternative == "" {
				continue
			}
			alt := *rs
			alt.Handlers = slices.Clone(rs.Handlers)
			spec.set(&alt, &alt.Handlers[i], spec.alternative)
			found := map[validationKey]bool{}
			if err := alt.Validate(kind); err != nil {
				for _, e := range problems(err) {
					found[keyOf(e)] = true
				}
			}
			for k := range keep {
				if !found[k] {
					delete(keep, k)
				}
			}
		}
	}
	var out []*runtime.ValidationError
	for _, e := range errs {
		if keep[keyOf(e)] {
			out = append(out, e)
		}
	}
	return out
}

// keyPos returns the position of key in the annotation of handler i, or,
// for a subscription-level problem (i < 0), in the handler that set it;
// the subscription name when the key is not written anywhere.
func (s *subscription) keyPos(index []*handler, i int, key string) token.Pos {
	if i >= 0 && i < len(index) {
		if a := index[i].ann.arg(key); a != nil {
			return a.pos
		}
	}
	if h := s.setBy[key]; h != nil {
		return h.ann.arg(key).pos
	}
	if i >= 0 && i < len(index) {
		return index[i].ann.namePos
	}
	return s.handlers[0].ann.namePos
}

// runtimeSubscription returns the runtime.Subscription s stands for: the
// fields its queue-level keys set, its name and broker, and a handler per
// message type with the fields its type-level keys set and a placeholder
// function (one that is never called), enough for Validate, WaitQueues,
// Mount's literal and the like; index[i] is the handler rs.Handlers[i]
// stands for. A handler that repeats an earlier one's message type is left
// out (reported by checkDuplicateTypes), and one without a usable message
// type gets a name no other has.
func (s *subscription) runtimeSubscription() (rs *runtime.Subscription, index []*handler) {
	sub := s.queue.sub
	rs = &sub
	rs.Name, rs.Broker = s.name, s.broker
	for i, h := range s.handlers {
		wire := h.wire
		if wire == "" || (h.every() && h.shape.batch) {
			// A batch of runtime.Delivery was reported: checkMessageKinds.
			wire = fmt.Sprintf("\x00handler %d", i)
		}
		if rs.Handler(wire) != nil {
			continue
		}
		if h.every() && !h.shape.batch {
			rs.Handlers = append(rs.Handlers, runtime.HandleEvery(h.ann.fields.handler.Policy, func(context.Context, runtime.Delivery) error { return nil }))
			index = append(index, h)
			continue
		}
		if h.shape.reply != nil {
			rs.Handlers = append(rs.Handlers, replyPlaceholder(wire, h))
			index = append(index, h)
			continue
		}
		if h.shape.batch {
			rs.Handlers = append(rs.Handlers, runtime.HandleBatch[struct{}](wire, h.ann.fields.handler.Policy, nil, func(context.Context, []struct{}) error { return nil }))
			index = append(index, h)
			continue
		}
		if h.shape.tx {
			rs.Handlers = append(rs.Handlers, runtime.HandleJSON[struct{}](wire, h.ann.fields.handler.Policy, nil, func(context.Context, *sql.Tx, struct{}) error { return nil }))
			index = append(index, h)
			continue
		}
		rs.Handlers = append(rs.Handlers, runtime.Handle[struct{}](wire, h.ann.fields.handler.Policy, nil))
		index = append(index, h)
	}
	for i := range rs.Handlers {
		if p := &rs.Handlers[i].Policy; p.OutRetry == outRetrySelf {
			p.OutRetry = rs.Name
		}
	}
	for i, h := range index {
		rs.Handlers[i].Codec = h.codec()
	}
	return rs, index
}
