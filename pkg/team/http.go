package team

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/skillhost/skillhost/internal/httpjson"
	"github.com/skillhost/skillhost/internal/sse"
	"github.com/skillhost/skillhost/pkg/registry"
)

// The teams API's error codes, in the one error shape; their statuses
// are in the one table of internal/httpjson.
const (
	CodeUnknownTeam   = httpjson.CodeUnknownTeam
	CodeUnknownMember = httpjson.CodeUnknownMember
	CodeTeamExists    = httpjson.CodeTeamExists
	CodeTeamStopped   = httpjson.CodeTeamStopped
	CodeTeamConflict  = httpjson.CodeTeamConflict
	CodeTeamsClosed   = httpjson.CodeTeamsClosed
)

const (
	maxTeamBodyBytes  = 1 << 20
	sseHeartbeatEvery = 15 * time.Second
	sseChunkBytes     = 256 << 10
)

// API serves the teams over HTTP: create and list them, show one, follow
// its team log as server-sent events, spawn a member, send as the human
// and stop a team. The driver does the rest: a message sent here wakes
// the member it is for.
type API struct {
	s *Store

	draining    context.Context // ends at Drain: event streams end
	stopStreams context.CancelFunc
	heartbeat   time.Duration
}

// NewAPI returns the API over s.
func NewAPI(s *Store) *API {
	a := &API{s: s, heartbeat: sseHeartbeatEvery}
	a.draining, a.stopStreams = context.WithCancel(context.Background())
	return a
}

// Mount adds the routes with handle (net/http.ServeMux patterns).
func (a *API) Mount(handle func(pattern string, h http.Handler)) {
	handle("POST /v1/teams", http.HandlerFunc(a.create))
	handle("GET /v1/teams", http.HandlerFunc(a.list))
	handle("GET /v1/teams/{id}", http.HandlerFunc(a.get))
	handle("GET /v1/teams/{id}/events", http.HandlerFunc(a.events))
	handle("POST /v1/teams/{id}/members", http.HandlerFunc(a.spawn))
	handle("POST /v1/teams/{id}/messages", http.HandlerFunc(a.send))
	handle("POST /v1/teams/{id}/stop", http.HandlerFunc(a.stop))
}

// Drain ends the event streams, which otherwise last as long as a team.
func (a *API) Drain() { a.stopStreams() }

// CreateRequest is the body of POST /v1/teams.
type CreateRequest struct {
	ID     string     `json:"id"`
	Lead   MemberSpec `json:"lead"`             // its name is "lead" when empty
	Task   string     `json:"task,omitempty"`   // the human's first message to the lead
	Budget int64      `json:"budget,omitempty"` // tokens for the whole team
	GraceS float64    `json:"grace_s,omitempty"`
}

// SendRequest is the body of POST /v1/teams/{id}/messages: a message as
// the human, to one member (To) or to every teammate (Broadcast).
type SendRequest struct {
	To        string `json:"to,omitempty"`
	Text      string `json:"text"`
	Broadcast bool   `json:"broadcast,omitempty"`
	ID        string `json:"id,omitempty"` // set it to retry a send safely
}

// StopRequest is the optional body of POST /v1/teams/{id}/stop.
type StopRequest struct {
	Reason string `json:"reason,omitempty"`
}

// TeamView is a team as GET /v1/teams/{id} shows it.
type TeamView struct {
	Summary
	Tasks []Task `json:"tasks"`
	// Answer is the lead's latest answer to the human: what it said when
	// it last ended a turn without a tool call.
	Answer string `json:"answer,omitempty"`
}

