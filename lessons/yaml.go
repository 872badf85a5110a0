package lessons

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// ydoc is a decoded YAML block kept as a node tree, so that a check can say
// on which file line a field was given, or that it is missing.
type ydoc struct {
	root     *yaml.Node // the top-level mapping; nil when it could not be read
	first    int        // file line of the block's first YAML line
	fallback int        // file line to blame when a field is absent
}

// line returns the file line of the field at path: strings name mapping
// keys (the key's line is used), ints index lists. When the path runs out,
// it returns the line of the deepest part found, or the fallback.
func (d *ydoc) line(path ...any) int {
	line := d.fallback
	n := d.root
	for _, p := range path {
		if n == nil {
			return line
		}
		var next *yaml.Node
		switch p := p.(type) {
		case string:
			if n.Kind == yaml.MappingNode {
				for i := 0; i+1 < len(n.Content); i += 2 {
					if n.Content[i].Value == p {
						next = n.Content[i+1]
						line = d.first + n.Content[i].Line - 1
						break
					}
				}
			}
		case int:
			if n.Kind == yaml.SequenceNode && p >= 0 && p < len(n.Content) {
				next = n.Content[p]
				line = d.first + next.Line - 1
			}
		}
		if next == nil {
			return line
		}
		n = next
	}
	return line
}

// keyLines is the line of every key at the top of the document.
func (d *ydoc) keyLines() map[string]int {
	lines := map[string]int{}
	if d.root == nil {
		return lines
	}
	for i := 0; i+1 < len(d.root.Content); i += 2 {
		lines[d.root.Content[i].Value] = d.line(d.root.Content[i].Value)
	}
	return lines
}

// has reports whether the top-level mapping has key.
func (d *ydoc) has(key string) bool {
	if d.root == nil {
		return false
	}
	for i := 0; i+1 < len(d.root.Content); i += 2 {
		if d.root.Content[i].Value == key {
			return true
		}
	}
	return false
}

var (
	reYAMLLine     = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)
	reUnknownField = regexp.MustCompile(`^field (\S+) not found in type (\S+)$`)
	reCannot       = regexp.MustCompile("^cannot unmarshal !!(\\w+)(?: `(.*)`)? into (.+)$")
	reDupKey       = regexp.MustCompile(`^mapping key "(.*)" already defined at line (\d+)$`)
)

// decodeYAML decodes src strictly (unknown fields are errors) into out, a
// pointer to a struct with yaml tags. first is the file line of src's first
// line; what names the block in messages ("front matter", `predict "q1"`).
// fallback is the line blamed for absent fields (the block's opening line).
// It returns the node tree for line look-ups (never nil) and whether
// decoding succeeded. Problems are added to p with file lines and plain
// wording.
func decodeYAML(p *problems, first, fallback int, what string, src []byte, out any) (d *ydoc, ok bool) {
	d = &ydoc{first: first, fallback: fallback}
	defer func() {
		// yaml.v3 reports its own errors as values; a panic would be a bug in
		// it on hostile input. Content must never crash the server, so
		// report it as a problem with the block instead.
		if r := recover(); r != nil {
			p.add(fallback, "%s: the YAML could not be read (%v)", what, r)
			d.root, ok = nil, false
		}
	}()
	if len(bytes.TrimSpace(src)) == 0 {
		p.add(fallback, "%s is empty: want YAML fields (name: value)", what)
		return d, false
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		reportYAML(p, first, what, src, err, nil, out)
		return d, false
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		p.add(fallback, "%s is empty: want YAML fields (name: value)", what)
		return d, false
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		p.add(first+root.Line-1, "%s: want YAML fields (name: value), got %s", what, nodeKind(root))
		return d, false
	}
	d.root = root
	dec := yaml.NewDecoder(bytes.NewReader(src))
	dec.KnownFields(true)
	ok = true
	if err := dec.Decode(out); err != nil {
		reportYAML(p, first, what, src, err, root, out)
		ok = false
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		p.add(first+extra.Line-1, "%s: a second YAML document starts here: want one document per block (remove the --- line)", what)
		ok = false
	} else if !errors.Is(err, io.EOF) {
		reportYAML(p, first, what, src, err, nil, out)
		ok = false
	}
	return d, ok
}

// reportYAML turns a yaml.v3 error into problems with file lines and wording
// an author can act on.
func reportYAML(p *problems, first int, what string, src []byte, err error, root *yaml.Node, out any) {
	var msgs []string
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msgs = te.Errors
	} else {
		msgs = []string{err.Error()}
	}
	// yaml.v3 can blame the line after the last one ("unexpected end of
	// stream"); keep every message inside the block.
	last := first + bytes.Count(bytes.TrimSuffix(src, []byte("\n")), []byte("\n"))
	for _, m := range msgs {
		line := first
		if sm := reYAMLLine.FindStringSubmatch(m); sm != nil {
			n, _ := strconv.Atoi(sm[1])
			line = min(max(first+n-1, first), last)
			m = sm[2]
			m = plainYAML(m, n, first, root, out)
		} else {
			m = strings.TrimPrefix(m, "yaml: ")
			m = "YAML: " + m
		}
		p.add(line, "%s: %s", what, m)
	}
}

