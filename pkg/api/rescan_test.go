package api

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/skillhost/skillhost/pkg/registry"
)

// A failed rescan answers with the code that says what happened, not a
// blanket internal error.
func TestRescanErrorCodes(t *testing.T) {
	live := context.Background()
	gone, cancel := context.WithCancel(live)
	cancel()
	own := registry.Errorf(registry.CodeForbidden, "read-only daemon")
	for _, tc := range []struct {
		caller context.Context
		err    error
		want   registry.Code
	}{
		{live, fmt.Errorf("wrapped: %w", own), registry.CodeForbidden},
		{live, context.DeadlineExceeded, registry.CodeTimeout},
		{gone, context.Canceled, registry.CodeCanceled},
		{live, errors.New("loader: scan /srv/skills: permission denied"), registry.CodeInternal},
	} {
		if got := rescanError(tc.caller, tc.err); got.Code != tc.want || got.Message == "" {
			t.Errorf("rescanError(%v) = %v, want code %s", tc.err, got, tc.want)
		}
	}
}
