package web

import (
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"capacitylab/lessons"
)

// TestDocListsEveryRoute walks the router NewServer builds and checks that
// the URL list in doc.go names every method and route, and lists nothing
// the router does not answer.
func TestDocListsEveryRoute(t *testing.T) {
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	// The documented routes: "//\tGET  /path" lines of the URL list.
	line := regexp.MustCompile(`(?m)^//\t(GET|POST) +(/\S*)`)
	documented := map[string]bool{}
	for _, m := range line.FindAllStringSubmatch(string(src), -1) {
		documented[m[1]+" "+m[2]] = true
	}
	c := loadCourse(t)
	h := NewServer(Deps{Course: func() (*lessons.Course, error) { return c, nil }, Assets: newAssets(t)})
	routed := map[string]bool{}
	err = chi.Walk(h.(chi.Routes), func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if method != http.MethodGet && method != http.MethodPost {
			t.Errorf("route %s %s: the URL list only has GET and POST", method, route)
		}
		routed[method+" "+route] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for r := range routed {
		if !documented[r] && !documentedWithSuffix(documented, r) {
			t.Errorf("%s is routed but not in doc.go's URL list", r)
		}
	}
	for d := range documented {
		if !routed[d] && !routedPrefixOf(routed, d) {
			t.Errorf("doc.go lists %s, which the router does not answer", d)
		}
	}
}

// documentedWithSuffix reports whether a documented entry is the route with
// a suffix its handler reads from the last parameter ({id}.md).
func documentedWithSuffix(documented map[string]bool, route string) bool {
	for d := range documented {
		if strings.HasPrefix(d, route+".") {
			return true
		}
	}
	return false
}

func routedPrefixOf(routed map[string]bool, doc string) bool {
	for r := range routed {
		if strings.HasPrefix(doc, r+".") {
			return true
		}
	}
	return false
}