// plainYAML rewords one yaml.v3 message found on block line n.
func plainYAML(m string, n, first int, root *yaml.Node, out any) string {
	if sm := reUnknownField.FindStringSubmatch(m); sm != nil {
		field, typ := sm[1], sm[2]
		where := ""
		if root != nil {
			if path := keyPath(root, n, field); path != "" {
				where = " in " + path
			}
		}
		allowed := allowedFields(reflect.TypeOf(out), typ)
		return fmt.Sprintf("unknown field %q%s: allowed fields are %s", field, where, allowed)
	}
	if sm := reCannot.FindStringSubmatch(m); sm != nil {
		tag, value, goType := sm[1], sm[2], sm[3]
		got := "a " + yamlTagName(tag)
		if tag != "seq" && tag != "map" {
			got = strconv.Quote(value)
		}
		path := ""
		if root != nil {
			path = valuePath(root, n, value)
		}
		if path != "" {
			path += ": "
		}
		return fmt.Sprintf("%swant %s, got %s", path, goTypeName(goType), got)
	}
	if sm := reDupKey.FindStringSubmatch(m); sm != nil {
		n0, _ := strconv.Atoi(sm[2])
		return fmt.Sprintf("field %q is given twice (first on line %d): give it once", sm[1], first+n0-1)
	}
	return "YAML: " + m
}

func yamlTagName(tag string) string {
	switch tag {
	case "seq":
		return "list"
	case "map":
		return "mapping"
	default:
		return tag
	}
}

func nodeKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return "a single value"
	case yaml.AliasNode:
		return "an alias"
	default:
		return "something else"
	}
}

// goTypeName says in words what a Go type accepts.
func goTypeName(t string) string {
	switch {
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "uint"):
		return "a whole number"
	case strings.HasPrefix(t, "float"):
		return "a number"
	case t == "bool":
		return "true or false"
	case t == "string":
		return "text"
	case strings.HasPrefix(t, "[]"):
		return "a list"
	case strings.HasPrefix(t, "map["):
		return "a mapping of names to values"
	default:
		return "a mapping of fields (name: value)"
	}
}

// allowedFields lists the yaml field names of the struct type named typ,
// found anywhere inside t.
func allowedFields(t reflect.Type, typ string) string {
	seen := map[reflect.Type]bool{}
	var find func(t reflect.Type) reflect.Type
	find = func(t reflect.Type) reflect.Type {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || seen[t] {
			return nil
		}
		seen[t] = true
		if t.String() == typ {
			return t
		}
		for i := 0; i < t.NumField(); i++ {
			if f := find(t.Field(i).Type); f != nil {
				return f
			}
		}
		return nil
	}
	st := find(t)
	if st == nil {
		return "listed in the lessons package documentation"
	}
	var names []string
	for i := 0; i < st.NumField(); i++ {
		name, _, _ := strings.Cut(st.Field(i).Tag.Get("yaml"), ",")
		if name != "" && name != "-" {
			names = append(names, name)
		}
	}
	return strings.Join(names, ", ")
}

// keyPath finds the mapping that holds key on block line n and returns its
// path ("options[1]", "goal"), or "the block" for the top level.
func keyPath(root *yaml.Node, n int, key string) string {
	var found string
	var walk func(node *yaml.Node, path string) bool
	walk = func(node *yaml.Node, path string) bool {
		switch node.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(node.Content); i += 2 {
				k := node.Content[i]
				if k.Line == n && k.Value == key {
					found = path
					return true
				}
				if walk(node.Content[i+1], join(path, k.Value)) {
					return true
				}
			}
		case yaml.SequenceNode:
			for i, c := range node.Content {
				if walk(c, fmt.Sprintf("%s[%d]", path, i)) {
					return true
				}
			}
		}
		return false
	}
	walk(root, "")
	return found
}

// valuePath finds the value on block line n (matching value when it is a
// scalar) and returns its path, e.g. "number" or "options[0].correct".
func valuePath(root *yaml.Node, n int, value string) string {
	value = strings.TrimSuffix(value, "...")
	var found string
	var walk func(node *yaml.Node, path string) bool
	walk = func(node *yaml.Node, path string) bool {
		if path != "" && node.Line == n && (node.Kind != yaml.ScalarNode || strings.HasPrefix(node.Value, value)) {
			found = path
			return true
		}
		switch node.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(node.Content); i += 2 {
				if walk(node.Content[i+1], join(path, node.Content[i].Value)) {
					return true
				}
			}
		case yaml.SequenceNode:
			for i, c := range node.Content {
				if walk(c, fmt.Sprintf("%s[%d]", path, i)) {
					return true
				}
			}
		}
		return false
	}
	walk(root, "")
	return found
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
