package embed

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.uber.org/goleak"

	"github.com/skillhost/skillhost/pkg/registry"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// nopBackend serves tools that are ranked, never called.
type nopBackend struct{}

func (nopBackend) Acquire() bool { return true }
func (nopBackend) Release()      {}
func (nopBackend) Invoke(context.Context, string, []byte, int64) ([]byte, error) {
	return []byte(`{}`), nil
}

// logBuf collects log output for assertions.
type logBuf struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// newTestReranker returns a reranker on f, closed when the test ends, and
// its log.
func newTestReranker(t *testing.T, f *fakeServer, edit func(*Config)) (*Reranker, *logBuf) {
	t.Helper()
	logs := &logBuf{}
	cfg := Config{
		BaseURL: f.baseURL(), APIKey: "test-key", Model: "fake-embed",
		Logger: hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Info}),
	}
	if edit != nil {
		edit(&cfg)
	}
	rr, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rr.Close() })
	return rr, logs
}

func toolSpec(name, desc string, tags ...string) registry.ToolSpec {
	return registry.ToolSpec{
		Name: name, Description: desc, Tags: tags,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"when":{"type":"string","description":"date"}}}`),
	}
}

// travelSkill is the skill most tests rank: its first tool matches "rent a
// car" by words, its second by meaning.
func travelSkill(version string) registry.SkillSpec {
	return registry.SkillSpec{Name: "travel", Version: version, Backend: nopBackend{}, Tools: []registry.ToolSpec{
		toolSpec("car_wash", "Wash and polish a car, with interior cleaning, wax and tyre shine while you wait.", "cleaning"),
		toolSpec("book_vehicle", "Vehicle hire: rent an automobile for a road trip, by the day.", "trip"),
		toolSpec("find_hotel", "Find a hotel room for a city trip near a landmark.", "trip"),
	}}
}

func newRegistry(t *testing.T, rr registry.Reranker, specs ...registry.SkillSpec) *registry.Registry {
	t.Helper()
	reg := registry.New(registry.Config{Rerank: rr})
	for _, s := range specs {
		if _, err := reg.Put(s); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

func names(hits []registry.Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.Tool.Name
	}
	return out
}

func TestRerankChangesOrder(t *testing.T) {
	f := newFakeServer(t)
	rr, _ := newTestReranker(t, f, nil)
	q := registry.Query{Text: "rent a car"}
	text := newRegistry(t, nil, travelSkill("1.0.0")).Snapshot().Search(q)
	if len(text) < 2 || text[0].Tool.Name != "travel.car_wash" {
		t.Fatalf("text order = %v, want travel.car_wash first (the test's premise)", names(text))
	}
	re := newRegistry(t, rr, travelSkill("1.0.0")).Snapshot().Search(q)
	if len(re) != len(text) || re[0].Tool.Name != "travel.book_vehicle" {
		t.Fatalf("reranked = %v, want travel.book_vehicle first (text order %v)", names(re), names(text))
	}
	for i, h := range re {
		if h.Score <= 0 || h.Score > 1 || (i > 0 && h.Score > re[i-1].Score) {
			t.Errorf("hit %d %s score %v: want descending scores in (0, 1]", i, h.Tool.Name, h.Score)
		}
	}
	t.Logf("text %v -> reranked %v", names(text), names(re))
}

func TestVectorsOncePerToolDefinition(t *testing.T) {
	f := newFakeServer(t)
	rr, _ := newTestReranker(t, f, nil)
	reg := newRegistry(t, rr, travelSkill("1.0.0"))
	step := func(name, query string, wantRequests int, wantInputs ...string) {
		t.Helper()
		r0, in0 := f.counts()
		hits := reg.Snapshot().Search(registry.Query{Text: query})
		r1, in1 := f.counts()
		got := in1[len(in0):]
		if r1-r0 != wantRequests || len(got) != len(wantInputs) {
			t.Fatalf("%s: %d requests with inputs %q, want %d with %d inputs %q", name, r1-r0, got, wantRequests, len(wantInputs), wantInputs)
		}
		for i, w := range wantInputs {
			if !strings.Contains(got[i], w) {
				t.Errorf("%s: input %d = %q, want it to hold %q", name, i, got[i], w)
			}
		}
		if len(hits) == 0 {
			t.Errorf("%s: no hits", name)
		}
	}
	// The first search embeds its query and its whole pool, in one request.
	step("first search", "car rental for a trip", 1, "car rental for a trip", "travel ", "travel ", "travel ")
	step("repeated query", "car rental for a trip", 0)
	step("new query, cached tools", "rent a car", 1, "rent a car")
	// A new version with the same definitions reuses every vector.
	if _, err := reg.Put(travelSkill("1.0.1")); err != nil {
		t.Fatal(err)
	}
	step("same definitions, new version", "car rental for a trip", 0)
	// Changing one description re-embeds that tool only.
	changed := travelSkill("1.0.2")
	changed.Tools[2].Description = "Find a hotel room or hostel bed for a city trip."
	if _, err := reg.Put(changed); err != nil {
		t.Fatal(err)
	}
	step("one changed tool", "car rental for a trip", 1, "hostel bed")
	step("changed tool cached", "car rental for a trip", 0)
	if st := rr.Stats(); st.Requests != 3 || st.Inputs != 6 || st.CachedTools != 4 || st.Failures != 0 {
		t.Errorf("stats = %+v, want 3 requests, 6 inputs, 4 cached tools, no failure", st)
	}
}

// textOrder is what the registry returns with no reranker.
func textOrder(t *testing.T, q registry.Query) []registry.Hit {
	t.Helper()
	return newRegistry(t, nil, travelSkill("1.0.0")).Snapshot().Search(q)
}

func sameHits(a, b []registry.Hit) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Tool.Name != b[i].Tool.Name || a[i].Score != b[i].Score {
			return false
		}
	}
	return true
}

func TestFallbackWhenEndpointFails(t *testing.T) {
	f := newFakeServer(t)
	f.setMode("fail")
	rr, logs := newTestReranker(t, f, nil)
	reg := newRegistry(t, rr, travelSkill("1.0.0"))
	q := registry.Query{Text: "rent a car"}
	want := textOrder(t, q)
	for i := range 5 {
		if got := reg.Snapshot().Search(q); !sameHits(got, want) {
			t.Fatalf("search %d with the endpoint down = %v, want the text order %v", i, names(got), names(want))
		}
	}
	out := logs.String()
	if n := strings.Count(out, "fall back to text ranking"); n != 1 {
		t.Fatalf("log has %d failure lines for 5 failed searches, want 1:\n%s", n, out)
	}
	if !strings.Contains(out, "500") || !strings.Contains(out, "failures=1") {
		t.Errorf("failure line should carry the status and the count:\n%s", out)
	}
	if st := rr.Stats(); st.Failures != 5 {
		t.Errorf("stats = %+v, want 5 failures", st)
	}
	f.setMode("ok")
	if got := reg.Snapshot().Search(q); got[0].Tool.Name != "travel.book_vehicle" {
		t.Errorf("after recovery = %v, want the reranked order", names(got))
	}
	if out := logs.String(); !strings.Contains(out, "answering again") || !strings.Contains(out, "unreported_failures=4") {
		t.Errorf("log should report the recovery and the 4 unreported failures:\n%s", out)
	}
}

func TestFallbackWhenEndpointHangs(t *testing.T) {
	f := newFakeServer(t)
	f.setMode("hang")
	rr, logs := newTestReranker(t, f, func(c *Config) { c.Timeout = 150 * time.Millisecond })
	reg := newRegistry(t, rr, travelSkill("1.0.0"))
	q := registry.Query{Text: "rent a car"}
	want := textOrder(t, q)
	for i := range 3 {
		start := time.Now()
		got := reg.Snapshot().Search(q)
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("search %d took %v with a hanging endpoint, want about the 150ms timeout", i, took)
		}
		if !sameHits(got, want) {
			t.Fatalf("search %d = %v, want the text order %v", i, names(got), names(want))
		}
	}
	out := logs.String()
	if n := strings.Count(out, "fall back to text ranking"); n != 1 || !strings.Contains(out, "deadline exceeded") {
		t.Fatalf("log has %d failure lines for 3 timeouts, want 1 naming the deadline:\n%s", n, out)
	}
}

func TestCallerCancelIsNotAnEndpointFailure(t *testing.T) {
	f := newFakeServer(t)
	f.setMode("hang")
	rr, logs := newTestReranker(t, f, nil)
	hits := newRegistry(t, nil, travelSkill("1.0.0")).Snapshot().Search(registry.Query{Text: "rent a car"})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	if _, err := rr.Rerank(ctx, "rent a car", hits); !errors.Is(err, context.Canceled) {
		t.Fatalf("Rerank after the caller left = %v, want context.Canceled", err)
	}
	if out := logs.String(); out != "" || rr.Stats().Failures != 0 {
		t.Errorf("a caller's cancel must not be logged or counted as an endpoint failure: %q %+v", out, rr.Stats())
	}
}

func TestBadResponse(t *testing.T) {
	f := newFakeServer(t)
	f.setMode("short")
	rr, logs := newTestReranker(t, f, nil)
	hits := newRegistry(t, nil, travelSkill("1.0.0")).Snapshot().Search(registry.Query{Text: "rent a car"})
	if _, err := rr.Rerank(context.Background(), "rent a car", hits); !errors.Is(err, ErrBadResponse) {
		t.Fatalf("Rerank with one vector missing = %v, want ErrBadResponse", err)
	}
	if !strings.Contains(logs.String(), "vectors for") {
		t.Errorf("log should say what was wrong:\n%s", logs)
	}
	// Nothing half-computed was cached.
	if st := rr.Stats(); st.CachedTools != 0 {
		t.Errorf("stats = %+v, want nothing cached", st)
	}
}

func TestConcurrentSearches(t *testing.T) {
	f := newFakeServer(t)
	rr, _ := newTestReranker(t, f, nil)
	reg := newRegistry(t, rr, travelSkill("1.0.0"))
	queries := []string{"rent a car", "car rental for a trip", "hotel for a trip", "wash a car", "vehicle by the day"}
	v2 := travelSkill("2.0.0")
	v2.Tools[2].Description = "Find a hotel room or hostel bed for a city trip."
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() { // swaps the skill between two definitions under the searches
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			s := travelSkill("1.0.0")
			if i%2 == 1 {
				s = v2
			}
			if _, err := reg.Put(s); err != nil {
				t.Error(err)
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	var searchers sync.WaitGroup
	for g := range 8 {
		searchers.Add(1)
		go func() {
			defer searchers.Done()
			for i := range 50 {
				q := queries[(g+i)%len(queries)]
				hits := reg.Snapshot().Search(registry.Query{Text: q})
				if len(hits) == 0 {
					t.Errorf("%q: no hits", q)
				}
			}
		}()
	}
	searchers.Wait()
	close(stop)
	wg.Wait()
	// However the searches interleaved, each tool definition went out once.
	_, inputs := f.counts()
	seen := map[string]int{}
	for _, in := range inputs {
		if strings.HasPrefix(in, "travel ") {
			seen[in]++
		}
	}
	for in, n := range seen {
		if n != 1 {
			t.Errorf("tool text embedded %d times: %q", n, in)
		}
	}
	// 3 tools, one of them in two versions (3 if the searches all ended
	// before the writer published the second).
	if len(seen) < 3 || len(seen) > 4 {
		t.Errorf("embedded %d tool definitions, want 3 or 4", len(seen))
	}
}

func TestWatchWarmsNewTools(t *testing.T) {
	f := newFakeServer(t)
	rr, _ := newTestReranker(t, f, nil)
	reg := registry.New(registry.Config{Rerank: rr})
	if err := rr.Watch(reg); err != nil {
		t.Fatal(err)
	}
	if err := rr.Watch(reg); err == nil {
		t.Error("a second Watch should be refused")
	}
	waitCached := func(n int) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for rr.Stats().CachedTools != n {
			if time.Now().After(deadline) {
				t.Fatalf("cached tools = %d after 5s, want %d", rr.Stats().CachedTools, n)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	if _, err := reg.Put(travelSkill("1.0.0")); err != nil {
		t.Fatal(err)
	}
	waitCached(3)
	r0, in0 := f.counts()
	reg.Snapshot().Search(registry.Query{Text: "car rental for a trip"})
	r1, in1 := f.counts()
	if r1-r0 != 1 || len(in1)-len(in0) != 1 || in1[len(in0)] != "car rental for a trip" {
		t.Errorf("search after warming sent %d requests with %q, want one with the query alone", r1-r0, in1[len(in0):])
	}
	changed := travelSkill("1.0.1")
	changed.Tools[0].Description = "Wash a car by hand."
	if _, err := reg.Put(changed); err != nil {
		t.Fatal(err)
	}
	waitCached(4)
	if err := rr.Close(); err != nil {
		t.Fatal(err)
	}
	rr.Close() // safe twice
	if err := rr.Watch(reg); !errors.Is(err, ErrClosed) {
		t.Errorf("Watch after Close = %v, want ErrClosed", err)
	}
	// Searches still rank after Close.
	if hits := reg.Snapshot().Search(registry.Query{Text: "rent a car"}); len(hits) == 0 || hits[0].Tool.Name != "travel.book_vehicle" {
		t.Errorf("search after Close = %v", names(hits))
	}
}

func TestConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want string // in the error; "" for none
	}{
		{"minimal", Config{BaseURL: "http://127.0.0.1:1/v1"}, ""},
		{"no base URL", Config{}, "base URL is required"},
		{"not http", Config{BaseURL: "ftp://x/v1"}, "must be an http"},
		{"no host", Config{BaseURL: "http:///v1"}, "must be an http"},
		{"alpha above 1", Config{BaseURL: "http://x", Alpha: 1.5}, "alpha 1.5"},
		{"negative alpha", Config{BaseURL: "http://x", Alpha: -0.1}, "alpha -0.1"},
		{"negative timeout", Config{BaseURL: "http://x", Timeout: -time.Second}, "timeout -1s"},
		{"negative cache", Config{BaseURL: "http://x", CacheSize: -1}, "cache size -1"},
		{"all problems at once", Config{Alpha: 2, BatchSize: -1}, "batch size -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rr, err := New(tc.cfg)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				defer rr.Close()
				c := rr.cfg
				if c.Model != DefaultModel || c.Alpha != DefaultAlpha || c.Timeout != DefaultTimeout ||
					c.CacheSize != DefaultCacheSize || c.BatchSize != DefaultBatchSize || c.LogInterval != DefaultLogInterval {
					t.Errorf("defaults not filled: %+v", c)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New = %v, want an error holding %q", err, tc.want)
			}
			if rr != nil {
				t.Error("New returned a reranker with its error")
			}
		})
	}
}

func TestLRU(t *testing.T) {
	c := newLRU[string](2)
	c.add("a", []float32{1})
	c.add("b", []float32{2})
	c.get("a")
	c.add("c", []float32{3}) // evicts b, the least recently used
	if _, ok := c.get("b"); ok {
		t.Error("b should be evicted")
	}
	for _, k := range []string{"a", "c"} {
		if _, ok := c.get(k); !ok {
			t.Errorf("%s should be cached", k)
		}
	}
	if c.len() != 2 {
		t.Errorf("len = %d, want 2", c.len())
	}
}

func TestKeyCoversTheEmbeddedFields(t *testing.T) {
	reg := newRegistry(t, nil, travelSkill("1.0.0"))
	base, _ := reg.Snapshot().Tool("travel.find_hotel")
	edits := map[string]func(*registry.SkillSpec){
		"description": func(s *registry.SkillSpec) { s.Tools[2].Description += " Cheap." },
		"tags":        func(s *registry.SkillSpec) { s.Tools[2].Tags = []string{"trip", "hotel"} },
		"schema": func(s *registry.SkillSpec) {
			s.Tools[2].InputSchema = json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)
		},
		"skill tags (merged into the tool's)": func(s *registry.SkillSpec) { s.Tags = []string{"travel"} },
	}
	for what, edit := range edits {
		s := travelSkill("1.0.1")
		edit(&s)
		other, _ := newRegistry(t, nil, s).Snapshot().Tool("travel.find_hotel")
		if keyOf(other) == keyOf(base) {
			t.Errorf("changing the %s keeps the key", what)
		}
	}
	same, _ := newRegistry(t, nil, travelSkill("9.9.9")).Snapshot().Tool("travel.find_hotel")
	if keyOf(same) != keyOf(base) {
		t.Error("a new version of the same definition should keep its key")
	}
	if got := toolText(base, 4000); !strings.HasPrefix(got, "travel find hotel: Find a hotel") || !strings.Contains(got, "when (date)") {
		t.Errorf("tool text = %q", got)
	}
	if got := cut("查询报销\n制度", 5); got != "查询报销 " {
		t.Errorf("cut = %q, want 5 runes with the newline a space", got)
	}
}

// A search that goes away while it is computing tool vectors other searches
// wait on does not fail them: a waiter asks for the vectors itself, and
// nothing is counted or logged as an endpoint failure.
func TestOwnerCancelDoesNotFailWaiters(t *testing.T) {
	f := newFakeServer(t)
	f.setMode("hang-first")
	rr, logs := newTestReranker(t, f, nil)
	hits := newRegistry(t, nil, travelSkill("1.0.0")).Snapshot().Search(registry.Query{Text: "rent a car"})
	requests := func(n int) bool {
		got, _ := f.counts()
		return got >= n
	}
	ctxA, cancelA := context.WithCancel(context.Background())
	errA := make(chan error, 1)
	go func() {
		_, err := rr.Rerank(ctxA, "rent a car", hits)
		errA <- err
	}()
	waitUntil(t, func() bool { return requests(1) }) // A owns the tool vectors; its request hangs
	resB := make(chan error, 1)
	var outB []registry.Hit
	go func() {
		var err error
		outB, err = rr.Rerank(context.Background(), "car rental for a trip", hits)
		resB <- err
	}()
	waitUntil(t, func() bool { return requests(2) }) // B asked for its query alone: it waits on A's tools
	cancelA()
	if err := <-errA; !errors.Is(err, context.Canceled) {
		t.Fatalf("the search that went away = %v, want context.Canceled", err)
	}
	if err := <-resB; err != nil || len(outB) != len(hits) {
		t.Fatalf("the waiting search = %v (%d hits), want a ranking of %d", err, len(outB), len(hits))
	}
	if out := logs.String(); out != "" || rr.Stats().Failures != 0 {
		t.Errorf("another search's cancel must not be an endpoint failure: %q %+v", out, rr.Stats())
	}
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5 s")
		}
	}
}
