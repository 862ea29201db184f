package embed

import (
	"encoding/json"
	"hash/fnv"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"unicode"
)

// fakeDims is the size of the fake model's vectors.
const fakeDims = 64

// fakeSynonyms is the fake model's whole "semantics": words it maps onto
// one meaning, which a text ranking cannot know.
var fakeSynonyms = map[string]string{
	"automobile": "car", "vehicle": "car", "hire": "rent", "rental": "rent",
}

var fakeStop = map[string]bool{
	"a": true, "an": true, "the": true, "for": true, "or": true, "by": true, "in": true, "of": true,
	"to": true, "and": true, "at": true, "it": true, "up": true, "on": true, "is": true,
}

// fakeVector embeds text as a bag of words hashed into fakeDims
// dimensions, after the synonyms above: deterministic, and close for texts
// that share meanings.
func fakeVector(text string) []float32 {
	v := make([]float32, fakeDims)
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		if fakeStop[w] {
			continue
		}
		if s, ok := fakeSynonyms[w]; ok {
			w = s
		}
		h := fnv.New32a()
		h.Write([]byte(w))
		v[h.Sum32()%fakeDims]++
	}
	return v
}

// fakeServer is an OpenAI-compatible /v1/embeddings endpoint over real
// HTTP that records what it is asked.
type fakeServer struct {
	*httptest.Server

	mu       sync.Mutex // guards the fields below
	mode     string     // "ok", "fail" (HTTP 500), "hang" (until the client gives up), "hang-first" (the first request hangs, the rest are ok), "short" (one vector too few)
	requests int
	inputs   []string
}

func newFakeServer(t *testing.T) *fakeServer {
	f := newFake()
	t.Cleanup(f.Close)
	return f
}

// newFake starts a fake the caller closes.
func newFake() *fakeServer {
	f := &fakeServer{mode: "ok"}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	return f
}

// baseURL is what a client is configured with.
func (f *fakeServer) baseURL() string { return f.URL + "/v1" }

func (f *fakeServer) setMode(m string) {
	f.mu.Lock()
	f.mode = m
	f.mu.Unlock()
}

// counts returns the requests and inputs received so far.
func (f *fakeServer) counts() (int, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests, append([]string(nil), f.inputs...)
}

func (f *fakeServer) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/embeddings" {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	var req struct {
		Input []string `json:"input"`
		Model string   `json:"model"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model == "" {
		http.Error(w, `{"error":{"message":"bad request","type":"invalid_request_error"}}`, http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.requests++
	f.inputs = append(f.inputs, req.Input...)
	mode := f.mode
	if mode == "hang-first" && f.requests == 1 {
		mode = "hang"
	}
	f.mu.Unlock()
	switch mode {
	case "fail":
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		w.Write([]byte(`{"error":{"message":"the fake is down","type":"server_error"}}`))
		return
	case "hang":
		<-r.Context().Done()
		return
	}
	type item struct {
		Object    string    `json:"object"`
		Embedding []float32 `json:"embedding"`
		Index     int       `json:"index"`
	}
	data := make([]item, 0, len(req.Input))
	for i, in := range req.Input {
		data = append(data, item{Object: "embedding", Embedding: fakeVector(in), Index: i})
	}
	if mode == "short" {
		data = data[:len(data)-1]
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"object": "list", "data": data, "model": req.Model,
		"usage": map[string]int{"prompt_tokens": len(req.Input), "total_tokens": len(req.Input)},
	})
}
