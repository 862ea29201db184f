package api_test

import (
	"encoding/json"
	"hash/fnv"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"

	openai "github.com/sashabaranov/go-openai"

	"github.com/skillhost/skillhost/internal/testenv"
)

// searchTool is a tool as GET /v1/tools answers it.
type searchTool struct {
	Name        string          `json:"name"`
	Skill       string          `json:"skill"`
	LLMName     string          `json:"llm_name"`
	Tags        []string        `json:"tags"`
	InputSchema json.RawMessage `json:"input_schema"`
	Available   bool            `json:"available"`
	Score       *float64        `json:"score"`
}

func getTools(t *testing.T, d *testenv.Daemon, params url.Values) []searchTool {
	t.Helper()
	status, body := d.Do(t, http.MethodGet, "/v1/tools?"+params.Encode(), nil)
	if status != http.StatusOK {
		t.Fatalf("GET /v1/tools?%s = %d %s", params.Encode(), status, body)
	}
	var out struct{ Tools []searchTool }
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatalf("GET /v1/tools: %v in %s", err, body)
	}
	return out.Tools
}

func toolNames(tools []searchTool) []string {
	out := make([]string, len(tools))
	for i, tl := range tools {
		out[i] = tl.Name
	}
	return out
}

// startExampleDaemon builds the example skills and the host, as the README
// does, serves them and waits until the first scan settled; env and extra
// flags are added.
func startExampleDaemon(t *testing.T, env []string, extra ...string) *testenv.Daemon {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the host and the example skills")
	}
	skills := t.TempDir()
	if err := testenv.BuildExamples(skills); err != nil {
		t.Fatal(err)
	}
	bin, err := testenv.Build(t.TempDir(), "./cmd/host")
	if err != nil {
		t.Fatal(err)
	}
	d := testenv.StartDaemon(t, bin, env, append([]string{"--skills", skills, "--watch=false"}, extra...)...)
	if !testenv.WaitFor(30*time.Second, func() bool {
		status, _ := d.Do(t, http.MethodGet, "/readyz", nil)
		return status == http.StatusOK
	}) {
		t.Fatalf("daemon not ready within 30s\n%s", d.Logs())
	}
	for _, skill := range []string{"calc", "policy", "textkit"} {
		if len(getTools(t, d, url.Values{"skills": {skill}, "limit": {"128"}})) == 0 {
			t.Fatalf("skill %s serves no tool\n%s", skill, d.Logs())
		}
	}
	return d
}

