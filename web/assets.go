package web

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"sort"
	"strings"
)

// Assets serves static files under content-hashed URLs. It is built once
// from an fs.FS and never changes afterwards.
type Assets struct {
	byName map[string]*asset // "css/app.css" -> asset
	byPath map[string]*asset // "css/app.3f2a1c9e0b.css" and "css/app.css" -> asset
}

type asset struct {
	name   string // path inside the FS
	hashed string // name with the hash before the extension
	body   *encoded
	ctype  string
}

// NewAssets reads every file of fsys into memory (except *.go), as it is,
// and computes each one's hashed name: the first 10 hex digits of the
// body's SHA-256 go before the extension, and name its ETags. Text assets
// are also kept gzipped and in brotli (newEncoded), which is what saves
// their bytes on the wire.
func NewAssets(fsys fs.FS) (*Assets, error) {
	a := &Assets{byName: map[string]*asset{}, byPath: map[string]*asset{}}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(p, ".go") {
			return err // Go files are not served
		}
		body, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		ext := path.Ext(p)
		sum := sha256.Sum256(body)
		h := hex.EncodeToString(sum[:])[:10]
		ctype := mime.TypeByExtension(ext)
		switch ext {
		case ".js", ".mjs":
			ctype = "text/javascript; charset=utf-8"
		case ".css":
			ctype = "text/css; charset=utf-8"
		case ".svg":
			ctype = "image/svg+xml"
		}
		if ctype == "" {
			ctype = "application/octet-stream"
		}
		as := &asset{name: p, hashed: strings.TrimSuffix(p, ext) + "." + h + ext, body: &encoded{tag: h, plain: body}, ctype: ctype}
		if strings.HasPrefix(ctype, "text/") || ctype == "image/svg+xml" {
			as.body = newEncoded(body, h)
		}
		a.byName[p] = as
		a.byPath[as.hashed] = as
		a.byPath[p] = as
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("static assets: %w", err)
	}
	return a, nil
}

// URL returns the hashed URL of the named asset (e.g. "css/app.css" gives
// "/static/css/app.3f2a1c9e0b.css"). An unknown name gives its plain URL,
// which will answer 404: a broken link the crawler test catches.
func (a *Assets) URL(name string) string {
	if as, ok := a.byName[name]; ok {
		return "/static/" + as.hashed
	}
	return "/static/" + name
}

// Names returns every asset name, sorted.
func (a *Assets) Names() []string {
	names := make([]string, 0, len(a.byName))
	for n := range a.byName {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// serve answers /static/{p} when p names an asset, compressed as the
// client accepts when that is smaller, 304 when its If-None-Match names
// the asset's ETag: hashed paths are immutable for a year; plain paths
// (used by ES module imports) must be revalidated by ETag.
func (a *Assets) serve(w http.ResponseWriter, r *http.Request, p string) bool {
	as, ok := a.byPath[p]
	if !ok {
		return false
	}
	h := w.Header()
	h.Set("Content-Type", as.ctype)
	if p == as.hashed {
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		h.Set("Cache-Control", "no-cache")
	}
	as.body.serve(w, r, http.StatusOK)
	return true
}
