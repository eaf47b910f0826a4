package runtime

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// readinessReporter is a Broker that says whether it is ready to consume
// (see Broker): runtime/rabbitmq is not while it reconnects. Health asks
// every broker that has the method; one that does not is ready while the
// App runs.
type readinessReporter interface {
	// Ready reports whether the broker consumes, and when it does not,
	// why, in a sentence for a person.
	Ready() (ready bool, reason string)
}

// warningReporter is a Broker that reports what an operator should know
// while it stays ready (see Broker): runtime/rabbitmq reports the copies
// a blocked publishing connection holds, and wait queues whose copies
// stop coming back. Health asks every broker that has the method while
// the App runs.
type warningReporter interface {
	// Warnings returns each condition in a sentence for a person; none
	// when all is well.
	Warnings() []string
}

// HealthReport is the App's readiness, as Health serves it.
type HealthReport struct {
	App string `json:"app"`
	// Ready is set when the App runs and every broker is ready.
	Ready bool `json:"ready"`
	// Reason says why the App is not ready, "" when it is.
	Reason  string         `json:"reason,omitempty"`
	Brokers []BrokerHealth `json:"brokers"`
	// Tasks are the App's tasks (WithTask), in the order given, with what
	// each reports of itself; they do not make the App unready.
	Tasks []TaskHealth `json:"tasks,omitempty"`
}

// BrokerHealth is one broker's readiness.
type BrokerHealth struct {
	Broker BrokerKind `json:"broker"`
	// Subscriptions are the subscriptions mounted on it, in mount order.
	Subscriptions []string `json:"subscriptions"`
	Ready         bool     `json:"ready"`
	// Reason says why it is not ready, "" when it is.
	Reason string `json:"reason,omitempty"`
	// Warnings are what the broker reports besides (its Warnings method, see Broker),
	// ready or not.
	Warnings []string `json:"warnings,omitempty"`
}

// Readiness reports whether the App and each of its brokers, in mount
// order, are ready: the App is from the moment Run has started every
// broker (Ready is closed) until it begins to stop, while every broker
// is ready (its Ready method, see Broker).
func (a *App) Readiness() HealthReport {
	a.mu.Lock()
	phase := a.phase
	var brokers []BrokerHealth
	var reporters []Broker
	index := map[Broker]int{}
	for _, m := range a.mounts {
		i, ok := index[m.broker]
		if !ok {
			i = len(brokers)
			index[m.broker] = i
			brokers = append(brokers, BrokerHealth{Broker: m.broker.Kind()})
			reporters = append(reporters, m.broker)
		}
		brokers[i].Subscriptions = append(brokers[i].Subscriptions, m.sub.Name)
	}
	a.mu.Unlock()

	r := HealthReport{App: a.name, Brokers: brokers, Tasks: a.taskHealth()}
	var why string
	switch phase {
	case phaseNew:
		why = "the app has not been started"
	case phaseStarting:
		why = "the app is starting"
	case phaseStopping:
		why = "the app is stopping"
	case phaseStopped:
		why = "the app has stopped"
	}
	notReady := 0
	for i := range r.Brokers {
		b := &r.Brokers[i]
		switch rr, ok := reporters[i].(readinessReporter); {
		case why != "":
			b.Reason = why
		case ok:
			b.Ready, b.Reason = rr.Ready()
			if b.Ready {
				b.Reason = ""
			} else if b.Reason == "" {
				b.Reason = "the broker is not ready"
			}
		default:
			b.Ready = true
		}
		if wr, ok := reporters[i].(warningReporter); ok && why == "" {
			b.Warnings = wr.Warnings()
		}
		if !b.Ready {
			notReady++
		}
	}
	switch {
	case why != "":
		r.Reason = why
	case notReady > 0:
		r.Reason = fmt.Sprintf("%d of %d brokers not ready", notReady, len(r.Brokers))
	default:
		r.Ready = true
	}
	return r
}

// Health returns an http.Handler for a readiness probe: it serves
// Readiness as JSON, with status 200 when the App is ready and 503 when
// it is not:
//
//	http.Handle("/readyz", app.Health())
//
//	{"app":"billing","ready":false,"reason":"1 of 1 brokers not ready",
//	 "brokers":[{"broker":"rabbitmq","subscriptions":["invoices"],"ready":false,
//	   "reason":"reconnecting: rabbitmq: connection closed: ..."}]}
func (a *App) Health() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		r := a.Readiness()
		body, err := json.Marshal(r)
		if err != nil { // a HealthReport always encodes
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		if r.Ready {
			w.WriteHeader(http.StatusOK)
		} else {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_, _ = w.Write(append(body, '\n'))
	})
}
