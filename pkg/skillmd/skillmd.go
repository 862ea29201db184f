package skillmd

import (
	"errors"
	"strconv"
	"strings"
)

// FileName is the file that makes a folder an Agent Skill.
const FileName = "SKILL.md"

// Limits of the specification (counted in characters, not bytes) and of this host. The host's
// caps bound what a rescan reads and what a model can be handed: a SKILL.md is loaded whole into
// a model's context on activation, and a file is returned whole by a read.
const (
	MaxNameLen          = 64
	MaxDescriptionLen   = 1024
	MaxCompatibilityLen = 500

	// MaxSkillMDBytes caps SKILL.md. The specification recommends under 500 lines (about
	// 5,000 tokens); 256 KiB is fifty times that, so only a mistake or an attack is refused.
	MaxSkillMDBytes = 256 << 10
	// MaxFileBytes caps one file served from the folder. A larger file (a font, a sample PDF)
	// is listed with Served false: it counts in the digest by size but is never read.
	MaxFileBytes = 1 << 20
	// MaxFiles caps the files and folders in one skill folder, and MaxFolderBytes the sum of the
	// sizes of the files that are served (and so hashed). A folder over either is invalid: a
	// rescan must stay cheap, and no instruction skill needs more.
	MaxFiles       = 1000
	MaxFolderBytes = 64 << 20
	// MaxDepth is how many folders deep the walk lists files. The specification asks for
	// references one level deep; deeper folders are skipped with a warning.
	MaxDepth = 8
)

// Sentinel errors of Open and ReadFile, wrapped with the path that failed.
var (
	// ErrBadPath: the path is empty, absolute, has a ".", ".." or empty element, a
	// backslash or a NUL, or names a hidden file. Such a path is refused before any file
	// is touched.
	ErrBadPath = errors.New("not a plain relative path inside the skill folder")
	// ErrNotServed: the path is not a file the walk listed as served: it does not exist, is
	// over MaxFileBytes, is a symlink out of the folder, or is the binary side of a tied
	// skill (manifest.json and its entrypoint are never handed to a model).
	ErrNotServed = errors.New("not a file this skill serves")
	// ErrChanged: the file on disk is no longer the one the walk listed (replaced, grown past
	// the cap, turned into something other than a regular file). A reload is due; reading
	// it now could serve bytes that were never checked.
	ErrChanged = errors.New("changed since the skill was loaded")
)

// Frontmatter is the YAML block at the top of SKILL.md, as the specification defines it.
type Frontmatter struct {
	// Name as written; the skill's identity is its folder name (Skill.Name), which this
	// should equal.
	Name          string            `json:"name"`
	Description   string            `json:"description"`
	License       string            `json:"license,omitempty"`
	Compatibility string            `json:"compatibility,omitempty"`
	Metadata      map[string]string `json:"metadata,omitempty"`
	// AllowedTools is the experimental allowed-tools field, from either a space-delimited
	// string or a YAML list of strings.
	AllowedTools []string `json:"allowed_tools,omitempty"`
	// Extra holds fields the specification does not define (other clients' extensions such as
	// "disable-model-invocation"), kept so a later consumer can use them. Scalars are kept as
	// their YAML text, lists as []any, mappings as map[string]any.
	Extra map[string]any `json:"extra,omitempty"`
}

// Document is a parsed SKILL.md: front matter and the Markdown body after it.
type Document struct {
	Frontmatter
	// Body is the Markdown after the closing "---", with CRLF line ends turned into LF and
	// surrounding blank lines trimmed.
	Body string `json:"body"`
}

// Status is the verdict on a skill folder. The values match pkg/manifest's.
type Status string

const (
	// StatusValid: the skill may be offered to models (it may still have warnings).
	StatusValid Status = "valid"
	// StatusInvalid: the folder is wrong and stays wrong until someone edits it.
	StatusInvalid Status = "invalid"
	// StatusIncomplete: SKILL.md is missing, empty, or its front matter is not closed yet, or
	// a file changed while it was read: what a copy in progress looks like. Retried on the
	// next change instead of being reported as failed.
	StatusIncomplete Status = "incomplete"
)

// Problem is one thing wrong with a skill folder.
type Problem struct {
	// File is the path of the file inside the skill folder ("SKILL.md", "scripts/run.sh"),
	// or "" for the folder itself.
	File string `json:"file,omitempty"`
	// Line is the line in File, 1-based, when known.
	Line int `json:"line,omitempty"`
	// Field is the front matter field ("name", "metadata.version", "allowed-tools[1]"), or ""
	// when the problem is not about one field.
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
	// Warning marks a problem the skill is served with anyway: the specification asks
	// clients to load such skills and tell the author.
	Warning bool `json:"warning,omitempty"`
}

// Where locates the problem inside the skill folder: "SKILL.md:2: front matter: name",
// "scripts/run.sh", or "folder".
func (p Problem) Where() string {
	var b strings.Builder
	switch {
	case p.File == "":
		b.WriteString("folder")
	default:
		b.WriteString(p.File)
		if p.Line > 0 {
			b.WriteString(":" + strconv.Itoa(p.Line))
		}
	}
	if p.Field != "" {
		b.WriteString(": front matter: " + p.Field)
	}
	return b.String()
}

// String is "where: message", with "warning: " before the message of a warning.
func (p Problem) String() string { return p.Where() + ": " + p.label() + p.Message }

// In is String with the location joined to dir, the skill folder as the reader knows it
// ("skills/pdf/SKILL.md:2: front matter: name: …"), so a line names the file to open.
func (p Problem) In(dir string) string {
	if p.File == "" {
		return dir + ": " + p.label() + p.Message
	}
	return strings.TrimSuffix(dir, "/") + "/" + p.String()
}

func (p Problem) label() string {
	if p.Warning {
		return "warning: "
	}
	return ""
}

// Problems is every problem found at once, warnings included.
type Problems []Problem

// Errors returns the problems that are not warnings.
func (ps Problems) Errors() Problems { return ps.filter(false) }

// Warnings returns the problems the skill is served with anyway.
func (ps Problems) Warnings() Problems { return ps.filter(true) }

func (ps Problems) filter(warning bool) Problems {
	var out Problems
	for _, p := range ps {
		if p.Warning == warning {
			out = append(out, p)
		}
	}
	return out
}

// Error joins the problems as "where: message; where: message".
func (ps Problems) Error() string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, "; ")
}

// Err returns the problems that are not warnings as an error, or nil when there are none,
// which avoids storing a nil Problems in an error interface (a non-nil error).
func (ps Problems) Err() error {
	if errs := ps.Errors(); len(errs) > 0 {
		return errs
	}
	return nil
}
