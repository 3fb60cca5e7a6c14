package defaults

import (
	"regexp"
	"strings"
)

// An image reference, as the API server parses it to find its tag:
//
//	reference := name [ ":" tag ] [ "@" digest ]
//	name      := [ domain "/" ] path-component ( "/" path-component )*
//
// The first component of a name is its domain if it has a "." or a ":",
// is "localhost" or has upper-case letters; otherwise the domain is
// docker.io (and a one-component path is under library/). The path is
// lower case; the name is at most 255 characters long.
var (
	imageRef = func() *regexp.Regexp {
		const (
			part   = `(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])`
			host   = `(?:` + part + `(?:\.` + part + `)*|\[[a-fA-F0-9:]+\])`
			domain = host + `(?::[0-9]+)?`
			path   = `[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*`
			name   = `((?:` + domain + `/)?` + path + `(?:/` + path + `)*)`
			tag    = `(?::([\w][\w.-]{0,127}))?`
			digest = `(?:@([A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}))?`
		)
		return regexp.MustCompile(`^` + name + tag + digest + `$`)
	}()
	imageID = regexp.MustCompile(`^[a-f0-9]{64}$`)
)

// digestHex is the number of hex digits of each digest algorithm.
var digestHex = map[string]int{"sha256": 64, "sha384": 96, "sha512": 128}

// imageTag returns the tag of an image reference ("latest" for one with
// neither tag nor digest), and false for a reference that does not parse.
func imageTag(image string) (string, bool) {
	if imageID.MatchString(image) {
		return "", false // an image ID, not a name
	}
	full := image
	first, rest, hasSlash := strings.Cut(image, "/")
	if !hasSlash || !strings.ContainsAny(first, ".:") && first != "localhost" && first == strings.ToLower(first) {
		rest = image
		if !hasSlash {
			rest = "library/" + image
		}
		full = "docker.io/" + rest
	}
	if repo, _, _ := strings.Cut(rest, ":"); repo != strings.ToLower(repo) {
		return "", false
	}
	m := imageRef.FindStringSubmatch(full)
	if m == nil || len(m[1]) > 255 {
		return "", false
	}
	tag, digest := m[2], m[3]
	if digest != "" {
		alg, hex, _ := strings.Cut(digest, ":")
		if n, ok := digestHex[alg]; !ok || len(hex) != n || hex != strings.ToLower(hex) {
			return "", false
		}
	}
	if tag == "" && digest == "" {
		tag = "latest"
	}
	return tag, true
}
