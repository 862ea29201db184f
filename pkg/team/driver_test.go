package team

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/skillhost/skillhost/pkg/agent"
	"github.com/skillhost/skillhost/pkg/registry"
)

// The test's skills, in process: frontend.build and backend.migrate,
// each tagged for its profile.
type skillBackend struct{ calls sync.Map }

func (b *skillBackend) Acquire() bool { return true }
func (b *skillBackend) Release()      {}
func (b *skillBackend) Invoke(_ context.Context, tool string, args []byte, _ int64) ([]byte, error) {
	n, _ := b.calls.LoadOrStore(tool, new(int))
	*n.(*int)++
	return fmt.Appendf(nil, `{"tool":%q,"ok":true}`, tool), nil
}

func testRegistry(t *testing.T) (*registry.Registry, *skillBackend) {
	t.Helper()
	return registryOf(t), nil
}

// registryOf is the test registry, for tests and benchmarks.
func registryOf(t testing.TB) *registry.Registry {
	t.Helper()
	b := &skillBackend{}
	reg := registry.New(registry.Config{})
	schema := json.RawMessage(`{"type":"object","properties":{"what":{"type":"string"}}}`)
	ro := registry.Annotations{ReadOnly: true}
	for _, s := range []struct{ skill, tool, tag string }{{"frontend", "build", "frontend"}, {"backend", "migrate", "backend"}} {
		if _, err := reg.Put(registry.SkillSpec{Name: s.skill, Version: "1.0.0", Description: s.skill + " work.", Tags: []string{s.tag}, Backend: b,
			Tools: []registry.ToolSpec{{Name: s.tool, Description: "Do " + s.skill + " work: " + s.tool + ".", InputSchema: schema, Annotations: ro}}}); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

const teamProfilesYAML = `
default: lead
profiles:
  lead: {system: You lead the team., max_steps: 8}
  frontend: {system: You build web pages., tags: [frontend], max_steps: 4}
  backend: {system: You build services., tags: [backend], max_steps: 4}
`

// rule is a member's scripted behaviour: given its turn so far (the
// newest user message and how many model answers followed it), what it
// answers. A script of rules, rather than a queue, keeps the test true
// whichever order the workers run the members in.
type rule func(mail string, step int, req openai.ChatCompletionRequest) openai.ChatCompletionMessage

type teamModel struct {
	t     *testing.T
	rules map[string]rule
	usage int

	mu   sync.Mutex // guards reqs
	reqs map[string][]openai.ChatCompletionRequest
}

var youAreRE = regexp.MustCompile(`You are ([a-z0-9_-]+),`)

func (m *teamModel) Complete(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionMessage, openai.Usage, error) {
	who := "?"
	if s := youAreRE.FindStringSubmatch(req.Messages[0].Content); s != nil {
		who = s[1]
	}
	m.mu.Lock()
	if m.reqs == nil {
		m.reqs = map[string][]openai.ChatCompletionRequest{}
	}
	m.reqs[who] = append(m.reqs[who], req)
	m.mu.Unlock()
	r := m.rules[who]
	if r == nil {
		m.t.Errorf("no rule for %s", who)
		return openai.ChatCompletionMessage{}, openai.Usage{}, errors.New("no rule for " + who)
	}
	last := 0
	for i, msg := range req.Messages {
		if msg.Role == openai.ChatMessageRoleUser {
			last = i
		}
	}
	step := 0
	for _, msg := range req.Messages[last:] {
		if msg.Role == openai.ChatMessageRoleAssistant {
			step++
		}
	}
	n := m.usage
	if n == 0 {
		n = 5
	}
	return r(req.Messages[last].Content, step, req), openai.Usage{PromptTokens: n, CompletionTokens: n}, ctx.Err()
}

func (m *teamModel) requests(who string) []openai.ChatCompletionRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]openai.ChatCompletionRequest(nil), m.reqs[who]...)
}

func say(s string) openai.ChatCompletionMessage {
	return openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: s}
}

func calls(pairs ...string) openai.ChatCompletionMessage {
	msg := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant}
	for i := 0; i < len(pairs); i += 2 {
		msg.ToolCalls = append(msg.ToolCalls, openai.ToolCall{ID: fmt.Sprint("m", i), Type: openai.ToolTypeFunction,
			Function: openai.FunctionCall{Name: pairs[i], Arguments: pairs[i+1]}})
	}
	return msg
}

var requestIDRE = regexp.MustCompile(`request_id ([A-Za-z0-9_-]+)`)

