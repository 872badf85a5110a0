// Package static holds the site's stylesheet and small JavaScript modules,
// embedded so the server binary needs no files beside it. There is no build
// step and nothing is fetched from a CDN.
//
// Layout (paths inside FS; every file is listed, TestDocListsEveryFile
// keeps this true):
//
//	css/app.css              the site's stylesheet: light and dark by prefers-color-scheme,
//	                         usable at 320 px (wide tables scroll inside .table-wrap regions)
//	css/widgets.css          the model widgets' styles, linked once by a lesson page with a
//	                         model block and by the standalone /widgets/{kind} page
//	css/runs.css             the run pages', the runs list's, compare's and the progress page's
//	                         styles, linked by those pages only
//	css/class.css            class pages' styles (/teach, /join, the host and participant views,
//	                         the vote bars and the answer) and the full-screen presenter view
//	js/lesson.js             progressive enhancement of the lesson page's forms (Predict,
//	                         Check, record blocks): same form, same URL, JSON answer, block swapped in
//	js/model.js              the capacity formulas in JavaScript, the twin of package model
//	js/model.test.mjs        node --test of model.js against model's shared test vectors
//	js/widgets.js            the widgets' page behaviour: controls, live results, goal, plot refresh
//	js/widgettext.js         widget helpers that must match web/widgets.go word for word (number
//	                         formats, sentences), apart from widgets.js so node --test can check them
//	js/widgettext.test.mjs   node --test of widgettext.js against web/testdata/widget-vectors.json
//	js/runs.js               live sweeps: the lab block's Run form, the run panel's websocket
//	                         stream (progress, rows, chart), cancel and replay
//	js/site.js               on every page: times in the reader's time zone, the lesson's
//	                         contents (the section being read, folded into a bar on narrow screens)
//	js/session.js            class sessions: the host, presenter and participant views over
//	                         their websocket, the two-step reveal, the host's keys
//	js/lti.js                the deep linking answer page: posts the signed answer back to the
//	                         learning platform at once (its button does without JavaScript)
//	img/icon.svg             the site icon
//
// The web package serves each stylesheet and script without its comments
// and leading blanks (every line break kept, so a line number in the
// browser is the file's), and each file under a content-hashed URL
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
