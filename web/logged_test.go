package web

import (
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/a-h/templ"
)

// Every answer that says the error "has been logged" is true: the error
// is in the log, with the request, when the answer is written; the
// answer does not show it.
func TestInternalErrorsAreLoggedWeb(t *testing.T) {
	// A handler's error that is not a *Error: the store is gone.
	site := newSite(t)
	site.store.Close()
	res := site.postJSON(nil, "/lessons/sample/predict/sample-predict", url.Values{"action": {"lock"}, "option": {"c"}})
	if res.StatusCode != http.StatusInternalServerError || !strings.Contains(res.body, "It has been logged") || strings.Contains(res.body, "closed") {
		t.Errorf("a failed write: %d\n%s\nwant 500 saying it has been logged, not what failed", res.StatusCode, res.body)
	}
	if logs := site.logs.String(); !strings.Contains(logs, `msg="request failed"`) || !strings.Contains(logs, "database is closed") ||
		!strings.Contains(logs, "path=/lessons/sample/predict/sample-predict") {
		t.Errorf("the failed write's error is not logged with the request:\n%s", logs)
	}

	// A page that fails to render.
	logs := &syncBuffer{}
	s := &server{log: slog.New(slog.NewTextHandler(logs, nil))}
	w := httptest.NewRecorder()
	r := httptest.NewRequest("GET", "/broken", nil)
	s.render(w, r, http.StatusOK, templ.ComponentFunc(func(context.Context, io.Writer) error { return errors.New("template exploded") }))
	if w.Code != http.StatusInternalServerError || !strings.Contains(w.Body.String(), "It has been logged") || strings.Contains(w.Body.String(), "exploded") {
		t.Errorf("a failed render: %d %q", w.Code, w.Body.String())
	}
	if !strings.Contains(logs.String(), `msg="render failed"`) || !strings.Contains(logs.String(), "template exploded") || !strings.Contains(logs.String(), "path=/broken") {
		t.Errorf("the failed render is not logged with the request:\n%s", logs.String())
	}
}

// loggedClaims are the places in the module whose messages say an error
// "has been logged", each shown true by a test: web's by
// TestInternalErrorsAreLoggedWeb, classroom's by
// TestInternalErrorsAreLogged. A new one needs a test of its own first.
var loggedClaims = map[string]int{
	"web/errors.go":        1, // fail: any error that is not a *Error
	"web/server.go":        1, // renderFailed
	"classroom/session.go": 1, // a host's or participant's message
	"classroom/rounds.go":  1, // a vote
}

// TestLoggedClaimsAreKnown reads every Go file of the module (not tests,
// not generated templ) for string literals saying an error has been or
// was logged, so no such message appears without a test that it is true.
func TestLoggedClaimsAreKnown(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]int{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || strings.HasSuffix(path, "_templ.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, src, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			v, err := strconv.Unquote(lit.Value)
			if err != nil {
				return true
			}
			v = strings.ToLower(v)
			if strings.Contains(v, "been logged") || strings.Contains(v, "was logged") || strings.Contains(v, "we logged") {
				rel, _ := filepath.Rel(root, path)
				found[filepath.ToSlash(rel)]++
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for file, n := range found {
		if loggedClaims[file] != n {
			t.Errorf("%s has %d messages saying an error was logged, %d known: show in a test that each one's error is logged, then list it in loggedClaims", file, n, loggedClaims[file])
		}
	}
	for file, n := range loggedClaims {
		if found[file] != n {
			t.Errorf("%s: %d messages saying an error was logged are listed, %d found", file, n, found[file])
		}
	}
}
