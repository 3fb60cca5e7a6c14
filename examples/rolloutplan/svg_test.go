package main

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctrlkit/ctrlkit/internal/golden"
)

// structure describes an SVG as an indented outline: every element with
// its id, a polyline's number of points, a text's content. Coordinates
// are left out, so the golden file checks what is drawn, in which order
// (later elements are on top), and what it says; a text that may run
// past the edge of the image is marked CLIPPED.
func structure(r io.Reader) (string, error) {
	dec := xml.NewDecoder(r)
	var b strings.Builder
	depth := 0
	var text *strings.Builder
	var textX float64
	var anchor string
	width := 0.0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return b.String(), nil
		}
		if err != nil {
			return "", err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			line := strings.Repeat("  ", depth) + t.Name.Local
			anchor = "start"
			for _, a := range t.Attr {
				switch a.Name.Local {
				case "width":
					if t.Name.Local == "svg" {
						fmt.Sscan(a.Value, &width)
					}
				case "x":
					fmt.Sscan(a.Value, &textX)
				case "text-anchor":
					anchor = a.Value
				case "id":
					line += "#" + a.Value
				case "points":
					line += fmt.Sprintf(" (%d points)", len(strings.Fields(a.Value)))
				case "stroke-dasharray":
					line += " dashed"
				}
			}
			b.WriteString(line)
			if t.Name.Local == "text" {
				text = new(strings.Builder)
			} else {
				b.WriteString("\n")
			}
			depth++
		case xml.CharData:
			if text != nil {
				text.Write(t)
			}
		case xml.EndElement:
			depth--
			if text != nil {
				// 7 px per character is wider than the average sans-serif
				// glyph at 12 px: a text that fits this bound fits.
				clipped := ""
				if n := float64(len([]rune(text.String()))) * 7; anchor == "start" && textX+n > width ||
					anchor == "end" && textX-n < 0 || anchor == "middle" && (textX+n/2 > width || textX-n/2 < 0) {
					clipped = " CLIPPED"
				}
				fmt.Fprintf(&b, " %q%s\n", text.String(), clipped)
				text = nil
			}
		}
	}
}

func TestChartGolden(t *testing.T) {
	dir := t.TempDir()
	var got strings.Builder
	for _, c := range []struct {
		name string
		args []string
	}{
		{"complete", []string{"-f", "testdata/web.yaml", "-from-image", "nginx:1.26"}},
		{"stalled", []string{"-f", "testdata/web.yaml", "-crashloop", "40%", "-horizon", "15m"}},
	} {
		svg := filepath.Join(dir, c.name+".svg")
		if code, _, errOut := runCmd(append(c.args, "-svg", svg)...); code == exitError {
			t.Fatalf("%s: %s", c.name, errOut)
		}
		f, err := os.Open(svg)
		if err != nil {
			t.Fatal(err)
		}
		s, err := structure(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: the chart is not well-formed XML: %v", c.name, err)
		}
		fmt.Fprintf(&got, "<<< %s\n%s>>> %s\n", c.name, s, c.name)
	}
	golden.Check(t, "testdata/chart.golden", got.String(), *update)
}
