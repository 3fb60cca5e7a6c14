package shardselector

import (
	"fmt"
	"strconv"
	"strings"
)

// exprKind numbers the kinds of expression as cel-go's ast.ExprKind does:
// kube-apiserver prints that number in some of its messages.
type exprKind int

const (
	kindCall    exprKind = 1
	kindIdent   exprKind = 3
	kindList    exprKind = 4
	kindLiteral exprKind = 5
	kindMap     exprKind = 6
	kindSelect  exprKind = 7
	kindStruct  exprKind = 8
)

// node is one expression of the tree, as cel-go's parser builds it (with
// no macros).
type node struct {
	kind exprKind
	// fn and args: a call (operators are calls: "_||_", "_&&_", "!_", …).
	fn   string
	args []*node
	// name: an identifier, or the field a selection selects from operand.
	name    string
	operand *node
	// goType is the Go type of a literal's value, as cel-go holds it
	// ("string", "int64", "uint64", "float64", "bool", "[]uint8",
	// "structpb.NullValue"); str is a string literal's value.
	goType string
	str    string
}

// The CEL operators' function names.
const (
	fnOr = "_||_"
)

// parser is a recursive-descent parser of CEL's expression grammar.
type parser struct {
	toks   []token
	i      int
	depth  int
	levels [][]struct{ op, fn string }
}

// parseCEL parses src into an expression tree.
func parseCEL(src string) (*node, error) {
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks, levels: binaryLevels()}
	e, err := p.expr()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tokEOF {
		return nil, p.unexpected(t, "<EOF>")
	}
	return e, nil
}

func (p *parser) peek() token { return p.toks[p.i] }
func (p *parser) next() token { t := p.toks[p.i]; p.i++; return t }

// is reports whether the next token is the punctuation s.
func (p *parser) is(s string) bool {
	t := p.peek()
	return t.kind == tokPunct && t.text == s
}

func (p *parser) expect(s string) error {
	if !p.is(s) {
		return p.unexpected(p.peek(), "'"+s+"'")
	}
	p.i++
	return nil
}

func (p *parser) unexpected(t token, want string) error {
	text := t.text
	if t.kind == tokEOF {
		text = "<EOF>"
	}
	return syntaxErr(t.pos, "mismatched input '%s' expecting %s", text, want)
}

func call(fn string, args ...*node) *node { return &node{kind: kindCall, fn: fn, args: args} }

// expr = or ['?' or ':' expr]
func (p *parser) expr() (*node, error) {
	if p.depth++; p.depth > 250 {
		return nil, syntaxErr(p.peek().pos, "expression recursion limit exceeded")
	}
	defer func() { p.depth-- }()
	c, err := p.binary(0)
	if err != nil || !p.is("?") {
		return c, err
	}
	p.i++
	a, err := p.binary(0)
	if err != nil {
		return nil, err
	}
	if err := p.expect(":"); err != nil {
		return nil, err
	}
	b, err := p.expr()
	if err != nil {
		return nil, err
	}
	return call("_?_:_", c, a, b), nil
}

// binaryLevels are the binary operators from the loosest to the tightest,
// each with its function name.
func binaryLevels() [][]struct{ op, fn string } {
	return [][]struct{ op, fn string }{
		{{"||", fnOr}},
		{{"&&", "_&&_"}},
		{{"==", "_==_"}, {"!=", "_!=_"}, {"<", "_<_"}, {"<=", "_<=_"}, {">", "_>_"}, {">=", "_>=_"}, {"in", "@in"}},
		{{"+", "_+_"}, {"-", "_-_"}},
		{{"*", "_*_"}, {"/", "_/_"}, {"%", "_%_"}},
	}
}

