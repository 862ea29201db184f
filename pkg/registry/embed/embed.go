package embed

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	openai "github.com/sashabaranov/go-openai"

	"github.com/skillhost/skillhost/pkg/registry"
)

// Defaults of [Config].
const (
	DefaultModel          = string(openai.SmallEmbedding3) // text-embedding-3-small
	DefaultAlpha          = 0.5                            // equal weight to text and cosine
	DefaultTimeout        = 2 * time.Second
	DefaultWarmTimeout    = 30 * time.Second
	DefaultCacheSize      = 16384 // ~100 MB at 1536 float32 dimensions
	DefaultQueryCacheSize = 512
	DefaultBatchSize      = 128
	DefaultMaxInputRunes  = 4000 // well under the 8,191 tokens OpenAI accepts per input
	DefaultLogInterval    = 30 * time.Second
)

// Errors of this package. Everything Rerank returns makes the registry keep
// its text order; these tell why.
var (
	// ErrClosed is returned by Watch after Close.
	ErrClosed = errors.New("embed: reranker is closed")
	// ErrBadResponse wraps an answer from the endpoint that cannot be used:
	// a wrong number of vectors, mismatched dimensions, non-finite values.
	ErrBadResponse = errors.New("embeddings endpoint gave an unusable answer")
)

// Config configures a [Reranker]. BaseURL is required; every other zero
// field takes the default documented beside it.
type Config struct {
	// BaseURL is the OpenAI-compatible API root, e.g.
	// https://api.openai.com/v1 or http://127.0.0.1:11434/v1; requests go
	// to BaseURL/embeddings.
	BaseURL string
	// APIKey is sent as a bearer token; local servers often need none.
	APIKey string
	// Model names the embedding model. Default DefaultModel.
	Model string
	// Dimensions asks the model for shorter vectors (text-embedding-3 and
	// later); 0 takes the model's own size.
	Dimensions int
	// Alpha is the weight of the text score in the final score:
	// α·text + (1-α)·cosine. 0 means DefaultAlpha (0.5); otherwise it must
	// lie in (0, 1]. A pure embedding order is deliberately not offered:
	// the text score is what keeps an exact tool-name match on top.
	Alpha float64
	// Timeout bounds the embedding work of one search, on top of the
	// caller's context. Default DefaultTimeout (2 s).
	Timeout time.Duration
	// WarmTimeout bounds one batch of background warming. Default
	// DefaultWarmTimeout (30 s).
	WarmTimeout time.Duration
	// CacheSize caps the cached tool vectors (least recently used go
	// first). Default DefaultCacheSize.
	CacheSize int
	// QueryCacheSize caps the cached query vectors, so a repeated request
	// costs no call. Default DefaultQueryCacheSize.
	QueryCacheSize int
	// BatchSize caps the inputs of one request. Default DefaultBatchSize.
	BatchSize int
	// MaxInputRunes cuts the text embedded for one tool or query. Default
	// DefaultMaxInputRunes.
	MaxInputRunes int
	// LogInterval is the least time between two log lines about a failing
	// endpoint, and the retry period of background warming. Default
	// DefaultLogInterval (30 s).
	LogInterval time.Duration
	// Logger receives failure and recovery reports. Default: discard.
	Logger hclog.Logger
	// HTTPClient, when set, replaces the reranker's own client (which New
	// builds on a private transport, closed by Close).
	HTTPClient *http.Client
}

func (c Config) withDefaults() (Config, error) {
	var errs []error
	if c.BaseURL == "" {
		errs = append(errs, errors.New("base URL is required"))
	} else if u, err := url.Parse(c.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("base URL %q must be an http:// or https:// URL with a host", c.BaseURL))
	}
	if c.Model == "" {
		c.Model = DefaultModel
	}
	if c.Alpha == 0 {
		c.Alpha = DefaultAlpha
	} else if !(c.Alpha > 0 && c.Alpha <= 1) {
		errs = append(errs, fmt.Errorf("alpha %v must lie in (0, 1]", c.Alpha))
	}
	durations := []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{{"timeout", &c.Timeout, DefaultTimeout}, {"warm timeout", &c.WarmTimeout, DefaultWarmTimeout}, {"log interval", &c.LogInterval, DefaultLogInterval}}
	for _, d := range durations {
		if *d.v < 0 {
			errs = append(errs, fmt.Errorf("%s %v must not be negative", d.name, *d.v))
		} else if *d.v == 0 {
			*d.v = d.def
		}
	}
	sizes := []struct {
		name string
		v    *int
		def  int
	}{
		{"dimensions", &c.Dimensions, 0}, {"cache size", &c.CacheSize, DefaultCacheSize},
		{"query cache size", &c.QueryCacheSize, DefaultQueryCacheSize}, {"batch size", &c.BatchSize, DefaultBatchSize},
		{"max input runes", &c.MaxInputRunes, DefaultMaxInputRunes},
	}
	for _, s := range sizes {
		if *s.v < 0 {
			errs = append(errs, fmt.Errorf("%s %d must not be negative", s.name, *s.v))
		} else if *s.v == 0 {
			*s.v = s.def
		}
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	if len(errs) > 0 {
		return c, fmt.Errorf("embed config: %w", errors.Join(errs...))
	}
	return c, nil
}

