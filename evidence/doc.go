// Package evidence reads the results of a load test of any HTTP service,
// made by the tools engineers use, into the course's records, and analyses
// them by the course's method: the rows of each window as package load
// computes them, the first saturation point and the ceiling, the requests
// in flight measured from the records beside Little's product of rate and
// latency, latency split into queueing and service where the service said
// how long a request queued, the admission limit the course's formula
// derives from the measured ceiling and a latency budget, and a checklist
// of what the evidence holds and what it lacks.
//
// The files it reads (Read):
//
//	load-csv    cmd/load's --records CSV (result.CSVHeader), with or without
//	            the report's data (ReportData, load --report)
//	vegeta-csv  vegeta's results encoded as CSV (vegeta encode --to csv)
//	k6-json     k6's --out json lines
//	k6-csv      k6's --out csv
//
// Each tool's file is read into result.Records numbered by window, so one
// path (result.Metrics) computes every row; what a tool's file cannot
// show (a latency timed from the actual send hides the queueing a
// saturated generator adds: coordinated omission) is said in the
// Dataset's warnings.
//
// # Reading
//
// How each is read:
//
//	load-csv    each line one Record exactly as load wrote it (times to the
//	            microsecond); windows numbered from 0 in order. Without the
//	            report's data a window's length is estimated as the next whole
//	            second after its last intended send and its rate as arrivals ÷
//	            that; Attach takes load's own from ReportData.
//	vegeta-csv  one window per attack name (-name), in order of first
//	            appearance; a request's send is its timestamp less the attack's
//	            first, its end that plus its latency.
//	k6-json     one window per scenario tag; each http_req_duration point a
//	k6-csv      request ending at the point's time, sent its duration before;
//	            each dropped iteration (dropped_iterations) a request not sent,
//	            reason client_busy.
//
// Other tools' answers are classified as load's are where they can be: any
// 2xx is ok, 503 and 429 refused, a client timeout gaveup, anything else an
// error with a reason (status_NNN, conn_refused, reset, ...). Their windows'
// offered rates are what was sent (the files do not carry the rate asked
// for), over each window's span of sends plus one gap between sends.
// Limits bound a file's bytes and requests (DefaultLimits: 1,000,000
// requests in 100 MiB); a mistake is refused as a LineError naming its line.
//
// # The analysis
//
// Analyze folds each window's records into its row with result.Metrics,
// exactly as load does (load's lab columns and notes come from its
// report data), so the rows equal load's for the same records, read
// back from load's records CSV too (a record's latency is taken between
// whole microseconds, as the file keeps its times).
//
// In flight (WindowAnalysis.InFlight) is the mean number of requests
// outstanding, from the records' send and end times; Little's product
// is ok_per_sec × mean_ms, the rows' own figures. LittleCheck reconciles
// the two: directly, or once the requests not answered ok (in flight,
// not in the product) and the send lag (in the latencies, not in
// flight) are taken out; a large send lag is a finding, not an
// explanation. The admission limit is model.AdmissionLimit's for the
// ceiling X and S, the p50 of the lightest window: X × S workers.
//
// The checklist's items (Check* constants), in the method's order: open
// loop, through the knee, records kept, percentiles with n (MinN), queue
// depth, utilisation, errors (MaxErrorShare below the knee), recovery
// (RecoveredP99) and Little's law (LittleTolerance). Each says what was
// found, or what is missing and how to get it.
//
// WriteReport writes the analysis as one self-contained HTML file: the
// site's stylesheet (package static) inline, the charts as package
// chart's inline SVG, no script and no reference outside the file.
//
// # The analysis for a reader
//
// The parts of an analysis as a reader sees it are built here once, for
// the report and for web's page of an upload alike, each page laying them
// out under its own headings: Summary (the knee and what showed it, the
// ceiling, the latency below the knee, what was not answered ok, the
// admission limit, as Facts), LittlePart, QueuePart and GaugePart (each
// what it shows in words and a Table of cells), LimitText (how the limit
// follows, before model.AdmissionLimit's steps), and the charts against
// the offered rate: Charts (the report's two, one panel each) or Chart
// (the same two panels in one figure). The templ components Facts,
// PartView, Limit and Checklist draw them with the site's stylesheet's
// classes.
//
// The server reads uploads with it (web's "Your service" page), and
// cmd/load writes its self-contained HTML report with it (WriteReport).
// Nothing here sends a request: load against a learner's own service
// comes only from the learner's own cmd/load.
package evidence
