// Package classroom runs instructor-led class sessions on one lesson,
// following Peer Instruction: everyone votes alone, the instructor reveals
// the spread, the class discusses and votes again, then one sweep is run
// for everyone.
//
// # Sessions
//
// Manager.Create starts a session for a lesson and returns it with its
// host token. A session has:
//
//   - a join code of CodeLength (6) characters drawn uniformly with
//     crypto/rand from CodeAlphabet, which has no 0, O, 1, I or L.
//     NormalizeCode accepts lower case, spaces and dashes.
//   - a host token of 256 random bits (URL-safe base64). Whoever holds it
//     is the host; it travels only in the host link. The store keeps its
//     SHA-256, never the token.
//   - a projector token (Session.ProjectorToken): SHA-256 of a fixed
//     prefix and the host token's hash, URL-safe base64. The projector
//     view's address, which the class sees on the big screen, carries it
//     instead of the host token; it lets a screen watch (RoleProjector)
//     and do nothing else, and the host token cannot be worked out from it.
//   - participants, numbered from 1, each with an optional display name
//     (CheckName: composed to Unicode NFC, at most MaxNameRunes
//     characters, at least one visible one, no control characters, no
//     characters that change the text's direction, no invisible format
//     characters but the joiners scripts and emoji need, at most four
//     combining marks on a character) and a
//     token of 128 random bits that the web layer keeps in a cookie; the
//     store keeps its SHA-256.
//   - for each Predict or Check block of the lesson, up to MaxRounds
//     rounds of voting, each open → closed → revealed. At most one
//     question is open at a time. A round 2 may start once round 1 is
//     closed or revealed. Revealing an open round closes it first.
//   - a reveal in two steps, as Peer Instruction has it: first the spread
//     (reveal: how the votes of the last round split, with no answer),
//     then the answer (answer: which option the lesson marks correct,
//     with every option's explanation from the lesson; for a Predict,
//     what the measurement showed). Answering a round whose spread is not
//     showing reveals it first (closing it first if open), so every screen
//     goes through both steps in order. Once the answer shows, the
//     question takes no second round. The step is stored (the round's
//     AnsweredAt), so a restart keeps it.
//   - a focus: the block the class is on, which the presenter view
//     shows. It is the question the host last opened, closed, revealed or
//     answered, the lab the host last ran for the class, or the question
//     or lab the host last showed again (show: the host's Back, as a
//     presentation's Back shows the slide before; nothing shown is
//     undone).
//   - one vote per participant per round, which the participant may change
//     while the round is open and which is locked once it closes. The
//     session checks this in memory and the store checks it again (a vote
//     is only written for a round stored as open).
//
// Every change is written to the store before anyone is told, so a server
// restart loses nothing: Get loads a session the Manager does not hold.
// Votes, which a whole class sends at once, go through one writer
// goroutine that stores all the votes waiting in one transaction (group
// commit); the voter is told "voted" only after the commit, and closing a
// round first waits for the votes accepted before it.
// A session with no activity (a join, a connection, an accepted message)
// for Config.Idle ends; an ended session takes no votes or joins, but its
// results stay readable by the host. Lookup counts well-formed codes that
// do not exist per client address (a malformed one is refused, not
// counted: it can match nothing): an address may miss MissLimit times at
// once and then once every MissWindow/MissLimit (20 s), and past that
// allowance it gets *TooManyMissesError (HTTP 429) with how long to wait.
// The limiter's memory is bounded (limit.go) and a miss costs O(1). A session's join link carries Session.JoinKey, which the
// web layer lets past the limit, so a class behind one address can still
// join by the link or its QR code.
//
// # Across servers
//
// Several servers may share one Postgres database (Store.SharedClasses),
// and a session's host, participants and projector may each reach a
// different one. Every change a session makes is stored, and wakes the
// session's watchers on every server (store.WatchClass), in the same
// transaction. Each server holding the session in memory keeps one Watch
// for it, and on a wake-up reads once what it may lack (participants
// after those it holds, the rounds, and the votes of every round it has
// not yet read after the store showed it closed) and brings its memory
// up to date, sending the resulting messages (tally, presence for
// a join, round, revealed, answer, run, focus, ended) to its own sockets: one
// read per server and wake-up, not per socket (follow.go). A server's
// memory never undoes its own writes still under way.
//
// The store's checks are the truth. A vote that a server's lagging
// memory would take for a round another server has closed is refused by
// the store (a vote is only written for a round stored as open), undone,
// and refused to the voter as closed. A vote memory refuses because the
// round is not open, a participant token the server does not know, and
// every host message are first checked against a fresh read of the
// store. So a server never accepts what the store refuses, and refuses
// what it accepts for no longer than one read (milliseconds); its
// sockets see another server's change once the notification arrives
// (milliseconds; while the store's listening connection is lost, until
// it is back: it retries within 5 s, then every server rereads
// everything). Two hosts acting at the same moment on two servers are
// not serialized: the later write wins. Joins on two servers at once
// that take the same id are retried with the next (ErrParticipantTaken).
//
// Presence is shared too (presence.go): each server stores which
// participants have a socket open on it (a row each, written when the
// first socket opens and deleted when the last closes, with a presence
// wake-up of the session, store.WatchClassPresence) and renews those rows
// every Config.PresenceEvery (5 s); on that wake-up a server's follower
// reads who is connected through the other servers, and only that (a
// vote's wake-up reads no presence, a connection's no votes). So the connected counts and flags in states
// and presence messages count every server's sockets. A server that
// stops in order clears its rows; one that dies is cleared by the others
// once its rows are three periods old (15 s), and its participants are
// shown gone then.
//
// Limits: each server numbers its own messages (seq) and draws its own
// epoch, so a participant whose socket moves to another server gets a
// fresh state (its votes are the store's and are kept).
//
// # Protocol
//
// Each browser opens one websocket per session (the web layer serves it at
// GET /ws/sessions/{code}; it checks the Origin, the host token or the
// participant cookie, then calls Session.Serve). Messages are JSON text
// frames, one object each, in the same style as the run stream:
//
//	{"seq": 12, "kind": "...", ...}
//
// Server to client. Broadcast messages are numbered 1, 2, 3, ... per
// session (seq); each client gets those meant for it, so a participant
// sees gaps where host-only messages went. A connection is a host's (host
// token), a projector's (projector token: it gets what participants get
// plus the projector's part of presence and tally, and every message it
// sends that is not refused as malformed is refused as forbidden) or a
// participant's (cookie). Replies to one client (state,
// voted, error) carry the seq of the last broadcast before them.
//
//	state     reply on connect: {"state": {code, epoch, role, you, lesson,
//	          focus, run_id, ended, connected, questions: [{id, type,
//	          options, correct, answered, explain, rounds: [{round, status,
//	          yours, counts, total, movement}]}], participants (host only)}}.
//	          Participants and projectors get counts and movement only for
//	          revealed rounds, and correct and explain (option id → HTML)
//	          only once the question is answered; hosts always get correct.
//	voted     reply: {question, round, option, ref}: your vote is recorded.
//	error     reply: {code, message, ref}: your message was refused and
//	          nobody else was told. code is invalid, forbidden, conflict or
//	          internal.
//	presence  hosts: {participant: {id, name, connected}, connected};
//	          projectors: {connected} only.
//	tally     hosts: {question, round, option, participant, counts, total,
//	          movement (round 2 on)} after every vote or change of vote, so
//	          a host sees answers move as they do (as the state on connect
//	          shows hosts); projectors: {question, round, total} only.
//	round     all: {question, round, status: "open"|"closed", total}.
//	revealed  all: {question, round, status, counts: [{option, count}],
//	          total, movement: [{from, to, count}] (round 2)}: the spread,
//	          the reveal's first step. It never carries the answer.
//	answer    all: {question, round, correct, explain: {option: HTML}}:
//	          the reveal's second step, after that question's revealed
//	          message. explain holds every option's explanation, so a
//	          participant can read why their own vote was wrong.
//	run       all: {run_id, lab}: a run for the class started; watch it on
//	          the run stream /ws/runs/{run_id} (package runner's events).
//	          The lab is now the focus.
//	focus     all: {question} or {lab}: the host showed that block again
//	          (show); it is now the focus. The other messages that move
//	          the focus (round, revealed, answer, run) name it themselves.
//	ended     all: the session ended; the server then closes with
//	          wsconn.CloseEnd.
//
// Client to server (unknown fields and kinds are refused):
//
//	{"kind": "vote", "question": "p1", "option": "b", "ref": 7}   participant
//	{"kind": "open" | "close" | "reveal" | "answer" | "next_round", "question": "p1"}  host
//	{"kind": "run", "lab": "lab-1"}                               host
//	{"kind": "run", "lab": "lab-1", "knobs": {"workers": 4, "rates": [40, 80]}}  host
//	{"kind": "show", "question": "p1"} or {"kind": "show", "lab": "lab-1"}  host
//	{"kind": "cancel"}                                            host
//	{"kind": "end"}                                               host
//
// knobs is optional: workers, spin_ms, wait_ms, limit, cpus, stall_every,
// stall_ms, rates (at most 16) and seconds replace the preset's values for
// this run; the
// runner's sandbox limits still apply and a refusal names the knob.
// A run is started through Config.StartRun with the address of the host's
// connection (Who.Addr), which it counts against: a class run takes a
// place of its host's address's share of the queue, and a session has one
// run at a time. cancel cancels the session's run, waiting or running
// (Config.CancelRun; the run's own stream tells every screen); a run
// already over is refused as a conflict. A session that ends, by its
// host's end or the idle sweep, cancels its run on the server that ended
// it.
// ref is optional and echoed in the reply, so a page can show an error
// next to the button that sent the message. Errors name a question by
// the first words of its prompt ("Voting on ‘When the rate doubles…’ is
// still open: close it first."), as the class sees it, not by its id. A
// host-only kind from a participant gets an error with code forbidden,
// to that participant only.
// A message over MaxMessageBytes ends only the sender's connection (close
// code wsconn.CloseTooBig); any other malformed message gets an error
// reply and changes nothing.
//
// Resuming: a client that reconnects may send ?since=N&epoch=E (its last
// seq and the epoch from its state). If E is this session's epoch (a new
// one is drawn whenever the session is loaded, e.g. after a restart) and
// the messages after N are still in the session's log of the last 512,
// it gets exactly those (the ones meant for it); otherwise it gets a fresh
// state. Either way its votes are kept, since they are the server's.
//
// A participant may have up to four sockets open at once (tabs); a fifth is
// closed with wsconn.ClosePolicy.
//
// Per connection there is one read pump (with SetReadLimit, a read
// deadline renewed by pongs) and one write pump (wsconn.Pump: a write
// deadline on every frame, pings); the timing and the close codes are
// package wsconn's, the same as the run streams'. Broadcasting never
// waits: each connection has a buffer of Config.SendBuffer messages (four
// times that for hosts, who get a tally per vote), and a client that lets
// it fill is dropped with close code CloseTooSlow (wsconn.CloseTooSlow);
// it may reconnect with since. Manager.Close closes every connection with
// wsconn.CloseGoingAway.
//
// # Results
//
// Session.Results returns counts per question, round and option, the
// movement between rounds, and each participant's answers.
// Results.WriteCountsCSV writes
// question,prompt,type,round,status,letter,option,option_text,correct,count;
// Results.WriteAnswersCSV writes
// participant,name,question,prompt,round,letter,option,option_text,correct.
// letter is the option's place as the class saw it (A, B, …, in the
// session's one order of the options: Question.Order), beside its id in
// the lesson and its words.
//
// QRSVG draws a QR code (github.com/skip2/go-qrcode's bitmap) as an SVG
// path, for the join link.
package classroom
