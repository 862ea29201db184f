package api_test

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/skillhost/skillhost/pkg/api"
	"github.com/skillhost/skillhost/pkg/registry"
)

// TestRouteErrors drives every route's refusals in process, over a fake
// loader side and a registry of in-memory invokers: each answers its
// status, in the one error shape, with the code and words that say why.
func TestRouteErrors(t *testing.T) {
	loaderSays := registry.Errorf(registry.CodeNotFound, `no skill named "ghost" in /srv/skills`)
	for _, tc := range []struct {
		name           string
		skills         func(*fakeSkills)
		method, target string
		body           string
		header         []string
		status         int
		code           registry.Code
		msg            string
	}{
		{name: "readyz before the first scan settled", skills: func(f *fakeSkills) { f.ready = false },
			method: "GET", target: "/readyz", status: 503, code: registry.CodeSkillUnavailable, msg: "first scan"},
		{name: "unknown skill", method: "GET", target: "/v1/skills/ghost", status: 404, code: registry.CodeNotFound, msg: `no skill named "ghost"`},

		{name: "tools: unknown parameter", method: "GET", target: "/v1/tools?tag=math", status: 400, code: registry.CodeBadRequest, msg: `unknown query parameter "tag"`},
		{name: "tools: limit not a number", method: "GET", target: "/v1/tools?q=x&limit=ten", status: 400, code: registry.CodeBadRequest, msg: `limit must be a whole number from 1 to 128, not "ten"`},
		{name: "tools: limit over the cap", method: "GET", target: "/v1/tools?limit=129", status: 400, code: registry.CodeBadRequest, msg: "from 1 to 128"},
		{name: "tools: read_only unreadable", method: "GET", target: "/v1/tools?read_only=yes", status: 400, code: registry.CodeBadRequest, msg: `read_only: must be true or false, not "yes"`},
		{name: "tools: match unknown", method: "GET", target: "/v1/tools?tags=a&match=most", status: 400, code: registry.CodeBadRequest, msg: "match:"},
		{name: "openai tools: bad filter", method: "GET", target: "/v1/openai/tools?read_only=", status: 400, code: registry.CodeBadRequest, msg: "read_only"},
		{name: "openai tools: unknown parameter", method: "GET", target: "/v1/openai/tools?skill=calc", status: 400, code: registry.CodeBadRequest, msg: `"skill"`},

		{name: "tool: unknown", method: "GET", target: "/v1/tools/calc.nope", status: 404, code: registry.CodeUnknownTool, msg: "calc.nope"},
		{name: "tool: not a tool name", method: "GET", target: "/v1/tools/nodot", status: 404, code: registry.CodeUnknownTool, msg: "nodot"},

		{name: "invoke: unknown tool", method: "POST", target: "/v1/tools/calc.nope/invoke", body: `{}`, status: 404, code: registry.CodeUnknownTool, msg: "calc.nope"},
		{name: "invoke: empty body", method: "POST", target: "/v1/tools/calc.add/invoke", status: 400, code: registry.CodeBadRequest, msg: "request body is empty"},
		{name: "invoke: not JSON", method: "POST", target: "/v1/tools/calc.add/invoke", body: `{"arguments":`, status: 400, code: registry.CodeBadRequest, msg: "not valid JSON"},
		{name: "invoke: two values", method: "POST", target: "/v1/tools/calc.add/invoke", body: `{} {}`, status: 400, code: registry.CodeBadRequest, msg: "exactly one JSON value"},
		{name: "invoke: unknown field", method: "POST", target: "/v1/tools/calc.add/invoke", body: `{"args":{}}`, status: 400, code: registry.CodeBadRequest, msg: `unknown field "args"`},
		{name: "invoke: content type", method: "POST", target: "/v1/tools/calc.add/invoke", body: `{}`, header: []string{"Content-Type", "text/plain"},
			status: 400, code: registry.CodeBadRequest, msg: `must be application/json, not "text/plain"`},
		{name: "invoke: body over the tool's limit", method: "POST", target: "/v1/tools/calc.add/invoke",
			body: `{"arguments":{"a":"` + strings.Repeat("x", 5000) + `"}}`, status: 413, code: registry.CodeRequestTooLarge, msg: "limit"},
		{name: "invoke: arguments over the tool's limit", method: "POST", target: "/v1/tools/calc.add/invoke",
			body: `{"arguments":{"a":"` + strings.Repeat("x", 300) + `"}}`, status: 413, code: registry.CodeRequestTooLarge, msg: "256"},
		{name: "invoke: arguments fail the schema", method: "POST", target: "/v1/tools/calc.add/invoke", body: `{"arguments":{"a":1}}`,
			status: 400, code: registry.CodeInvalidArguments, msg: "'b'"},
		{name: "invoke: arguments not an object", method: "POST", target: "/v1/tools/calc.add/invoke", body: `{"arguments":[1,2]}`,
			status: 400, code: registry.CodeInvalidArguments, msg: "calc.add"},
		{name: "invoke: the tool refuses", method: "POST", target: "/v1/tools/calc.fail/invoke", body: `{}`, status: 422, code: registry.CodeToolError, msg: "always"},
		{name: "invoke: the tool times out", method: "POST", target: "/v1/tools/calc.slow/invoke", body: `{}`, status: 504, code: registry.CodeTimeout, msg: "calc.slow"},

		{name: "rescan: the loader's own error", skills: func(f *fakeSkills) { f.err = registry.Errorf(registry.CodeForbidden, "read-only tree") },
			method: "POST", target: "/v1/rescan", status: 403, code: registry.CodeForbidden, msg: "read-only tree"},
		{name: "rescan: the tree is unreadable", skills: func(f *fakeSkills) { f.err = context.DeadlineExceeded },
			method: "POST", target: "/v1/rescan", status: 504, code: registry.CodeTimeout, msg: "within 2 minutes"},
		{name: "disable: unknown skill", skills: func(f *fakeSkills) { f.err = loaderSays },
			method: "POST", target: "/v1/skills/ghost/disable", status: 404, code: registry.CodeNotFound, msg: "ghost"},
		{name: "enable: unknown skill", skills: func(f *fakeSkills) { f.err = loaderSays },
			method: "POST", target: "/v1/skills/ghost/enable", status: 404, code: registry.CodeNotFound, msg: "ghost"},
		{name: "unpin: unknown skill", skills: func(f *fakeSkills) { f.err = loaderSays },
			method: "DELETE", target: "/v1/skills/ghost/pin", status: 404, code: registry.CodeNotFound, msg: "ghost"},
		{name: "pin: no version", method: "PUT", target: "/v1/skills/calc/pin", body: `{}`, status: 400, code: registry.CodeBadRequest, msg: `{"version": "X.Y.Z"}`},
		{name: "pin: empty body", method: "PUT", target: "/v1/skills/calc/pin", status: 400, code: registry.CodeBadRequest, msg: "empty"},
		{name: "pin: unknown field", method: "PUT", target: "/v1/skills/calc/pin", body: `{"v":"1.0.0"}`, status: 400, code: registry.CodeBadRequest, msg: `unknown field "v"`},
		{name: "pin: the loader refuses the version",
			skills: func(f *fakeSkills) {
				f.err = registry.Errorf(registry.CodeBadRequest, "cannot pin calc to 0.9.0: that version is invalid")
			},
			method: "PUT", target: "/v1/skills/calc/pin", body: `{"version":"0.9.0"}`, status: 400, code: registry.CodeBadRequest, msg: "cannot pin calc to 0.9.0"},

		{name: "no such endpoint", method: "GET", target: "/v2/everything", status: 404, code: registry.CodeNotFound, msg: "no endpoint GET /v2/everything"},
		{name: "wrong method", method: "DELETE", target: "/v1/tools", status: 405, code: "method_not_allowed", msg: "it takes GET"},
		{name: "wrong method on invoke", method: "GET", target: "/v1/tools/calc.add/invoke", status: 405, code: "method_not_allowed", msg: "it takes POST"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			skills := fixtureSkills()
			if tc.skills != nil {
				tc.skills(skills)
			}
			w := do(t, newTestServer(t, skills), tc.method, tc.target, tc.body, tc.header...)
			e := apiError(t, w)
			if w.Code != tc.status || e.Code != tc.code || !strings.Contains(e.Message, tc.msg) {
				t.Errorf("%s %s = %d %s %q; want %d %s with %q", tc.method, tc.target, w.Code, e.Code, e.Message, tc.status, tc.code, tc.msg)
			}
			if retry := w.Header().Get("Retry-After") != ""; retry != e.Retryable {
				t.Errorf("Retry-After %q on a retryable=%v answer", w.Header().Get("Retry-After"), e.Retryable)
			}
			if tc.status == 405 && w.Header().Get("Allow") == "" {
				t.Error("405 without Allow")
			}
		})
	}
}

