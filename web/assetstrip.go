package web

import "bytes"

// The stylesheets and scripts are written for people: long comments and
// tab indentation, a third of their bytes. Browsers need neither, so the
// server sends each asset with its comments and each line's leading and
// trailing blanks left out (stripAsset). Nothing else changes: every
// line break stays where it was, so a line number in the browser's
// console is the line in the file, and no token is rewritten or joined.
// A comment between two tokens on one line becomes one space.

// stripAsset returns the served form of a .css or .js asset named by ext,
// or src itself for any other kind.
func stripAsset(ext string, src []byte) []byte {
	switch ext {
	case ".css":
		return stripSource(src, false)
	case ".js", ".mjs":
		return stripSource(src, true)
	}
	return src
}

// stripSource removes comments and the blanks that start and end each
// line, outside strings (and, for JavaScript, template literals and
// regular expression literals, which it scans as the language does). It
// keeps every newline.
func stripSource(src []byte, js bool) []byte {
	out := make([]byte, 0, len(src))
	// braces: for each template literal whose ${ is open, the depth of
	// braces inside its substitution.
	var braces []int
	lineStart := true
	// last is the last character of the last token written (0 at the
	// start), to tell a regular expression from a division.
	var last byte
	var lastWord []byte
	emit := func(b ...byte) {
		out = append(out, b...)
		lineStart = false
	}
	newline := func() {
		out = bytes.TrimRight(out, " \t")
		out = append(out, '\n')
		lineStart = true
	}
	n := len(src)
	i := 0
	// template scans a template literal's text from i (after ` or after
	// the } that closes a substitution) to its closing ` or to the next
	// ${, copying it as it is.
	template := func() {
		for i < n {
			c := src[i]
			switch {
			case c == '\\' && i+1 < n:
				emit(c, src[i+1])
				i += 2
			case c == '`':
				emit(c)
				i++
				last = '`'
				return
			case c == '$' && i+1 < n && src[i+1] == '{':
				emit('$', '{')
				i += 2
				braces = append(braces, 0)
				last = '{'
				return
			default:
				out = append(out, c) // blanks inside a template are kept
				lineStart = c == '\n'
				i++
			}
		}
	}
	for i < n {
		c := src[i]
		switch {
		case c == '\n':
			newline()
			i++
		case (c == ' ' || c == '\t' || c == '\r') && lineStart:
			i++
		case c == '/' && i+1 < n && src[i+1] == '*':
			end := bytes.Index(src[i+2:], []byte("*/"))
			if end < 0 {
				end = n - i - 2
			}
			body := src[i+2 : i+2+end]
			i += 2 + end + 2
			if lines := bytes.Count(body, []byte("\n")); lines > 0 {
				for range lines {
					newline()
				}
			} else if !lineStart && len(out) > 0 && out[len(out)-1] != ' ' {
				out = append(out, ' ')
			}
		case js && c == '/' && i+1 < n && src[i+1] == '/':
			for i < n && src[i] != '\n' {
				i++
			}
		case c == '"' || c == '\'':
			j := i + 1
			for j < n && src[j] != c && src[j] != '\n' {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			j = min(j+1, n)
			emit(src[i:j]...)
			i = j
			last = c
		case js && c == '`':
			emit(c)
			i++
			template()
		case js && c == '/' && regexAllowed(last, lastWord):
			j := i + 1
			inClass := false
			for j < n && src[j] != '\n' {
				if src[j] == '\\' {
					j += 2
					continue
				}
				if src[j] == '[' {
					inClass = true
				} else if src[j] == ']' {
					inClass = false
				} else if src[j] == '/' && !inClass {
					break
				}
				j++
			}
			j = min(j+1, n)
			for j < n && isWordByte(src[j]) { // flags
				j++
			}
			emit(src[i:j]...)
			i = j
			last = 'a'
			lastWord = nil
		case js && c == '{' && len(braces) > 0:
			braces[len(braces)-1]++
			emit(c)
			i++
			last = c
		case js && c == '}' && len(braces) > 0 && braces[len(braces)-1] == 0:
			braces = braces[:len(braces)-1]
			emit(c)
			i++
			template()
		case js && c == '}' && len(braces) > 0:
			braces[len(braces)-1]--
			emit(c)
			i++
			last = c
		default:
			if isWordByte(c) {
				j := i
				for j < n && isWordByte(src[j]) {
					j++
				}
				lastWord = src[i:j]
				emit(src[i:j]...)
				i = j
				last = 'a'
				continue
			}
			emit(c)
			i++
			if c != ' ' && c != '\t' && c != '\r' {
				last = c
				lastWord = nil
			}
		}
	}
	return bytes.TrimRight(out, " \t")
}

func isWordByte(c byte) bool {
	return c == '_' || c == '$' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

// regexAllowed reports whether a / after the token ending in last (a word
// when last is 'a': lastWord) starts a regular expression rather than a
// division: after an operator, an opening bracket, a comma or the start,
// or after a keyword that takes an expression.
func regexAllowed(last byte, lastWord []byte) bool {
	switch last {
	case 0, '(', '[', '{', ',', ';', ':', '=', '!', '&', '|', '?', '+', '-', '*', '%', '<', '>', '~', '^':
		return true
	case 'a':
		switch string(lastWord) {
		case "return", "typeof", "instanceof", "in", "of", "new", "delete", "void", "throw", "case", "do", "else", "yield", "await":
			return true
		}
	}
	return false
}
