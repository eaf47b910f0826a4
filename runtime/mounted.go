package runtime

import "slices"

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

// DeadLetterQueues returns every dead-letter queue a handler of the App's
// subscriptions names (Subscription.DeadLetters), each once per broker
// kind, in mount order: what a dead-letter console shows for the App.
func (a *App) DeadLetterQueues() []DeadLetterQueue {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []DeadLetterQueue
	index := map[[2]string]int{}
	for _, m := range a.mounts {
		kind := m.broker.Kind()
		for _, q := range m.sub.DeadLetters() {
			k := [2]string{string(kind), q}
			i, ok := index[k]
			if !ok {
				i = len(out)
				index[k] = i
				out = append(out, DeadLetterQueue{Name: q, Broker: kind})
			}
			if !slices.Contains(out[i].Subscriptions, m.sub.Name) {
				out[i].Subscriptions = append(out[i].Subscriptions, m.sub.Name)
			}
		}
	}
	return out
}
