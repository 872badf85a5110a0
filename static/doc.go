// Package static holds the site's stylesheet and small JavaScript modules,
// embedded so the server binary needs no files beside it. There is no build
// step and nothing is fetched from a CDN.
//
// Layout (paths inside FS):
//
//	css/app.css      the one stylesheet: light and dark by prefers-color-scheme
//	js/lesson.js     progressive enhancement of the lesson page's forms
//	js/model*.js     model widgets (owned by the widget work)
//	js/widgets.js    the widgets' page behaviour: controls, live results, goal, plot refresh
//	css/widgets.css  the widgets' styles, linked by each widget and the standalone page
//	img/icon.svg     the site icon
//
// The web package serves each file under a content-hashed URL
// (/static/css/app.<hash>.css) with a year-long immutable Cache-Control,
// and also under its plain path with Cache-Control: no-cache and an ETag,
// so that ES module imports between files (which use plain relative
// paths) stay correct after a deploy.
package static

import (
	"embed"
	"io/fs"
)

//go:embed css js img
var files embed.FS

// FS returns the embedded assets, rooted at this directory.
func FS() fs.FS { return files }
