package manifest

import (
	"strings"
	"time"
)

// FileName is the name of the manifest inside every version folder.
const FileName = "manifest.json"

// MaxManifestBytes caps the manifest size. A manifest is a few hundred bytes of metadata;
// anything this large is a mistake or an attack, and refusing it unread keeps a rescan cheap.
const MaxManifestBytes = 64 << 10

// maxDepth caps JSON nesting. A legitimate manifest is three levels deep; the cap turns a
// pathological document into a clear problem instead of deep recursion in the decoders.
const maxDepth = 32

// Manifest is the decoded manifest.json of one version folder (manifest_version 1).
//
// The JSON tags are the wire format documented in docs/manifest.md; the embedded
// manifest.schema.json is the authoritative description of what each field may hold.
type Manifest struct {
	ManifestVersion int    `json:"manifest_version"`
	Name            string `json:"name"`
	Version         string `json:"version"`
	Description     string `json:"description"`
	// Runtime is how the version runs: RuntimeGoPlugin (also when empty) or RuntimeMCP.
	Runtime string `json:"runtime,omitempty"`
	// Entrypoint and SHA256 are a go-plugin version's binary and its digest.
	Entrypoint string `json:"entrypoint"`
	SHA256     string `json:"sha256"`
	// Command, Args and Digest are an MCP version's: the interpreter the operator allows by
	// name ("node") or a file in the folder ("./server"), its arguments, and the folder
	// digest ("sha256:<hex>", see FolderDigest) that vouches for every file it may run.
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Digest  string            `json:"digest,omitempty"`
	Tags    []string          `json:"tags,omitempty"`
	Tools   []string          `json:"tools,omitempty"`
	Author  string            `json:"author,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Limits  Limits            `json:"limits,omitempty"`
	// Uses lists the hosted tools the skill may call through the host
	// (sdk.Call): qualified names "skill.tool", or "skill.*" for every tool
	// of a skill. A call to any other tool is refused. Empty: the skill
	// calls nothing, and the host serves it no Host service at all.
	Uses []string `json:"uses,omitempty"`
}

// The runtimes a manifest can name.
const (
	// RuntimeGoPlugin: a go-plugin binary speaking the skill protocol (sdk/proto). The default.
	RuntimeGoPlugin = "go-plugin"
	// RuntimeMCP: a stdio MCP server in any language (pkg/mcprt).
	RuntimeMCP = "mcp"
)

// RuntimeName is the manifest's runtime with the default applied.
func (m *Manifest) RuntimeName() string {
	if m == nil || m.Runtime == "" {
		return RuntimeGoPlugin
	}
	return m.Runtime
}

// DigestHex is the hex part of Digest ("" when Digest is not a sha256 digest).
func (m *Manifest) DigestHex() string {
	if h, ok := strings.CutPrefix(m.Digest, DigestPrefix); ok {
		return h
	}
	return ""
}

// MayCall reports whether the manifest's uses lists the tool skill.tool,
// by name or by a "skill.*" entry.
func (m *Manifest) MayCall(skill, tool string) bool {
	for _, u := range m.Uses {
		s, t, ok := strings.Cut(u, ".")
		if ok && s == skill && (t == "*" || t == tool) {
			return true
		}
	}
	return false
}

// Limits bound what one skill may cost the host. A zero field means "use the default", so a
// manifest only names the limits it wants to change; the maxima keep one skill from asking for
// resources that would hurt every other skill.
type Limits struct {
	TimeoutMS        int   `json:"timeout_ms,omitempty"`
	MaxConcurrency   int   `json:"max_concurrency,omitempty"`
	MaxRequestBytes  int64 `json:"max_request_bytes,omitempty"`
	MaxResponseBytes int64 `json:"max_response_bytes,omitempty"`

	// Operating-system limits of the skill's process. Zero means none beyond the host's own.
	// On Linux the loader applies them with prlimit(2) right after the handshake (see
	// pkg/loader/rlimit_linux.go and docs/reliability.md); elsewhere they are accepted and not
	// enforced. MemoryMB caps the data segment (RLIMIT_DATA: heap and private writable
	// mappings), not the address space, which a Go program reserves a gigabyte of at start.
	MemoryMB     int `json:"memory_mb,omitempty"`      // RLIMIT_DATA, MiB
	MaxOpenFiles int `json:"max_open_files,omitempty"` // RLIMIT_NOFILE
	CPUSeconds   int `json:"cpu_seconds,omitempty"`    // RLIMIT_CPU: CPU time over the process's life
}

// Defaults and maxima of Limits. The maxima are also written in manifest.schema.json; a test
// keeps the two in step.
const (
	DefaultTimeoutMS        = 30_000
	MaxTimeoutMS            = 600_000
	DefaultMaxConcurrency   = 64
	MaxMaxConcurrency       = 4096
	DefaultMaxRequestBytes  = 1 << 20
	DefaultMaxResponseBytes = 4 << 20
	MaxMessageBytes         = 64 << 20

	// Bounds of the process limits. The minima refuse values under which no skill could serve
	// at all; a Go skill needs more than MinMemoryMB (its data segment is about 80 MiB before
	// it allocates anything) and gRPC needs a dozen descriptors.
	MinMemoryMB   = 32
	MaxMemoryMB   = 1 << 20 // 1 TiB
	MinOpenFiles  = 16
	MaxOpenFiles  = 1 << 20
	MaxCPUSeconds = 31_536_000 // a year
)

// WithDefaults fills the zero fields, so the rest of the host never has to know that zero
// means "default".
func (l Limits) WithDefaults() Limits {
	if l.TimeoutMS == 0 {
		l.TimeoutMS = DefaultTimeoutMS
	}
	if l.MaxConcurrency == 0 {
		l.MaxConcurrency = DefaultMaxConcurrency
	}
	if l.MaxRequestBytes == 0 {
		l.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if l.MaxResponseBytes == 0 {
		l.MaxResponseBytes = DefaultMaxResponseBytes
	}
	return l
}

// Timeout is the per-call deadline, defaults applied, so callers cannot forget them.
func (l Limits) Timeout() time.Duration {
	return time.Duration(l.WithDefaults().TimeoutMS) * time.Millisecond
}

// Problem is one thing wrong with a version folder. Path is a JSON path into the manifest
// ("$.limits.timeout_ms", "$.name") or "$" for the whole document, or a file-level locator
// ("manifest", "entrypoint", "folder", "skill-folder", "root") for filesystem problems, so a
// user can find the spot without reading code. In Tree.Problems, which belong to no version,
// Path is "root" or a path relative to the root ("Calc", "calc/notes.txt").
type Problem struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

func (p Problem) String() string { return p.Path + ": " + p.Message }

// Problems is every problem found at once. It implements error so it can travel through
// ordinary error plumbing; use Err to avoid the typed-nil trap when there are none.
type Problems []Problem

// Error joins the problems as "path: message; path: message".
func (ps Problems) Error() string {
	var b strings.Builder
	for i, p := range ps {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(p.String())
	}
	return b.String()
}

// Err returns ps as an error, or nil when there are no problems. A nil Problems stored in an
// error interface is not a nil error, which is an easy bug to write; Err avoids it.
func (ps Problems) Err() error {
	if len(ps) == 0 {
		return nil
	}
	return ps
}

// Status is the verdict on a version folder.
type Status string

const (
	// StatusValid: the version may be served.
	StatusValid Status = "valid"
	// StatusInvalid: the folder is wrong and stays wrong until someone edits it.
	StatusInvalid Status = "invalid"
	// StatusIncomplete: a checksum mismatch, a missing entrypoint, or a missing, empty or
	// truncated manifest. These are what a copy in progress looks like, so the version is
	// retried on the next change instead of being marked failed.
	StatusIncomplete Status = "incomplete"
)
