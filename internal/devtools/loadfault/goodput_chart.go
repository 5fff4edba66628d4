package loadfault

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

// The chart of a levels run, written by hand in SVG so that it needs nothing beyond the
// standard library and opens in any browser: the levels along the bottom (evenly spaced, as
// they usually double), requests a second on the left axis with the offered load and the
// goodput as lines and the refused and failed requests as stacked bars, and the answered
// requests' p99 on the right axis as a third line with its values, beside the 2 s the check
// allows.
const (
	chartW, chartH                     = 760, 440
	marginL, marginR, marginT, marginB = 70, 80, 60, 60
	plotW, plotH                       = chartW - marginL - marginR, chartH - marginT - marginB
)

// Colours of the series; the legend repeats them.
const (
	colourOffered  = "#888888"
	colourAnswered = "#1f6fd1"
	colourRefused  = "#f0a030"
	colourFailed   = "#d03030"
	colourP99      = "#8a3ab9"
)

// writeGoodputChart writes the chart of levels as an SVG document.
func writeGoodputChart(w io.Writer, levels []LevelFigures) error {
	var b bytes.Buffer
	reqMax := 1.0
	p99Max := float64(maxAnsweredP99) / float64(time.Millisecond)
	for _, l := range levels {
		reqMax = max(reqMax, l.Load.Offered, l.Load.Answered, l.Load.Refused+l.Load.Failed)
		p99Max = max(p99Max, float64(l.Load.P99)/float64(time.Millisecond))
	}
	reqMax, p99Max = niceCeil(reqMax), niceCeil(p99Max)
	x := func(i int) float64 {
		if len(levels) == 1 {
			return marginL + plotW/2
		}
		return marginL + 40 + float64(i)*float64(plotW-80)/float64(len(levels)-1)
	}
	yReq := func(v float64) float64 { return marginT + plotH - v/reqMax*plotH }
	yP99 := func(d time.Duration) float64 {
		return marginT + plotH - float64(d)/float64(time.Millisecond)/p99Max*plotH
	}

	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		chartW, chartH, chartW, chartH)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", chartW, chartH)
	text(&b, chartW/2, 22, "middle", "16", "", "msggate: goodput against offered load")

	// Axes, grid and ticks: five steps on each side.
	fmt.Fprintf(&b, `<g id="axes" stroke="#333" fill="none">`+"\n")
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d"/>`+"\n", marginL, marginT, marginL, marginT+plotH)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d"/>`+"\n", marginL+plotW, marginT, marginL+plotW, marginT+plotH)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d"/>`+"\n", marginL, marginT+plotH, marginL+plotW, marginT+plotH)
	b.WriteString("</g>\n")
	for i := 0; i <= 5; i++ {
		v := reqMax * float64(i) / 5
		y := yReq(v)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e4e4e4"/>`+"\n", marginL, y, marginL+plotW, y)
		text(&b, marginL-6, y+4, "end", "", "", trimFloat(v))
		text(&b, marginL+plotW+6, y+4, "start", "", colourP99, trimFloat(p99Max*float64(i)/5))
	}
	text(&b, 18, marginT+plotH/2, "middle", "", "", "requests a second", `transform="rotate(-90 18 `+fmt.Sprint(marginT+plotH/2)+`)"`)
	rx := chartW - 18
	text(&b, float64(rx), marginT+plotH/2, "middle", "", colourP99, "p99 of answered (ms)", fmt.Sprintf(`transform="rotate(90 %d %d)"`, rx, marginT+plotH/2))
	for i, l := range levels {
		text(&b, x(i), marginT+plotH+18, "middle", "", "", fmt.Sprintf("%gx", l.Factor))
		text(&b, x(i), marginT+plotH+33, "middle", "10", "#666", "pause "+l.Think.Round(time.Millisecond).String())
	}
	text(&b, marginL+plotW/2, chartH-8, "middle", "", "", "offered load (multiple of the base load)")

	// The p99 the check allows at the highest level.
	limitY := yP99(maxAnsweredP99)
	fmt.Fprintf(&b, `<line id="p99-limit" x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s" stroke-dasharray="2 4"/>`+"\n",
		marginL, limitY, marginL+plotW, limitY, colourP99)

	// Refused and failed requests: stacked bars.
	b.WriteString(`<g id="refused-failed">` + "\n")
	for i, l := range levels {
		y0 := yReq(0)
		yr := yReq(l.Load.Refused)
		yf := yReq(l.Load.Refused + l.Load.Failed)
		fmt.Fprintf(&b, `<rect class="refused" x="%.1f" y="%.1f" width="24" height="%.1f" fill="%s"><title>%gx: %.1f refused/s</title></rect>`+"\n",
			x(i)-12, yr, y0-yr, colourRefused, l.Factor, l.Load.Refused)
		fmt.Fprintf(&b, `<rect class="failed" x="%.1f" y="%.1f" width="24" height="%.1f" fill="%s"><title>%gx: %.1f failed/s</title></rect>`+"\n",
			x(i)-12, yf, yr-yf, colourFailed, l.Factor, l.Load.Failed)
	}
	b.WriteString("</g>\n")

	line := func(id, colour, dash string, point func(i int) float64) {
		var pts []string
		for i := range levels {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(i), point(i)))
		}
		fmt.Fprintf(&b, `<polyline id="%s" points="%s" fill="none" stroke="%s" stroke-width="2"%s/>`+"\n", id, strings.Join(pts, " "), colour, dash)
		for i := range levels {
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`+"\n", x(i), point(i), colour)
		}
	}
	line("offered", colourOffered, ` stroke-dasharray="6 4"`, func(i int) float64 { return yReq(levels[i].Load.Offered) })
	line("answered", colourAnswered, "", func(i int) float64 { return yReq(levels[i].Load.Answered) })
	line("p99", colourP99, "", func(i int) float64 { return yP99(levels[i].Load.P99) })
	b.WriteString(`<g id="p99-labels">` + "\n")
	for i, l := range levels {
		text(&b, x(i)+6, yP99(l.Load.P99)-6, "start", "10", colourP99, ms(l.Load.P99))
	}
	b.WriteString("</g>\n")

	// Legend.
	b.WriteString(`<g id="legend">` + "\n")
	for i, e := range []struct{ colour, label string }{
		{colourOffered, "offered"}, {colourAnswered, "answered (goodput)"}, {colourRefused, "refused"},
		{colourFailed, "failed"}, {colourP99, "p99 of answered"},
	} {
		lx := float64(marginL + i*125)
		fmt.Fprintf(&b, `<rect x="%.0f" y="36" width="12" height="12" fill="%s"/>`+"\n", lx, e.colour)
		text(&b, lx+16, 46, "start", "", "", e.label)
	}
	b.WriteString("</g>\n</svg>\n")
	_, err := w.Write(b.Bytes())
	return err
}

// text writes one <text> element, its content escaped; size and colour may be "".
func text(b *bytes.Buffer, x, y float64, anchor, size, colour, s string, attrs ...string) {
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="%s"`, x, y, anchor)
	if size != "" {
		fmt.Fprintf(b, ` font-size="%s"`, size)
	}
	if colour != "" {
		fmt.Fprintf(b, ` fill="%s"`, colour)
	}
	for _, a := range attrs {
		b.WriteString(" " + a)
	}
	b.WriteString(">")
	_ = xml.EscapeText(b, []byte(s))
	b.WriteString("</text>\n")
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten, so the axes' ticks read well.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

func trimFloat(v float64) string { return strings.TrimSuffix(fmt.Sprintf("%.1f", v), ".0") }
