package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// The root module carries no YAML library, so manifests are read with this
// small reader. It handles the YAML Kubernetes manifests are written in:
// block mappings and sequences (including "- key: value" items and
// sequences at their key's indentation), plain, single- and double-quoted
// scalars, comments, literal (|) and folded (>) block scalars, simple flow
// collections ([a, b], {}) and "---" (the first document is used).
// Anchors, tags and multi-line flow collections are not supported: convert
// such a manifest to JSON, which is read as is.

type yline struct {
	n      int // 1-based line number
	indent int
	text   string
}

type yparser struct {
	lines []yline
	i     int
}

// yamlToJSON converts a YAML document to JSON.
func yamlToJSON(src string) ([]byte, error) {
	p := &yparser{}
	for i, raw := range strings.Split(strings.ReplaceAll(src, "\r\n", "\n"), "\n") {
		if strings.HasPrefix(raw, "---") || strings.HasPrefix(raw, "...") {
			if len(p.lines) > 0 {
				break // only the first document
			}
			continue
		}
		if strings.ContainsRune(raw, '\t') && strings.TrimLeft(raw, " \t") != strings.TrimLeft(raw, " ") {
			return nil, fmt.Errorf("yaml: line %d: tabs are not allowed in indentation", i+1)
		}
		text := stripComment(raw)
		trimmed := strings.TrimLeft(text, " ")
		if strings.TrimSpace(trimmed) == "" {
			p.lines = append(p.lines, yline{n: i + 1, indent: -1, text: raw}) // kept for block scalars
			continue
		}
		p.lines = append(p.lines, yline{n: i + 1, indent: len(text) - len(trimmed), text: strings.TrimRight(trimmed, " ")})
	}
	p.skipBlank()
	if p.i >= len(p.lines) {
		return nil, fmt.Errorf("yaml: empty document")
	}
	v, err := p.block(p.lines[p.i].indent)
	if err != nil {
		return nil, err
	}
	if p.skipBlank(); p.i < len(p.lines) {
		return nil, fmt.Errorf("yaml: line %d: unexpected indentation", p.lines[p.i].n)
	}
	return json.Marshal(v)
}

func (p *yparser) skipBlank() {
	for p.i < len(p.lines) && p.lines[p.i].indent < 0 {
		p.i++
	}
}

// block parses the mapping or sequence starting at the current line.
func (p *yparser) block(indent int) (any, error) {
	l := p.lines[p.i]
	if l.text == "-" || strings.HasPrefix(l.text, "- ") {
		return p.sequence(indent)
	}
	return p.mapping(indent)
}

func (p *yparser) mapping(indent int) (any, error) {
	m := map[string]any{}
	for p.skipBlank(); p.i < len(p.lines); p.skipBlank() {
		l := p.lines[p.i]
		if l.indent < indent {
			break
		}
		if l.indent > indent {
			return nil, fmt.Errorf("yaml: line %d: unexpected indentation", l.n)
		}
		if strings.HasPrefix(l.text, "- ") || l.text == "-" {
			break
		}
		key, rest, ok := splitKey(l.text)
		if !ok {
			return nil, fmt.Errorf("yaml: line %d: expected \"key: value\", got %q", l.n, l.text)
		}
		if _, dup := m[key]; dup {
			return nil, fmt.Errorf("yaml: line %d: duplicate key %q", l.n, key)
		}
		p.i++
		v, err := p.value(indent, rest, l.n)
		if err != nil {
			return nil, err
		}
		m[key] = v
	}
	return m, nil
}

