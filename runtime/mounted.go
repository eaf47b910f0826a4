package runtime

// MountedSubscription is a subscription mounted on an App, with the broker
// it runs on.
type MountedSubscription struct {
	Broker       Broker
	Subscription *Subscription
}

// DeadLetterQueue is a dead-letter queue the App's subscriptions park
// messages on.
type DeadLetterQueue struct {
	// Name is the queue's name, a handler's Policy.DeadLetter.
	Name string
	// Broker is the kind of broker it lives on.
	Broker BrokerKind
	// Subscriptions are the subscriptions that park on it, in mount order.
	Subscriptions []string
}

// Subscriptions returns the subscriptions mounted on the App, in mount
// order.
func (a *App) Subscriptions() []MountedSubscription {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]MountedSubscription, len(a.mounts))
	for i, m := range a.mounts {
		out[i] = MountedSubscription{Broker: m.broker, Subscription: m.sub}
	}
	return out
}

// DeadLetterQueues returns every dead-letter queue a handler of the App's
// subscriptions names (Subscription.DeadLetters), each once per broker
// kind, in mount order: what a dead-letter console shows for the App.
func (a *App) DeadLetterQueues() []DeadLetterQueue {
	var out []DeadLetterQueue
	index := map[[2]string]int{}
	for _, m := range a.Subscriptions() {
		kind := m.Broker.Kind()
		for _, q := range m.Subscription.DeadLetters() {
			k := [2]string{string(kind), q}
			i, ok := index[k]
			if !ok {
				i = len(out)
				index[k] = i
				out = append(out, DeadLetterQueue{Name: q, Broker: kind})
			}
			if !contains(out[i].Subscriptions, m.Subscription.Name) {
				out[i].Subscriptions = append(out[i].Subscriptions, m.Subscription.Name)
			}
		}
	}
	return out
}
