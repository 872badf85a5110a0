// Package web is the Capacity Lab site: lesson pages, Predict and Check,
// each learner's progress, and the JSON twins of all of these.
//
// NewServer builds the handler from Deps (the course, the progress store,
// the static assets, a logger). Every URL is listed in routes.go.
//
// # URLs
//
// Every route in routes.go, in its order (TestDocListsEveryRoute keeps this
// list and the router in step). HEAD is answered wherever GET is.
//
//	GET  /                                  course index: parts, chapters, lessons, minutes, progress marks
//	                                        (fixture lessons, part lessons.FixturePart, are not listed)
//	GET  /healthz                           200 "ok" when the store answers and writes; 503 "store unavailable" when it
//	                                        does not answer; 503 "degraded: store writes failing since T: ..." while
//	                                        writes fail for lack of disk space (pages are still served)
//	GET  /metrics                           Prometheus text format
//	GET  /static/*                          assets: hashed names are immutable, plain names revalidate;
//	                                        text assets are served in brotli or gzip to clients that accept it, and
//	                                        304 when If-None-Match names the asset's ETag
//	GET  /favicon.ico                       302 to the site icon
//	GET  /lessons                           301 to /
//	GET  /lessons/{slug}                    a lesson page (fixtures too: reachable, only not listed)
//	POST /lessons/{slug}/predict/{id}       action=lock&option=b | action=skip | action=open | action=reveal
//	POST /lessons/{slug}/check/{id}         option=a
//	POST /lessons/{slug}/record/{id}        a record block: setting, criterion, measurement, number, reverse, run
//	GET  /lessons/{slug}/record/{id}.md     the learner's saved record as a Markdown download
//	POST /lessons/{slug}/model/{id}         a model block's values: records its goal if they reach it
//	GET  /lessons/{slug}/lab/{id}/settings  a lab block's knobs on a page of their own, with Run ("Change the
//	                                        settings" without script; runs.js brings the knobs into the block)
//	GET  /widgets/{kind}                    one model widget alone (no site chrome, framable), values in the query
//	GET  /widgets/{kind}/plot               the widget's plot for the query's values as the widget's HTML (two-ceilings,
//	                                        queue-curve, quota, aimd, retry-amplification, late-scaling,
//	                                        variability-wait, fanout-tail, usl; widgets.js swaps it in)
//	GET  /widgets/{kind}/plot.svg           the same plot as an SVG image of its own
//	GET  /api/models                        every widget kind's parameters (model.Spec) as JSON
//	GET  /api/models/{kind}                 model.Compute's Result for the query's values as JSON
//	GET  /progress                          the learner's progress, export link, reset form
//	POST /progress/reset                    confirm=yes; deletes the learner's progress
//	GET  /api/lessons                       the course as JSON (without fixture lessons)
//	GET  /api/progress                      the learner's progress as JSON (?download=1 adds Content-Disposition)
//	POST /api/progress/reset                confirm=yes or {"confirm": true}
//	POST /api/sweeps                        queue a live sweep (JSON or the lab block's form): 202 {id, position,
//	                                        estimated_start, url, stream}; a plain form gets 303 to the run's page
//	POST /api/simulate                      the same request simulated in process (package sim), never stored:
//	                                        200 {simulated: true, request, rows, prediction, requests, took_ms};
//	                                        ?panel=1 the simulation's panel (HTML) for the lab block; a plain form
//	                                        gets a page; 409 while a Predict the named block settles is unanswered
//	GET  /api/runs/{id}                     a run (config, rows, a run over time's samples, status, live state) as JSON
//	POST /api/runs/{id}/cancel              cancel the learner's own queued or running run: {"id", "status": "cancelling"}
//	GET  /runs                              saved runs as tables, the learner's own first
//	GET  /runs/compare                      ?a=ID&b=ID[&c=ID]: two or three runs side by side: their settings (the
//	                                        differing ones marked), one chart, one table by offered rate; an ID
//	                                        recorded:PRESET is a lesson's recorded run of that preset. When any ran
//	                                        over time, their seconds on one time axis and each run's summary of a
//	                                        stretch: window=N (from 1), from and to (seconds from the window's
//	                                        start; default the whole first window; a stretch that is none, 400).
//	                                        Without A and B, a page saying how to pick two (400), or which one
//	                                        was not found (404)
//	GET  /runs/{id}                         a run's page, titled by its lesson and preset in words; ?window=N (from 1,
//	                                        default the last measured) picks the window whose latency distribution
//	                                        it draws from the raw records. /runs/{id}.csv is its rows as CSV. An
//	                                        upload's page adds the analysis; ?budget_ms=N derives its limit again
//	                                        from the stored analysis (evidence.Analysis.WithBudget; not stored)
//	GET  /runs/{id}/chart.svg               the run's chart (rows so far, the model beside them) as an SVG image
//	GET  /runs/{id}/panel                   the run's panel alone, for runs.js to put in a lab block (?rows=N: a replay)
//	GET  /runs/{id}/records.csv             every raw request record of the run (loadrun's CSV format)
//	GET  /runs/{id}/samples.csv             a run over time's samples, one line a second (404 for a run without)
//	GET  /runs/{id}/report.html             an upload's self-contained report (evidence.WriteReport) as a file, at its
//	                                        budget or ?budget_ms= (404 for a lab run)
//	POST /runs/{id}/cancel                  the cancel form: 303 back to the run's page
//	GET  /ws/runs/{id}                      websocket: the run's events after ?since=N, then live ones (stream*.go)
//	GET  /service                           Your service: the method on the learner's own system, how to make a result
//	                                        with load, vegeta or k6, the upload form, the learner's uploads (service.go)
//	POST /service                           multipart: results (the file, required), report (load's .json, optional),
//	                                        budget_ms (optional): stored as the learner's run, 303 to its page (JSON:
//	                                        201 {id, url}); refused, the page again with the form and what is wrong
//	                                        (400, 413 over the size cap, 429 past Deps.UploadsPerHour from one
//	                                        address, default 60), nothing stored
//	POST /service/example                   the example (web/example: the course's lab through load --knee,
//	                                        bench/example.sh) stored as the learner's upload, 303 to its page
//	POST /service/{id}/delete               the learner's own upload, with its rows and records: 303 to /service
//	GET  /api/labs/{block}/reference        the latest complete run of a lab block as JSON, or 404 (pages
//	                                        do not ask: the lesson page renders it)
//	GET  /teach                             every course lesson with a Teach button, in one form with one
//	                                        instructor key field (?lesson=: that lesson alone, a fixture too)
//	POST /teach/forget                      deletes this browser's teach pass: /teach asks for the key again
//	POST /sessions                          a Teach button (lesson, key): 303 to the host view; a wrong key
//	                                        comes back on /teach beside its field
//	POST /api/sessions                      {"lesson", "key"}: 201 with the join code, links and host token
//	GET  /join                              the join form: code and display name
//	POST /join                              code, name, key (optional): joins and 303 to the session
//	GET  /join/{code}                       the join link (?key=: its join key): the name form, or the session if already joined
//	GET  /sessions/{code}                   a participant's view of the class session
//	GET  /sessions/{code}/host              ?token=: the instructor's view
//	GET  /sessions/{code}/projector         ?token=: what the class sees on the big screen (the projector
//	                                        token, never the host's: a host token is redirected to it)
//	GET  /sessions/{code}/qr.svg            the join link as a QR code
//	GET  /sessions/{code}/parts             a participant's lesson: the parts after a Predict's gate its shown answer opens
//	GET  /sessions/{code}/{file:results|answers}.csv
//	                                        ?token=: votes per question, round and option; each participant's answers
//	GET  /sessions/{code}/recorded/{lab}    the lesson's recorded run of a lab (its tables; a simulation when it
//	                                        has none), an HTML fragment shown when the class's run of it did not finish
//	GET  /ws/sessions/{code}                websocket: the session (protocol in package classroom)
//	GET  /lti                               the URLs a learning platform's administrator enters to add the tool
//	GET  /lti/jwks.json                     the tool's public keys (JWKS; Cache-Control max-age 300)
//	GET  /lti/login                         LTI 1.3 login initiation (OIDC third-party initiated login; POST too):
//	POST /lti/login                         302 to the platform's authorization endpoint, with the state's cookie
//	POST /lti/launch                        the platform's id_token: a resource link gets 303 to its page in the
//	                                        learner's LTI session; a deep linking request gets the picker
//	POST /lti/deep-link                     the picker's choice: a page that posts the signed answer to the platform
//	GET  /lti/grades                        an LTI instructor's list of their course's grades and how sending each stands
//	POST /lti/grades/retry                  send the course's failed grades again: 303 to /lti/grades?retried=N
//
// Wrong join codes are counted per client address (package classroom;
// the client's IPv4 address, or its IPv6 /64, as clientAddr works it out:
// see "Behind a proxy" below):
// after too many, the session routes answer 429 with Retry-After, except
// to a request that carries a token of the session it names (the host's or
// the projector's in ?token=, the participant cookie, or the join link's
// key=, which the QR code and the join form carry on), so a class behind
// one address is not locked out by a few mistyped codes. Joins are limited
// per client address too (Deps.JoinsPerMinute, default 600 a minute: a
// lecture hall behind one address joins at once), and so is starting
// class sessions on a server without an instructor key
// (Deps.SessionsPerHour, default 20 an hour); past either, 429 with
// Retry-After and a message saying why. POST /api/sweeps gives each client
// address its share of the run queue (runner.Config.PerAddress, default 3)
// beside each learner's one run: past it, 429 with Retry-After. A class
// run counts against the address of the host who starts it (ClassRuns),
// beside the session's one run at a time, so no client holds the queue
// through class sessions; the host may cancel it (the class run's Stop
// control, on the host view and the presenter view), and a session that
// ends, by its host or idle, cancels its run (CancelClassRuns).
//
// Teaching lives on /teach, not on lesson pages, which learners read.
// When an instructor key is configured, /teach asks for it once: the
// right key leaves a teach pass in the browser (an HttpOnly, SameSite=Strict
// cookie holding its end and an HMAC of it keyed with the instructor key,
// good for 8 hours), with which every Teach button works without the key.
// Instructor keys tried are counted per client address, right or wrong,
// as wrong join codes are (classroom.MissLimit per classroom.MissWindow);
// past them even the right key gets 429 with Retry-After until the
// address has waited, so the key cannot be guessed faster than that. A
// teach pass is not held.
//
// The presenter view (/sessions/{code}/projector) is the whole screen
// without the site's header: the join code and QR code until the class is
// on something, then one question (its votes, the spread, the answer) or
// the class run at a time. Its address carries the projector token only
// and so controls nothing; opened from the host view's button, its keys
// are posted to that host page, which acts with its own token, and what
// that page has to say of a key (a refusal, nothing to do) shows on it
// (see static/js/session.js). The host's next step follows the lesson:
// voting on each question, its spread, for a Predict a lab settles the
// class run of that lab, then the answer (static/js/classsteps.js). A
// class run that does not finish is told to the room in words for a room,
// with the recorded run of its lab (GET /sessions/{code}/recorded/{lab})
// under it at once.
//
// # Forms and JSON: one implementation
//
// The lesson actions work without JavaScript: the page's forms POST and
// the server answers 303 See Other to /lessons/{slug}#{id} (post, redirect,
// get), and the page shows the new state of that block. static/js/lesson.js
// sends the same form to the same URL with "Accept: application/json"; the
// same handler then answers 200 with
//
//	{
//	  "block": "littles-double",
//	  "kind": "predict",                 // or "check"
//	  "prediction": {...},               // predict: as in the progress export
//	  "check": {"correct": true, "attempts": 2, "first": {...}},  // check
//	  "html": "<section id=\"littles-double\" ...>",               // the block, re-rendered
//	  "related": [{"block": "littles-sweep", "html": "..."}, ...]   // predict: its measurement, re-rendered
//	}
//
// and the script swaps the block's HTML in place, and each related block
// in place of its namesake (the lab and table blocks a lock unfolds, a
// table just opened). Rules the server enforces: a prediction is locked
// (or skipped) once and never changed (409 conflict afterwards); open
// (the learner opens the recorded results that settle it, stored as
// opened_at) needs a lock or skip first, and a form post is answered 303
// to the table; Reveal needs a lock or skip and a measurement seen, the
// learner's own finished run of the settling preset or its recorded
// results opened (409 otherwise, saying which); every check answer is
// stored and the first one counts for progress.
//
// # What a lesson page folds
//
// A Predict's measurement (lessons.Lesson.Settling: its lab block, the
// preset's recorded tables, the recorded runs of the preset) stays folded
// until the learner has locked in or skipped the Predict: the lab block
// shows its preset in words and a line saying why, with a link to the
// Predict, and no Run and nobody's run; the table shows its caption and
// that line. Answered, the lab block offers Run (and "Watch a recorded run
// replayed" when one exists), and the table a button, "Show the recorded
// results" (action=open). The learner's own latest run of a lab block is
// rendered in it on every view; once finished, it is followed by their
// prediction beside the quantity the Predict's read: names (cells of its
// windows, or a stretch of seconds of a run over time read from its
// samples, in the Predict's units, with the chosen option's value beside
// it and, for a stretch, drawn as a band on a chart of the quantity
// second by second), links to the saved run (its page, its CSVs, a
// comparison with the lesson's recorded run and with the learner's
// previous run of the block) and a link to the lesson's next step (the
// text that reads the rows, when the lesson has some before its next
// heading); an opened table the Predict reads (the time table for a
// stretch, else the window table) shows the same reading of the recorded
// run. The chart of a run whose windows change a knob mid-run says under
// it, in the run's panel, that the model's lines are for the knobs each
// window starts with. A closed loop over three or more client counts (a
// lab block's clients: list, or a learner's) is drawn against its clients
// instead, with the Universal Scalability Law fitted to its throughput
// (model.FitUSL; scalechart.go), in a recorded table, a run and a
// simulation alike; a Predict it settles reads its rows by client count.
// A lab block no Predict settles is never folded. A lab block carries no
// knobs.
//
// A Predict also gates the rest of its lesson (lessons.Lesson.GatesAfter):
// what follows the first block that measures what settles it (the prose
// that reads the numbers, widgets set from them, later questions) is not
// sent until the learner has locked in or skipped the Predict. A note
// stands in its place, with a link to the Predict and the sections still
// to come listed under their headings' ids, so the contents still land;
// lesson.js loads the page again at the Predict when the answer opens the
// gate. The lesson plan keeps every part and cuts per request (gateMark,
// endMark). The loader refuses a mark that reads a Predict's settling
// measurement above its gate, and TestBrowserNoSpoilers crawls every
// lesson for a visible number that settles an unanswered Predict.
//
// "Change the settings" links to the lab's
// settings page (/lessons/{slug}/lab/{id}/settings, folded like the block),
// runs.js brings that page's knobs into the block when it is opened, and
// until then the Run form sends the preset's values as hidden fields. A
// class session shows every question's options in one order for the
// whole class (Order keyed by the join code). Options of
// Predicts and Checks are shown in the order lessons.Question.Order gives
// for the learner's id ("" for a newcomer); forms and answers carry ids.
//
// Tables of numbers (recorded results, a run's rows) show first the
// columns the preset's show: names (a run's table: its window, those and
// the model's two columns), the others behind a "Show all N columns"
// checkbox that works with CSS alone; the caption sits above the scrolling
// region. A run's table counts windows from 1 and uses the column names
// of the recorded tables (ok_per_sec, p50_ms, ...); without a show: it
// shows offered, ok_per_sec, p50_ms, p99_ms, queued, refused and gaveup
// first, with backlogged after queued when the run's workers accept
// callers themselves (ACCEPT=workers).
//
// A record block (records.go) posts its five fields (each at most 2,000
// characters; number and criterion required) and run, the id of one of
// the learner's own saved runs or empty for none. Saved, it answers like
// the other actions, with "record" (as in the progress export) in place of
// "prediction". Refused, the form comes back with what was typed and one
// message per field: without JavaScript as the lesson page again (400);
// with it as
//
//	{"error": {"code": "invalid", "message": "..."},
//	 "errors": {"number": "Number is empty: ...", "run": "..."},
//	 "html": "<section id=\"limit-record\" ...>"}
//
// and lesson.js swaps that HTML in. Saving again keeps only the latest
// version. The Markdown download has the five fields under their labels
// as headings, then the attached run's settings, its rows as a table (the
// columns of the lessons' recorded tables) and a link to /runs/{id}.
//
// # Run streams
//
// GET /ws/runs/{id}?since=N (stream.go) sends the run's events as JSON
// text messages, one event each, in the format package runner specifies:
// first every logged event with seq > N, then the live ones, then a close
// frame (codes from package wsconn): CloseEnd "end of run" after the
// terminal event, CloseTooSlow "too slow: reconnect with since=S" for a
// watcher that let too much wait (S is the last seq it was sent),
// CloseGoingAway when the server stops. What a client sees of
// seq: replayed events are numbered without gaps; live ones may jump, and
// only over progress events, replaced by a newer progress while this
// client was behind (runner's Subscription). A client that reconnects
// with since = the last seq it saw gets every logged event after it once,
// in order, progress included, whether the runner still holds the run or
// not: a run it no longer holds (after a restart, or once later runs
// pushed it out of memory) is replayed from the events the store kept,
// each with the seq and the very message it had live; one whose end was
// never logged (the server stopped or was killed mid-run) ends with its
// terminal event numbered after the last stored one (streamstored.go,
// storedLog). Runs saved before events were stored replay as a row event
// per window and the terminal event, numbered from 1.
//
// With Deps.SharedRuns (a web replica whose runs run in runner processes
// on the same store) a run stored queued or running that the local runner
// does not hold is live on another process and is followed from the store
// (streamfollow.go): one follower per run and server watches the store
// (store.WatchRun, before its first read), reads the events after the
// last it has at the start and after each wake-up (and every 15 s
// without one, when it also reads the run's status: a run that ended
// without its terminal event stored ends as storedLog ends it), and hands
// them to a runner.Relay, whose subscriptions feed every socket on the run
// through the same source as a held run's: the same messages, seqs,
// panels and close codes, liveChartWatchers counted on this server's
// sockets. So a client resumes with since on any server, and a class of
// 300 on one replica costs one watch and one reader
// (capacitylab_followed_runs and capacitylab_followed_run_watches_total at
// /metrics). Its page and GET /api/runs/{id} show its state as the store
// has it: status, rows and samples so far, last_seq, and while it waits
// its position and estimated start from its latest queued event. Without
// SharedRuns (one server) such a run is over: the server marks runs left
// queued or running interrupted at start, and shows any it could not
// mark (a full disk) so.
//
// A live run's stream also sends panel
// messages, which are not events of the log: {"kind": "panel", "seq": S,
// "panel": HTML}, the run's panel (GET /runs/{id}/panel) as the server
// rendered it after event S. One follows each row 150 ms behind it (the
// rows go out to every watcher first), one follows a run over time's
// sample 5 s behind it unless a panel is already waiting, with its time
// chart alone (so the chart is redrawn every five to six seconds while a
// window is measured: samplePanelEvery) while at most liveChartWatchers
// (8) watch the run; a class watching gets the sample events as they come
// (the page writes the last second's figures in its status line) and the
// chart with each row, between windows, as every panel is. One
// follows the last event at once, and one follows the replayed events if
// a row or a sample was among them. The panel
// is rendered once for every watcher, so a page redraws its chart and rows
// without a request of its own (a class's pages would otherwise all ask at
// once, as the next window starts); without "panel" (it could not be
// rendered) the page asks. Pings, the wait for a pong and the write
// deadline are package wsconn's (wsconn.DefaultConfig), as for class
// sessions. With pace=real a finished run is replayed at the pace it ran,
// progress every 250 ms (a since at or past the replay's end ends it at
// once). The writing side (one writer goroutine per connection, pings,
// close frames) is package wsconn's, shared with class sessions.
//
// # CSV
//
// The rows CSV (/runs/{id}.csv) has one line per window, result.Row's
// fields by their JSON names; window is loadrun's index, from 0 (pages
// count windows from 1). A value that is unknown is an empty cell, never
// -1: done and queued without the lab's control API. The records CSV is
// loadrun's format (empty queue_wait_ms and service_ms when the reply did
// not carry them); the class CSVs are package classroom's.
//
// # Charts
//
// Every chart (a run's, the comparison, a window's latency distribution,
// the widgets' plots) is drawn by package chart from data web builds
// (runchart.go, widgetplots.go): on pages as HTML around SVG plots that
// fill their box with text at the page's size, one colour per quantity
// (measured solid, model dashed), values on hover and keyboard focus, and
// the numbers in a folded table; as .svg downloads, the same panels in one
// image.
//
// # Errors
//
// Handlers return errors; one function (server.fail) maps an *Error's code
// to a status and renders an HTML page or JSON. JSON is the answer for
// /api/ and /ws/ URLs (except a plain browser form posting to /api/sweeps
// or /api/simulate, which gets the page) and for requests that prefer application/json:
//
//	{"error": {"code": "conflict", "message": "Your prediction was locked in ..."}}
//
// with, when the *Error carries them, these at the top level beside "error":
//
//	"errors": {"seconds": "..."}   one message per bad field (a sweep's form, a widget's parameters, a record; 400)
//	"run": "ID"                    the learner's own run in the way (POST /api/sweeps, 409)
//	"retry_after": 30              seconds until a retry may succeed; also the Retry-After header
//
// The same field errors are also in the error itself as "params", a list
// in field order ([{"param": "seconds", "message": "..."}]), as the widgets'
// errors have always carried them; both come from one input.FieldErrors.
// JSON bodies are read by one strict decoder (input.DecodeJSON): one value,
// UTF-8, no unknown field, names exactly as the fields' (not "RATES" for
// "rates"), no field twice, no control character in text but tab and
// line breaks, nothing after it. Forms are read by one function
// (parseForm, input.FormErrors) the same way: no field twice but those a
// form sends as a list (the deep linking picker's items, a model's slider
// beside its number box), and the same text. Each refusal is a 400 naming
// the field and saying what is allowed.
//
// The HTML page shows the same: the message, the fields as a list, a link
// to the run, when to try again, and the next steps the *Error offers
// (Links: "Choose two runs"), under a title in words (never the status's
// name). Codes: invalid (400), forbidden (403),
// not_found (404), method (405), conflict (409), too_large (413), busy
// (429: a full run queue, an address's share of it, too many wrong join
// codes or instructor keys tried, joins or new sessions; always with Retry-After), content and internal (500), unavailable (503: no live
// sweeps on this server, or it is shutting down). Any other error is
// logged with log/slog and shown only as a generic message. "content"
// carries lesson validation errors, which only happen in author mode
// (--content) and are meant for the author to read. A 404 page lists
// lessons whose slug is close to the URL asked for.
//
// # A full disk
//
// A change the store cannot write for lack of room (store.IsFull: SQLite's
// "database or disk is full", or a store opened read-only because the
// disk was full at start) answers 503, code unavailable, with Retry-After
// 60 and a message saying the disk is full and that nothing saved before
// is lost; it is logged as an error. Nothing is acknowledged that was not
// stored. Pages and other reads are served as usual. A run whose rows or
// records cannot be stored ends failed saying so (package runner), never
// done; a stored run left queued or running that the runner does not hold
// is shown interrupted (runner.UnsavedEndReason), its made-up end dated
// as its last stored event. /healthz reports the store's write health
// (above): it turns 503 when a write fails for lack of room and back to
// "ok" as soon as there is room again (while writes fail, the store tries
// a small write of its own every 2 s: store.WriteHealth).
//
// # Behind a proxy
//
// With Deps.TrustedProxies (cmd/server --trusted-proxies) the server
// believes the Forwarded (RFC 7239) or X-Forwarded-For and
// X-Forwarded-Proto headers of requests whose peer is one of those
// proxies, and only theirs (proxy.go says how the client is picked from a
// chain). One function gives the client's address (clientAddr: join-code
// limits, fair shares of the run queue, rate limits) and one the scheme
// (requestScheme: Secure cookies, absolute links such as a class's join
// link and its QR code). Over https (direct TLS, or a trusted proxy saying
// so) every answer carries Strict-Transport-Security: max-age=31536000.
// Without trusted proxies the forwarding headers are ignored: the client
// is the connection's peer and the scheme is https only over TLS.
//
// # Learners
//
// A learner is anonymous: the cookie cl_learner holds 32 hex digits (128
// random bits), HttpOnly, SameSite=Lax, Path=/, a year long, Secure when
// the browser used https (requestScheme). It is only issued when the learner first
// answers something, so reading pages stores nothing. Cross-origin POSTs
// are refused (net/http.CrossOriginProtection: Sec-Fetch-Site and Origin),
// except the LTI login and launch, which a platform's page posts from its
// own site and which the launch's signed id_token and state protect.
//
// A learner who came from a learning platform (LTI 1.3, lti.go; protocol,
// claims and cookies in package lti) is the platform's user instead: the
// launch sets the cookie cl_lti (HttpOnly, Secure, SameSite=None,
// Partitioned, 8 hours), which names a stored session, and every request
// that carries it has that session's learner, whatever cl_learner says.
// Their progress then changes the scores package lti sends to the
// platform for lessons placed as graded items (grades.go: one point per
// prediction locked in, check right first time, model goal reached and lab
// run to the end; a skipped prediction is done but earns no point, and
// the progress page counts it so: predictionCounts). A session whose
// roles make its user an instructor of the course may start class
// sessions without the instructor key, and sees /lti/grades. Pages shown
// to such a session (inside the platform's frame) link in their header
// only what a learner can use there, the lessons, the runs and their
// progress, and Teach for an instructor; never Join (menuFor).
//
// # Your service
//
// A learner uploads the results of a load test of their own service
// (service.go): cmd/load's records CSV with or without its report data,
// vegeta's CSV or k6's JSON or CSV, read by package evidence within
// Deps.UploadLimits. The server never sends load anywhere but to its own
// lab children: all load against the learner's system comes from their
// own load generator. The upload is analysed (evidence.Analyze at the
// budget given) and stored as a run of theirs in one transaction
// (store.SaveUpload: status done, the analysis's rows, every record; the
// file as read, the analysis and the budget in the request's upload,
// runner.Upload), with an id "u" and 16 hex digits. It is then a run like
// the lab's: its page, rows and records CSV, chart and comparisons, with
// its report's chart (evidence.Chart; no model: the course has none of
// the learner's service) and the analysis beside it, drawn by package
// evidence as the report draws it (Summary, the parts, Limit, Checklist;
// uploadAnalysis lays them out); a budget asked for on its page
// (?budget_ms=) derives the limit again from the stored analysis
// (evidence.Analysis.WithBudget), not stored.
// One client address stores at most Deps.UploadsPerHour uploads an hour
// (DefaultUploadsPerHour; refused files do not count): each may hold
// 100 MiB of the server's disk. Uploads are private: to anyone but their
// learner every URL of one
// answers 404 "No such run", as for a run that does not exist (runView,
// records.csv, the streams, and the run panel before the renderings it
// keeps for everyone), and /runs leaves out others' uploads
// (store.Runs). A learner deletes their own (POST /service/{id}/delete),
// a progress reset deletes them all, and the progress export lists them
// with their rows and analysis and the URL of their records.
//
// # The front door
//
// With Deps.Gate (cmd/server always gives one: --admit, --admit-workers),
// every request but the critical ones enters an admission gate (package
// admit) before anything else is done for it (admission.go). Those let in
// are served by at most the gate's workers at once, the rest of them
// waiting first come first served; those its policy refuses get 503 with
// Retry-After: 1 and the error page (code unavailable, "Busy for a
// moment"; the JSON error body where the client wants JSON), rendered
// once and kept, so a refusal renders nothing. Refusals are not logged,
// and not in capacitylab_http_requests_total (they never reach the
// router): admit_requests_total counts them. Classes (requestClass, the
// one table): critical, never refused nor counted inside: /healthz,
// /metrics, websocket upgrades under /ws/ (a class's socket and its
// votes, a run's stream), /lti/login, /lti/launch, /lti/deep-link and
// /lti/jwks.json (a platform checking a grade's token request), and
// the assets (/static/, /favicon.ico: as cheap to serve as to refuse, and
// a page let in, or the refusal page, needs its stylesheet); normal,
// refused at the bound: writes, and requests with the learner cookie, an
// LTI session, a class participant's cookie or a teach pass; sheddable,
// refused once all but a quarter of the bound is inside: everything else,
// page loads and API reads by anonymous visitors.
//
// What the door can and cannot do. Its bound on requests inside holds
// the requests that take time inside: those waiting for the store, a
// learner's page rendered and gzipped, a widget's plot. Past the
// processors' ceiling the line forms before requests are read (in the
// sockets, among the goroutines ready to run), where that count never
// sees it; the gate's bound on the processors' line (--admit-wait,
// admit.Gate.BoundWait) sees it, and refuses anonymous requests first.
// A refusal still costs what net/http's reading of the request and
// writing of the answer cost: on this project's machine a refusal, a
// health check and the newcomer's stored page each cost about 60 µs of
// processor time (docs/BENCHMARKS.md, "web: the front door"). So the door
// holds past the ceiling of pages that cost much more than that (at twice
// the ceiling of plots, 80 to 106% of it served, p99 under 85 ms); a flood of
// the cheapest pages past theirs (over 10,000 a second on one core there)
// it can only make wait less, not serve more: a smaller listen backlog or
// a proxy in front sheds those before they cost anything.
//
// # Headers and limits
//
// Every response carries a Content-Security-Policy with no inline script
// or style ("default-src 'self'; script-src 'self'; style-src 'self';
// img-src 'self' data:; connect-src 'self'; frame-ancestors <configured>;
// base-uri 'none'; form-action 'self'; object-src 'none'"), with the
// standalone widgets' own frame-ancestors (Deps.WidgetFrameAncestors,
// default *) on /widgets/{kind}; both frame-ancestors lists get the
// origins of the registered LTI platforms added (lti.Tool.FrameAncestors;
// a configured 'none' or * is left as it is), so a platform can frame what
// it launches while other sites still cannot; the deep linking answer
// page's form-action adds the platform's return origin,
// X-Content-Type-Options: nosniff, Referrer-Policy and
// Cross-Origin-Opener-Policy. Request bodies are capped at MaxBodyBytes,
// but an upload's (POST /service): the results file's limit
// (Deps.UploadLimits, evidence.DefaultLimits: 100 MiB and a million
// requests), load's report data's (4 MiB) and MaxBodyBytes for the form.
//
// # Caching
//
// HTML pages carry Cache-Control: no-cache and Vary: Cookie (they show the
// learner's own answers), and a 200 an ETag over its bytes (each encoding
// its own), so a browser revalidating a page it has gets 304 without the
// body when nothing on it changed. A page rendered per request is gzipped
// when the client accepts it (encoded.go), whole and at a fast setting. A
// lesson page as a
// newcomer sees it (no learner cookie, no query string) depends only on
// the course, so the server keeps it rendered, gzipped and in brotli per
// course value and serves those bytes as stored; anything that varies per
// request must not be added to that page for newcomers. The one thing it
// shows that changes over time, the recorded run of a lab block no Predict
// folds, is part of the cached page's key,
// so a newer recorded run builds a new page. Static assets are immutable under their hashed names; every
// page links them by those names, each once, in the head (the widgets'
// stylesheet and script and runs.js only on lessons with model or lab
// blocks).
//
// The server also memoises model.Compute (and the widget plots drawn from
// its Result) by kind, solve and values (modelcache.go), so a learner's
// lesson page does not recompute each widget's initial queue curve; and a
// run's chart per number of rows, its rendered panel per event, and the
// names of learners' runs. Every one of these is the one cache type
// (cache.go): bounded, the least recently used entry making room, and a
// value asked for by many at once (a class's pages, a new panel) made once.
//
// A returning learner's lesson page is assembled, not rendered whole
// (lessonplan.go): once per course value, each lesson's page is rendered
// with its predict, check, model, record, lab and table blocks cut out,
// and those blocks' HTML is kept for a newcomer, for a reached goal, and
// per answer and option order (a prediction's option, skipped, revealed
// and whether a measurement was seen; a check's last option and
// correctness), with holes where the learner's own times and attempt
// count go (the templates write them through holeOr); a lab block with runs to show and an unfolded table are
// rendered per request. A request writes the stored
// HTML between the blocks and each block from its kept HTML, rendering it
// only when the request carries form values for it (a widget's GET form,
// a refused record) or a record block has saved data or runs to offer.
// A new course value (author mode after a file changed) builds new plans.
//
// # Metrics
//
//	capacitylab_http_requests_total{route, method, code}      counter
//	capacitylab_http_request_duration_seconds{route}          histogram
//	capacitylab_followed_runs                                 gauge: runs live on another process followed now
//	capacitylab_followed_run_watches_total                    counter: store watches opened to follow them (one a run)
//	admit_requests_total{class, decision}                     counter: requests at the front door by class (critical,
//	                                                          normal, sheddable) and decision (admitted, refused, exempt)
//	admit_limit, admit_inflight, admit_refused_total, ...     the front door's policy (admit.Door.Register)
//
// route is the chi route pattern ("/lessons/{slug}"), or "unmatched";
// method is one of HTTP's nine methods (GET, HEAD, POST, PUT, PATCH,
// DELETE, OPTIONS, CONNECT, TRACE), or "other"; code is the status the
// server wrote. So the label set stays small whatever methods and URLs
// clients send. Go runtime and
// process collectors are registered on the server's own registry.
//
// # Model widgets
//
// A lesson's model block renders as a widget (widgets.templ; kinds and
// parameters from package model): a number and a range input per
// parameter, for Little's law a radio group "solve" choosing the implied
// quantity (shown as an output, not editable), the read-back sentence in an
// aria-live="polite" region, the kind's figures (admission steps, the
// binding ceiling and speedup cap, the queue curve with its ρ 0.7 and 0.9
// marks or "no steady state"), the goal, and what the model assumes and
// ignores (the block's own, else generic ones per kind). Every widget says
// it is a hypothetical model, not a forecast.
//
// Query encoding, shared by the lesson page's form, /widgets/{kind},
// plot.svg and /api/models/{kind}:
//
//	{param}=number        each parameter by its model name (arrivals, latency_ms, ...); missing ones take
//	                      the block's value, else the kind's default; out of range, not a number or unknown: 400
//	solve=inflight        littles-law only: inflight (default), arrivals or latency_ms
//	goal=p:v[:tol],...    targets on any quantity of the kind (model.QuantityNames), at most 8,
//	                      e.g. goal=arrivals:48:0.5,latency_ms:100:2
//	goal_text, found, title, assumes (repeated), ignores (repeated)
//	                      /widgets/{kind} only: the preset's texts (at most 400 characters, 8 items each)
//	widget=ID             lesson pages only: the model block the form belongs to
//	was=p:v,...           the range inputs' rendered positions (the form sends each parameter twice,
//	                      number then range: the range wins only if it moved from was)
//	nudge=p:- or p:+      a − or + button pressed without JavaScript: p moves one slider step
//	                      down or up, within its range
//	id=ELEMENT-ID         plot.svg only: the element id prefix of the SVG's title and description
//
// Each parameter's range input is laid out by sliderFor (widgetslider.go; the
// same rule in static/js/widgettext.js, held to
// web/testdata/widget-vectors.json): with no goal on it, min to a round
// number above twice its value; with the goal's target on it, a step as
// coarse as the tolerance allows whose grid reaches the goal, a top that
// covers the goal, and at most 2 × tol × 250 px wide (a window around the
// goal otherwise), so every goal of the course is reachable by dragging,
// by the arrow keys, by − and + (one step each) and by typing
// (TestCourseGoalsReachableBySlider). A bad value is named under its own
// field, and the results, still those of the last good values, are
// marked stale until it is fixed.
//
// Without JavaScript the widget's GET form goes to the lesson page
// (/lessons/{slug}?widget=ID&...#ID) or to /widgets/{kind}; the server
// renders the computed result, shows bad values beside their field (the
// standalone page too: a bad query value gives the widget with the error
// in it, status 400, never the site's error page), and on
// a lesson page records the goal when the values reach it (only for
// requests from this site: Sec-Fetch-Site same-origin or absent). With
// JavaScript, static/js/widgets.js recomputes in the page with
// static/js/model.js as the controls move and POSTs the values once to
// /lessons/{slug}/model/{id} when the goal is reached; the server computes
// again and records the goal only if it holds (409 otherwise), answering
//
//	{"block": "littles-model", "reached": true, "goal": {"lesson": ..., "block": ..., "values": {...}, "reached_at": ...}}
//
// (or 303 to /lessons/{slug}#{id} for a form post). Bad parameters give 400
// with every problem listed:
//
//	{"error": {"code": "invalid", "message": "Some values are not allowed. ...",
//	           "params": [{"param": "arrivals", "message": "-5 is out of range: want 0 to 5000 per second"}]}}
//
// /widgets/{kind} is framable by Deps.WidgetFrameAncestors (default *: the
// page changes nothing, so any course page may embed a preset in an
// iframe; no X-Frame-Options), while lessons keep Deps.FrameAncestors;
// each lesson widget links to its preset ("open on its own / share this
// preset").
//
// # Test hooks for browser tests
//
// Elements carry data-testid attributes: predict-{id}, check-{id},
// model-{id}, lab-{id}, table-{id}, callout-{id} on blocks; option-{a,b,...}
// on radios; predict-lock, predict-skip, predict-locked, predict-settled,
// predict-reveal, predict-answer; check-submit, check-result (with
// data-correct and data-first-correct); predict-reveal-later (Reveal
// waits for a measurement), reading, reading-row, reading-cell (with
// data-column), reading-chart and reading-back (the prediction beside what
// was measured); lab-run-links, lab-run-page, lab-run-csv,
// lab-run-samples-csv, lab-run-records-csv, lab-compare-recorded,
// lab-compare-previous (after a run); lab-preset, lab-folded, lab-run, lab-cancel,
// lab-replay, lab-reference, lab-run-message, lab-run-slot, lab-next,
// lab-settings, lab-settings-link, lab-knobs (the knobs, in the block once
// fetched and on the lab's settings page), lab-settings-form,
// lab-settings-back, lab-terminal, run-field-{name}, run-mode-{open,closed};
// table-folded, table-open, table-all-columns; lesson-{slug} and progress-{slug}
// (with data-done and data-total) on the index; progress-export,
// progress-reset-confirm, progress-reset, progress-was-reset,
// progress-continue, progress-continue-link, progress-lesson-{slug},
// progress-counts, progress-runs, progress-runs-none, progress-records,
// progress-records-none; prev-lesson, next-lesson, lesson-nav, lesson-toc,
// nav-prev-lesson, nav-next-lesson; error, error-message, error-near,
// error-next; lab-env, lab-load. Runs: run-page, run-title, run-meta,
// run-settings, run-lesson, run-chart, run-distribution, run-outcomes,
// run-model-caveat, runs-mine, runs-others, runs-no-c, compare-a,
// compare-b, compare-c, compare-settings (rows with data-differs),
// compare-differs-summary, compare-over-time, compare-range,
// compare-window, compare-from, compare-to, compare-summarise,
// compare-time-chart, compare-summary (rows with data-run). Your service:
// service-page, service-no-load, service-form, service-results,
// service-report, service-budget, service-upload, service-error,
// service-deleted, service-none, service-uploads (items with
// data-upload), service-delete; on an upload's run page run-service,
// run-report, upload-analysis, upload-warnings, upload-knee,
// upload-ceiling, upload-latency, upload-not-ok, upload-admission (the
// summary's facts), upload-windows, upload-limit, upload-budget-form,
// upload-budget, upload-budget-error, upload-checklist (items with
// data-check and data-met); progress-service, progress-service-link.
// Charts carry data-chart on their figure.
// Widgets: num-{param}, range-{param}, implied-{param}, solve-{quantity},
// widget-sentence, widget-goal, widget-goal-state, widget-goal-misses,
// widget-goal-found, widget-goal-recorded, widget-hypothetical,
// widget-assumes, widget-ignores, widget-share, widget-recompute,
// widget-steps, widget-unstable, widget-hint, widget-stale, error-{param},
// nudge-down-{param}, nudge-up-{param}, q-{quantity}, ceiling-workers,
// ceiling-processor. LTI: lti-urls (and lti-login-url, lti-launch-url,
// lti-deep-link-url, lti-jwks-url, lti-platforms) on /lti; lti-picker,
// lti-graded, pick-{lesson:SLUG|model:SLUG:ID|lab:SLUG:ID}, lti-add on the
// deep linking picker; lti-chosen, lti-return on its answer page;
// lti-grades, lti-retry, lti-retried, lti-no-grades on /lti/grades;
// progress-lti, progress-grades (rows with data-lesson, data-points,
// data-max), lti-grades-link on the progress page.
package web
