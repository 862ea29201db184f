package host

import (
	"reflect"
	"testing"
	"time"

	"github.com/skillhost/skillhost/pkg/api"
	"github.com/skillhost/skillhost/pkg/loader"
	"github.com/skillhost/skillhost/pkg/manifest"
)

// TestAPISkillConvertsEveryField pins the one place the loader's status
// becomes the API's wire types: each field lands where the API's golden
// files expect it, and a field added to api.Skill or api.Version that the
// conversion leaves unset fails here, not silently in the JSON.
func TestAPISkillConvertsEveryField(t *testing.T) {
	started := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	drain := started.Add(time.Minute)
	st := loader.SkillStatus{Name: "calc", Active: "1.1.0", Disabled: true, Pinned: "1.1.0", Reason: "pinned by an operator",
		Versions: []loader.VersionStatus{{
			Version: "1.1.0", State: loader.StateDraining, Runtime: "go-plugin", PID: 4242, StartedAt: &started,
			InFlight: 3, Restarts: 2, LastError: "exit status 1",
			Problems: manifest.Problems{{Path: "$.version", Message: "does not match"}},
			Tools:    []string{"calc.add"}, Uses: []string{"text.upper"}, DrainDeadline: &drain,
		}}}
	want := api.Skill{Name: "calc", Kind: api.KindBinary, Active: "1.1.0", Disabled: true, Pinned: "1.1.0", Reason: "pinned by an operator",
		Versions: []api.Version{{
			Version: "1.1.0", State: "draining", Runtime: "go-plugin", PID: 4242, StartedAt: &started,
			InFlight: 3, Restarts: 2, LastError: "exit status 1",
			Problems: []api.Problem{{Path: "$.version", Message: "does not match"}},
			Tools:    []string{"calc.add"}, Uses: []string{"text.upper"}, DrainDeadline: &drain,
		}}}
	got := apiSkill(st)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("apiSkill:\n got %+v\nwant %+v", got, want)
	}
	// Description and Instructions are the Agent Skill side, which the API
	// fills from the catalog; every other field comes from the loader.
	notFromLoader := map[string]bool{"Description": true, "Instructions": true}
	for _, v := range []reflect.Value{reflect.ValueOf(got), reflect.ValueOf(got.Versions[0])} {
		for i := range v.NumField() {
			if f := v.Type().Field(i); !notFromLoader[f.Name] && v.Field(i).IsZero() {
				t.Errorf("%s.%s is left unset by the conversion", v.Type().Name(), f.Name)
			}
		}
	}
}

// TestAPISkillKeepsEmptyApart keeps what the JSON tells apart: a skill
// with no versions ("versions": []) is not one whose list is unknown (null).
func TestAPISkillKeepsEmptyApart(t *testing.T) {
	if got := apiSkill(loader.SkillStatus{Name: "text", Versions: []loader.VersionStatus{}}); got.Versions == nil {
		t.Error("an empty list of versions became nil, which the JSON shows as null")
	}
	if got := apiSkill(loader.SkillStatus{Name: "text"}); got.Versions != nil {
		t.Errorf("no versions became %#v", got.Versions)
	}
}
