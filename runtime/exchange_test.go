package runtime_test

import (
	"testing"

	"github.com/streamgen/streamgen/runtime"
)

func TestExchangeKind(t *testing.T) {
	s := runtime.Subscription{}
	if s.ExchangeKind() != runtime.TopicExchange {
		t.Errorf("default exchange type %q", s.ExchangeKind())
	}
	s.ExchangeType = runtime.FanoutExchange
	if s.ExchangeKind() != runtime.FanoutExchange {
		t.Errorf("exchange type %q", s.ExchangeKind())
	}
}
