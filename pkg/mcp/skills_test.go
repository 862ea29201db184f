package mcp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillhost/skillhost/pkg/registry"
	"github.com/skillhost/skillhost/pkg/skillmd"
)

// folderCatalog is a SkillCatalog over real folders, loaded with
// pkg/skillmd as the daemon's loader does.
type folderCatalog struct {
	mu      sync.Mutex // guards skills and changed
	skills  map[string]skillmd.Skill
	changed chan struct{}
}

var _ SkillCatalog = (*folderCatalog)(nil)

func newFolderCatalog(t *testing.T, dirs ...string) *folderCatalog {
	c := &folderCatalog{skills: map[string]skillmd.Skill{}, changed: make(chan struct{})}
	for _, d := range dirs {
		c.load(t, d)
	}
	return c
}

// load (re)loads one folder and announces the change.
func (c *folderCatalog) load(t *testing.T, dir string) {
	t.Helper()
	sk := skillmd.Load(dir, skillmd.Unversioned)
	if sk.Status != skillmd.StatusValid {
		t.Fatalf("fixture %s: %v", dir, sk.Problems)
	}
	c.mu.Lock()
	c.skills[sk.Name] = sk
	c.announceLocked()
	c.mu.Unlock()
}

func (c *folderCatalog) remove(name string) {
	c.mu.Lock()
	delete(c.skills, name)
	c.announceLocked()
	c.mu.Unlock()
}

func (c *folderCatalog) announceLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

func (c *folderCatalog) Changed() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.changed
}