// binary parses the operators of level and tighter, left-associative.
// A chain of || or && keeps its operands in order (cel-go balances the
// tree, which keeps them in order too).
func (p *parser) binary(level int) (*node, error) {
	levels := p.levels
	if level == len(levels) {
		return p.unary()
	}
	l, err := p.binary(level + 1)
	if err != nil {
		return nil, err
	}
	for {
		t, fn := p.peek(), ""
		for _, o := range levels[level] {
			if (t.kind == tokPunct || t.kind == tokIdent) && t.text == o.op {
				fn = o.fn
			}
		}
		if fn == "" {
			return l, nil
		}
		p.i++
		r, err := p.binary(level + 1)
		if err != nil {
			return nil, err
		}
		l = call(fn, l, r)
	}
}

// unary = member | '!'+ member | '-'+ member. An even number of the same
// operator cancels out; one '-' before a number is the number's sign.
func (p *parser) unary() (*node, error) {
	for _, op := range []string{"!", "-"} {
		n := 0
		for p.is(op) {
			n, p.i = n+1, p.i+1
		}
		if n == 0 {
			continue
		}
		if op == "-" && n == 1 && (p.peek().kind == tokInt || p.peek().kind == tokDouble) {
			p.i--
			break
		}
		m, err := p.member()
		if err != nil {
			return nil, err
		}
		if n%2 == 0 {
			return m, nil
		}
		return call(op+"_", m), nil
	}
	return p.member()
}

// member = primary { '.' ident ['(' args ')'] | '[' expr ']' }
func (p *parser) member() (*node, error) {
	m, err := p.primary()
	if err != nil {
		return nil, err
	}
	for {
		switch {
		case p.is("."):
			p.i++
			if p.is("?") {
				return nil, syntaxErr(p.peek().pos, "unsupported syntax '.?'")
			}
			id := p.next()
			if id.kind != tokIdent || keyword(id.text) {
				return nil, p.unexpected(id, "IDENTIFIER")
			}
			if p.is("(") {
				args, err := p.list("(", ")", false)
				if err != nil {
					return nil, err
				}
				m = &node{kind: kindCall, fn: id.text, args: args, operand: m}
				continue
			}
			m = &node{kind: kindSelect, name: id.text, operand: m}
		case p.is("["):
			p.i++
			if p.is("?") {
				return nil, syntaxErr(p.peek().pos, "unsupported syntax '[?'")
			}
			idx, err := p.expr()
			if err != nil {
				return nil, err
			}
			if err := p.expect("]"); err != nil {
				return nil, err
			}
			m = call("_[_]", m, idx)
		default:
			return m, nil
		}
	}
}

// list parses open [expr {',' expr}] close, with a trailing comma if
// trailing (a list literal's; a call's arguments take none).
func (p *parser) list(open, close string, trailing bool) ([]*node, error) {
	if err := p.expect(open); err != nil {
		return nil, err
	}
	if trailing && p.is(",") && p.toks[p.i+1].kind == tokPunct && p.toks[p.i+1].text == close {
		p.i += 2 // "[,]": CEL allows the comma alone
		return nil, nil
	}
	var out []*node
	for !p.is(close) {
		e, err := p.expr()
		if err != nil {
			return nil, err
		}
		out = append(out, e)
		if !p.is(",") {
			break
		}
		p.i++
		if !trailing && p.is(close) {
			return nil, p.unexpected(p.peek(), "an expression")
		}
	}
	return out, p.expect(close)
}

// keyword reports whether id is one of CEL's keyword tokens, which are
// not identifiers (not even as a field name).
func keyword(id string) bool {
	switch id {
	case "in", "true", "false", "null":
		return true
	}
	return false
}

// reserved are the words cel-go refuses as an identifier.
func reserved(id string) bool {
	switch id {
	case "as", "break", "const", "continue", "else", "for", "function", "if", "import", "in", "let",
		"loop", "package", "namespace", "return", "var", "void", "while":
		return true
	}
	return false
}

