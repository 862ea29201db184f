package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skillhost/skillhost/internal/httpjson"
	"github.com/skillhost/skillhost/pkg/api"
	"github.com/skillhost/skillhost/pkg/registry"
)

// noSkills is the loader side of the API, empty: the invoke handler needs
// only the registry.
type noSkills struct{}

func (noSkills) Skills() api.SkillList                     { return api.SkillList{} }
func (noSkills) Skill(string) (api.Skill, bool)            { return api.Skill{}, false }
func (noSkills) Rescan(context.Context) error              { return nil }
func (noSkills) Ready() bool                               { return true }
func (noSkills) Disable(context.Context, string) error     { return nil }
func (noSkills) Enable(context.Context, string) error      { return nil }
func (noSkills) Pin(context.Context, string, string) error { return nil }
func (noSkills) Unpin(context.Context, string) error       { return nil }

// memBackend answers in memory; each tool misbehaves in its own way so the
// handler's every outcome is reachable.
type memBackend struct{}

func (memBackend) Acquire() bool { return true }
func (memBackend) Release()      {}
func (memBackend) Invoke(ctx context.Context, tool string, args []byte, max int64) ([]byte, error) {
	switch tool {
	case "echo":
		return args, nil
	case "notjson":
		return []byte(`{"a":`), nil
	case "big":
		return []byte(`"` + strings.Repeat("x", int(max)) + `"`), nil
	case "refuse":
		return nil, registry.Errorf(registry.CodeToolError, "fz.refuse refused: no")
	case "crash":
		return nil, registry.Errorf(registry.CodeSkillCrashed, "fz.crash: exited during the call")
	case "slow":
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return nil, registry.Errorf(registry.CodeInvalidResponse, "no such tool %s", tool)
}

func fuzzServer(f *testing.F) *api.Server {
	reg := registry.New(registry.Config{})
	sp := registry.SkillSpec{Name: "fz", Version: "1.0.0", Description: "fuzz skill", Backend: memBackend{},
		Limits: registry.Limits{Timeout: 20 * time.Millisecond, MaxRequestBytes: 4096, MaxResponseBytes: 256, MaxConcurrency: 4}}
	schema := json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"},"s":{"type":"string","maxLength":64}},"additionalProperties":false}`)
	for _, name := range []string{"echo", "notjson", "big", "refuse", "crash", "slow"} {
		sp.Tools = append(sp.Tools, registry.ToolSpec{Name: name, Description: "fuzz tool " + name, InputSchema: schema})
	}
	if _, err := reg.Put(sp); err != nil {
		f.Fatal(err)
	}
	return api.New(api.Config{Registry: reg, Skills: noSkills{}})
}

// FuzzInvokeHandler drives POST /v1/tools/{name}/invoke with arbitrary tool
// names, bodies and content types. It never panics, and every answer is
// either a result or the one error shape with a documented code whose HTTP
// status matches; the only exception is ServeMux's redirect of a path that
// is not clean ("/v1/tools/../invoke"), which never reaches the handler.
func FuzzInvokeHandler(f *testing.F) {
	srv := fuzzServer(f)
	seeds := []struct{ name, body, ctype string }{
		{"fz.echo", `{"arguments":{"n":1}}`, "application/json"},
		{"fz__echo", `{"arguments":{"s":"hi"}}`, ""},
		{"fz.echo", `{"arguments":{"n":"x"}}`, "application/json"},
		{"fz.echo", `{"arguments":`, "application/json"},
		{"fz.echo", `{"arguments":{},"extra":1}`, "application/json"},
		{"fz.echo", `{"arguments":{}} {}`, "application/json"},
		{"fz.echo", `{"arguments":{"s":"` + strings.Repeat("x", 5000) + `"}}`, "application/json"},
		{"fz.echo", `{"arguments":{}}`, "text/plain"},
		{"fz.echo", `{"arguments":{}}`, "application/json; charset=\x00"},
		{"fz.echo", `{"arguments":[1]}`, "application/vnd.api+json"},
		{"fz.echo", "{\"arguments\":{\"s\":\"\xff\xfe\"}}", "application/json"},
		{"fz.echo", `{"arguments":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`, "application/json"},
		{"fz.echo", `{"arguments":null}`, "application/json"},
		{"fz.echo", ``, "application/json"},
		{"fz.notjson", `{"arguments":{}}`, ""},
		{"fz.big", `{"arguments":{}}`, ""},
		{"fz.refuse", `{"arguments":{}}`, ""},
		{"fz.crash", `{"arguments":{}}`, ""},
		{"fz.slow", `{"arguments":{}}`, ""},
		{"fz.nope", `{"arguments":{}}`, ""},
		{"../../etc/passwd", `{"arguments":{}}`, ""},
		{"..", `{"arguments":{}}`, ""},
		{"fz.echo\x00", `{"arguments":{}}`, ""},
		{"\xff\xfe", `{"arguments":{}}`, ""},
		{strings.Repeat("a", 5000), `{"arguments":{}}`, ""},
	}
	for _, s := range seeds {
		f.Add(s.name, []byte(s.body), s.ctype)
	}
	f.Fuzz(func(t *testing.T, name string, body []byte, ctype string) {
		raw := "/v1/tools/" + url.PathEscape(name) + "/invoke"
		req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
		req.URL = &url.URL{Path: "/v1/tools/" + name + "/invoke", RawPath: raw}
		req.RequestURI = raw
		if ctype != "" {
			req.Header["Content-Type"] = []string{ctype}
		}
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, req)
		res := w.Result()
		out := w.Body.Bytes()
		if res.StatusCode == http.StatusTemporaryRedirect || res.StatusCode == http.StatusMovedPermanently {
			if p := req.URL.EscapedPath(); path.Clean(p) == p {
				t.Fatalf("redirect %d for the clean path %q", res.StatusCode, p)
			}
			return
		}
		if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			t.Fatalf("%q %q: Content-Type %q, body %q", name, body, ct, out)
		}
		if res.StatusCode == http.StatusOK {
			var ok struct {
				Result     json.RawMessage `json:"result"`
				Tool       string          `json:"tool"`
				Skill      string          `json:"skill"`
				Version    string          `json:"version"`
				DurationMS *float64        `json:"duration_ms"`
			}
			if err := json.Unmarshal(out, &ok); err != nil || len(ok.Result) == 0 || ok.Tool == "" || ok.Skill != "fz" ||
				ok.Version != "1.0.0" || ok.DurationMS == nil {
				t.Fatalf("%q %q: 200 but not a result: %s (%v)", name, body, out, err)
			}
			return
		}
		var e struct {
			Error *registry.Error `json:"error"`
		}
		dec := json.NewDecoder(bytes.NewReader(out))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil || e.Error == nil {
			t.Fatalf("%q %q: status %d, not the error shape: %s (%v)", name, body, res.StatusCode, out, err)
		}
		if !slices.Contains(httpjson.Codes(), e.Error.Code) || e.Error.Message == "" {
			t.Fatalf("%q %q: undocumented code or empty message: %s", name, body, out)
		}
		if httpjson.Status(e.Error.Code) != res.StatusCode {
			t.Fatalf("%q %q: code %s with status %d, want %d", name, body, e.Error.Code, res.StatusCode, httpjson.Status(e.Error.Code))
		}
		if e.Error.Code == registry.CodeInternal {
			t.Fatalf("%q %q: internal error for caller input: %s", name, body, out)
		}
	})
}