func (p *yparser) sequence(indent int) (any, error) {
	out := []any{}
	for p.skipBlank(); p.i < len(p.lines); p.skipBlank() {
		l := p.lines[p.i]
		if l.indent != indent || !(l.text == "-" || strings.HasPrefix(l.text, "- ")) {
			if l.indent > indent {
				return nil, fmt.Errorf("yaml: line %d: unexpected indentation", l.n)
			}
			break
		}
		rest := strings.TrimLeft(strings.TrimPrefix(l.text, "-"), " ")
		if rest == "" {
			p.i++
			v, err := p.value(indent, "", l.n)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
			continue
		}
		if _, _, isMap := splitKey(rest); isMap && !strings.HasPrefix(rest, "[") && !strings.HasPrefix(rest, "{") {
			// "- key: value": a mapping indented at the key.
			shift := len(l.text) - len(rest)
			p.lines[p.i] = yline{n: l.n, indent: indent + shift, text: rest}
			v, err := p.mapping(indent + shift)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
			continue
		}
		p.i++
		v, err := scalar(rest, l.n)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// value parses what follows "key:" (rest) on a line at indent.
func (p *yparser) value(indent int, rest string, n int) (any, error) {
	switch {
	case rest == "|" || rest == "|-" || rest == "|+" || rest == ">" || rest == ">-" || rest == ">+":
		return p.blockScalar(indent, rest), nil
	case rest != "":
		return scalar(rest, n)
	}
	p.skipBlank()
	if p.i >= len(p.lines) {
		return nil, nil
	}
	next := p.lines[p.i]
	isSeq := next.text == "-" || strings.HasPrefix(next.text, "- ")
	if next.indent > indent || (next.indent == indent && isSeq) {
		return p.block(next.indent)
	}
	return nil, nil
}

func (p *yparser) blockScalar(indent int, style string) string {
	var parts []string
	blockIndent := -1
	for ; p.i < len(p.lines); p.i++ {
		l := p.lines[p.i]
		if l.indent >= 0 && l.indent <= indent {
			break
		}
		if l.indent < 0 {
			parts = append(parts, "")
			continue
		}
		if blockIndent < 0 {
			blockIndent = l.indent
		}
		parts = append(parts, strings.Repeat(" ", l.indent-blockIndent)+l.text)
	}
	for len(parts) > 0 && parts[len(parts)-1] == "" && style[1:] != "+" {
		parts = parts[:len(parts)-1]
	}
	sep := "\n"
	if style[0] == '>' {
		sep = " "
	}
	s := strings.Join(parts, sep)
	if !strings.HasSuffix(style, "-") && s != "" {
		s += "\n"
	}
	return s
}

// scalar converts a plain, quoted or simple flow scalar.
func scalar(s string, n int) (any, error) {
	switch {
	case strings.HasPrefix(s, `"`):
		v, err := strconv.Unquote(s)
		if err != nil {
			return nil, fmt.Errorf("yaml: line %d: bad double-quoted string %s", n, s)
		}
		return v, nil
	case strings.HasPrefix(s, "'"):
		if len(s) < 2 || !strings.HasSuffix(s, "'") {
			return nil, fmt.Errorf("yaml: line %d: unterminated single-quoted string %s", n, s)
		}
		return strings.ReplaceAll(s[1:len(s)-1], "''", "'"), nil
	case strings.HasPrefix(s, "["), strings.HasPrefix(s, "{"):
		return flow(s, n)
	case s == "null", s == "~", s == "Null", s == "NULL":
		return nil, nil
	case s == "true", s == "True", s == "TRUE":
		return true, nil
	case s == "false", s == "False", s == "FALSE":
		return false, nil
	case isNumber(s):
		return json.Number(strings.TrimPrefix(s, "+")), nil
	case strings.HasPrefix(s, "&"), strings.HasPrefix(s, "*"), strings.HasPrefix(s, "!"):
		return nil, fmt.Errorf("yaml: line %d: anchors, aliases and tags are not supported (use JSON)", n)
	}
	return s, nil
}

// flow handles one-line flow collections without nesting.
func flow(s string, n int) (any, error) {
	if (s[0] == '[' && !strings.HasSuffix(s, "]")) || (s[0] == '{' && !strings.HasSuffix(s, "}")) {
		return nil, fmt.Errorf("yaml: line %d: multi-line flow collections are not supported (use JSON)", n)
	}
	body := strings.TrimSpace(s[1 : len(s)-1])
	var items []string
	if body != "" {
		items = splitFlow(body)
	}
	if s[0] == '[' {
		out := []any{}
		for _, it := range items {
			v, err := scalar(strings.TrimSpace(it), n)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	}
	out := map[string]any{}
	for _, it := range items {
		k, v, ok := splitKey(strings.TrimSpace(it))
		if !ok {
			return nil, fmt.Errorf("yaml: line %d: expected key: value in %s", n, s)
		}
		sv, err := scalar(v, n)
		if err != nil {
			return nil, err
		}
		out[k] = sv
	}
	return out, nil
}

// splitFlow splits on commas outside quotes and brackets.
func splitFlow(s string) []string {
	var out []string
	depth, start := 0, 0
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '[' || c == '{':
			depth++
		case c == ']' || c == '}':
			depth--
		case c == ',' && depth == 0:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// splitKey splits "key: value" (or "key:") at the first colon outside
// quotes that is followed by a space or ends the line.
func splitKey(s string) (key, rest string, ok bool) {
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			if i == 0 {
				quote = c
			}
		case c == ':' && (i == len(s)-1 || s[i+1] == ' '):
			k := strings.TrimSpace(s[:i])
			if uq, err := scalar(k, 0); err == nil {
				if str, isStr := uq.(string); isStr {
					k = str
				}
			}
			return k, strings.TrimSpace(s[i+1:]), k != ""
		}
	}
	return "", "", false
}

// stripComment removes a # comment that starts the line or follows a space,
// outside quotes.
func stripComment(s string) string {
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			if i == 0 || s[i-1] == ' ' || s[i-1] == '[' || s[i-1] == ',' {
				quote = c
			}
		case c == '#' && (i == 0 || s[i-1] == ' '):
			return s[:i]
		}
	}
	return s
}

// isNumber reports whether s is a YAML int or float in decimal notation.
func isNumber(s string) bool {
	return regexp.MustCompile(`^[-+]?([0-9]+|[0-9]+\.[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$`).MatchString(s)
}
