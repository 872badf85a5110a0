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
// Timing and close codes are defined here once, for every connection of
// the server (DefaultConfig and the Close constants): a write, the
// upgrade's handshake included, that takes over WriteWait (10 s) drops the
// client without a close frame; the server pings every PingPeriod (54 s)
// and drops a client that sends nothing, not even a pong, for PongWait
// (60 s); a client has CloseGrace (1 s) to answer the server's close frame.
// The Source names the code and reason of the close frame that ends a
// connection: CloseEnd (1000) when the stream is over, CloseTooSlow (4000)
// for a dropped client, CloseGoingAway (1001) when the server stops; a
// protocol may refuse a connection with ClosePolicy (1008) and drop one
// that sends too much with CloseTooBig (1009). The protocols' docs (package
// web for run streams, package classroom for sessions) say which they use
// and refer here for the numbers.
package wsconn