func (c *folderCatalog) Skills() []SkillInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []SkillInfo
	for _, sk := range c.skills {
		fm := map[string]any{"name": sk.Doc.Name, "description": sk.Doc.Description}
		if sk.Doc.License != "" {
			fm["license"] = sk.Doc.License
		}
		info := SkillInfo{Name: sk.Name, Description: sk.Doc.Description, Frontmatter: fm}
		for _, f := range sk.Files {
			if f.Served {
				info.Files = append(info.Files, SkillFile{Path: f.Path, Size: f.Size, SHA256: f.SHA256})
			}
		}
		out = append(out, info)
	}
	slices.SortFunc(out, func(a, b SkillInfo) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func (c *folderCatalog) ReadFile(skill, path string) ([]byte, error) {
	c.mu.Lock()
	sk, ok := c.skills[skill]
	c.mu.Unlock()
	if !ok {
		return nil, ErrNoSkillFile
	}
	data, err := sk.ReadFile(path)
	if errors.Is(err, skillmd.ErrNotServed) || errors.Is(err, skillmd.ErrBadPath) {
		return nil, errors.Join(ErrNoSkillFile, err)
	}
	return data, err
}

// copyFixture copies pkg/skillmd's fixture skill into dir.
func copyFixture(t *testing.T, name, dir string) string {
	t.Helper()
	src := filepath.Join("..", "skillmd", "testdata", "skills", name)
	dst := filepath.Join(dir, name)
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

type resClient struct {
	cs      *mcpsdk.ClientSession
	changed chan struct{}
}

func serveSkills(t *testing.T, s *Server, e Endpoint) *resClient {
	t.Helper()
	c := &resClient{changed: make(chan struct{}, 16)}
	cl := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "unit", Version: "0"}, &mcpsdk.ClientOptions{
		ResourceListChangedHandler: func(context.Context, *mcpsdk.ResourceListChangedRequest) {
			select {
			case c.changed <- struct{}{}:
			default:
			}
		},
	})
	for _, err := range []error{
		mcpsdk.AddSendingCustomMethod[*SkillsListParams, *SkillsListResult](cl, methodSkillList),
		mcpsdk.AddSendingCustomMethod[*SkillsGetParams, *SkillsGetResult](cl, methodSkillGet),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	c.cs = connectMem(t, s, e, cl)
	return c
}

func (c *resClient) uris(t *testing.T) []string {
	t.Helper()
	res, err := c.cs.ListResources(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range res.Resources {
		out = append(out, r.URI)
	}
	slices.Sort(out)
	return out
}

func TestSkillsAsResources(t *testing.T) {
	dir := t.TempDir()
	pdf := copyFixture(t, "pdf-processing", dir)
	cat := newFolderCatalog(t, pdf, copyFixture(t, "changelog-writer", dir))
	s := newServer(t, registry.New(registry.Config{}), func(c *Config) { c.Skills = cat })
	c := serveSkills(t, s, Endpoint{})
	ctx := context.Background()

	if ext := c.cs.InitializeResult().Capabilities.Extensions; ext == nil || ext[skillsExtension] == nil {
		t.Errorf("the skills extension is not declared: %v", ext)
	}
	res, err := c.cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var md *mcpsdk.Resource
	for _, r := range res.Resources {
		if r.URI == "skill://pdf-processing/SKILL.md" {
			md = r
		}
	}
	if md == nil || md.MIMEType != "text/markdown" || md.Name != "pdf-processing" || md.Description == "" {
		t.Fatalf("SKILL.md resource = %+v", md)
	}
	if got := c.uris(t); !slices.Contains(got, "skill://pdf-processing/references/forms.md") || !slices.Contains(got, "skill://changelog-writer/SKILL.md") {
		t.Errorf("resources = %v", got)
	}

	read, err := c.cs.ReadResource(ctx, &mcpsdk.ReadResourceParams{URI: "skill://pdf-processing/SKILL.md"})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(filepath.Join(pdf, "SKILL.md"))
	if len(read.Contents) != 1 || read.Contents[0].Text != string(want) || read.Contents[0].MIMEType != "text/markdown" {
		t.Errorf("read SKILL.md = %+v", read.Contents)
	}
	for _, uri := range []string{"skill://pdf-processing/../secret", "skill://ghost/SKILL.md", "skill://pdf-processing/nope.md"} {
		if _, err := c.cs.ReadResource(ctx, &mcpsdk.ReadResourceParams{URI: uri}); err == nil {
			t.Errorf("read %s succeeded", uri)
		}
	}

	// The extension's own methods: front matter and a manifest whose
	// digests are the files' own.
	list, err := mcpsdk.CallCustomMethod[*SkillsListParams, *SkillsListResult](ctx, c.cs, methodSkillList, &SkillsListParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Skills) != 2 || list.Skills[1].URI != "skill://pdf-processing/SKILL.md" || list.Skills[1].Frontmatter["name"] != "pdf-processing" {
		t.Fatalf("skills/list = %+v", list.Skills)
	}
	sum := sha256.Sum256(want)
	if r := list.Skills[1].Resources; !slices.ContainsFunc(r, func(x skillResource) bool {
		return x.URI == "skill://pdf-processing/SKILL.md" && x.Digest == "sha256:"+hex.EncodeToString(sum[:]) && x.Size == int64(len(want))
	}) {
		t.Errorf("manifest = %+v", r)
	}
	got, err := mcpsdk.CallCustomMethod[*SkillsGetParams, *SkillsGetResult](ctx, c.cs, methodSkillGet, &SkillsGetParams{URI: "skill://changelog-writer/SKILL.md"})
	if err != nil || got.Skill.Frontmatter["name"] != "changelog-writer" {
		t.Errorf("skills/get = %+v %v", got, err)
	}
	if _, err := mcpsdk.CallCustomMethod[*SkillsGetParams, *SkillsGetResult](ctx, c.cs, methodSkillGet, &SkillsGetParams{URI: "skill://ghost/SKILL.md"}); err == nil {
		t.Error("skills/get of an unknown skill succeeded")
	}
}

func TestSkillResourcesFollowReloads(t *testing.T) {
	dir := t.TempDir()
	changelog := copyFixture(t, "changelog-writer", dir)
	cat := newFolderCatalog(t, changelog)
	s := newServer(t, registry.New(registry.Config{}), func(c *Config) { c.Skills = cat })
	c := serveSkills(t, s, Endpoint{})
	only := serveSkills(t, s, Endpoint{Filter: Filter{Skills: []string{"changelog-writer"}}})

	cat.load(t, copyFixture(t, "brand-guidelines", dir))
	waitSignal(t, c.changed, "resources/list_changed after a skill was added")
	if got := c.uris(t); !slices.Contains(got, "skill://brand-guidelines/SKILL.md") {
		t.Errorf("after adding: %v", got)
	}
	if got := only.uris(t); slices.Contains(got, "skill://brand-guidelines/SKILL.md") {
		t.Errorf("an endpoint filtered to changelog-writer lists %v", got)
	}

	// An edit changes the file the next read returns.
	if err := os.WriteFile(filepath.Join(changelog, "references", "style.md"), []byte("# Style\n\nShort lines.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cat.load(t, changelog)
	waitSignal(t, c.changed, "resources/list_changed after an edit")
	read, err := c.cs.ReadResource(context.Background(), &mcpsdk.ReadResourceParams{URI: "skill://changelog-writer/references/style.md"})
	if err != nil || read.Contents[0].Text != "# Style\n\nShort lines.\n" {
		t.Errorf("read after the edit: %+v %v", read, err)
	}

	cat.remove("brand-guidelines")
	waitSignal(t, c.changed, "resources/list_changed after a skill was removed")
	if got := c.uris(t); slices.Contains(got, "skill://brand-guidelines/SKILL.md") {
		t.Errorf("after removing: %v", got)
	}
}
