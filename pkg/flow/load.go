package flow

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/skillhost/skillhost/pkg/registry"
)

// ProfileSet is what loading needs of the agent profiles: their names, to
// check that every profile a flow names exists. *agent.Profiles satisfies it.
type ProfileSet interface {
	Names() []string
}

// MaxFileBytes caps a flow file.
const MaxFileBytes = 1 << 20

// DirBeside is where the flows of an agents file live: the folder "flows"
// beside it (examples/agents.json → examples/flows/).
func DirBeside(agentsFile string) string {
	return filepath.Join(filepath.Dir(agentsFile), "flows")
}

// Set is the flows of one folder, by name.
type Set struct {
	byName map[string]*Flow
}

// Get returns the named flow.
func (s *Set) Get(name string) (*Flow, bool) {
	f, ok := s.byName[name]
	return f, ok
}

// Names returns the flow names, sorted.
func (s *Set) Names() []string {
	out := make([]string, 0, len(s.byName))
	for n := range s.byName {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// LoadDir loads every flow file (*.json, *.yaml, *.yml) directly in dir;
// each flow is named after its file. A missing folder is an empty set. The
// problems of every file are reported together; one bad file fails the
// whole set, so a reload never half-applies.
func LoadDir(dir string, profiles ProfileSet) (*Set, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return &Set{byName: map[string]*Flow{}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("flows folder: %w", err)
	}
	set := &Set{byName: map[string]*Flow{}}
	var errs []error
	for _, e := range entries {
		if !e.Type().IsRegular() || formatOf(e.Name()) == "" {
			continue
		}
		f, err := Load(filepath.Join(dir, e.Name()), profiles)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if prev, dup := set.byName[f.Name]; dup {
			errs = append(errs, fmt.Errorf("flow file %s: flow %q is also defined by another file in %s", e.Name(), prev.Name, dir))
			continue
		}
		set.byName[f.Name] = f
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return set, nil
}

// formatOf is "yaml" or "json" by extension, "" for other files.
func formatOf(name string) string {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".yaml", ".yml":
		return "yaml"
	case ".json":
		return "json"
	}
	return ""
}

// Load reads one flow file: YAML when its name ends in .yaml or .yml, JSON
// otherwise. The flow is named after the file without its extension.
func Load(path string, profiles ProfileSet) (*Flow, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("flow file: %w", err)
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("flow file: %w", err)
	}
	if len(b) > MaxFileBytes {
		return nil, fmt.Errorf("flow file %s is over %d bytes", path, MaxFileBytes)
	}
	format := formatOf(path)
	if format == "" {
		format = "json"
	}
	name := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	f, err := Parse(name, b, format, profiles)
	if err != nil {
		return nil, fmt.Errorf("flow file %s: %w", path, err)
	}
	return f, nil
}

// Parse parses and validates a flow document, format "json" or "yaml".
// profiles may be nil, which skips the check that named profiles exist.
// Unknown fields are refused, so a typo cannot silently drop a limit, and
// every problem is reported at once, each with its path.
func Parse(name string, data []byte, format string, profiles ProfileSet) (*Flow, error) {
	switch format {
	case "json":
	case "yaml":
		j, err := yaml.YAMLToJSON(data)
		if err != nil {
			return nil, fmt.Errorf("not valid YAML: %w", err)
		}
		data = j
	default:
		return nil, fmt.Errorf("unknown flow format %q: want json or yaml", format)
	}
	f := new(Flow)
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(f); err != nil {
		return nil, fmt.Errorf("not a valid flow document: %w", err)
	}
	if dec.More() {
		return nil, errors.New("not a valid flow document: trailing data after the JSON value")
	}
	f.Name = name
	var v validator
	if !registry.ValidName(name) {
		v.bad("", "flow name %q (the file's name) must be lowercase letters and digits joined by single - or _", name)
	}
	v.flow(f, profiles)
	if err := v.err(); err != nil {
		return nil, err
	}
	return f, nil
}

// NewSet makes a set of flows already parsed (Parse), for a program that
// builds its flows itself; a later flow of the same name wins.
func NewSet(flows ...*Flow) *Set {
	s := &Set{byName: make(map[string]*Flow, len(flows))}
	for _, f := range flows {
		s.byName[f.Name] = f
	}
	return s
}
