package host

import (
	"github.com/skillhost/skillhost/pkg/api"
	"github.com/skillhost/skillhost/pkg/loader"
	"github.com/skillhost/skillhost/pkg/manifest"
)

// apiSkills shows the loader to the HTTP API in the API's own wire types
// (api.Skills): the assembly knows both sides, so the API imports neither
// the loader nor the manifest, and a field renamed there changes no JSON
// until this conversion says so. The operator actions (Rescan, Ready,
// Disable, Enable, Pin, Unpin) are the loader's own, promoted.
type apiSkills struct{ *loader.Loader }

var _ api.Skills = apiSkills{}

// APISkills is a loader as the HTTP API reads it, for an API the caller
// serves itself (the benchmark's in-process handler).
func APISkills(ld *loader.Loader) api.Skills { return apiSkills{ld} }

// Skills converts every binary skill's status and the tree's own problems.
func (s apiSkills) Skills() api.SkillList {
	st := s.Status()
	out := api.SkillList{Skills: make([]api.Skill, len(st)), Problems: apiProblems(s.TreeProblems())}
	for i, sk := range st {
		out.Skills[i] = apiSkill(sk)
	}
	return out
}

// Skill converts one skill's status; ok is false for a name the loader
// does not know (the API then looks in the catalog of Agent Skills).
func (s apiSkills) Skill(name string) (api.Skill, bool) {
	st, ok := s.Loader.Skill(name)
	if !ok {
		return api.Skill{}, false
	}
	return apiSkill(st), true
}

func apiSkill(s loader.SkillStatus) api.Skill {
	out := api.Skill{Name: s.Name, Kind: api.KindBinary, Active: s.Active, Disabled: s.Disabled, Pinned: s.Pinned, Reason: s.Reason}
	if s.Versions != nil { // an empty list stays [], not null, in the JSON
		out.Versions = make([]api.Version, len(s.Versions))
	}
	for i, v := range s.Versions {
		out.Versions[i] = api.Version{
			Version: v.Version, State: string(v.State), Runtime: v.Runtime, PID: v.PID, StartedAt: v.StartedAt,
			InFlight: v.InFlight, Restarts: v.Restarts, LastError: v.LastError,
			Problems: apiProblems(v.Problems), Tools: v.Tools, Uses: v.Uses, DrainDeadline: v.DrainDeadline,
		}
	}
	return out
}

func apiProblems(ps manifest.Problems) []api.Problem {
	if ps == nil {
		return nil
	}
	out := make([]api.Problem, len(ps))
	for i, p := range ps {
		out[i] = api.Problem{Path: p.Path, Message: p.Message}
	}
	return out
}
