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
//	                         (held to model's shared test vectors by model.test.mjs)
//	js/modellimits.js        the quota, AIMD, retry and late-scaling formulas, loaded by widgets.js only on a page with one of those widgets
//	js/modeltail.js          the variability-wait, fan-out and USL formulas, loaded by widgets.js only on a page with one of those widgets
//	js/widgets.js            the widgets' page behaviour: controls, live results, goal, plot refresh
//	js/widgettext.js         widget helpers that must match web/widgetslider.go and widgetview.go word for word (number
//	                         formats, sentences), apart from widgets.js so node --test can check them
//	js/runs.js               live sweeps: the lab block's Run form, the run panel's websocket
//	                         stream (progress, rows, chart), cancel and replay
//	js/site.js               on every page: times in the reader's time zone, the lesson's
//	                         contents (the section being read, folded into a bar on narrow screens)
//	js/session.js            class sessions: the host, presenter and participant views over
//	                         their websocket, the two-step reveal, the host's keys
//	js/classvotes.js         a class question as session.js draws it: its status, the bars of
//	                         a round's votes, how answers moved, the answer and its explanation
//	js/classsteps.js         the class host's next step (Space) and second round (2)
//	js/classkeys.js          which key of the host's and presenter's views asks for what
//	js/classgates.js         a participant's lesson: the parts after a Predict's gate, fetched
//	                         from /sessions/{code}/parts once the host shows its answer
//	js/presenter.js          the presenter window and the host page that opened it: its keys
//	                         posted to that page, which acts with its own token
//	js/reconnect.js          one websocket kept open, reconnecting with backoff, for runs.js
//	                         and session.js
//	js/lti.js                the deep linking answer page: posts the signed answer back to the
//	                         learning platform at once (its button does without JavaScript)
//	img/icon.svg             the site icon
//
// The web package serves each file as it is, gzipped to browsers that take
// gzip when that saves bytes, under a content-hashed URL
// (/static/css/app.<hash>.css) with a year-long immutable Cache-Control,
// and also under its plain path with Cache-Control: no-cache and an ETag,
// so that ES module imports between files (which use plain relative
// paths) stay correct after a deploy.
package static

import (
	"embed"
	"io/fs"
)

// The JavaScript tests beside the modules (js/*.test.mjs, run by node
// --test static/js/) are not embedded: only what pages load is.
//
//go:embed css img js/*.js
var files embed.FS

// FS returns the embedded assets, rooted at this directory.
func FS() fs.FS { return files }