// TestSearchAPI drives the prefilter through the HTTP API of a real daemon
// serving the real example skills.
func TestSearchAPI(t *testing.T) {
	d := startExampleDaemon(t, nil)

	t.Run("chinese policy question ranks policy first", func(t *testing.T) {
		tools := getTools(t, d, url.Values{"q": {"查询报销制度"}})
		if len(tools) == 0 || tools[0].Skill != "policy" || !strings.HasPrefix(tools[0].Name, "policy.") {
			t.Fatalf("q=查询报销制度 ranks %v, want a policy. tool first", toolNames(tools))
		}
		for i, tl := range tools {
			if tl.Score == nil || *tl.Score <= 0 || (i > 0 && *tl.Score > *tools[i-1].Score) || !tl.Available {
				t.Errorf("tool %d %s: score %v available %v, want descending positive scores of available tools", i, tl.Name, tl.Score, tl.Available)
			}
		}
	})

	t.Run("arithmetic question ranks calc first", func(t *testing.T) {
		for _, q := range []string{"what is 17 times 23 plus 4", "calculate (17*23)+4"} {
			tools := getTools(t, d, url.Values{"q": {q}})
			if len(tools) == 0 || !strings.HasPrefix(tools[0].Name, "calc.") {
				t.Errorf("q=%q ranks %v, want a calc. tool first", q, toolNames(tools))
			}
		}
	})

	t.Run("tags filter", func(t *testing.T) {
		tools := getTools(t, d, url.Values{"tags": {"制度"}})
		if len(tools) == 0 {
			t.Fatal("tags=制度 found nothing; the policy skill is tagged 制度")
		}
		for _, tl := range tools {
			if !slices.Contains(tl.Tags, "制度") || tl.Skill != "policy" {
				t.Errorf("tags=制度 returned %s tagged %v", tl.Name, tl.Tags)
			}
		}
		// A tag no tool carries filters everything out, text or not.
		for _, v := range []url.Values{{"tags": {"no-such-tag"}}, {"tags": {"no-such-tag"}, "q": {"报销"}}} {
			if got := getTools(t, d, v); len(got) != 0 {
				t.Errorf("%s returned %v, want nothing", v.Encode(), toolNames(got))
			}
		}
		// match=all needs every tag.
		all := getTools(t, d, url.Values{"tags": {"制度,检索"}, "match": {"all"}})
		if len(all) != 1 || all[0].Name != "policy.search_policies" {
			t.Errorf("tags=制度,检索&match=all = %v, want [policy.search_policies]", toolNames(all))
		}
	})

	t.Run("openai tools", func(t *testing.T) {
		status, body := d.Do(t, http.MethodGet, "/v1/openai/tools?"+url.Values{"q": {"convert 5 miles to km"}, "limit": {"3"}}.Encode(), nil)
		if status != http.StatusOK {
			t.Fatalf("GET /v1/openai/tools = %d %s", status, body)
		}
		var out struct{ Tools []openai.Tool }
		if err := json.Unmarshal(body, &out); err != nil {
			t.Fatal(err)
		}
		if len(out.Tools) == 0 || len(out.Tools) > 3 {
			t.Fatalf("limit=3 gave %d tools: %s", len(out.Tools), body)
		}
		if got := out.Tools[0].Function.Name; got != "calc__convert_units" {
			t.Errorf("first tool %s, want calc__convert_units", got)
		}
		// Without a limit the model gets the default 5, with or without
		// text, where /v1/tools lists every match of a filter.
		if all := getTools(t, d, url.Values{"read_only": {"true"}}); len(all) <= 5 {
			t.Fatalf("the examples need more than 5 read-only tools for this check, have %d", len(all))
		}
		for _, params := range []string{"", "read_only=true", "q=text"} {
			status, body := d.Do(t, http.MethodGet, "/v1/openai/tools?"+params, nil)
			var got struct{ Tools []openai.Tool }
			if status != http.StatusOK || json.Unmarshal(body, &got) != nil || len(got.Tools) == 0 || len(got.Tools) > 5 {
				t.Errorf("GET /v1/openai/tools?%s = %d with %d tools, want 1 to 5", params, status, len(got.Tools))
			}
		}
		for _, ot := range out.Tools {
			if ot.Type != openai.ToolTypeFunction || ot.Function == nil {
				t.Fatalf("not a function tool: %+v", ot)
			}
			skill, tool, ok := strings.Cut(ot.Function.Name, "__")
			if !ok || skill == "" || tool == "" || len(ot.Function.Name) > 64 || ot.Function.Description == "" {
				t.Errorf("name %q: want skill__tool within 64 characters, with a description", ot.Function.Name)
				continue
			}
			status, raw := d.Do(t, http.MethodGet, "/v1/tools/"+skill+"."+tool, nil)
			if status != http.StatusOK {
				t.Fatalf("GET /v1/tools/%s.%s = %d %s", skill, tool, status, raw)
			}
			var tl searchTool
			if err := json.Unmarshal(raw, &tl); err != nil {
				t.Fatal(err)
			}
			var schema any
			if err := json.Unmarshal(tl.InputSchema, &schema); err != nil {
				t.Fatal(err)
			}
			if tl.LLMName != ot.Function.Name || !reflect.DeepEqual(ot.Function.Parameters, schema) {
				t.Errorf("%s: parameters %v differ from the input schema %s", ot.Function.Name, ot.Function.Parameters, tl.InputSchema)
			}
		}
	})

	t.Run("bad query parameters answer 400 in the one error shape", func(t *testing.T) {
		for _, path := range []string{
			"/v1/tools?q=x&limit=0", "/v1/tools?q=x&limit=abc", "/v1/tools?limit=129", "/v1/tools?q=x&limit=-1",
			"/v1/openai/tools?q=x&limit=0", "/v1/openai/tools?q=x&limit=1.5", "/v1/tools?q=x&match=some",
		} {
			status, body := d.Do(t, http.MethodGet, path, nil)
			var shape map[string]json.RawMessage
			var e struct {
				Code, Message string
			}
			if err := json.Unmarshal(body, &shape); err != nil || len(shape) != 1 || shape["error"] == nil {
				t.Errorf("GET %s: body %s, want exactly {\"error\": {...}}", path, body)
				continue
			}
			if err := json.Unmarshal(shape["error"], &e); err != nil || status != http.StatusBadRequest || e.Code != "bad_request" || e.Message == "" {
				t.Errorf("GET %s = %d %s, want 400 bad_request with a message", path, status, body)
			}
		}
	})
}

