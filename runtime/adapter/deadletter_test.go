package adapter_test

import (
	"maps"
	"testing"
	"time"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/adapter"
)

func TestDeadLetterHeaders(t *testing.T) {
	v := adapter.Verdict{Kind: adapter.VerdictPark, Queue: "jobs.dead", Reason: "failed on attempt 5 of 5: boom", Poison: false, Attempt: 5}
	now := time.Date(2025, 3, 4, 5, 6, 7, 890_123_456, time.FixedZone("CET", 3600))
	got := adapter.DeadLetterHeaders("jobs", v, now)
	want := map[string]string{
		"x-streamgen-reason":    "failed on attempt 5 of 5: boom",
		"x-streamgen-source":    "jobs",
		"x-streamgen-attempts":  "5",
		"x-streamgen-poison":    "false",
		"x-streamgen-parked-at": "2025-03-04T04:06:07.890Z",
	}
	if !maps.Equal(got, want) {
		t.Errorf("DeadLetterHeaders =\n %v\nwant\n %v", got, want)
	}
	v.Poison = true
	if got := adapter.DeadLetterHeaders("jobs", v, now)[runtime.HeaderDeadLetterPoison]; got != "true" {
		t.Errorf("poison header %q, want true", got)
	}
}
