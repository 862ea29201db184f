package api_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Every stream the tests open (events, heartbeats) must be gone when they
// end.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