func (a *API) create(w http.ResponseWriter, r *http.Request) {
	var req CreateRequest
	if err := httpjson.Decode(w, r, maxTeamBodyBytes, &req, `expected {"id": "<team id>", "lead": {"profile": "<profile>"}, "task": "<text>"}`); err != nil {
		httpjson.WriteError(w, err)
		return
	}
	if req.Lead.Name == "" {
		req.Lead.Name = "lead"
	}
	if req.GraceS < 0 {
		httpjson.WriteError(w, registry.Errorf(registry.CodeBadRequest, "grace_s must not be negative"))
		return
	}
	t, err := a.s.Create(Spec{ID: req.ID, Lead: req.Lead, Budget: req.Budget, Grace: time.Duration(req.GraceS * float64(time.Second))})
	if err != nil {
		httpjson.WriteError(w, apiError(err))
		return
	}
	if req.Task != "" {
		if _, err := t.Send(Message{ID: "task", Type: TypeMessage, From: Human, To: req.Lead.Name, Content: req.Task}); err != nil {
			httpjson.WriteError(w, apiError(err))
			return
		}
	}
	httpjson.Write(w, http.StatusCreated, a.view(t))
}

func (a *API) list(w http.ResponseWriter, r *http.Request) {
	ids, err := a.s.IDs()
	if err != nil {
		httpjson.WriteError(w, apiError(err))
		return
	}
	out := []Summary{}
	for _, id := range ids {
		t, err := a.s.Team(id)
		if err != nil {
			continue // a folder left by a Create cut short, or a damaged team: GET /v1/teams/{id} says why
		}
		out = append(out, t.Summary())
	}
	httpjson.Write(w, http.StatusOK, map[string]any{"teams": out})
}

func (a *API) team(w http.ResponseWriter, r *http.Request) (*Team, bool) {
	t, err := a.s.Team(r.PathValue("id"))
	if err != nil {
		httpjson.WriteError(w, apiError(err))
		return nil, false
	}
	return t, true
}

func (a *API) view(t *Team) TeamView {
	tasks := t.Tasks()
	if tasks == nil {
		tasks = []Task{}
	}
	v := TeamView{Summary: t.Summary(), Tasks: tasks}
	if evs, err := t.Events(v.Lead, 0); err == nil {
		if c, err := rebuild(evs); err == nil {
			v.Answer = c.answer
		}
	}
	return v
}

func (a *API) get(w http.ResponseWriter, r *http.Request) {
	if t, ok := a.team(w, r); ok {
		httpjson.Write(w, http.StatusOK, a.view(t))
	}
}

func (a *API) spawn(w http.ResponseWriter, r *http.Request) {
	t, ok := a.team(w, r)
	if !ok {
		return
	}
	var spec MemberSpec
	if err := httpjson.Decode(w, r, maxTeamBodyBytes, &spec, `expected {"name": "<name>", "role": "<role>", "profile": "<profile>"}`); err != nil {
		httpjson.WriteError(w, err)
		return
	}
	m, err := t.Spawn(Human, spec)
	if err != nil {
		httpjson.WriteError(w, apiError(err))
		return
	}
	httpjson.Write(w, http.StatusCreated, m)
}

func (a *API) send(w http.ResponseWriter, r *http.Request) {
	t, ok := a.team(w, r)
	if !ok {
		return
	}
	var req SendRequest
	if err := httpjson.Decode(w, r, maxTeamBodyBytes, &req, `expected {"to": "<member>", "text": "<text>"} or {"broadcast": true, "text": "<text>"}`); err != nil {
		httpjson.WriteError(w, err)
		return
	}
	m := Message{ID: req.ID, Type: TypeMessage, From: Human, To: req.To, Content: req.Text}
	switch {
	case req.Text == "":
		httpjson.WriteError(w, registry.Errorf(registry.CodeBadRequest, `"text" is required`))
		return
	case req.Broadcast && req.To != "":
		httpjson.WriteError(w, registry.Errorf(registry.CodeBadRequest, `"to" and "broadcast" exclude each other`))
		return
	case req.Broadcast:
		m.Type, m.To = TypeBroadcast, ""
	case req.To == "":
		httpjson.WriteError(w, registry.Errorf(registry.CodeBadRequest, `"to" (a member) or "broadcast": true is required`))
		return
	}
	sent, err := t.Send(m)
	if err != nil {
		httpjson.WriteError(w, apiError(err))
		return
	}
	httpjson.Write(w, http.StatusAccepted, map[string]string{"id": sent.ID})
}

