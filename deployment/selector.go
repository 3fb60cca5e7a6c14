package deployment

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// selector matches label sets against a Deployment's selector. Sync
// parses it once per call; building a labels.Selector with
// metav1.LabelSelectorAsSelector costs about a dozen allocations, so a
// selector whose keys and values are plainly valid is matched in place
// instead, with the same semantics (MatchLabels as Equals, and In, NotIn,
// Exists, DoesNotExist). Anything else goes through
// LabelSelectorAsSelector, which also reports invalid selectors with
// upstream's error.
type selector struct {
	ps   *metav1.LabelSelector // matched in place when parsed is nil
	slow labels.Selector
}

// newSelector returns the matcher of ps, or LabelSelectorAsSelector's
// error.
func newSelector(ps *metav1.LabelSelector) (selector, error) {
	if ps != nil && plainSelector(ps) {
		return selector{ps: ps}, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(ps)
	return selector{slow: sel}, err
}

// matches reports whether the selector selects a set of labels.
func (s selector) matches(l map[string]string) bool {
	if s.slow != nil {
		return s.slow.Matches(labels.Set(l))
	}
	for k, v := range s.ps.MatchLabels {
		if w, ok := l[k]; !ok || w != v {
			return false
		}
	}
	for i := range s.ps.MatchExpressions {
		e := &s.ps.MatchExpressions[i]
		v, ok := l[e.Key]
		switch e.Operator {
		case metav1.LabelSelectorOpIn:
			if !ok || !slices.Contains(e.Values, v) {
				return false
			}
		case metav1.LabelSelectorOpNotIn:
			if ok && slices.Contains(e.Values, v) {
				return false
			}
		case metav1.LabelSelectorOpExists:
			if !ok {
				return false
			}
		case metav1.LabelSelectorOpDoesNotExist:
			if ok {
				return false
			}
		}
	}
	return true
}

// plainSelector reports whether LabelSelectorAsSelector surely accepts ps
// and means by it what matches does: keys and values in the common label
// syntax (checked conservatively: a valid but unusual key takes the slow
// path), operators In and NotIn with values, Exists and DoesNotExist
// without.
func plainSelector(ps *metav1.LabelSelector) bool {
	for k, v := range ps.MatchLabels {
		if !plainKey(k) || !plainValue(v) {
			return false
		}
	}
	for _, e := range ps.MatchExpressions {
		if !plainKey(e.Key) {
			return false
		}
		switch e.Operator {
		case metav1.LabelSelectorOpIn, metav1.LabelSelectorOpNotIn:
			if len(e.Values) == 0 {
				return false
			}
			for _, v := range e.Values {
				if !plainValue(v) {
					return false
				}
			}
		case metav1.LabelSelectorOpExists, metav1.LabelSelectorOpDoesNotExist:
			if len(e.Values) != 0 {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// plainKey reports whether k is a label key of the form name or
// prefix/name, with a prefix of lowercase DNS labels.
func plainKey(k string) bool {
	for i := 0; i < len(k); i++ {
		if k[i] == '/' {
			return plainPrefix(k[:i]) && plainName(k[i+1:])
		}
	}
	return plainName(k)
}

// plainValue reports whether v is a valid label value.
func plainValue(v string) bool { return v == "" || plainName(v) }

// plainName reports whether s matches ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]
// and has at most 63 characters.
func plainName(s string) bool {
	if len(s) == 0 || len(s) > 63 || !alnum(s[0]) || !alnum(s[len(s)-1]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !alnum(c) && c != '-' && c != '_' && c != '.' {
			return false
		}
	}
	return true
}

// plainPrefix reports whether s is a DNS-1123 subdomain: dot-separated
// labels of lowercase letters, digits and '-', each starting and ending
// with a letter or digit, 253 characters at most.
func plainPrefix(s string) bool {
	if len(s) == 0 || len(s) > 253 {
		return false
	}
	start := 0
	for i := 0; i <= len(s); i++ {
		if i < len(s) && s[i] != '.' {
			if c := s[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
			continue
		}
		label := s[start:i]
		if len(label) == 0 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		start = i + 1
	}
	return true
}

func alnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' }
