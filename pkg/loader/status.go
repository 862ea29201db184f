package loader

import (
	"time"

	"github.com/skillhost/skillhost/pkg/manifest"
)

// State is the state of one skill version.
type State string

// The states a version can be in. docs/operations.md explains each.
const (
	StateStarting   State = "starting"   // being launched and described
	StateActive     State = "active"     // serving calls
	StateDraining   State = "draining"   // replaced: finishing in-flight calls until the grace period ends
	StateFailed     State = "failed"     // failed to start, describe or validate; retried when its files change
	StateInvalid    State = "invalid"    // the folder or manifest is wrong; fixed by fixing the files
	StateIncomplete State = "incomplete" // checksum mismatch or files missing: probably a copy in progress
	StateStopped    State = "stopped"    // valid on disk but not serving (older version, disabled, pinned away)
	StateCrashed    State = "crashed"    // the serving process died; restarting with backoff
)

// VersionStatus is what the API shows of one version.
type VersionStatus struct {
	Version       string            `json:"version"`
	State         State             `json:"state"`
	Runtime       string            `json:"runtime,omitempty"` // "go-plugin" or "mcp", from the manifest
	PID           int               `json:"pid,omitempty"`
	StartedAt     *time.Time        `json:"started_at,omitempty"`
	InFlight      int64             `json:"in_flight"`
	Restarts      int               `json:"restarts"`
	LastError     string            `json:"last_error,omitempty"`
	Problems      manifest.Problems `json:"problems,omitempty"`
	Tools         []string          `json:"tools,omitempty"`
	Uses          []string          `json:"uses,omitempty"` // the manifest's uses: what the version may call through the host
	DrainDeadline *time.Time        `json:"drain_deadline,omitempty"`
}

// SkillStatus is what the API shows of one skill.
type SkillStatus struct {
	Name     string          `json:"name"`
	Active   string          `json:"active,omitempty"` // the version serving, if any
	Disabled bool            `json:"disabled"`
	Pinned   string          `json:"pinned,omitempty"`
	Reason   string          `json:"reason,omitempty"` // why nothing serves, when nothing does
	Versions []VersionStatus `json:"versions"`
}

// Event is one lifecycle change, for logs, the SSE stream and metrics.
// Restart marks the active event of an instance started again after the
// serving one crashed; it is what restarts are counted by, since Reason is
// prose for people and may be reworded.
type Event struct {
	Type     string        `json:"type"` // "lifecycle"
	Skill    string        `json:"skill"`
	Version  string        `json:"version,omitempty"`
	PID      int           `json:"pid,omitempty"`
	From     State         `json:"from,omitempty"`
	State    State         `json:"state"`
	Reason   string        `json:"reason,omitempty"`
	Restart  bool          `json:"restart,omitempty"`
	Duration time.Duration `json:"duration_ns,omitempty"`
	Time     time.Time     `json:"time"`
}