func (p *parser) primary() (*node, error) {
	t := p.next()
	switch t.kind {
	case tokString:
		return &node{kind: kindLiteral, goType: "string", str: t.value}, nil
	case tokBytes:
		return &node{kind: kindLiteral, goType: "[]uint8"}, nil
	case tokInt, tokUint, tokDouble:
		return number(t, "")
	case tokIdent:
		switch t.text {
		case "true", "false":
			return &node{kind: kindLiteral, goType: "bool"}, nil
		case "null":
			return &node{kind: kindLiteral, goType: "structpb.NullValue"}, nil
		}
		p.i--
		return p.ident("")
	case tokPunct:
		switch t.text {
		case "-":
			return number(p.next(), "-")
		case ".":
			return p.ident(".")
		case "(":
			e, err := p.expr()
			if err != nil {
				return nil, err
			}
			return e, p.expect(")")
		case "[":
			p.i--
			_, err := p.list("[", "]", true)
			return &node{kind: kindList}, err
		case "{":
			p.i--
			return &node{kind: kindMap}, p.entries(false)
		}
	}
	return nil, p.unexpected(t, "an expression")
}

// ident parses an identifier, a global call or a message literal; dot is
// "." for a name that starts with one.
func (p *parser) ident(dot string) (*node, error) {
	t := p.next()
	if t.kind != tokIdent || keyword(t.text) {
		return nil, p.unexpected(t, "IDENTIFIER")
	}
	if p.is("(") {
		if reserved(t.text) {
			return nil, fmt.Errorf("reserved identifier: %s", t.text)
		}
		args, err := p.list("(", ")", false)
		return call(dot+t.text, args...), err
	}
	// A message literal: a (dotted) name followed by '{'.
	save := p.i
	for p.is(".") && p.toks[p.i+1].kind == tokIdent {
		p.i += 2
	}
	if p.is("{") {
		return &node{kind: kindStruct}, p.entries(true)
	}
	p.i = save
	if reserved(t.text) {
		return nil, fmt.Errorf("reserved identifier: %s", t.text)
	}
	return &node{kind: kindIdent, name: dot + t.text}, nil
}

// entries parses '{' [key ':' value {',' key ':' value} [',']] '}': a
// map's keys are expressions, a message's field names (fields).
func (p *parser) entries(fields bool) error {
	if err := p.expect("{"); err != nil {
		return err
	}
	if p.is(",") && p.toks[p.i+1].kind == tokPunct && p.toks[p.i+1].text == "}" {
		p.i += 2 // "{,}"
		return nil
	}
	for !p.is("}") {
		if fields {
			if t := p.next(); t.kind != tokIdent || keyword(t.text) {
				return p.unexpected(t, "IDENTIFIER")
			}
		} else if _, err := p.expr(); err != nil {
			return err
		}
		if err := p.expect(":"); err != nil {
			return err
		}
		if _, err := p.expr(); err != nil {
			return err
		}
		if !p.is(",") {
			break
		}
		p.i++
	}
	return p.expect("}")
}

// number is the literal of a numeric token, with sign "-" or "".
func number(t token, sign string) (*node, error) {
	text := strings.TrimRight(t.text, "uU")
	switch t.kind {
	case tokInt:
		base, digits := 10, text
		if strings.HasPrefix(text, "0x") || strings.HasPrefix(text, "0X") {
			base, digits = 16, text[2:]
		}
		if _, err := strconv.ParseInt(sign+digits, base, 64); err != nil {
			return nil, fmt.Errorf("invalid int literal")
		}
		return &node{kind: kindLiteral, goType: "int64"}, nil
	case tokUint:
		if sign != "" {
			return nil, syntaxErr(t.pos, "mismatched input '%s' expecting a number", t.text)
		}
		base, digits := 10, text
		if strings.HasPrefix(text, "0x") || strings.HasPrefix(text, "0X") {
			base, digits = 16, text[2:]
		}
		if _, err := strconv.ParseUint(digits, base, 64); err != nil {
			return nil, fmt.Errorf("invalid uint literal")
		}
		return &node{kind: kindLiteral, goType: "uint64"}, nil
	case tokDouble:
		if _, err := strconv.ParseFloat(sign+text, 64); err != nil { // out of range included
			return nil, fmt.Errorf("invalid double literal")
		}
		return &node{kind: kindLiteral, goType: "float64"}, nil
	}
	return nil, syntaxErr(t.pos, "mismatched input '%s' expecting a number", t.text)
}