// TestOperatorActionsReachTheLoader: what a refusal test cannot show, that
// an accepted action went to the loader and answered the skill.
func TestOperatorActionsReachTheLoader(t *testing.T) {
	skills := fixtureSkills()
	srv := newTestServer(t, skills)
	for _, tc := range []struct{ method, target, body string }{
		{"POST", "/v1/skills/calc/disable", ""}, {"POST", "/v1/skills/calc/enable", ""},
		{"PUT", "/v1/skills/calc/pin", `{"version":"1.0.0"}`}, {"DELETE", "/v1/skills/calc/pin", ""}, {"POST", "/v1/rescan", ""},
	} {
		if w := do(t, srv, tc.method, tc.target, tc.body); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"name":"calc"`) {
			t.Errorf("%s %s = %d %s", tc.method, tc.target, w.Code, w.Body)
		}
	}
	want := "disable calc,enable calc,pin calc 1.0.0,unpin calc,rescan"
	if got := strings.Join(skills.calls, ","); got != want {
		t.Errorf("the loader was asked %s, want %s", got, want)
	}
}

func TestEventsRoute(t *testing.T) {
	t.Run("disabled", func(t *testing.T) {
		srv := api.New(api.Config{Registry: fixtureRegistry(t), Skills: fixtureSkills()})
		w := do(t, srv, "GET", "/v1/events", "")
		if e := apiError(t, w); w.Code != 404 || e.Code != registry.CodeNotFound || !strings.Contains(e.Message, "not enabled") {
			t.Errorf("= %d %v", w.Code, e)
		}
	})
	t.Run("state, then shutdown", func(t *testing.T) {
		srv := newTestServer(t, fixtureSkills())
		ts := httptest.NewServer(srv)
		defer ts.Close()
		resp, err := ts.Client().Get(ts.URL + "/v1/events")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || !strings.HasPrefix(ct, "text/event-stream") {
			t.Fatalf("= %d %s", resp.StatusCode, ct)
		}
		lines := bufio.NewScanner(resp.Body)
		next := func() string {
			for lines.Scan() {
				if l := lines.Text(); strings.HasPrefix(l, "event: ") {
					lines.Scan()
					return strings.TrimPrefix(l, "event: ") + " " + lines.Text()
				}
			}
			t.Fatalf("the stream ended: %v", lines.Err())
			return ""
		}
		if got := next(); !strings.HasPrefix(got, "state data: {") || !strings.Contains(got, `"name":"calc"`) {
			t.Errorf("first event %s", got)
		}
		srv.Shutdown()
		if got := next(); !strings.HasPrefix(got, "shutdown data: ") {
			t.Errorf("after Shutdown: %s", got)
		}
	})
}

// TestGuards drives the wrappers the daemon puts around the API: the
// bearer tokens and the browser guard.
func TestGuards(t *testing.T) {
	srv := newTestServer(t, fixtureSkills())
	const admin, invoke = "admin-token-0123456789", "invoke-token-0123456789"
	guarded := api.GuardBrowsers(api.RequireTokens(srv, api.Tokens{Admin: admin, Invoke: invoke}), false)
	loopOnly := api.GuardBrowsers(srv, true)
	for _, tc := range []struct {
		name           string
		h              http.Handler
		method, target string
		header         []string
		status         int
		code           registry.Code
		msg            string
	}{
		{"no token", guarded, "GET", "/v1/skills", nil, 401, "unauthorized", "missing or wrong bearer token"},
		{"wrong token", guarded, "GET", "/v1/skills", []string{"Authorization", "Bearer nope"}, 401, "unauthorized", "bearer"},
		{"invoke token on an admin action", guarded, "POST", "/v1/rescan", []string{"Authorization", "Bearer " + invoke}, 403, registry.CodeForbidden, "needs the admin token"},
		{"cross-origin POST", guarded, "POST", "/v1/tools/calc.add/invoke",
			[]string{"Authorization", "Bearer " + admin, "Sec-Fetch-Site", "cross-site"}, 403, registry.CodeForbidden, "cross-origin request refused"},
		{"rebinding: a name that is not loopback", loopOnly, "GET", "/v1/skills", []string{"Host", "evil.example"}, 403, registry.CodeForbidden, `request for host "evil.example" refused`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := do(t, tc.h, tc.method, tc.target, "", tc.header...)
			e := apiError(t, w)
			if w.Code != tc.status || e.Code != tc.code || !strings.Contains(e.Message, tc.msg) {
				t.Errorf("= %d %s %q; want %d %s with %q", w.Code, e.Code, e.Message, tc.status, tc.code, tc.msg)
			}
			if tc.status == 401 && w.Header().Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
		})
	}
	for _, probe := range []string{"/healthz", "/readyz"} {
		if w := do(t, guarded, "GET", probe, ""); w.Code != 200 {
			t.Errorf("%s behind the token: %d", probe, w.Code)
		}
	}
}
