package classroom

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// NameError says what is wrong with a display name.
type NameError struct{ Reason string }

func (e *NameError) Error() string { return "display name " + e.Reason }

// Display names are shown in the host's list and the results, so a name
// must not be able to pass for another or hide.
const (
	// maxMarks is how many combining marks (accents, vowel signs) may sit
	// on one character once the name is composed (NFC): scripts need a
	// few, stacks of dozens draw over the lines around them.
	maxMarks = 4
	// nameAllowed says what a name may hold, in every refusal.
	nameAllowed = "use letters, digits, spaces and punctuation"
)

// CheckName trims a display name, composes it (Unicode NFC, so "é" typed
// as e and an accent is the same name as "é") and checks it: at most
// MaxNameRunes characters, no control characters, no characters that
// change the text's direction (bidirectional embeddings, overrides and
// isolates, and the direction marks), no zero-width or other invisible
// format characters but the joiners scripts and emoji need (ZWJ, ZWNJ,
// and emoji tag characters), at most maxMarks combining marks on one
// character, and at least one visible character (a letter, digit,
// punctuation or symbol that is not a blank filler such as U+3164).
// Empty is allowed: the participant is shown by number.
func CheckName(name string) (string, error) {
	name = strings.TrimSpace(name)
	if !utf8.ValidString(name) {
		return "", &NameError{"is not valid UTF-8 text"}
	}
	name = norm.NFC.String(name)
	if n := utf8.RuneCountInString(name); n > MaxNameRunes {
		return "", &NameError{fmt.Sprintf("is %d characters long; at most %d are allowed", n, MaxNameRunes)}
	}
	if name == "" {
		return "", nil
	}
	visible, marks := false, 0
	for _, r := range name {
		switch {
		case unicode.IsControl(r):
			return "", &NameError{"contains control characters; " + nameAllowed}
		case unicode.Is(unicode.Bidi_Control, r):
			return "", &NameError{"contains characters that change the text's direction, which can make it read as another name; " + nameAllowed}
		}
		if unicode.In(r, unicode.Mn, unicode.Me) {
			if marks++; marks > maxMarks {
				return "", &NameError{fmt.Sprintf("stacks more than %d accents or other marks on one character; %s", maxMarks, nameAllowed)}
			}
			continue
		}
		marks = 0
		if visibleRune(r) {
			visible = true
		}
	}
	if !visible {
		return "", &NameError{"has no visible character; " + nameAllowed + ", or leave it empty to be shown by number"}
	}
	for _, r := range name {
		if unicode.Is(unicode.Cf, r) && r != '\u200c' && r != '\u200d' && !(r >= 0xE0020 && r <= 0xE007F) {
			return "", &NameError{fmt.Sprintf("contains an invisible character (U+%04X); %s", r, nameAllowed)}
		}
	}
	return name, nil
}

// visibleRune reports whether r draws something: a letter, digit,
// punctuation or symbol that is not one of the fillers that render blank
// (Unicode's Other_Default_Ignorable_Code_Point, such as the Hangul
// fillers, and the blank braille pattern).
func visibleRune(r rune) bool {
	if !unicode.In(r, unicode.L, unicode.N, unicode.P, unicode.S) {
		return false
	}
	return !unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r) && r != '\u2800'
}

// ParticipantName is how results show a participant: their display name,
// or "Participant N" if they gave none.
func ParticipantName(id int, name string) string {
	if name != "" {
		return name
	}
	return "Participant " + strconv.Itoa(id)
}
