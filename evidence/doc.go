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
// The server reads uploads with it (web's "Your service" page), and
// cmd/load writes its self-contained HTML report with it (WriteReport).
// Nothing here sends a request: load against a learner's own service
// comes only from the learner's own cmd/load.
package evidence
