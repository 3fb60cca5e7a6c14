package shardselector

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// tokenKind is the kind of a CEL token.
type tokenKind int

const (
	tokEOF tokenKind = iota
	tokIdent
	tokInt    // 12, 0x1f
	tokUint   // 12u, 0x1fu
	tokDouble // 1.5, 1e3, .5
	tokString
	tokBytes
	tokPunct // operators and punctuation: text holds it
)

// token is one lexeme: its kind, its text (an identifier, a number as
// written, an operator), a string's or bytes' decoded value, and where it
// starts (for messages).
type token struct {
	kind  tokenKind
	text  string
	value string
	pos   int
}

// lex splits src into CEL tokens, skipping whitespace and // comments.
func lex(src string) ([]token, error) {
	// CEL's operators and punctuation, longest first.
	puncts := [...]string{"==", "!=", "<=", ">=", "&&", "||", "<", ">", "!", "+", "-", "*", "/", "%",
		"?", ":", ".", ",", "(", ")", "[", "]", "{", "}"}
	var out []token
	i := 0
	for i < len(src) {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			i++
			continue
		case strings.HasPrefix(src[i:], "//"):
			for i < len(src) && src[i] != '\n' {
				i++
			}
			continue
		case isDigit(c) || (c == '.' && i+1 < len(src) && isDigit(src[i+1])):
			t, n, err := lexNumber(src, i)
			if err != nil {
				return nil, err
			}
			out, i = append(out, t), i+n
			continue
		case c == '"' || c == '\'':
			t, n, err := lexString(src, i, i, false)
			if err != nil {
				return nil, err
			}
			out, i = append(out, t), i+n
			continue
		case isLetter(c) || c == '_':
			if t, n, ok, err := lexPrefixed(src, i); ok || err != nil {
				if err != nil {
					return nil, err
				}
				out, i = append(out, t), i+n
				continue
			}
			j := i + 1
			for j < len(src) && (isLetter(src[j]) || isDigit(src[j]) || src[j] == '_') {
				j++
			}
			out, i = append(out, token{kind: tokIdent, text: src[i:j], pos: i}), j
			continue
		}
		matched := false
		for _, p := range puncts {
			if strings.HasPrefix(src[i:], p) {
				out, i, matched = append(out, token{kind: tokPunct, text: p, pos: i}), i+len(p), true
				break
			}
		}
		if !matched {
			r, _ := utf8.DecodeRuneInString(src[i:])
			return nil, syntaxErr(i, "token recognition error at: '%c'", r)
		}
	}
	return append(out, token{kind: tokEOF, pos: len(src)}), nil
}

// lexPrefixed reads a raw (r/R), bytes (b/B) or raw bytes string at i, if
// one starts there.
func lexPrefixed(src string, i int) (token, int, bool, error) {
	j, raw, bytes := i, false, false
	for k := 0; k < 2 && j < len(src); k++ {
		switch src[j] {
		case 'r', 'R':
			if raw {
				return token{}, 0, false, nil
			}
			raw = true
		case 'b', 'B':
			if bytes {
				return token{}, 0, false, nil
			}
			bytes = true
		default:
			k = 2
			continue
		}
		j++
	}
	if j == i || j >= len(src) || (src[j] != '"' && src[j] != '\'') {
		return token{}, 0, false, nil
	}
	t, n, err := lexString(src, i, j, raw)
	if err != nil {
		return token{}, 0, true, err
	}
	if bytes {
		t.kind = tokBytes
	}
	return t, j - i + n, true, nil
}

// lexString reads the quoted string whose quote is at q (its prefix, if
// any, starts at start): single or triple, in single or double quotes.
func lexString(src string, start, q int, raw bool) (token, int, error) {
	quote := src[q : q+1]
	if strings.HasPrefix(src[q:], strings.Repeat(quote, 3)) {
		quote = strings.Repeat(quote, 3)
	}
	var b strings.Builder
	i := q + len(quote)
	for {
		if i >= len(src) {
			return token{}, 0, syntaxErr(start, "token recognition error at: '%s'", src[start:])
		}
		if strings.HasPrefix(src[i:], quote) {
			i += len(quote)
			break
		}
		c := src[i]
		if len(quote) == 1 && (c == '\n' || c == '\r') {
			return token{}, 0, syntaxErr(start, "token recognition error at: '%s'", src[start:i+1])
		}
		if c != '\\' || raw {
			if raw && c == '\\' && i+1 < len(src) {
				b.WriteString(src[i : i+2]) // a raw string keeps the escape, quote included
				i += 2
				continue
			}
			b.WriteByte(c)
			i++
			continue
		}
		n, err := unescape(src, i, &b)
		if err != nil {
			return token{}, 0, syntaxErr(start, "token recognition error at: '%s'", src[start:min(len(src), i+2)])
		}
		i += n
	}
	return token{kind: tokString, text: src[start:i], value: b.String(), pos: start}, i - q, nil
}