// leadRule is the pattern's walk-through from the lead's side.
func leadRule(mail string, step int, _ openai.ChatCompletionRequest) openai.ChatCompletionMessage {
	switch {
	case strings.Contains(mail, "build the app"):
		return []openai.ChatCompletionMessage{
			calls(ToolSpawn, `{"name":"fe-dev","role":"frontend","profile":"frontend"}`, ToolSpawn, `{"name":"be-dev","role":"backend","profile":"backend"}`),
			calls(ToolSend, `{"to":"fe-dev","text":"build the login page"}`),
			calls(ToolBroadcast, `{"text":"share your progress"}`),
			calls(ToolList, `{}`),
			say("the team is at work"),
		}[step]
	case strings.Contains(mail, "shut the team down"):
		return []openai.ChatCompletionMessage{
			calls(ToolRequestShutdown, `{"to":"fe-dev"}`, ToolRequestShutdown, `{"to":"be-dev"}`),
			say("asked both to shut down"),
		}[step]
	}
	return []openai.ChatCompletionMessage{calls(ToolRead, `{}`), say("read my inbox: done")}[step]
}

// mateRule answers with the member's own skill tool, and approves a
// shutdown request.
func mateRule(tool string) rule {
	return func(mail string, step int, _ openai.ChatCompletionRequest) openai.ChatCompletionMessage {
		if id := requestIDRE.FindStringSubmatch(mail); id != nil && strings.Contains(mail, "shutdown_request") {
			return []openai.ChatCompletionMessage{
				calls(ToolRespondShutdown, fmt.Sprintf(`{"request_id":%q,"approve":true}`, id[1])),
				say("shutting down"),
			}[step]
		}
		return []openai.ChatCompletionMessage{calls(tool, `{"what":"progress"}`), say("progress: " + tool + " done")}[step]
	}
}

// driverHarness runs a Driver over a fresh store until the test ends.
type driverHarness struct {
	t     *testing.T
	dir   string
	store *Store
	model *teamModel
	reg   *registry.Registry
	halt  context.CancelFunc // cancels the driver's turns
	stop  func()             // halts, waits for the driver, closes the store
}

func newDriverHarness(t *testing.T, dir string, model *teamModel) *driverHarness {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	reg, _ := testRegistry(t)
	profiles, err := agent.ParseProfiles([]byte(teamProfilesYAML), "yaml")
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	d, err := NewDriver(DriverConfig{Store: s, Registry: reg, Profiles: profiles, Model: model, Workers: 2,
		Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	h := &driverHarness{t: t, dir: dir, store: s, model: model, reg: reg, halt: cancel}
	var once sync.Once
	h.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Error(err)
			}
			s.Close()
		})
	}
	t.Cleanup(h.stop)
	return h
}

// settle waits until every member has nothing to do. A turn may spawn
// members, so it waits again while the team grows: once every member is
// idle with an empty inbox and none was added meanwhile, nothing is left
// that could send another message.
func settle(t *testing.T, tm *Team) {
	t.Helper()
	for {
		var names []string
		for _, m := range tm.Members() {
			names = append(names, m.Name)
		}
		if _, err := tm.WaitMembers(context.Background(), names, 20*time.Second); err != nil {
			t.Fatalf("team did not settle: %v\n%+v", err, tm.Members())
		}
		if len(tm.Members()) == len(names) {
			return
		}
	}
}

