package classroom

import (
	"strings"
	"testing"
)

// A display name is what a host's list and the results show, so it must
// not be able to pass for someone else's or hide: it is normalised (NFC),
// and names with bidirectional overrides or isolates, with nothing
// visible, or with stacks of combining marks are refused with a message
// that says what a name may hold.
func TestCheckNameRefusesSpoofing(t *testing.T) {
	const allowed = "letters, digits, spaces and punctuation"
	tests := []struct {
		name, in string
		want     string // the name as kept; "" with refuse set
		refuse   string // part of the refusal
	}{
		// An ordinary name is kept as typed, trimmed.
		{"plain", "  Ada Lovelace ", "Ada Lovelace", ""},
		// A name with accents typed as base letter + combining mark is
		// kept composed (NFC), so it matches the same name typed with the
		// precomposed letter.
		{"decomposed accent", "Jose\u0301", "José", ""},
		// A script with its own combining marks (Devanagari) is fine.
		{"devanagari", "अनुष्का", "अनुष्का", ""},
		// An emoji with a zero-width joiner between visible parts is fine.
		{"emoji sequence", "Sam 👩\u200d💻", "Sam 👩\u200d💻", ""},
		// Empty is allowed: the participant is shown by number.
		{"empty", "   ", "", ""},
		// A right-to-left override makes "Bob" read as something else.
		{"right-to-left override", "\u202eboB", "", "direction"},
		// A left-to-right isolate is refused the same way.
		{"isolate", "Ada\u2066x\u2069", "", "direction"},
		// Zero-width characters alone look like an empty name.
		{"zero-width only", "\u200b\u200b\u200b", "", "visible"},
		// Format characters and spaces only.
		{"invisible only", "\u2060 \ufeff\u200c", "", "visible"},
		// A filler that renders as blank (Hangul filler) is no visible name.
		{"hangul filler", "\u3164\u3164", "", "visible"},
		// A stack of combining marks draws over the lines around it.
		{"combining stack", "Zalgo" + strings.Repeat("\u0301", 12), "", "marks"},
		// A mark with nothing to sit on.
		{"marks only", "\u0301\u0302", "", "visible"},
		// Control characters, as before.
		{"control", "Ada\x07", "", "control"},
		// Too long, as before.
		{"too long", strings.Repeat("a", MaxNameRunes+1), "", "at most 40"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := CheckName(tt.in)
			if tt.refuse == "" {
				if err != nil || got != tt.want {
					t.Fatalf("CheckName(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("CheckName(%q) = %q, want a refusal saying %q", tt.in, got, tt.refuse)
			}
			if msg := err.Error(); !strings.Contains(msg, tt.refuse) || (tt.name != "too long" && !strings.Contains(msg, allowed)) {
				t.Errorf("CheckName(%q): %q, want it to say %q and what is allowed (%s)", tt.in, msg, tt.refuse, allowed)
			}
		})
	}
}
