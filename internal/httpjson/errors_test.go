package httpjson

import (
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"testing"

	"github.com/skillhost/skillhost/pkg/registry"
)

// TestStatusesAreDocumented: docs/api.md's table of codes and the table
// every face answers from say the same, code for code.
func TestStatusesAreDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\| (\\d{3}) \\|").FindAllStringSubmatch(string(doc), -1)
	documented := map[registry.Code]int{}
	for _, r := range rows {
		documented[registry.Code(r[1])], _ = strconv.Atoi(r[2])
	}
	for _, c := range Codes() {
		if got, ok := documented[c]; !ok {
			t.Errorf("code %s (%d) is not in docs/api.md's table", c, Status(c))
		} else if got != Status(c) {
			t.Errorf("docs/api.md gives %s status %d; the faces answer %d", c, got, Status(c))
		}
		delete(documented, c)
	}
	for c := range documented {
		t.Errorf("docs/api.md documents %s, which no face answers with", c)
	}
}

func TestWriteError(t *testing.T) {
	w := httptest.NewRecorder()
	WriteError(w, registry.Errorf(registry.CodeOverloaded, "busy"))
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "1" ||
		w.Body.String() != `{"error":{"code":"overloaded","message":"busy","retryable":true}}`+"\n" {
		t.Errorf("overloaded: %d %v %s", w.Code, w.Header(), w.Body)
	}
	w = httptest.NewRecorder()
	WriteError(w, os.ErrNotExist)
	if w.Code != http.StatusInternalServerError || w.Header().Get("Retry-After") != "" {
		t.Errorf("a plain error: %d %v %s", w.Code, w.Header(), w.Body)
	}
	if Status("no_such_code") != http.StatusInternalServerError {
		t.Error("an unknown code is not a 500")
	}
}
