package web

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/andybalholm/brotli"
	"github.com/cespare/xxhash/v2"
	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/gzip"
)

// A response body goes out in the encoding the client asks for, with an
// ETag that names its bytes, and not at all (304) when the client already
// has them. Bodies that are the same for many requests (the static assets,
// a lesson page as a newcomer sees it) are kept as encoded values,
// compressed once in every encoding that makes them smaller; a learner's
// lesson page is gzipped from stored deflated pieces (pageOut); any other
// page rendered per request (writeHTML) is gzipped as it goes out,
// quickly rather than small (gzipWriters).

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
// request takes the stateless setting of klauspost/compress's gzip: on the
// same page about four times as fast as its fastest level, 2.5% larger.
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

// serve writes the body as a 200 (or 304 when the request's
// If-None-Match names it) in the encoding r accepts, with its ETag,
// Content-Length and Vary: Accept-Encoding when it has compressed forms.
// The caller sets Content-Type and Cache-Control.
func (e *encoded) serve(w http.ResponseWriter, r *http.Request) {
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
	writeRepresentation(w, r, http.StatusOK, entityTag(e.tag, coding), coding, body)
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

// gzipWriters are gzip writers at the stateless setting, for pages
// compressed per request; the zero pool makes them as needed.
type gzipWriters struct{ pool sync.Pool }

// compress returns page gzipped into buf (reset first).
func (g *gzipWriters) compress(buf *bytes.Buffer, page []byte) []byte {
	buf.Reset()
	zw, _ := g.pool.Get().(*gzip.Writer)
	if zw == nil {
		zw, _ = gzip.NewWriterLevel(buf, gzip.StatelessCompression)
	} else {
		zw.Reset(buf)
	}
	zw.Write(page)
	zw.Close()
	g.pool.Put(zw)
	return buf.Bytes()
}

// A page assembled from stored HTML (a lesson plan's, lessonplan.go) is
// gzipped from stored pieces: each piece of stored HTML is kept deflated
// on its own, ending byte-aligned (a sync flush), and a request's gzip
// stream is those pieces in order with only the bytes between them (the
// learner's blocks, and stored pieces under minStoredDeflate) deflated as
// it goes out, each with the 4 KB before it as its dictionary. Deflate
// blocks that end byte-aligned may follow each other, and a back-reference
// reaches only bytes already written, so the pieces make one valid
// stream; the gzip trailer's CRC-32 and length are the whole page's.

// pageOut is a page being written: its bytes, and which ranges of them
// are stored HTML with its deflated form.
type pageOut struct {
	buf    *bytes.Buffer
	stores []storedRange
}

// storedRange is a range of a page's bytes that is stored HTML, z its
// deflated form.
type storedRange struct {
	start, end int
	z          []byte
}

// minStoredDeflate is the least stored HTML whose deflated form a page's
// gzip takes: a smaller piece, deflated alone, loses more (its block's
// code tables, the page before it out of reach) than deflating it per
// request with the bytes around it costs. (At 1 KB some answered pages
// came out half again as large as gzipped whole; at 4 KB, within 8%.)
const minStoredDeflate = 4 << 10

// stored writes stored HTML whose deflated form (deflated) is z.
func (o *pageOut) stored(html, z []byte) {
	start := o.buf.Len()
	o.buf.Write(html)
	if len(html) >= minStoredDeflate && z != nil {
		o.stores = append(o.stores, storedRange{start, o.buf.Len(), z})
	}
}

// gzipHeader is a gzip member's header: deflate, no name, no time, OS unknown.
var gzipHeader = [10]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255}

// gzip writes the page gzipped into dst (reset first) and returns it.
func (o *pageOut) gzip(dst *bytes.Buffer) []byte {
	page := o.buf.Bytes()
	dst.Reset()
	dst.Write(gzipHeader[:])
	at := 0
	for _, s := range o.stores {
		deflateBetween(dst, page, at, s.start)
		dst.Write(s.z)
		at = s.end
	}
	deflateBetween(dst, page, at, len(page))
	flate.StatelessDeflate(dst, nil, true, nil) // the final block
	var trailer [8]byte
	binary.LittleEndian.PutUint32(trailer[:4], crc32.ChecksumIEEE(page))
	binary.LittleEndian.PutUint32(trailer[4:], uint32(len(page)))
	dst.Write(trailer[:])
	return dst.Bytes()
}

// deflateBetween deflates page[from:to] (nothing when empty), ending
// byte-aligned, with the 4 KB before it as its dictionary, at
// klauspost/compress's stateless setting: a compressor with a table to
// reset (any numbered level) costs more per piece than the piece takes.
func deflateBetween(dst *bytes.Buffer, page []byte, from, to int) {
	if to <= from {
		return
	}
	flate.StatelessDeflate(dst, page[from:to], false, page[max(0, from-4<<10):from])
}

// deflated is html deflated at the smallest setting, ending byte-aligned
// so that more deflate blocks may follow (pageOut).
func deflated(html []byte) []byte {
	var b bytes.Buffer
	fw, _ := flate.NewWriter(&b, flate.BestCompression)
	fw.Write(html)
	fw.Flush()
	return b.Bytes()
}
