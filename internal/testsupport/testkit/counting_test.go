package testkit

import (
	"context"
	"log/slog"
	"testing"
)

func TestCountingHandlerCountsRecordsAtItsLevelAndDerivedLoggers(t *testing.T) {
	h := &CountingHandler{Level: slog.LevelWarn}
	log := slog.New(h)
	log.Info("below the level")
	log.Warn("at the level")
	log.With("k", "v").Error("above the level")
	log.WithGroup("g").Debug("below again")
	if got := h.Handled(); got != 2 {
		t.Errorf("Handled() = %d, want 2 (the warning and the error)", got)
	}
	if got := h.Derived(); got != 2 {
		t.Errorf("Derived() = %d, want 2 (With and WithGroup)", got)
	}
	var zero CountingHandler
	if zero.Enabled(context.Background(), slog.LevelDebug) || !zero.Enabled(context.Background(), slog.LevelInfo) {
		t.Error("the zero CountingHandler should handle Info and above only")
	}
}