// Reranker reorders search hits by embedding similarity. It implements
// [registry.Reranker]: Rerank is safe for concurrent use. Create it with
// New, hand it to registry.Config.Rerank, optionally let it Watch the
// registry, and Close it at shutdown.
type Reranker struct {
	cfg       Config
	client    *openai.Client
	transport *http.Transport // ours to close; nil with Config.HTTPClient
	health    health

	cacheMu sync.Mutex                // guards tools, queries and pending
	tools   *lru[toolKey]             // tool vectors by definition hash
	queries *lru[string]              // query vectors by query text
	pending map[toolKey]*pendingEmbed // tool vectors being computed now

	requests, inputs, hits atomic.Uint64

	// Background warming: ctx is cancelled by Close, which waits on wg.
	ctx       context.Context
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	watchMu   sync.Mutex // guards watching and closed
	watching  bool
	closed    bool
	closeOnce sync.Once
}

var _ registry.Reranker = (*Reranker)(nil)

// pendingEmbed is one tool vector that a request is computing; searches
// that need it meanwhile wait for done instead of asking again.
type pendingEmbed struct {
	done chan struct{}
	vec  []float32 // set before done is closed, as are err and abandoned
	err  error
	// abandoned: the request ended because the search that sent it went
	// away, which says nothing of the endpoint; a waiter asks again.
	abandoned bool
}

// errTimedOut is the cause of a search's or warm batch's own timeout, which
// tells it apart from its caller going away (see pendingEmbed.abandoned).
var errTimedOut = errors.New("the embeddings endpoint did not answer in time")

// New checks cfg and returns a Reranker. It does not contact the endpoint:
// a service that is down at start is reported by the first search, and
// searches fall back to text ranking until it answers.
func New(cfg Config) (*Reranker, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	oc := openai.DefaultConfig(cfg.APIKey)
	oc.BaseURL = cfg.BaseURL
	r := &Reranker{
		cfg: cfg, tools: newLRU[toolKey](cfg.CacheSize), queries: newLRU[string](cfg.QueryCacheSize),
		pending: map[toolKey]*pendingEmbed{},
		health:  health{log: cfg.Logger, every: cfg.LogInterval, model: cfg.Model, url: cfg.BaseURL},
	}
	if cfg.HTTPClient != nil {
		oc.HTTPClient = cfg.HTTPClient
	} else {
		r.transport = http.DefaultTransport.(*http.Transport).Clone()
		oc.HTTPClient = &http.Client{Transport: r.transport}
	}
	r.client = openai.NewClientWithConfig(oc)
	r.ctx, r.cancel = context.WithCancel(context.Background())
	return r, nil
}

// Rerank implements [registry.Reranker]: it returns hits reordered by
// α·(score/max score) + (1-α)·max(0, cosine(query, tool)), with that
// combined score in Hit.Score, ties kept in text order. On any failure it
// returns an error and the registry keeps the text order.
func (r *Reranker) Rerank(ctx context.Context, query string, hits []registry.Hit) ([]registry.Hit, error) {
	if len(hits) == 0 {
		return hits, nil
	}
	wctx, cancel := context.WithTimeoutCause(ctx, r.cfg.Timeout, errTimedOut)
	defer cancel()
	tools := make([]*registry.Tool, len(hits))
	for i, h := range hits {
		tools[i] = h.Tool
	}
	qv, vecs, err := r.vectors(wctx, query, true, tools)
	if err != nil {
		if ctx.Err() != nil {
			// The caller went away: nothing is wrong with the endpoint.
			return nil, ctx.Err()
		}
		err = fmt.Errorf("embedding rerank: %w", err)
		r.health.failed(err)
		return nil, err
	}
	r.health.succeeded()
	return combine(hits, qv, vecs, r.cfg.Alpha), nil
}

