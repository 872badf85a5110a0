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
	Asked        map[string]Asked
	Participants []ParticipantAnswers
}

// Asked is how the class saw one question: its prompt, and each option's
// letter and words.
type Asked struct {
	Prompt  string            // plain text
	Letters map[string]string // option id → its letter, A, B, … in the order the class saw them
	Texts   map[string]string // option id → its words, plain text
	order   []string          // option ids in letter order
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
	res := Results{Code: s.code, Lesson: s.lesson, CreatedAt: s.createdAt, Questions: s.stateFor(&conn{role: RoleHost}).Questions,
		Asked: map[string]Asked{}}
	for _, q := range s.info.Questions {
		a := Asked{Prompt: q.Text, Letters: map[string]string{}, Texts: q.OptionText, order: q.shown(s.code)}
		for i, id := range a.order {
			a.Letters[id] = OptionLetter(i)
		}
		res.Asked[q.ID] = a
	}
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
// question,prompt,type,round,status,letter,option,option_text,correct,count.
// prompt is the question's words, letter the option's place as the class
// saw it (A, B, …; rows follow it), option its id in the lesson,
// option_text its words, and correct is "yes" for the right option.
// Every option appears, with 0 if nobody chose it.
func (r Results) WriteCountsCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"question", "prompt", "type", "round", "status", "letter", "option", "option_text", "correct", "count"})
	for _, q := range r.Questions {
		a := r.Asked[q.ID]
		for _, rd := range q.Rounds {
			n := map[string]int{}
			for _, c := range rd.Counts {
				n[c.Option] = c.Count
			}
			for _, o := range a.optionOrder(q) {
				cw.Write([]string{q.ID, csvText(a.Prompt), q.Type, strconv.Itoa(rd.Round), rd.Status,
					a.Letters[o], o, csvText(a.Texts[o]), yesNo(o == q.Correct), strconv.Itoa(n[o])})
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteAnswersCSV writes one row per participant and vote:
// participant,name,question,prompt,round,letter,option,option_text,correct
// (the question's and option's columns as in WriteCountsCSV). A
// participant who never voted has one row with the question's columns
// empty.
func (r Results) WriteAnswersCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"participant", "name", "question", "prompt", "round", "letter", "option", "option_text", "correct"})
	for _, p := range r.Participants {
		id := strconv.Itoa(p.ID)
		if len(p.Answers) == 0 {
			cw.Write([]string{id, csvText(p.Name), "", "", "", "", "", "", ""})
		}
		for _, v := range p.Answers {
			a := r.Asked[v.Question]
			cw.Write([]string{id, csvText(p.Name), v.Question, csvText(a.Prompt), strconv.Itoa(v.Round),
				a.Letters[v.Option], v.Option, csvText(a.Texts[v.Option]), yesNo(v.Correct)})
		}
	}
	cw.Flush()
	return cw.Error()
}

// optionOrder is q's option ids in the order the class saw them, or the
// lesson's when the question is not known.
func (a Asked) optionOrder(q QuestionState) []string {
	if len(a.order) == len(q.Options) {
		return a.order
	}
	return q.Options
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
