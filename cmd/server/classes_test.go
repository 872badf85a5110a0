package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"capacitylab/classroom"
)

// A class on two servers sharing one Postgres database, through the
// server's own pages and websockets: the session is started on A, a
// learner joins on B and votes there, the host on A sees the learner
// connected and the vote, the projector on B sees it counted, and the
// host's reveal reaches the learner on B.
func TestClassAcrossTwoServers(t *testing.T) {
	env := map[string]string{"DATABASE_URL": postgresSchemaURL(t, "a class across two servers")}
	a := start(t, env, "--data", t.TempDir())
	b := start(t, env, "--data", t.TempDir())

	res, err := http.Post(a.url+"/api/sessions", "application/json", strings.NewReader(`{"lesson": "sample"}`))
	if err != nil {
		t.Fatal(err)
	}
	var created struct {
		Code         string `json:"code"`
		HostURL      string `json:"host_url"`
		ProjectorURL string `json:"projector_url"`
	}
	json.NewDecoder(res.Body).Decode(&created)
	res.Body.Close()
	if res.StatusCode != http.StatusCreated || created.Code == "" {
		t.Fatalf("starting a session on A: %s %+v", res.Status, created)
	}
	token := func(link string) string {
		u, err := url.Parse(link)
		if err != nil {
			t.Fatal(err)
		}
		return u.Query().Get("token")
	}

	// The learner joins on B (a form post, as the join page sends it).
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err = noRedirect.PostForm(b.url+"/join", url.Values{"code": {created.Code}, "name": {"Ada"}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	var cookie *http.Cookie
	for _, c := range res.Cookies() {
		if strings.Contains(c.Name, created.Code) {
			cookie = c
		}
	}
	if res.StatusCode != http.StatusSeeOther || cookie == nil {
		t.Fatalf("joining on B: %s, cookies %v", res.Status, res.Cookies())
	}

	dial := func(base, query string, h http.Header) *websocket.Conn {
		t.Helper()
		if h == nil {
			h = http.Header{}
		}
		h.Set("Origin", base)
		ws, resp, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(base, "http")+"/ws/sessions/"+created.Code+query, h)
		if err != nil {
			status := ""
			if resp != nil {
				status = resp.Status
			}
			t.Fatalf("dialing %s: %v %s", base, err, status)
		}
		t.Cleanup(func() { ws.Close() })
		return ws
	}
	host := dial(a.url, "?token="+url.QueryEscape(token(created.HostURL)), nil)
	proj := dial(b.url, "?token="+url.QueryEscape(token(created.ProjectorURL)), nil)
	learner := dial(b.url, "", http.Header{"Cookie": {cookie.Name + "=" + cookie.Value}})

	// next reads messages until one of kind comes (within 5 s) and
	// returns it.
	next := func(name string, ws *websocket.Conn, kind string, ok func(classroom.Out) bool) classroom.Out {
		t.Helper()
		ws.SetReadDeadline(time.Now().Add(5 * time.Second))
		for {
			_, data, err := ws.ReadMessage()
			if err != nil {
				t.Fatalf("%s: waiting for %s: %v", name, kind, err)
			}
			var o classroom.Out
			if err := json.NewDecoder(bytes.NewReader(data)).Decode(&o); err != nil {
				t.Fatalf("%s: %s: %v", name, data, err)
			}
			if o.Kind == classroom.KindError {
				t.Fatalf("%s: error %s", name, data)
			}
			if o.Kind == kind && (ok == nil || ok(o)) {
				return o
			}
		}
	}
	st := next("learner on B", learner, classroom.KindState, nil).State
	if len(st.Questions) == 0 || len(st.Questions[0].Options) == 0 {
		t.Fatalf("learner on B: state has no question: %+v", st)
	}
	q := st.Questions[0]
	hst := next("host on A", host, classroom.KindState, nil).State
	next("projector on B", proj, classroom.KindState, nil)
	// The host on A sees Ada, connected through B, connected: in its
	// state if B stored it first, else in a presence message.
	if hst.Connected != 1 {
		if o := next("host on A", host, classroom.KindPresence, func(o classroom.Out) bool {
			return o.Participant != nil && o.Participant.Name == "Ada" && o.Participant.Connected
		}); o.Connected != 1 {
			t.Errorf("host on A: presence %+v, want 1 connected", o)
		}
	}

	host.WriteJSON(classroom.In{Kind: classroom.KindOpen, Question: q.ID})
	next("learner on B", learner, classroom.KindRound, func(o classroom.Out) bool { return o.Status == "open" })
	learner.WriteJSON(classroom.In{Kind: classroom.KindVote, Question: q.ID, Option: q.Options[0]})
	next("learner on B", learner, classroom.KindVoted, nil)
	tally := next("host on A", host, classroom.KindTally, nil)
	if tally.Option != q.Options[0] || tally.Participant == nil || tally.Participant.Name != "Ada" || tally.Total != 1 {
		t.Errorf("host on A: tally %+v, want Ada's vote %s, total 1", tally, q.Options[0])
	}
	next("projector on B", proj, classroom.KindTally, func(o classroom.Out) bool { return o.Total == 1 })

	host.WriteJSON(classroom.In{Kind: classroom.KindReveal, Question: q.ID})
	rev := next("learner on B", learner, classroom.KindRevealed, nil)
	if len(rev.Counts) == 0 || rev.Counts[0].Count != 1 || rev.Total != 1 {
		t.Errorf("learner on B: revealed %+v, want the one vote for %s", rev, q.Options[0])
	}
}
