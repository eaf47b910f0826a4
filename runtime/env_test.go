package runtime_test

import (
	"log/slog"
	"testing"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/clock"
)

// Complete fills in what an Env leaves unset, and keeps what it sets.
func TestEnvComplete(t *testing.T) {
	e := runtime.Env{}.Complete()
	if e.Logger == nil || e.Codec != (runtime.JSON{}) || e.Clock != (clock.System{}) || e.Metrics == nil {
		t.Errorf("Env{}.Complete() = %+v, want every default", e)
	}
	log := slog.New(slog.DiscardHandler)
	codec := upper{}
	if got := (runtime.Env{Logger: log, Codec: codec, Metrics: e.Metrics}).Complete(); got.Logger != log || got.Codec != codec || got.Metrics != e.Metrics {
		t.Errorf("Complete replaced what was set: %+v", got)
	}
}

type upper struct{ runtime.JSON }