// combine scores hits as Rerank documents. Vectors are unit length, so the
// dot product is the cosine.
func combine(hits []registry.Hit, qv []float32, vecs [][]float32, alpha float64) []registry.Hit {
	top := 0.0
	for _, h := range hits {
		top = max(top, h.Score)
	}
	out := make([]registry.Hit, len(hits))
	for i, h := range hits {
		text := 0.0
		if top > 0 {
			text = h.Score / top
		}
		out[i] = registry.Hit{Tool: h.Tool, Score: alpha*text + (1-alpha)*max(0, dot(qv, vecs[i]))}
	}
	slices.SortStableFunc(out, func(a, b registry.Hit) int { return cmp.Compare(b.Score, a.Score) })
	return out
}

func dot(a, b []float32) float64 {
	var s float32
	for i := range a {
		s += a[i] * b[i]
	}
	return float64(s)
}

// vectors returns the vector of each tool, and of query when withQuery,
// from the caches, from computations already under way, or from one new
// request (in BatchSize chunks) for all that are missing.
func (r *Reranker) vectors(ctx context.Context, query string, withQuery bool, tools []*registry.Tool) ([]float32, [][]float32, error) {
	keys := make([]toolKey, len(tools))
	for i, t := range tools {
		keys[i] = keyOf(t)
	}
	vecs := make([][]float32, len(tools))
	type wait struct {
		i int
		p *pendingEmbed
	}
	var waits []wait
	var owned []int // indexes into tools this call computes
	var mine []*pendingEmbed
	var qv []float32

	query = cut(query, r.cfg.MaxInputRunes) // also bounds the query cache's keys
	r.cacheMu.Lock()
	if withQuery {
		qv, _ = r.queries.get(query)
	}
	for i, k := range keys {
		if v, ok := r.tools.get(k); ok {
			vecs[i] = v
		} else if p, ok := r.pending[k]; ok {
			waits = append(waits, wait{i, p})
		} else {
			p := &pendingEmbed{done: make(chan struct{})}
			r.pending[k] = p
			owned = append(owned, i)
			mine = append(mine, p)
		}
	}
	r.cacheMu.Unlock()
	r.hits.Add(uint64(len(tools) - len(owned) - len(waits)))

	needQuery := withQuery && qv == nil
	if needQuery || len(owned) > 0 {
		inputs := make([]string, 0, len(owned)+1)
		if needQuery {
			inputs = append(inputs, query)
		}
		for _, i := range owned {
			inputs = append(inputs, toolText(tools[i], r.cfg.MaxInputRunes))
		}
		out, err := r.embed(ctx, inputs)
		if needQuery && err == nil {
			qv, out = out[0], out[1:]
		}
		abandoned := err != nil && ctx.Err() != nil && context.Cause(ctx) != errTimedOut
		r.settle(keys, owned, mine, out, err, abandoned)
		if err != nil {
			return nil, nil, err
		}
		if needQuery {
			r.cacheMu.Lock()
			r.queries.add(query, qv)
			r.cacheMu.Unlock()
		}
		for j, i := range owned {
			vecs[i] = out[j]
		}
	}
	for _, w := range waits {
		select {
		case <-w.p.done:
			if w.p.abandoned {
				// Its owner went away mid-request: ask for it ourselves
				// (or wait on whoever already does).
				_, v, err := r.vectors(ctx, "", false, tools[w.i:w.i+1])
				if err != nil {
					return nil, nil, err
				}
				vecs[w.i] = v[0]
				continue
			}
			if w.p.err != nil {
				return nil, nil, w.p.err
			}
			vecs[w.i] = w.p.vec
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
	if withQuery {
		for _, v := range vecs {
			if len(v) != len(qv) {
				return nil, nil, fmt.Errorf("%w: a tool vector has %d dimensions, the query's %d (did the model change?)", ErrBadResponse, len(v), len(qv))
			}
		}
	}
	return qv, vecs, nil
}

// settle publishes the outcome of the computations this call owned: into
// the cache on success, and to every waiter either way.
func (r *Reranker) settle(keys []toolKey, owned []int, mine []*pendingEmbed, out [][]float32, err error, abandoned bool) {
	r.cacheMu.Lock()
	for j, i := range owned {
		delete(r.pending, keys[i])
		if err == nil {
			r.tools.add(keys[i], out[j])
		}
	}
	r.cacheMu.Unlock()
	for j, p := range mine {
		if err != nil {
			p.err, p.abandoned = err, abandoned
		} else {
			p.vec = out[j]
		}
		close(p.done)
	}
}

// embed asks the endpoint for the vectors of inputs, BatchSize at a time,
// and returns them in input order, scaled to unit length.
func (r *Reranker) embed(ctx context.Context, inputs []string) ([][]float32, error) {
	out := make([][]float32, 0, len(inputs))
	for chunk := range slices.Chunk(inputs, r.cfg.BatchSize) {
		r.requests.Add(1)
		r.inputs.Add(uint64(len(chunk)))
		resp, err := r.client.CreateEmbeddings(ctx, openai.EmbeddingRequestStrings{
			Input: chunk, Model: openai.EmbeddingModel(r.cfg.Model), Dimensions: r.cfg.Dimensions,
		})
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("%w (%v)", ctx.Err(), err)
			}
			return nil, err
		}
		vecs, err := unpack(resp.Data, len(chunk))
		if err != nil {
			return nil, err
		}
		out = append(out, vecs...)
	}
	if len(out) > 0 {
		for _, v := range out[1:] {
			if len(v) != len(out[0]) {
				return nil, fmt.Errorf("%w: vectors of %d and %d dimensions in one answer", ErrBadResponse, len(out[0]), len(v))
			}
		}
	}
	return out, nil
}

