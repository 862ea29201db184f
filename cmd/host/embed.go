package main

import (
	"flag"
	"os"
	"time"

	"github.com/skillhost/skillhost/internal/fileio"
	"github.com/skillhost/skillhost/pkg/host"
	"github.com/skillhost/skillhost/pkg/registry/embed"
)

// embedFlags adds the --embed-* flags, the optional embedding rerank of
// search, to fs and returns what turns them into its config: nil (and no
// error) when --embed-base-url is empty.
func embedFlags(fs *flag.FlagSet) func() (*host.EmbedConfig, error) {
	var baseURL, model, keyFile string
	var alpha float64
	var timeout time.Duration
	var dimensions int
	var warm bool
	fs.StringVar(&baseURL, "embed-base-url", os.Getenv("SKILLHOST_EMBED_BASE_URL"),
		"OpenAI-compatible API root for embedding rerank of tool search, e.g. https://api.openai.com/v1 (env SKILLHOST_EMBED_BASE_URL; empty: text ranking only)")
	fs.StringVar(&model, "embed-model", envOr("SKILLHOST_EMBED_MODEL", embed.DefaultModel), "embedding model (env SKILLHOST_EMBED_MODEL)")
	fs.StringVar(&keyFile, "embed-key-file", "", "file holding the embeddings API key (mode 0600); default: env OPENAI_API_KEY")
	fs.Float64Var(&alpha, "embed-alpha", embed.DefaultAlpha, "weight of the text score in the reranked score, in (0, 1]; the rest is cosine similarity")
	fs.DurationVar(&timeout, "embed-timeout", embed.DefaultTimeout, "how long a search may wait for embeddings before it keeps the text order")
	fs.IntVar(&dimensions, "embed-dimensions", 0, "ask the model for vectors of this size (text-embedding-3 and later; 0: the model's own)")
	fs.BoolVar(&warm, "embed-warm", true, "embed new tools in the background as skills load, so searches only embed their query")
	return func() (*host.EmbedConfig, error) {
		if baseURL == "" {
			return nil, nil
		}
		key, err := embedKey(keyFile)
		if err != nil {
			return nil, err
		}
		return &host.EmbedConfig{Warm: warm, Config: embed.Config{
			BaseURL: baseURL, APIKey: key, Model: model, Dimensions: dimensions, Alpha: alpha, Timeout: timeout,
		}}, nil
	}
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
