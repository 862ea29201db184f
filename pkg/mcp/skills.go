package mcp

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// SkillCatalog is what the MCP face needs of the instruction skills (Agent
// Skills, SKILL.md folders) it serves as resources: defined here, where it
// is consumed; the daemon's skill loader implements it.
//
// Its methods are called concurrently and must not block for long. The
// values Skills returns are not modified afterwards (the face may keep
// them).
type SkillCatalog interface {
	// Skills returns the instruction skills to serve now: valid ones
	// only, sorted by name.
	Skills() []SkillInfo
	// ReadFile returns the content of one file of a skill: path is
	// relative to the skill folder with "/" separators ("SKILL.md",
	// "references/forms.md"). A skill or file that is not served is an
	// error wrapping ErrNoSkillFile; the implementation refuses paths
	// that leave the folder and caps what it reads.
	ReadFile(skill, path string) ([]byte, error)
	// Changed returns a channel that is closed at the next change of the
	// set of skills or of any skill's files (hot reload). Take it before
	// calling Skills, so no change falls between the two.
	Changed() <-chan struct{}
}

// ErrNoSkillFile is what SkillCatalog.ReadFile wraps for a skill or a file
// it does not serve.
var ErrNoSkillFile = errors.New("no such skill file")

// SkillInfo is one instruction skill as the face lists it.
type SkillInfo struct {
	Name        string
	Description string
	// Frontmatter is SKILL.md's front matter as written (name and
	// description included), for skills/list and skills/get.
	Frontmatter map[string]any
	// Files are every served file, SKILL.md included.
	Files []SkillFile
}

// SkillFile is one served file of a skill.
type SkillFile struct {
	Path   string // relative, "/"-separated
	Size   int64
	SHA256 string // hex digest of the content
}

// The skills extension's names (SEP-2640, io.modelcontextprotocol/skills).
const (
	skillsExtension = "io.modelcontextprotocol/skills"
	skillScheme     = "skill://"
	skillMDName     = "SKILL.md"
	methodSkillList = "skills/list"
	methodSkillGet  = "skills/get"
)

// SkillURI is the resource URI of a file of a skill:
// skill://<name>/<path>, as the MCP skills extension names them.
func SkillURI(skill, file string) string { return skillScheme + skill + "/" + file }

// parseSkillURI splits skill://<name>/<path>.
func parseSkillURI(uri string) (skill, file string, ok bool) {
	rest, ok := strings.CutPrefix(uri, skillScheme)
	if !ok {
		return "", "", false
	}
	skill, file, ok = strings.Cut(rest, "/")
	return skill, file, ok && skill != "" && file != ""
}

// mimeFor names a file's media type by its extension; SKILL.md and other
// Markdown are text/markdown, as the extension asks.
func mimeFor(p string) string {
	switch ext := strings.ToLower(path.Ext(p)); ext {
	case ".md", ".markdown":
		return "text/markdown"
	case "":
		return "text/plain"
	default:
		if t := mime.TypeByExtension(ext); t != "" {
			return t
		}
		return "application/octet-stream"
	}
}

// skillResources are the resources of the catalog's skills that pass the
// endpoint's filter (its skills list, when it has one): each file is a
// resource, SKILL.md named and described from its front matter.
func (v *view) skillResources() map[string]wantResource {
	out := map[string]wantResource{}
	if v.s.skills == nil {
		return out
	}
	for _, sk := range v.s.skills.Skills() {
		if len(v.filter.Skills) > 0 && !containsFold(v.filter.Skills, sk.Name) {
			continue
		}
		for _, f := range sk.Files {
			r := &mcpsdk.Resource{URI: SkillURI(sk.Name, f.Path), Name: sk.Name + "/" + f.Path, MIMEType: mimeFor(f.Path), Size: f.Size}
			if f.Path == skillMDName {
				r.Name, r.Description = sk.Name, sk.Description
			}
			out[r.URI] = wantResource{r, f.SHA256}
		}
	}
	return out
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

type wantResource struct {
	res *mcpsdk.Resource
	fp  string
}

// syncSkills mirrors the catalog into the view's resources as a diff; the
// go-sdk announces changes with notifications/resources/list_changed.
func (v *view) syncSkills() {
	if v.s.skills == nil {
		return
	}
	want := v.skillResources()
	v.mu.Lock()
	defer v.mu.Unlock()
	var gone []string
	for uri := range v.resources {
		if _, ok := want[uri]; !ok {
			gone = append(gone, uri)
		}
	}
	if len(gone) > 0 {
		v.srv.RemoveResources(gone...)
		for _, uri := range gone {
			delete(v.resources, uri)
		}
	}
	for uri, w := range want {
		if v.resources[uri] == w.fp {
			continue
		}
		v.srv.AddResource(w.res, v.readSkillFile)
		v.resources[uri] = w.fp
	}
}

// readSkillFile answers resources/read of a skill file.
func (v *view) readSkillFile(_ context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
	uri := req.Params.URI
	skill, file, ok := parseSkillURI(uri)
	if !ok {
		return nil, mcpsdk.ResourceNotFoundError(uri)
	}
	if len(v.filter.Skills) > 0 && !containsFold(v.filter.Skills, skill) {
		return nil, mcpsdk.ResourceNotFoundError(uri)
	}
	data, err := v.s.skills.ReadFile(skill, file)
	if errors.Is(err, ErrNoSkillFile) {
		return nil, mcpsdk.ResourceNotFoundError(uri)
	}
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("reading %s: %v", uri, err)}
	}
	c := &mcpsdk.ResourceContents{URI: uri, MIMEType: mimeFor(file)}
	if utf8.Valid(data) {
		c.Text = string(data)
	} else {
		c.Blob = data
	}
	return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{c}}, nil
}

