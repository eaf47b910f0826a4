package adapter_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/streamgen/streamgen/runtime/adapter"
)

// A TimeoutError reads as the reason of the failed call.
func TestTimeoutError(t *testing.T) {
	cause := &adapter.TimeoutError{After: 2 * time.Second}
	for _, tc := range []struct {
		err  *adapter.TimeoutError
		want string
	}{
		{&adapter.TimeoutError{After: 2 * time.Second}, "handler timed out after 2s"},
		{&adapter.TimeoutError{After: 90 * time.Second, Err: context.DeadlineExceeded}, "handler timed out after 1m30s"},
		{&adapter.TimeoutError{After: time.Second, Err: context.Canceled}, "handler timed out after 1s"},
		{&adapter.TimeoutError{After: 2 * time.Second, Err: cause}, "handler timed out after 2s"},
		{&adapter.TimeoutError{After: 500 * time.Millisecond, Err: fmt.Errorf("fetch: %w", context.DeadlineExceeded)}, "handler timed out after 500ms: fetch: context deadline exceeded"},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
		if !errors.Is(tc.err, context.DeadlineExceeded) {
			t.Errorf("%v is not context.DeadlineExceeded", tc.err)
		}
	}
	errDB := errors.New("db")
	if !errors.Is(&adapter.TimeoutError{After: time.Second, Err: errDB}, errDB) {
		t.Error("a TimeoutError does not unwrap to the handler's error")
	}
}
