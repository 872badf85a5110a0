// Package wsconn is the writing side of the server's websocket
// connections, shared by run streams (package web) and class sessions
// (package classroom): per connection one writer goroutine (Pump) that
// writes the messages its Source hands it, each within Config.WriteWait,
// pings every Config.PingPeriod so proxies keep the connection open, and
// ends with a close frame.
//
// A Source queues what a connection is still to be sent and says when
// there is more (Ready) and what (Take). Queue is the plain one: a bounded
// queue of text messages; a client that lets more than its limit wait is
// dropped with close code CloseTooSlow and may reconnect to resume (each
// protocol says how). Run streams use the runner's subscription as their
// Source, which also replaces a waiting progress with a newer one.
//
// Close codes: the Source names the code and reason of the close frame
// that ends a connection (1000 when the stream is over, CloseTooSlow for a
// dropped client, 1001 when the server stops). A connection whose write
// fails or times out gets no close frame: its socket is closed.
package wsconn
