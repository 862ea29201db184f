package host

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	openai "github.com/sashabaranov/go-openai"

	"github.com/skillhost/skillhost/internal/testenv"
	"github.com/skillhost/skillhost/pkg/api"
)

// scriptedModel is an OpenAI-compatible endpoint answering from a script, recording requests.
type scriptedModel struct {
	mu     sync.Mutex // guards script and got
	script []openai.ChatCompletionMessage
	got    []openai.ChatCompletionRequest
}

func (m *scriptedModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req openai.ChatCompletionRequest
	json.NewDecoder(r.Body).Decode(&req)
	m.mu.Lock()
	m.got = append(m.got, req)
	msg := openai.ChatCompletionMessage{Role: "assistant", Content: "script exhausted"}
	if len(m.script) > 0 {
		msg, m.script = m.script[0], m.script[1:]
	}
	m.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(openai.ChatCompletionResponse{Object: "chat.completion", Model: req.Model,
		Choices: []openai.ChatCompletionChoice{{Message: msg, FinishReason: openai.FinishReasonStop}}})
}

func (m *scriptedModel) then(msgs ...openai.ChatCompletionMessage) {
	m.mu.Lock()
	m.script = append(m.script, msgs...)
	m.mu.Unlock()
}

func (m *scriptedModel) requests() []openai.ChatCompletionRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.got)
}

func toolCall(id, name, args string) openai.ChatCompletionMessage {
	return openai.ChatCompletionMessage{Role: "assistant", ToolCalls: []openai.ToolCall{{ID: id, Type: "function",
		Function: openai.FunctionCall{Name: name, Arguments: args}}}}
}

// install moves a folder into the tree in one rename, as scripts/install-skill.sh does.
func install(t *testing.T, root, name string, files map[string]string, from string) {
	t.Helper()
	stage := filepath.Join(root, "_stage-"+name)
	if from != "" {
		if err := os.CopyFS(stage, os.DirFS(from)); err != nil {
			t.Fatal(err)
		}
	}
	for rel, content := range files {
		writeAtomic(t, filepath.Join(stage, rel), content)
	}
	dst := filepath.Join(root, name)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(stage, dst); err != nil {
		t.Fatal(err)
	}
}

func writeAtomic(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(filepath.Dir(path), ".tmp-"+filepath.Base(path))
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func getJSON(t *testing.T, url string, v any) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode
}

// skillsByName lists the daemon's skills.
func skillsByName(t *testing.T, base string) map[string]api.Skill {
	var list api.SkillList
	getJSON(t, base+"/v1/skills", &list)
	out := map[string]api.Skill{}
	for _, s := range list.Skills {
		out[s.Name] = s
	}
	return out
}

// waitSkills waits until the daemon's skills satisfy cond: the positive signal of a reload.
func waitSkills(t *testing.T, base, what string, cond func(map[string]api.Skill) bool) map[string]api.Skill {
	t.Helper()
	var last map[string]api.Skill
	if !testenv.WaitFor(20*time.Second, func() bool { last = skillsByName(t, base); return cond(last) }) {
		b, _ := json.MarshalIndent(last, "", " ")
		t.Fatalf("never saw %s; skills:\n%s", what, b)
	}
	return last
}

func chat(t *testing.T, base, question string) map[string]any {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"messages": []map[string]string{{"role": "user", "content": question}}})
	resp, err := http.Post(base+"/v1/chat", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("POST /v1/chat %q: %d %s", question, resp.StatusCode, b)
	}
	var out map[string]any
	json.Unmarshal(b, &out)
	return out
}

func toolsOf(req openai.ChatCompletionRequest) []string {
	var out []string
	for _, tl := range req.Tools {
		out = append(out, tl.Function.Name)
	}
	return out
}

