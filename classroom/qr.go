package classroom

import (
	"fmt"
	"strings"

	qrcode "github.com/skip2/go-qrcode"
)

// QRSVG returns an SVG image of a QR code for text (a join link): one
// path of unit squares on a white background with the standard four-module
// quiet zone, scaled by the viewer (the SVG has a viewBox and no size).
func QRSVG(text string) (string, error) {
	q, err := qrcode.New(text, qrcode.Medium)
	if err != nil {
		return "", fmt.Errorf("qr code: %w", err)
	}
	bm := q.Bitmap() // includes the quiet zone
	n := len(bm)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" shape-rendering="crispEdges" role="img">`, n, n)
	fmt.Fprintf(&b, `<title>QR code for %s</title>`, escapeXML(text))
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#fff"/><path fill="#000" d="`, n, n)
	for y, row := range bm {
		for x := 0; x < len(row); x++ {
			if !row[x] {
				continue
			}
			run := 1
			for x+run < len(row) && row[x+run] {
				run++
			}
			fmt.Fprintf(&b, "M%d %dh%dv1h-%dz", x, y, run, run)
			x += run - 1
		}
	}
	b.WriteString(`"/></svg>`)
	return b.String(), nil
}

func escapeXML(s string) string {
	r := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;")
	return r.Replace(s)
}
