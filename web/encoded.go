package web

import (
	"bytes"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/andybalholm/brotli"
	"github.com/cespare/xxhash/v2"
	"github.com/klauspost/compress/gzip"
)

// A response body goes out in the encoding the client asks for, with an
// ETag that names its bytes, and not at all (304) when the client already
// has them. Bodies that are the same for many requests (the static assets,
// a lesson page as a newcomer sees it) are kept as encoded values,
// compressed once in every encoding that makes them smaller; a page
// rendered per request (a learner's lesson page, writeHTML) is gzipped
// whole as it goes out, quickly rather than small (gzipWriters).

// encoded is a body kept as it is and, when that is smaller, gzipped and
// in brotli, each compressed once at a slow, small setting.
type encoded struct {
	tag    string // names the body's bytes: each representation's ETag is made from it
	plain  []byte
	gz, br []byte // nil: not smaller than plain
}

// Compression settings. A kept body is compressed once: gzip at its
// smallest, brotli at 6, which on the largest lesson page (45 KB) takes
// about as long as gzip's smallest and is 9% smaller (brotli's smallest,
// 11, is 21% smaller but takes some 200 ms a page). A page compressed per
// request takes klauspost/compress's fastest level with a pooled writer:
// on the largest page (69 KB) 108 µs and 14.8 KB, where its stateless
// setting took 143 µs for 16.1 KB and the standard library's fastest
// 326 µs (docs/BENCHMARKS.md).
const (
	keptBrotliLevel = 6
	minCompressed   = 512 // bytes: smaller bodies go out as they are
)

// newEncoded keeps body (not copied: the caller must not change it) with
// its compressed forms. tag names the body's bytes; "" takes its hash
// (bodyTag).
func newEncoded(body []byte, tag string) *encoded {
	if tag == "" {
		tag = bodyTag(body)
	}
	e := &encoded{tag: tag, plain: body}
	if len(body) < minCompressed {
		return e
	}
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	zw.Write(body)
	zw.Close()
	if gz.Len() < len(body)*9/10 {
		e.gz = gz.Bytes()
	}
	var br bytes.Buffer
	bw := brotli.NewWriterLevel(&br, keptBrotliLevel)
	bw.Write(body)
	bw.Close()
	if br.Len() < len(body)*9/10 && (e.gz == nil || br.Len() < len(e.gz)) {
		e.br = br.Bytes()
	}
	return e
}

// bodyTag names a body's bytes: 16 hex digits of its 64-bit xxHash.
// An ETag needs only to change when the bytes do; the hash is fast
// enough (several GB a second) to take over every page rendered.
func bodyTag(body []byte) string {
	return strconv.FormatUint(xxhash.Sum64(body), 16)
}

// serve writes the body with status (a 200 is a 304 when the request's
// If-None-Match names it) in the encoding r accepts, with its ETag,
// Content-Length and Vary: Accept-Encoding when it has compressed forms.
// The caller sets Content-Type and Cache-Control.
func (e *encoded) serve(w http.ResponseWriter, r *http.Request, status int) {
	h := w.Header()
	body, coding := e.plain, ""
	if e.gz != nil || e.br != nil {
		h.Add("Vary", "Accept-Encoding")
		switch pickEncoding(r, e.br != nil, e.gz != nil) {
		case "br":
			body, coding = e.br, "br"
		case "gzip":
			body, coding = e.gz, "gzip"
		}
	}
	writeRepresentation(w, r, status, entityTag(e.tag, coding), coding, body)
}

// entityTag is the ETag of a body named tag sent in coding ("": as it is).
// Each encoding has its own: a strong ETag names exact bytes.
func entityTag(tag, coding string) string {
	if coding == "" {
		return `"` + tag + `"`
	}
	return `"` + tag + "-" + coding + `"`
}

// writeRepresentation writes body, already encoded in coding, with its
// ETag (none when etag is ""): a 304 without it when the request's
// If-None-Match names it and status is 200.
func writeRepresentation(w http.ResponseWriter, r *http.Request, status int, etag, coding string, body []byte) {
	h := w.Header()
	if etag != "" {
		h.Set("ETag", etag)
		if status == http.StatusOK && noneMatch(r, etag) {
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	if coding != "" {
		h.Set("Content-Encoding", coding)
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		w.Write(body)
	}
}

// noneMatch reports whether r's If-None-Match names etag (or is *),
// comparing weakly as RFC 9110 asks for it: W/ is ignored.
func noneMatch(r *http.Request, etag string) bool {
	v := r.Header.Get("If-None-Match")
	if v == "" {
		return false
	}
	for _, t := range strings.Split(v, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == "*" || t == etag {
			return true
		}
	}
	return false
}

// pickEncoding is the encoding r's Accept-Encoding prefers among those
// there are (brotli if br, gzip if gz): the highest q-value above 0, br
// on a tie as the smaller; "" for the body as it is. A coding not named
// takes the q-value of *, if given.
func pickEncoding(r *http.Request, br, gz bool) string {
	qBr, qGz := acceptQ(r.Header.Get("Accept-Encoding"))
	if !br {
		qBr = 0
	}
	if !gz {
		qGz = 0
	}
	switch {
	case qBr > 0 && qBr >= qGz:
		return "br"
	case qGz > 0:
		return "gzip"
	}
	return ""
}

// acceptQ reads the q-values an Accept-Encoding header gives br and gzip
// (0 when refused or not named, and no * either).
func acceptQ(header string) (br, gz float64) {
	br, gz, star := -1, -1, 0.0
	for _, part := range strings.Split(header, ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		q := 1.0
		if v, ok := strings.CutPrefix(strings.ReplaceAll(params, " ", ""), "q="); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || f < 0 || f > 1 {
				continue // not a q-value: the coding is not accepted as named
			}
			q = f
		}
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "br":
			br = q
		case "gzip", "x-gzip":
			gz = q
		case "*":
			star = q
		}
	}
	if br < 0 {
		br = star
	}
	if gz < 0 {
		gz = star
	}
	return br, gz
}

// gzipWriters are gzip writers at the fastest level, for pages compressed
// per request; the zero pool makes them as needed.
type gzipWriters struct{ pool sync.Pool }

// compress returns page gzipped into buf (reset first).
func (g *gzipWriters) compress(buf *bytes.Buffer, page []byte) []byte {
	buf.Reset()
	zw, _ := g.pool.Get().(*gzip.Writer)
	if zw == nil {
		zw, _ = gzip.NewWriterLevel(buf, gzip.BestSpeed)
	} else {
		zw.Reset(buf)
	}
	zw.Write(page)
	zw.Close()
	g.pool.Put(zw)
	return buf.Bytes()
}