// TestAgentSkillsInALiveDaemon drops three Agent Skills folders (pkg/skillmd's fixtures,
// copied at test time) and a versioned one into a running daemon's watched tree, beside the
// calc example, and checks what the API lists and serves, what the agent loop offers and
// activates, and hot reload: an edit, a new version, an invalid copy, a removal.
func TestAgentSkillsInALiveDaemon(t *testing.T) {
	root := t.TempDir()
	cmd := exec.Command("bash", "scripts/build-skills.sh", "--out", root, "calc")
	cmd.Dir = testenv.ModuleRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build calc: %v\n%s", err, out)
	}
	model := &scriptedModel{}
	llm := httptest.NewServer(model)
	defer llm.Close()
	h, err := New(Config{
		Skills: root, Listen: "127.0.0.1:0", StateDir: t.TempDir(), Grace: 5 * time.Second,
		Watch: true, Debounce: 50 * time.Millisecond,
		Agent: &AgentConfig{BaseURL: llm.URL + "/v1", Model: "scripted"},
		MCP:   &MCPConfig{},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Start(); err != nil {
		t.Fatal(err)
	}
	defer h.Shutdown(t.Context())
	<-h.Ready()
	base := "http://" + h.Addr().String()

	fixtures := filepath.Join(testenv.ModuleRoot(), "pkg", "skillmd", "testdata", "skills")
	for _, name := range []string{"pdf-processing", "brand-guidelines", "changelog-writer"} {
		install(t, root, name, nil, filepath.Join(fixtures, name))
	}
	trip := "---\nname: trip-budget\ndescription: Work out a business trip's lodging budget: nights times the nightly rate. Use `calc.evaluate` for the sum.\n---\n\nMultiply with calc.evaluate.\n"
	install(t, root, "trip-budget/1.0.0", map[string]string{"SKILL.md": trip}, "")

	all := waitSkills(t, base, "four instruction skills", func(m map[string]api.Skill) bool {
		n := 0
		for _, s := range m {
			if s.Kind == api.KindInstructions && s.Active != "" {
				n++
			}
		}
		return n == 4
	})
	if c := all["calc"]; c.Kind != api.KindBinary || c.Active == "" {
		t.Fatalf("calc = %+v", c)
	}
	pdf := all["pdf-processing"]
	if pdf.Active != "1.2.0" || !strings.HasPrefix(pdf.Description, "Pull text and tables out of PDF files") ||
		pdf.Instructions == nil || !slices.ContainsFunc(pdf.Instructions.Files, func(f api.File) bool { return f.Path == "scripts/fill_form.py" && f.Kind == "script" }) {
		t.Fatalf("pdf-processing = %+v", pdf)
	}
	if tb := all["trip-budget"]; tb.Instructions == nil || !slices.Equal(tb.Instructions.Tools, []string{"calc.evaluate"}) {
		t.Fatalf("trip-budget names %+v, want calc.evaluate", tb.Instructions)
	}
	if cw := all["changelog-writer"]; cw.Instructions == nil || len(cw.Instructions.Problems) == 0 {
		t.Fatalf("changelog-writer shows no warnings (it has an unknown field): %+v", cw)
	}

	// Files are served read-only, as they are on disk.
	want, _ := os.ReadFile(filepath.Join(fixtures, "pdf-processing", "references", "forms.md"))
	if code, body := get(t, base+"/v1/skills/pdf-processing/files/references/forms.md"); code != 200 || body != string(want) {
		t.Fatalf("GET forms.md = %d %q", code, body)
	}
	if code, body := get(t, base+"/v1/skills/pdf-processing/files/.secret"); code != 400 || !strings.Contains(body, "not a plain relative path") {
		t.Fatalf("GET a hidden path = %d %s", code, body)
	}

	// MCP: every served file is a skill:// resource of the live catalog.
	resChanged := make(chan struct{}, 16)
	mc := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "skills-test", Version: "0"}, &mcpsdk.ClientOptions{
		ResourceListChangedHandler: func(context.Context, *mcpsdk.ResourceListChangedRequest) {
			select {
			case resChanged <- struct{}{}:
			default:
			}
		},
	})
	cs, err := mc.Connect(t.Context(), &mcpsdk.StreamableClientTransport{Endpoint: base + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	resourceURIs := func() []string {
		t.Helper()
		res, err := cs.ListResources(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var uris []string
		for _, r := range res.Resources {
			uris = append(uris, r.URI)
		}
		return uris
	}
	if uris := resourceURIs(); !slices.Contains(uris, "skill://pdf-processing/references/forms.md") || !slices.Contains(uris, "skill://trip-budget/SKILL.md") {
		t.Fatalf("MCP resources = %v", uris)
	}
	if rr, err := cs.ReadResource(t.Context(), &mcpsdk.ReadResourceParams{URI: "skill://pdf-processing/references/forms.md"}); err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text != string(want) {
		t.Fatalf("read skill://pdf-processing/references/forms.md: %v %+v", err, rr)
	}

	// Issue 28, item 14: a bare expression reaches the calculator under the default profile.
	model.then(openai.ChatCompletionMessage{Role: "assistant", Content: "395"})
	chat(t, base, "what is 17*23+4?")
	if first := model.requests()[0]; !slices.Contains(toolsOf(first), "calc__evaluate") {
		t.Fatalf("what is 17*23+4? was offered %v, not calc__evaluate", toolsOf(first))
	}

	// The agent loop: the catalog lists the skill that fits, the model activates it and reads
	// a file it refers to.
	model.then(toolCall("a1", "activate_skill", `{"name":"pdf-processing"}`),
		toolCall("r1", "read_skill_file", `{"skill":"pdf-processing","path":"references/forms.md"}`),
		openai.ChatCompletionMessage{Role: "assistant", Content: "Filled."})
	resp := chat(t, base, "please fill in this PDF form for me")
	reqs := model.requests()[1:]
	if len(reqs) != 3 || resp["answer"] != "Filled." {
		t.Fatalf("%d model requests, response %v", len(reqs), resp)
	}
	if sys := reqs[0].Messages[0]; sys.Role != "system" || !strings.Contains(sys.Content, "- pdf-processing: Pull text and tables") {
		t.Fatalf("no skill catalog in the first request: %+v", reqs[0].Messages[0])
	}
	if act := reqs[1].Messages[len(reqs[1].Messages)-1].Content; !strings.Contains(act, "# Working with PDF files") {
		t.Fatalf("activation answered %.300s", act)
	}
	if read := reqs[2].Messages[len(reqs[2].Messages)-1].Content; !strings.Contains(read, strings.SplitN(string(want), "\n", 2)[0]) {
		t.Fatalf("read_skill_file answered %.300s", read)
	}

	// Hot reload. An edit swaps in (an unversioned folder gets a new digest version).
	cwOld := all["changelog-writer"].Active
	md, _ := os.ReadFile(filepath.Join(root, "changelog-writer", "SKILL.md"))
	writeAtomic(t, filepath.Join(root, "changelog-writer", "SKILL.md"), strings.Replace(string(md), "Write the changelog entry", "Draft the changelog entry", 1))
	waitSkills(t, base, "the edited changelog-writer", func(m map[string]api.Skill) bool {
		return strings.HasPrefix(m["changelog-writer"].Description, "Draft the changelog entry") && m["changelog-writer"].Active != cwOld
	})
	// A new version swaps in.
	install(t, root, "trip-budget/1.1.0", map[string]string{"SKILL.md": strings.Replace(trip, "lodging budget", "lodging and meals budget", 1)}, "")
	waitSkills(t, base, "trip-budget 1.1.0", func(m map[string]api.Skill) bool { return m["trip-budget"].Active == "1.1.0" })
	// An invalid copy keeps the old one serving, with the reason shown.
	writeAtomic(t, filepath.Join(root, "brand-guidelines", "SKILL.md"), "---\nname: brand-guidelines\n---\n\nNo description.\n")
	bg := waitSkills(t, base, "brand-guidelines' invalid copy", func(m map[string]api.Skill) bool {
		s := m["brand-guidelines"]
		return s.Instructions != nil && s.Instructions.Stale
	})["brand-guidelines"]
	if !strings.Contains(bg.Description, "Northwind") || !slices.ContainsFunc(bg.Instructions.Problems, func(p api.Problem) bool {
		return strings.Contains(p.Path, "description") && strings.Contains(p.Message, "not serving")
	}) {
		t.Fatalf("brand-guidelines after an invalid edit = %+v", bg)
	}
	// Removing a folder removes the skill.
	if err := os.RemoveAll(filepath.Join(root, "pdf-processing")); err != nil {
		t.Fatal(err)
	}
	waitSkills(t, base, "pdf-processing gone", func(m map[string]api.Skill) bool { _, ok := m["pdf-processing"]; return !ok })
	if code, _ := get(t, base+"/v1/skills/pdf-processing/files/SKILL.md"); code != 404 {
		t.Fatalf("a removed skill's file answers %d", code)
	}
	// The MCP client was told, and its list follows.
	select {
	case <-resChanged:
	case <-time.After(10 * time.Second):
		t.Fatal("no resources/list_changed after the skills changed")
	}
	if uris := resourceURIs(); slices.ContainsFunc(uris, func(u string) bool { return strings.HasPrefix(u, "skill://pdf-processing/") }) {
		t.Fatalf("a removed skill is still an MCP resource: %v", uris)
	}
}
