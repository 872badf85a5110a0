package classroom

import (
	"errors"
	"fmt"

	"capacitylab/input"
)

// Kinds of messages a client sends.
const (
	KindVote      = "vote"       // participant: {question, option}
	KindOpen      = "open"       // host: open round 1 of {question}
	KindClose     = "close"      // host: close the open round of {question}
	KindReveal    = "reveal"     // host: reveal the spread of the last round of {question} (closing it first if open)
	KindAnswer    = "answer"     // host: show the answer of {question} with its explanation (revealing the spread first)
	KindNextRound = "next_round" // host: open the next round of {question}
	KindRun       = "run"        // host: run the lesson's {lab} preset for the class
	KindShow      = "show"       // host: make {question} or {lab} the focus (the presenter shows it)
	KindCancel    = "cancel"     // host: cancel the class run, waiting or running
	KindEnd       = "end"        // host: end the session (and cancel its run)
)

// Kinds of messages the server sends. Broadcast kinds have their own seq;
// replies to one client carry the seq of the last broadcast sent before.
const (
	KindState    = "state"    // reply on connect: the whole session as this client may see it
	KindVoted    = "voted"    // reply: your vote was recorded
	KindError    = "error"    // reply: your message was refused; nobody else is told
	KindPresence = "presence" // hosts: a participant joined, connected or left
	KindTally    = "tally"    // hosts: a vote was cast or changed; counts so far
	KindRound    = "round"    // all: a round opened or closed
	KindRevealed = "revealed" // all: a round's distribution (and movement from the previous round)
	KindAnswered = "answer"   // all: a question's answer and every option's explanation
	KindRunStart = "run"      // all: a run for the class started; watch /ws/runs/{run_id}
	KindFocus    = "focus"    // all: the host showed {question} or {lab} again (the focus)
	KindEnded    = "ended"    // all: the session ended
)

// Error codes in error messages.
const (
	ErrCodeInvalid   = "invalid"   // the message is malformed or names something that does not exist
	ErrCodeForbidden = "forbidden" // only the host may do that
	ErrCodeConflict  = "conflict"  // not allowed in the current state (voting closed, round already open)
	ErrCodeInternal  = "internal"  // something failed on the server; it was logged
)

// MaxMessageBytes caps a message from a client (SetReadLimit).
const MaxMessageBytes = 1024

// maxField caps the text fields of an incoming message.
const maxField = 64

// In is a message from a client. Unknown fields are refused.
type In struct {
	Kind     string `json:"kind"`
	Ref      int    `json:"ref,omitempty"` // echoed in the reply so a client can match it
	Question string `json:"question,omitempty"`
	Option   string `json:"option,omitempty"`
	Lab      string `json:"lab,omitempty"`
	Knobs    *Knobs `json:"knobs,omitempty"` // run: changes to the lab's preset
}

// Knobs are a host's changes to a lab preset for one class run; a field
// left out keeps the preset's value. The runner checks the result
// against its sandbox limits.
type Knobs struct {
	Workers *int      `json:"workers,omitempty"`
	SpinMS  *int      `json:"spin_ms,omitempty"`
	WaitMS  *int      `json:"wait_ms,omitempty"`
	Limit   *int      `json:"limit,omitempty"`
	CPUs    *int      `json:"cpus,omitempty"`
	Rates   []float64 `json:"rates,omitempty"`
	Seconds *float64  `json:"seconds,omitempty"`

	StallEvery *int `json:"stall_every,omitempty"`
	StallMS    *int `json:"stall_ms,omitempty"`
}

// maxRates caps the rates a run message may list.
const maxRates = 16

// OptionCount is how many votes an option got in a round.
type OptionCount struct {
	Option string `json:"option"`
	Count  int    `json:"count"`
}

// Move is how many participants answered From in one round and To in the
// next.
type Move struct {
	From  string `json:"from"`
	To    string `json:"to"`
	Count int    `json:"count"`
}

// ParticipantView is a participant as the host sees them.
type ParticipantView struct {
	ID        int    `json:"id"`
	Name      string `json:"name"`
	Connected bool   `json:"connected"`
}

// Out is a message from the server; the package doc lists which fields
// each kind carries.
type Out struct {
	Seq  int    `json:"seq"`
	Kind string `json:"kind"`
	Ref  int    `json:"ref,omitempty"`

	Code    string `json:"code,omitempty"`    // error
	Message string `json:"message,omitempty"` // error

	Question    string            `json:"question,omitempty"`
	Round       int               `json:"round,omitempty"`
	Status      string            `json:"status,omitempty"`
	Option      string            `json:"option,omitempty"`      // voted
	Participant *ParticipantView  `json:"participant,omitempty"` // presence, tally
	Connected   int               `json:"connected,omitempty"`   // presence: participants connected now
	Counts      []OptionCount     `json:"counts,omitempty"`      // tally, revealed
	Total       int               `json:"total,omitempty"`       // tally, revealed
	Movement    []Move            `json:"movement,omitempty"`    // tally (hosts), revealed: round 2 on
	RunID       string            `json:"run_id,omitempty"`      // run
	Lab         string            `json:"lab,omitempty"`         // run, focus
	Correct     string            `json:"correct,omitempty"`     // answer
	Explain     map[string]string `json:"explain,omitempty"`     // answer: option → its explanation (HTML)

	State *State `json:"state,omitempty"` // state
}