func (a *API) stop(w http.ResponseWriter, r *http.Request) {
	t, ok := a.team(w, r)
	if !ok {
		return
	}
	var req StopRequest
	if r.ContentLength != 0 {
		if err := httpjson.Decode(w, r, maxTeamBodyBytes, &req, `expected {"reason": "<why>"} or no body`); err != nil {
			httpjson.WriteError(w, err)
			return
		}
	}
	if t.Summary().Stopped {
		httpjson.WriteError(w, registry.Errorf(CodeTeamStopped, "team %s is stopped already", t.ID()))
		return
	}
	if err := t.Stop(Human, req.Reason); err != nil {
		httpjson.WriteError(w, apiError(err))
		return
	}
	httpjson.Write(w, http.StatusOK, a.view(t))
}

// events streams the team log as server-sent events: id is the seq, so a
// client that reconnects with Last-Event-ID (or ?after=) misses nothing.
func (a *API) events(w http.ResponseWriter, r *http.Request) {
	t, ok := a.team(w, r)
	if !ok {
		return
	}
	from, err := sse.After(r)
	if err != nil {
		httpjson.WriteError(w, registry.Errorf(registry.CodeBadRequest, "%v", err))
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(a.draining, cancel)()
	stream := sse.New(w, a.heartbeat)
	defer stream.Stop()
	stream.Start()
	for {
		evs, changed, err := t.ReadEvents(from, sseChunkBytes)
		if err != nil {
			stream.Event("error", map[string]string{"message": err.Error()})
			return
		}
		for _, ev := range evs {
			if stream.EventID(ev.Seq, string(ev.Kind), ev) != nil {
				return
			}
			from = ev.Seq
		}
		if len(evs) > 0 {
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		}
	}
}

// apiError maps the package's errors to the error shape.
func apiError(err error) *registry.Error {
	var re *registry.Error
	switch {
	case errors.As(err, &re):
		return re
	case errors.Is(err, ErrUnknownTeam):
		return registry.Errorf(CodeUnknownTeam, "%v", err)
	case errors.Is(err, ErrUnknownMember):
		return registry.Errorf(CodeUnknownMember, "%v", err)
	case errors.Is(err, ErrTeamExists), errors.Is(err, ErrMemberExists):
		return registry.Errorf(CodeTeamExists, "%v", err)
	case errors.Is(err, ErrTeamStopped), errors.Is(err, ErrMemberStopped):
		return registry.Errorf(CodeTeamStopped, "%v", err)
	case errors.Is(err, ErrLeadOnly):
		return registry.Errorf(registry.CodeForbidden, "%v", err)
	case errors.Is(err, ErrClosed):
		return registry.Errorf(CodeTeamsClosed, "%v; the host is stopping", err)
	case errors.Is(err, ErrInvalid), errors.Is(err, ErrUnknownTask), errors.Is(err, ErrUnknownDependency),
		errors.Is(err, ErrDependencyCycle), errors.Is(err, ErrUnknownRequest):
		return registry.Errorf(registry.CodeBadRequest, "%v", err)
	case errors.Is(err, ErrRequestAnswered), errors.Is(err, ErrRequestExists), errors.Is(err, ErrNotAddressee),
		errors.Is(err, ErrNotInPlanMode), errors.Is(err, ErrNotClaimable), errors.Is(err, ErrHoldsTask),
		errors.Is(err, ErrNotClaimant), errors.Is(err, ErrBudgetExceeded), errors.Is(err, ErrTaskExists):
		return registry.Errorf(CodeTeamConflict, "%v", err)
	case errors.Is(err, ErrTimeout):
		return registry.Errorf(registry.CodeTimeout, "%v", err)
	}
	return registry.AsError(err)
}