// unpack places each embedding by its index and normalizes it.
func unpack(data []openai.Embedding, n int) ([][]float32, error) {
	if len(data) != n {
		return nil, fmt.Errorf("%w: %d vectors for %d inputs", ErrBadResponse, len(data), n)
	}
	out := make([][]float32, n)
	for _, d := range data {
		if d.Index < 0 || d.Index >= n || out[d.Index] != nil {
			return nil, fmt.Errorf("%w: vector index %d is out of range or repeated", ErrBadResponse, d.Index)
		}
		if len(d.Embedding) == 0 {
			return nil, fmt.Errorf("%w: empty vector at index %d", ErrBadResponse, d.Index)
		}
		v, err := unit(d.Embedding)
		if err != nil {
			return nil, fmt.Errorf("%w: vector %d: %v", ErrBadResponse, d.Index, err)
		}
		out[d.Index] = v
	}
	return out, nil
}

// unit returns v scaled to length 1 (a zero vector stays zero: it is
// similar to nothing).
func unit(v []float32) ([]float32, error) {
	var ss float64
	for _, x := range v {
		f := float64(x)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, errors.New("non-finite value")
		}
		ss += f * f
	}
	out := make([]float32, len(v))
	if ss == 0 {
		return out, nil
	}
	inv := 1 / math.Sqrt(ss)
	for i, x := range v {
		out[i] = float32(float64(x) * inv)
	}
	return out, nil
}

// Stats are counters for metrics and tests.
type Stats struct {
	Requests    uint64 // requests sent to the endpoint
	Inputs      uint64 // texts sent (queries and tools)
	CacheHits   uint64 // tool vectors a search found cached
	Failures    uint64 // searches and warm batches that fell back
	CachedTools int    // tool vectors held now
}

// Stats returns the counters so far.
func (r *Reranker) Stats() Stats {
	r.cacheMu.Lock()
	n := r.tools.len()
	r.cacheMu.Unlock()
	return Stats{
		Requests: r.requests.Load(), Inputs: r.inputs.Load(), CacheHits: r.hits.Load(),
		Failures: r.health.failures.Load(), CachedTools: n,
	}
}

// Close stops background warming and waits for it, and closes idle
// connections. Rerank keeps working after Close (a search during shutdown
// still ranks). Safe to call more than once.
func (r *Reranker) Close() error {
	r.closeOnce.Do(func() {
		r.watchMu.Lock()
		r.closed = true
		r.watchMu.Unlock()
		r.cancel()
	})
	r.wg.Wait()
	if r.transport != nil {
		r.transport.CloseIdleConnections()
	}
	return nil
}
