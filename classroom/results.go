package classroom

import (
	"encoding/csv"
	"io"
	"strconv"
	"strings"
	"time"
)

// Results is what a session produced: each question's rounds with counts
// and movement, and each participant's answers.
type Results struct {
	Code         string
	Lesson       string
	CreatedAt    time.Time
	Questions    []QuestionState // as a host sees them
	Participants []ParticipantAnswers
}

// ParticipantAnswers is one participant's vote in every round they voted.
type ParticipantAnswers struct {
	ID      int
	Name    string // as shown: the display name or "Participant N"
	Answers []Answer
}

// Answer is one vote.
type Answer struct {
	Question string
	Round    int
	Option   string
	Correct  bool
}

// Results returns the session's results.
func (s *Session) Results() Results {
	s.mu.Lock()
	defer s.mu.Unlock()
	res := Results{Code: s.code, Lesson: s.lesson, CreatedAt: s.createdAt, Questions: s.stateFor(&conn{role: RoleHost}).Questions}
	for _, p := range s.participants {
		pa := ParticipantAnswers{ID: p.ID, Name: ParticipantName(p.ID, p.Name)}
		for _, iq := range s.info.Questions {
			q := s.questions[iq.ID]
			for _, r := range q.rounds {
				if v, ok := r.votes[p.ID]; ok {
					pa.Answers = append(pa.Answers, Answer{Question: q.ID, Round: r.Round, Option: v, Correct: q.Correct != "" && v == q.Correct})
				}
			}
		}
		res.Participants = append(res.Participants, pa)
	}
	return res
}

// WriteCountsCSV writes one row per question, round and option:
// question,type,round,status,option,correct,count (correct is "yes" for
// the right option). Every option appears, with 0 if nobody chose it.
func (r Results) WriteCountsCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"question", "type", "round", "status", "option", "correct", "count"})
	for _, q := range r.Questions {
		for _, rd := range q.Rounds {
			for _, c := range rd.Counts {
				cw.Write([]string{q.ID, q.Type, strconv.Itoa(rd.Round), rd.Status, c.Option, yesNo(c.Option == q.Correct), strconv.Itoa(c.Count)})
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteAnswersCSV writes one row per participant and vote:
// participant,name,question,round,option,correct. A participant who never
// voted has one row with the question columns empty.
func (r Results) WriteAnswersCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"participant", "name", "question", "round", "option", "correct"})
	for _, p := range r.Participants {
		id := strconv.Itoa(p.ID)
		if len(p.Answers) == 0 {
			cw.Write([]string{id, csvText(p.Name), "", "", "", ""})
		}
		for _, a := range p.Answers {
			cw.Write([]string{id, csvText(p.Name), a.Question, strconv.Itoa(a.Round), a.Option, yesNo(a.Correct)})
		}
	}
	cw.Flush()
	return cw.Error()
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// csvText keeps a spreadsheet from reading a learner's text as a formula.
func csvText(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}