// State is the whole session as one client may see it.
type State struct {
	Code   string           `json:"code"`
	Epoch  string           `json:"epoch"`
	Role   string           `json:"role"` // "host" or "participant"
	You    *ParticipantView `json:"you,omitempty"`
	Lesson string           `json:"lesson"`
	Focus  string           `json:"focus"` // the block the class is on: the question or lab the host last acted on

	RunID        string            `json:"run_id"`
	Ended        bool              `json:"ended"`
	Connected    int               `json:"connected"`
	Questions    []QuestionState   `json:"questions"`
	Participants []ParticipantView `json:"participants,omitempty"` // host only
}

// QuestionState is one question and its rounds.
type QuestionState struct {
	ID       string            `json:"id"`
	Type     string            `json:"type"`
	Options  []string          `json:"options"`
	Correct  string            `json:"correct,omitempty"`  // hosts always; everyone once answered
	Answered bool              `json:"answered,omitempty"` // the host has shown the answer
	Explain  map[string]string `json:"explain,omitempty"`  // once answered: option → its explanation (HTML)
	Rounds   []RoundState      `json:"rounds"`
}

// RoundState is one round: its status, the client's own vote, and the
// counts (hosts always; participants once revealed).
type RoundState struct {
	Round    int           `json:"round"`
	Status   string        `json:"status"`
	Yours    string        `json:"yours,omitempty"`
	Counts   []OptionCount `json:"counts,omitempty"`
	Total    int           `json:"total"`
	Movement []Move        `json:"movement,omitempty"`
}

// Roles of a connection.
const (
	RoleHost        = "host"
	RoleParticipant = "participant"
	// RoleProjector is the big screen: it sees what the class sees (no
	// correct answer, no names, a distribution only once revealed) plus
	// how many are connected and how many have voted, and may do nothing.
	RoleProjector = "projector"
)

// hostKind reports whether only a host may send messages of kind k.
func hostKind(k string) bool {
	switch k {
	case KindOpen, KindClose, KindReveal, KindAnswer, KindNextRound, KindRun, KindShow, KindCancel, KindEnd:
		return true
	}
	return false
}

// parseIn decodes and checks one message: valid JSON, one object, known
// fields and kind, and the fields that kind needs. The error text is shown
// to the sender.
func parseIn(data []byte) (In, error) {
	var in In
	if err := input.DecodeJSONBytes(data, &in); err != nil {
		var je *input.JSONError
		errors.As(err, &je) // a message in memory is always read whole
		switch {
		case je != nil && je.Problem == input.UnknownField && je.Want != "":
			return in, fmt.Errorf("the message has an unknown field %q; field names are exact: %q", je.Field, je.Want)
		case je != nil && je.Problem == input.UnknownField:
			return in, fmt.Errorf("the message has an unknown field %q; allowed fields are kind, ref, question, option, lab and knobs (workers, spin_ms, wait_ms, limit, cpus, stall_every, stall_ms, rates, seconds)", je.Field)
		case je != nil && je.Problem == input.Trailing:
			return in, fmt.Errorf("the message has data after its JSON object; send one object per message")
		case je != nil && (je.Problem == input.WrongType || je.Problem == input.DuplicateField || je.Problem == input.BadText):
			return in, fmt.Errorf("in the message, %s", je.Error())
		}
		return in, fmt.Errorf("the message is not a JSON object of the protocol")
	}
	need := func(name, v string) error {
		if v == "" {
			return fmt.Errorf("a %q message needs a %q field", in.Kind, name)
		}
		if len(v) > maxField {
			return fmt.Errorf("the %q field is longer than %d bytes", name, maxField)
		}
		return nil
	}
	var err error
	switch in.Kind {
	case KindVote:
		if err = need("question", in.Question); err == nil {
			err = need("option", in.Option)
		}
	case KindOpen, KindClose, KindReveal, KindAnswer, KindNextRound:
		err = need("question", in.Question)
	case KindRun:
		err = need("lab", in.Lab)
		if err == nil && in.Knobs != nil && len(in.Knobs.Rates) > maxRates {
			err = fmt.Errorf("knobs.rates lists %d rates; at most %d are allowed", len(in.Knobs.Rates), maxRates)
		}
	case KindShow:
		switch {
		case (in.Question == "") == (in.Lab == ""):
			err = fmt.Errorf("a %q message needs a \"question\" or a \"lab\" field, one of them", in.Kind)
		case in.Question != "":
			err = need("question", in.Question)
		default:
			err = need("lab", in.Lab)
		}
	case KindCancel, KindEnd:
	case "":
		err = fmt.Errorf("the message has no \"kind\"; allowed kinds are %s", kindList)
	default:
		err = fmt.Errorf("unknown kind %q; allowed kinds are %s", truncate(in.Kind, maxField), kindList)
	}
	return in, err
}

// kindList names the kinds a client may send, for messages.
const kindList = "vote, open, close, reveal, answer, next_round, run, show, cancel and end"

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