// watchSkills resyncs every view's resources after each catalog change.
func (s *Server) watchSkills() {
	for {
		changed := s.skills.Changed()
		s.syncAllSkills()
		select {
		case <-changed:
		case <-s.done:
			return
		}
	}
}

func (s *Server) syncAllSkills() {
	for _, v := range s.allViews() {
		v.syncSkills()
	}
}

// The skills extension's own methods: skills/list and skills/get return
// each skill's front matter and its complete file manifest with digests.

type skillResource struct {
	URI    string `json:"uri"`
	Digest string `json:"digest"`
	Size   int64  `json:"size"`
}

type skillEntry struct {
	URI         string          `json:"uri"`
	Frontmatter map[string]any  `json:"frontmatter"`
	Resources   []skillResource `json:"resources"`
}

// SkillsListParams and the types below are the wire shapes of skills/list
// and skills/get (exported for the go-sdk's generic custom methods).
type SkillsListParams struct {
	mcpsdk.ParamsBase
	Cursor string `json:"cursor,omitempty"`
}

type SkillsListResult struct {
	mcpsdk.ResultBase
	ResultType string       `json:"resultType"`
	Skills     []skillEntry `json:"skills"`
	TTLMs      int          `json:"ttlMs"`
	CacheScope string       `json:"cacheScope"`
}

type SkillsGetParams struct {
	mcpsdk.ParamsBase
	URI string `json:"uri"`
}

type SkillsGetResult struct {
	mcpsdk.ResultBase
	ResultType string     `json:"resultType"`
	Skill      skillEntry `json:"skill"`
	TTLMs      int        `json:"ttlMs"`
	CacheScope string     `json:"cacheScope"`
}

// skillsTTL is the freshness hint of a listing: short, since skills
// hot-reload (list_changed tells a listening client sooner).
const skillsTTL = 30_000

func entryOf(sk SkillInfo) skillEntry {
	e := skillEntry{URI: SkillURI(sk.Name, skillMDName), Frontmatter: sk.Frontmatter, Resources: []skillResource{}}
	if e.Frontmatter == nil {
		e.Frontmatter = map[string]any{"name": sk.Name, "description": sk.Description}
	}
	for _, f := range sk.Files {
		e.Resources = append(e.Resources, skillResource{URI: SkillURI(sk.Name, f.Path), Digest: "sha256:" + f.SHA256, Size: f.Size})
	}
	return e
}

func (v *view) servedSkills() []SkillInfo {
	var out []SkillInfo
	for _, sk := range v.s.skills.Skills() {
		if len(v.filter.Skills) == 0 || containsFold(v.filter.Skills, sk.Name) {
			out = append(out, sk)
		}
	}
	return out
}

func (v *view) addSkillMethods() error {
	list := func(_ context.Context, _ *mcpsdk.ServerSession, _ *SkillsListParams) (*SkillsListResult, error) {
		res := &SkillsListResult{ResultType: "complete", Skills: []skillEntry{}, TTLMs: skillsTTL, CacheScope: "public"}
		for _, sk := range v.servedSkills() {
			res.Skills = append(res.Skills, entryOf(sk))
		}
		return res, nil
	}
	get := func(_ context.Context, _ *mcpsdk.ServerSession, p *SkillsGetParams) (*SkillsGetResult, error) {
		name, file, ok := parseSkillURI(p.URI)
		if ok && file == skillMDName {
			for _, sk := range v.servedSkills() {
				if sk.Name == name {
					return &SkillsGetResult{ResultType: "complete", Skill: entryOf(sk), TTLMs: skillsTTL, CacheScope: "public"}, nil
				}
			}
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("no skill is served at %q", p.URI)}
	}
	return errors.Join(
		mcpsdk.AddReceivingCustomMethod(v.srv, methodSkillList, list),
		mcpsdk.AddReceivingCustomMethod(v.srv, methodSkillGet, get))
}