func TestDriverWalkThrough(t *testing.T) {
	model := &teamModel{t: t, rules: map[string]rule{
		"lead": leadRule, "fe-dev": mateRule("frontend__build"), "be-dev": mateRule("backend__migrate")}}
	h := newDriverHarness(t, "", model)
	tm, err := h.store.Create(Spec{ID: "web", Lead: MemberSpec{Name: "lead", Profile: "lead"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tm.Send(Message{Type: TypeMessage, From: Human, To: "lead", Content: "build the app"}); err != nil {
		t.Fatal(err)
	}
	// The lead's first turn spawns, sends, broadcasts and lists; each
	// teammate answers with its own skill and its answer goes to the
	// lead, who reads its inbox and finishes.
	settle(t, tm)
	got := map[string]bool{}
	for _, m := range mustHistory(t, tm, "lead") {
		if m.From == "fe-dev" || m.From == "be-dev" {
			got[m.From+": "+m.Content] = true
		}
	}
	for _, want := range []string{"fe-dev: progress: frontend__build done", "be-dev: progress: backend__migrate done"} {
		if !got[want] {
			t.Errorf("the lead never got %q; got %v", want, got)
		}
	}
	// Each member was offered its own tools: the lead the team's lead
	// tools, fe-dev frontend.build and no lead tool.
	offered := func(who string) []string {
		var names []string
		for _, tl := range model.requests(who)[0].Tools {
			names = append(names, tl.Function.Name)
		}
		return names
	}
	if fe := strings.Join(offered("fe-dev"), " "); !strings.Contains(fe, "frontend__build") || strings.Contains(fe, "backend__") || strings.Contains(fe, ToolSpawn) {
		t.Errorf("fe-dev was offered %s", fe)
	}
	if lead := strings.Join(offered("lead"), " "); !strings.Contains(lead, ToolSpawn) || !strings.Contains(lead, ToolBroadcast) || strings.Contains(lead, ToolRespondShutdown) {
		t.Errorf("the lead was offered %s", lead)
	}
	// The list the lead saw named both teammates.
	if !listedBoth(model.requests("lead")) {
		t.Error("list_teammates did not show fe-dev and be-dev to the lead")
	}
	// fe-dev saw the task and the broadcast.
	var feMail strings.Builder
	for _, r := range model.requests("fe-dev") {
		for _, m := range r.Messages {
			if m.Role == openai.ChatMessageRoleUser {
				feMail.WriteString(m.Content + "\n")
			}
		}
	}
	for _, want := range []string{"[message from lead] build the login page", "[broadcast from lead] share your progress"} {
		if !strings.Contains(feMail.String(), want) {
			t.Errorf("fe-dev never saw %q:\n%s", want, feMail.String())
		}
	}

	// Shut both down through the protocol.
	if _, err := tm.Send(Message{Type: TypeMessage, From: Human, To: "lead", Content: "shut the team down"}); err != nil {
		t.Fatal(err)
	}
	settle(t, tm)
	for _, name := range []string{"fe-dev", "be-dev"} {
		m, _ := tm.Member(name)
		if m.Status != StatusStopped || m.Reason != ReasonShutdown {
			t.Errorf("%s is %s (%s), want stopped by shutdown", name, m.Status, m.Reason)
		}
	}
	if lead, _ := tm.Member("lead"); lead.Status != StatusIdle || lead.TokensUsed == 0 {
		t.Errorf("lead: %+v", lead)
	}
}

// waitUntil waits until cond (called with the team's lock held) holds.
func waitUntil(t *testing.T, tm *Team, cond func() bool) {
	t.Helper()
	_, err := waitFor(context.Background(), tm, 20*time.Second, func() (struct{}, bool, error) { return struct{}{}, cond(), nil })
	if err != nil {
		t.Fatalf("waiting: %v\n%+v", err, tm.Members())
	}
}

func listedBoth(reqs []openai.ChatCompletionRequest) bool {
	for _, r := range reqs {
		for _, m := range r.Messages {
			if m.Role == openai.ChatMessageRoleTool && strings.Contains(m.Content, `"name":"fe-dev"`) && strings.Contains(m.Content, `"name":"be-dev"`) {
				return true
			}
		}
	}
	return false
}

func mustHistory(t *testing.T, tm *Team, name string) []Message {
	t.Helper()
	ms, err := tm.History(name, 0)
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

func TestDriverBudgetStopsMemberAndTellsLead(t *testing.T) {
	model := &teamModel{t: t, usage: 50, rules: map[string]rule{
		"lead": func(string, int, openai.ChatCompletionRequest) openai.ChatCompletionMessage { return say("ok") },
		"fe-dev": func(_ string, step int, _ openai.ChatCompletionRequest) openai.ChatCompletionMessage {
			return calls("frontend__build", `{}`) // never ends on its own: the budget ends it
		}}}
	h := newDriverHarness(t, "", model)
	tm, err := h.store.Create(Spec{ID: "b", Lead: MemberSpec{Name: "lead", Profile: "lead"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tm.Spawn(Human, MemberSpec{Name: "fe-dev", Role: "frontend", Profile: "frontend", Budget: 150}); err != nil {
		t.Fatal(err)
	}
	if _, err := tm.Send(Message{Type: TypeMessage, From: Human, To: "fe-dev", Content: "work"}); err != nil {
		t.Fatal(err)
	}
	// The lead is told, and takes its turn on the notice.
	waitUntil(t, tm, func() bool { return tm.st.members["lead"].used > 0 })
	settle(t, tm)
	m, _ := tm.Member("fe-dev")
	if m.Status != StatusStopped || m.Reason != ReasonBudgetExceeded || m.TokensUsed != 200 {
		t.Errorf("fe-dev: %+v, want stopped for its budget after 2 calls of 100 tokens", m)
	}
	if n := len(model.requests("fe-dev")); n != 2 {
		t.Errorf("fe-dev's model was called %d times, want 2", n)
	}
	var told bool
	for _, msg := range mustHistory(t, tm, "lead") {
		told = told || msg.Type == TypeNotice && strings.Contains(msg.Content, "fe-dev")
	}
	if !told {
		t.Error("the lead was not told fe-dev spent its budget")
	}
}

// A restart mid-turn: the driver is stopped while a teammate's turn has a
// logged call without its result; the next driver answers the call
// without a model call and goes on, delivering the answer once.
func TestDriverResumesAfterRestart(t *testing.T) {
	dir := t.TempDir()
	block := make(chan struct{})
	entered := make(chan struct{}, 1)
	first := &teamModel{t: t, rules: map[string]rule{
		"lead": func(string, int, openai.ChatCompletionRequest) openai.ChatCompletionMessage { return say("noted") },
		"fe-dev": func(mail string, step int, req openai.ChatCompletionRequest) openai.ChatCompletionMessage {
			if step == 0 {
				return calls(ToolSend, `{"to":"lead","text":"started"}`)
			}
			entered <- struct{}{}
			<-block // the daemon dies here, after the send's result was logged
			return say("never")
		}}}
	h := newDriverHarness(t, dir, first)
	tm, err := h.store.Create(Spec{ID: "r", Lead: MemberSpec{Name: "lead", Profile: "lead"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tm.Spawn(Human, MemberSpec{Name: "fe-dev", Profile: "frontend"}); err != nil {
		t.Fatal(err)
	}
	if _, err := tm.Send(Message{Type: TypeMessage, From: Human, To: "fe-dev", Content: "go"}); err != nil {
		t.Fatal(err)
	}
	<-entered
	h.halt() // the daemon dies while the model thinks
	close(block)
	h.stop()
	used := tm.Members()[1].TokensUsed

	second := &teamModel{t: t, rules: map[string]rule{
		"lead":   func(string, int, openai.ChatCompletionRequest) openai.ChatCompletionMessage { return say("noted") },
		"fe-dev": func(string, int, openai.ChatCompletionRequest) openai.ChatCompletionMessage { return say("finished") }}}
	h2 := newDriverHarness(t, dir, second)
	tm2, err := h2.store.Team("r")
	if err != nil {
		t.Fatal(err)
	}
	// fe-dev's open turn goes on at the restart, with no new mail: the
	// logged send is not made again.
	waitUntil(t, tm2, func() bool { return tm2.st.members["fe-dev"].used > used })
	settle(t, tm2)
	var started, finished int
	for _, m := range mustHistory(t, tm2, "lead") {
		switch m.Content {
		case "started":
			started++
		case "finished":
			finished++
		}
	}
	if started != 1 || finished != 1 {
		t.Errorf("the lead got started %d times and finished %d times, want once each", started, finished)
	}
}

// A teammate in plan mode has read-only tools until the lead approves
// the plan it asks approval for; then it gets them all.
func TestDriverPlanApproval(t *testing.T) {
	model := &teamModel{t: t, rules: map[string]rule{
		"lead": func(mail string, step int, _ openai.ChatCompletionRequest) openai.ChatCompletionMessage {
			if id := requestIDRE.FindStringSubmatch(mail); id != nil && strings.Contains(mail, "plan_approval_request") {
				return []openai.ChatCompletionMessage{calls(ToolApprovePlan, fmt.Sprintf(`{"request_id":%q,"approve":true}`, id[1])), say("approved")}[step]
			}
			return say("ok")
		},
		"fe-dev": func(mail string, step int, _ openai.ChatCompletionRequest) openai.ChatCompletionMessage {
			if strings.Contains(mail, "plan_approval_response") {
				return say("working")
			}
			return []openai.ChatCompletionMessage{calls(ToolRequestPlan, `{"plan":"build the page"}`), say("asked")}[step]
		},
	}}
	h := newDriverHarness(t, "", model)
	tm, err := h.store.Create(Spec{ID: "p", Lead: MemberSpec{Name: "lead", Profile: "lead"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tm.Spawn(Human, MemberSpec{Name: "fe-dev", Profile: "frontend", PlanMode: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := tm.Send(Message{Type: TypeMessage, From: Human, To: "fe-dev", Content: "plan the login page"}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, tm, func() bool { return tm.st.members["fe-dev"].status != StatusPlanMode })
	settle(t, tm)
	tools := func(r openai.ChatCompletionRequest) string {
		var names []string
		for _, tl := range r.Tools {
			names = append(names, tl.Function.Name)
		}
		return strings.Join(names, " ")
	}
	reqs := model.requests("fe-dev")
	if first := tools(reqs[0]); strings.Contains(first, ToolClaimTask) || !strings.Contains(first, ToolRequestPlan) || !strings.Contains(first, "frontend__build") {
		t.Errorf("in plan mode fe-dev was offered %s", first)
	}
	if last := tools(reqs[len(reqs)-1]); !strings.Contains(last, ToolClaimTask) {
		t.Errorf("after the approval fe-dev was offered %s", last)
	}
	if m, _ := tm.Member("fe-dev"); m.Status != StatusIdle {
		t.Errorf("fe-dev is %s", m.Status)
	}
}