// TestSearchAPIEmbeddingRerank serves the examples with --embed-base-url
// pointing at a fake embeddings endpoint: searches call it, and keep
// answering (in text order) when it fails.
func TestSearchAPIEmbeddingRerank(t *testing.T) {
	fake := newFakeEmbeddings(t)
	// No real API key goes to the fake, whatever the environment holds.
	// No skip when the rerank is not wired: that is the failure this test
	// is for, and the searches below reaching the fake show the wiring.
	d := startExampleDaemon(t, []string{"OPENAI_API_KEY="}, "--embed-base-url", fake.URL+"/v1", "--embed-model", "fake", "--embed-timeout", "500ms")
	q := url.Values{"q": {"查询报销制度"}}
	before := fake.requests()
	tools := getTools(t, d, q)
	if len(tools) == 0 || tools[0].Skill != "policy" {
		t.Fatalf("reranked q=查询报销制度 = %v, want policy first", toolNames(tools))
	}
	if fake.requests() == before {
		t.Error("the search did not reach the embeddings endpoint")
	}
	for _, tl := range tools {
		if *tl.Score <= 0 || *tl.Score > 1 {
			t.Errorf("%s: reranked score %v, want it in (0, 1]", tl.Name, *tl.Score)
		}
	}

	fake.fail(true)
	for range 3 {
		fallback := getTools(t, d, url.Values{"q": {"查询报销制度 年假"}}) // a new query: must reach the endpoint
		if len(fallback) == 0 || fallback[0].Skill != "policy" {
			t.Fatalf("with the endpoint down, q=查询报销制度 = %v, want the text order, policy first", toolNames(fallback))
		}
	}
	if !testenv.WaitFor(2*time.Second, func() bool { return strings.Contains(d.Logs(), "fall back to text ranking") }) {
		t.Fatalf("the daemon did not log the fallback:\n%s", d.Logs())
	}
	if n := strings.Count(d.Logs(), "fall back to text ranking"); n != 1 {
		t.Errorf("%d fallback lines for 3 failed searches, want 1:\n%s", n, d.Logs())
	}
}

// fakeEmbeddings is an OpenAI-compatible /v1/embeddings endpoint: each
// input becomes a bag of its words and CJK characters hashed into 64
// dimensions.
type fakeEmbeddings struct {
	*httptest.Server
	mu      sync.Mutex // guards n and failing
	n       int
	failing bool
}

func newFakeEmbeddings(t *testing.T) *fakeEmbeddings {
	f := &fakeEmbeddings{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Input []string }
		if r.URL.Path != "/v1/embeddings" || json.NewDecoder(r.Body).Decode(&req) != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		f.n++
		failing := f.failing
		f.mu.Unlock()
		if failing {
			http.Error(w, `{"error":{"message":"down for the test","type":"server_error"}}`, http.StatusInternalServerError)
			return
		}
		data := make([]map[string]any, len(req.Input))
		for i, in := range req.Input {
			v := make([]float32, 64)
			for _, tok := range strings.FieldsFunc(strings.ToLower(in), func(r rune) bool {
				return !unicode.IsLetter(r) && !unicode.IsDigit(r)
			}) {
				for _, piece := range cjkSplit(tok) {
					h := fnv.New32a()
					h.Write([]byte(piece))
					v[h.Sum32()%64]++
				}
			}
			data[i] = map[string]any{"object": "embedding", "embedding": v, "index": i}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data, "model": "fake"})
	}))
	t.Cleanup(f.Close)
	return f
}

// cjkSplit keeps a Latin word whole and splits Han text into characters.
func cjkSplit(tok string) []string {
	var out []string
	latin := strings.Builder{}
	for _, r := range tok {
		if unicode.Is(unicode.Han, r) {
			out = append(out, string(r))
		} else {
			latin.WriteRune(r)
		}
	}
	if latin.Len() > 0 {
		out = append(out, latin.String())
	}
	return out
}

func (f *fakeEmbeddings) requests() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}

func (f *fakeEmbeddings) fail(on bool) {
	f.mu.Lock()
	f.failing = on
	f.mu.Unlock()
}
