package api_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/skillhost/skillhost/internal/filtertest"
	"github.com/skillhost/skillhost/pkg/api"
	"github.com/skillhost/skillhost/pkg/registry"
)

// TestFilterTable runs the filter table every face shares against
// GET /v1/tools and GET /v1/openai/tools, which must offer the same tools.
func TestFilterTable(t *testing.T) {
	srv := api.New(api.Config{Registry: filtertest.Registry(t), Skills: noSkills{}})
	get := func(t *testing.T, path string, q url.Values, body any) error {
		q.Set("limit", "128") // the face's defaults are not the filter's business
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path+"?"+q.Encode(), nil))
		if w.Code != http.StatusOK {
			var e struct{ Error *registry.Error }
			if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || e.Error == nil {
				t.Fatalf("GET %s: %d with no error body: %s", path, w.Code, w.Body)
			}
			if e.Error.Code == registry.CodeBadRequest && w.Code != http.StatusBadRequest {
				t.Errorf("GET %s: %d for bad_request", path, w.Code)
			}
			return e.Error
		}
		if err := json.Unmarshal(w.Body.Bytes(), body); err != nil {
			t.Fatalf("GET %s: %v in %s", path, err, w.Body)
		}
		return nil
	}
	filtertest.Run(t, filtertest.Face{List: func(t *testing.T, q url.Values) ([]string, error) {
		var tools struct{ Tools []struct{ Name string } }
		if err := get(t, "/v1/tools", q, &tools); err != nil {
			return nil, err
		}
		var oa struct {
			Tools []struct{ Function struct{ Name string } }
		}
		if err := get(t, "/v1/openai/tools", q, &oa); err != nil {
			t.Fatalf("/v1/tools answered, /v1/openai/tools refused: %v", err)
		}
		names := []string{}
		for _, tl := range tools.Tools {
			names = append(names, tl.Name)
		}
		if len(oa.Tools) != len(names) {
			t.Errorf("/v1/openai/tools offers %d tools, /v1/tools %d", len(oa.Tools), len(names))
		}
		return names, nil
	}})
}
