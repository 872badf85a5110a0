package web

import (
	"strings"

	"golang.org/x/net/html"

	"capacitylab/lessons"
)

// section is one of a lesson's sections: a level-2 heading of its prose,
// by id (the loader gives every heading one) and text.
type section struct{ ID, Title string }

// lessonSections lists a lesson's level-2 headings in order, for its
// contents. It reads the rendered prose; the lesson page is rendered once
// per course value, so this runs once per lesson.
func lessonSections(l *lessons.Lesson) []section { return sectionsOf(l.Body) }

// sectionsAfter lists the level-2 headings of the parts after part i: the
// sections a gate at part i hides.
func sectionsAfter(l *lessons.Lesson, i int) []section { return sectionsOf(l.Body[i+1:]) }

// sectionsOf lists the level-2 headings of the prose among parts.
func sectionsOf(parts []lessons.Part) []section {
	var out []section
	for _, part := range parts {
		if part.Block != nil {
			continue
		}
		z := html.NewTokenizer(strings.NewReader(string(part.HTML)))
		var cur *section
		var text strings.Builder
		for {
			tt := z.Next()
			if tt == html.ErrorToken {
				break
			}
			name, _ := z.TagName()
			switch {
			case tt == html.StartTagToken && string(name) == "h2":
				cur = &section{}
				text.Reset()
				for {
					k, v, more := z.TagAttr()
					if string(k) == "id" {
						cur.ID = string(v)
					}
					if !more {
						break
					}
				}
			case tt == html.TextToken && cur != nil:
				text.Write(z.Text())
			case tt == html.EndTagToken && string(name) == "h2" && cur != nil:
				cur.Title = strings.Join(strings.Fields(text.String()), " ")
				if cur.ID != "" && cur.Title != "" {
					out = append(out, *cur)
				}
				cur = nil
			}
		}
	}
	return out
}
