package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/skillhost/skillhost/internal/fileio"
	"github.com/skillhost/skillhost/pkg/registry"
	"github.com/skillhost/skillhost/pkg/registry/embed"
)

// The optional embedding rerank of search. The registry takes its reranker
// at construction, before mounts run, so serve builds it with
// embedReranker; the mount only owns the flags and the background warming.
func init() {
	mounts = append(mounts, mount{name: "embed", flags: embedFlagSet, setup: setupEmbed})
}

// embedFlags are the parsed --embed-* flags.
var embedFlags struct {
	baseURL, model, keyFile string
	alpha                   float64
	timeout                 time.Duration
	dimensions              int
	warm                    bool
}

// embedRR is the reranker embedReranker built, for the mount to warm and
// close; nil when embedding is off.
var embedRR *embed.Reranker

func embedFlagSet(fs *flag.FlagSet) {
	f := &embedFlags
	fs.StringVar(&f.baseURL, "embed-base-url", os.Getenv("SKILLHOST_EMBED_BASE_URL"),
		"OpenAI-compatible API root for embedding rerank of tool search, e.g. https://api.openai.com/v1 (env SKILLHOST_EMBED_BASE_URL; empty: text ranking only)")
	fs.StringVar(&f.model, "embed-model", envOr("SKILLHOST_EMBED_MODEL", embed.DefaultModel), "embedding model (env SKILLHOST_EMBED_MODEL)")
	fs.StringVar(&f.keyFile, "embed-key-file", "", "file holding the embeddings API key (mode 0600); default: env OPENAI_API_KEY")
	fs.Float64Var(&f.alpha, "embed-alpha", embed.DefaultAlpha, "weight of the text score in the reranked score, in (0, 1]; the rest is cosine similarity")
	fs.DurationVar(&f.timeout, "embed-timeout", embed.DefaultTimeout, "how long a search may wait for embeddings before it keeps the text order")
	fs.IntVar(&f.dimensions, "embed-dimensions", 0, "ask the model for vectors of this size (text-embedding-3 and later; 0: the model's own)")
	fs.BoolVar(&f.warm, "embed-warm", true, "embed new tools in the background as skills load, so searches only embed their query")
}

// embedReranker builds the reranker the --embed-* flags ask for, or returns
// nil (and no error) when --embed-base-url is empty. Serve passes it to
// registry.Config.Rerank.
func embedReranker(log hclog.Logger) (registry.Reranker, error) {
	f := embedFlags
	if f.baseURL == "" {
		return nil, nil
	}
	key, err := embedKey(f.keyFile)
	if err != nil {
		return nil, err
	}
	rr, err := embed.New(embed.Config{
		BaseURL: f.baseURL, APIKey: key, Model: f.model, Dimensions: f.dimensions,
		Alpha: f.alpha, Timeout: f.timeout, Logger: log.Named("embed"),
	})
	if err != nil {
		return nil, fmt.Errorf("--embed-*: %w", err)
	}
	embedRR = rr
	log.Info("embedding rerank enabled", "url", f.baseURL, "model", f.model, "alpha", f.alpha,
		"timeout", f.timeout, "api_key", key != "")
	return rr, nil
}

// embedKey reads the API key from file, refusing a file others can read
// (as --token-file does), or takes OPENAI_API_KEY. No key is fine: local
// servers want none.
func embedKey(file string) (string, error) {
	if file == "" {
		return os.Getenv("OPENAI_API_KEY"), nil
	}
	return fileio.ReadSecret(file, "--embed-key-file")
}

// setupEmbed starts warming tool vectors as skills load and stops it at
// shutdown.
func setupEmbed(d *daemon) error {
	if embedRR == nil {
		if embedFlags.baseURL != "" {
			d.Log.Warn("--embed-base-url is set but the registry was built without the reranker; search ranks on text only")
		}
		return nil
	}
	rr := embedRR
	if embedFlags.warm {
		if err := rr.Watch(d.Registry); err != nil {
			return err
		}
	}
	d.OnClose = append(d.OnClose, func() { rr.Close() })
	return nil
}