// unescape decodes the escape sequence at src[i] ('\\') into b and
// returns its length.
func unescape(src string, i int, b *strings.Builder) (int, error) {
	if i+1 >= len(src) {
		return 0, fmt.Errorf("truncated escape")
	}
	simple := map[byte]byte{'a': '\a', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t', 'v': '\v',
		'\\': '\\', '?': '?', '"': '"', '\'': '\'', '`': '`'}
	c := src[i+1]
	if r, ok := simple[c]; ok {
		b.WriteByte(r)
		return 2, nil
	}
	hex := func(n int) (uint64, error) {
		if i+2+n > len(src) {
			return 0, fmt.Errorf("truncated escape")
		}
		return strconv.ParseUint(src[i+2:i+2+n], 16, 32)
	}
	switch c {
	case 'x', 'X':
		v, err := hex(2)
		if err != nil {
			return 0, err
		}
		b.WriteRune(rune(v))
		return 4, nil
	case 'u', 'U':
		n := 4
		if c == 'U' {
			n = 8
		}
		v, err := hex(n)
		if err != nil || !utf8.ValidRune(rune(v)) {
			return 0, fmt.Errorf("bad code point")
		}
		b.WriteRune(rune(v))
		return 2 + n, nil
	case '0', '1', '2', '3':
		if i+4 > len(src) {
			return 0, fmt.Errorf("truncated escape")
		}
		v, err := strconv.ParseUint(src[i+1:i+4], 8, 8)
		if err != nil {
			return 0, err
		}
		b.WriteRune(rune(v))
		return 4, nil
	}
	return 0, fmt.Errorf("unknown escape")
}

// lexNumber reads an int, uint or double literal at i.
func lexNumber(src string, i int) (token, int, error) {
	j := i
	if strings.HasPrefix(src[i:], "0x") || strings.HasPrefix(src[i:], "0X") {
		j += 2
		for j < len(src) && isHex(src[j]) {
			j++
		}
		if j == i+2 {
			return token{}, 0, syntaxErr(i, "token recognition error at: '%s'", src[i:j])
		}
		if j < len(src) && (src[j] == 'u' || src[j] == 'U') {
			return token{kind: tokUint, text: src[i : j+1], pos: i}, j + 1 - i, nil
		}
		return token{kind: tokInt, text: src[i:j], pos: i}, j - i, nil
	}
	digits := func() {
		for j < len(src) && isDigit(src[j]) {
			j++
		}
	}
	digits()
	double := false
	if j+1 < len(src) && src[j] == '.' && isDigit(src[j+1]) {
		j++
		digits()
		double = true
	}
	if j < len(src) && (src[j] == 'e' || src[j] == 'E') {
		k := j + 1
		if k < len(src) && (src[k] == '+' || src[k] == '-') {
			k++
		}
		if k < len(src) && isDigit(src[k]) {
			j = k
			digits()
			double = true
		}
	}
	if double {
		return token{kind: tokDouble, text: src[i:j], pos: i}, j - i, nil
	}
	if j < len(src) && (src[j] == 'u' || src[j] == 'U') {
		return token{kind: tokUint, text: src[i : j+1], pos: i}, j + 1 - i, nil
	}
	return token{kind: tokInt, text: src[i:j], pos: i}, j - i, nil
}

func isDigit(c byte) bool  { return c >= '0' && c <= '9' }
func isLetter(c byte) bool { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }
func isHex(c byte) bool    { return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') }

// syntaxErr is a syntax error at offset pos, worded as cel-go words
// what ANTLR reports (the detail differs).
func syntaxErr(pos int, format string, args ...any) error {
	return fmt.Errorf("Syntax error: "+format+" (at offset %d)", append(args, pos)...)
}
