package web

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"sort"
	"strconv"
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
	body   []byte
	gz     []byte // body gzipped, when that is smaller
	ctype  string
	etag   string
}

// NewAssets reads every file of fsys into memory (except *.go), as it is,
// and computes each one's hashed name: the first 10 hex digits of the
// body's SHA-256 go before the extension. Text assets are also kept
// gzipped (gzipped), which is what saves their bytes on the wire.
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
		as := &asset{name: p, hashed: strings.TrimSuffix(p, ext) + "." + h + ext, body: body, ctype: ctype, etag: `"` + h + `"`}
		if strings.HasPrefix(ctype, "text/") || ctype == "image/svg+xml" {
			as.gz = gzipped(body)
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

// serve answers /static/{p} when p names an asset, gzipped when the
// client accepts it and that is smaller: hashed paths are immutable for a year;
// plain paths (used by ES module imports) must be revalidated by ETag.
func (a *Assets) serve(w http.ResponseWriter, r *http.Request, p string) bool {
	as, ok := a.byPath[p]
	if !ok {
		return false
	}
	h := w.Header()
	h.Set("Content-Type", as.ctype)
	h.Set("ETag", as.etag)
	if p == as.hashed {
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		h.Set("Cache-Control", "no-cache")
	}
	body := as.body
	if as.gz != nil {
		h.Add("Vary", "Accept-Encoding")
		if acceptsGzip(r) {
			body = as.gz
			h.Set("Content-Encoding", "gzip")
		}
	}
	if match := r.Header.Get("If-None-Match"); match != "" && strings.Contains(match, as.etag) {
		w.WriteHeader(http.StatusNotModified)
		return true
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(body)
	}
	return true
}

// gzipped returns b compressed, or nil when that does not save a tenth.
func gzipped(b []byte) []byte {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	zw.Write(b)
	zw.Close()
	if buf.Len() > len(b)*9/10 {
		return nil
	}
	return buf.Bytes()
}

// acceptsGzip reports whether the request's Accept-Encoding allows gzip
// (and does not refuse it with q=0).
func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.TrimSpace(name) != "gzip" {
			continue
		}
		q := strings.ReplaceAll(params, " ", "")
		return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
	}
	return false
}
