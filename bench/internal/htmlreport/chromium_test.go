package htmlreport_test

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/draw"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tpproxy/tpproxy/bench/internal/htmlreport"
)

// findChromium returns the browser binary, skipping the test when there is
// none, except in CI where a missing browser must not pass silently.
func findChromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium not found in PATH; CI needs it to check that reports render (Debian: apt-get install chromium)")
	}
	t.Skip("chromium not found in PATH (Debian: apt-get install chromium); set CI=true to make this a failure")
	return ""
}

const (
	browserWidth  = 1200
	browserHeight = 4200
)

// runChromium runs one headless browser command against the page and returns
// its stdout. Each run gets its own profile directory so runs cannot share
// state or lock each other out.
func runChromium(ctx context.Context, t *testing.T, bin string, args ...string) []byte {
	t.Helper()
	base := []string{
		"--headless=new",
		"--no-sandbox", // root in a container
		"--disable-gpu",
		"--disable-dev-shm-usage", // small /dev/shm in containers
		"--no-first-run",
		"--hide-scrollbars",
		"--force-device-scale-factor=1", // one CSS pixel = one screenshot pixel
		"--user-data-dir=" + t.TempDir(),
		"--window-size=" + strconv.Itoa(browserWidth) + "," + strconv.Itoa(browserHeight),
	}
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// Helper processes can hold the pipes open after the browser is killed.
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		// stderr is full of harmless dbus complaints; it only matters now.
		t.Fatalf("%s %s: %v (context: %v)\nstderr:\n%s", bin, strings.Join(args, " "), err, ctx.Err(), tail(stderr.String(), 3000))
	}
	return stdout.Bytes()
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

type rgbColor struct{ r, g, b int }

func parseHex(t *testing.T, hex string) rgbColor {
	t.Helper()
	v, err := strconv.ParseUint(strings.TrimPrefix(hex, "#"), 16, 32)
	if err != nil {
		t.Fatalf("colour %q: %v", hex, err)
	}
	return rgbColor{int(v >> 16), int(v >> 8 & 0xff), int(v & 0xff)}
}

// toRGBA gives direct pixel access; image.At per pixel is slow under -race.
func toRGBA(img image.Image) *image.RGBA {
	if r, ok := img.(*image.RGBA); ok {
		return r
	}
	r := image.NewRGBA(img.Bounds())
	draw.Draw(r, r.Bounds(), img, img.Bounds().Min, draw.Src)
	return r
}

func near(img *image.RGBA, x, y int, c rgbColor, tol int) bool {
	px := img.Pix[img.PixOffset(x, y):]
	d := func(a uint8, b int) int { return max(int(a)-b, b-int(a)) }
	return d(px[0], c.r) <= tol && d(px[1], c.g) <= tol && d(px[2], c.b) <= tol
}

// plotBoxes finds the framed plot areas in a screenshot, top to bottom, by
// their border: a long horizontal run of the plot border colour marks the
// top or the bottom edge of a box.
func plotBoxes(t *testing.T, img *image.RGBA, border rgbColor) []image.Rectangle {
	t.Helper()
	type edge struct{ y, x0, x1 int }
	var edges []edge
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		run, best, bestEnd := 0, 0, 0
		for x := b.Min.X; x < b.Max.X; x++ {
			if near(img, x, y, border, 3) {
				run++
				if run > best {
					best, bestEnd = run, x
				}
			} else {
				run = 0
			}
		}
		if best < 400 {
			continue
		}
		if n := len(edges); n > 0 && edges[n-1].y == y-1 {
			edges[n-1].y = y // a thicker edge; keep its inner row
			continue
		}
		edges = append(edges, edge{y: y, x0: bestEnd - best + 1, x1: bestEnd})
	}
	if len(edges)%2 != 0 {
		t.Fatalf("found %d plot box edges, want pairs (is a box cut off by the %dpx window?)", len(edges), browserHeight)
	}
	var boxes []image.Rectangle
	for i := 0; i < len(edges); i += 2 {
		top, bottom := edges[i], edges[i+1]
		boxes = append(boxes, image.Rect(top.x0+1, top.y+1, top.x1, bottom.y))
	}
	return boxes
}

func countNear(img *image.RGBA, r image.Rectangle, c rgbColor) int {
	n := 0
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			if near(img, x, y, c, 40) {
				n++
			}
		}
	}
	return n
}

// TestChromiumDrawsCharts checks in a real browser that the charts are drawn,
// not merely present in the markup: each plot area must contain pixels of
// exactly the colours of its series.
func TestChromiumDrawsCharts(t *testing.T) {
	bin := findChromium(t)

	rising := func(x float64) float64 { return 100 * x }
	p := htmlreport.Page{
		Title: "browser check",
		Sections: []htmlreport.Section{{
			Heading: "charts",
			Charts: []htmlreport.Chart{
				{ID: "two", Title: "two series", XLabel: "clients", YLabel: "TPS", Series: []htmlreport.Series{
					{Name: "a", Points: pts(clientSteps, rising)},
					{Name: "b", Points: pts(clientSteps, func(x float64) float64 { return 50 * x })},
				}},
				{ID: "four", Title: "four series, log Y", LogY: true, Series: []htmlreport.Series{
					{Name: "a", Points: pts(clientSteps, rising)},
					{Name: "b", Points: pts(clientSteps, func(x float64) float64 { return 10 * x })},
					{Name: "c", Points: pts(clientSteps, func(x float64) float64 { return x })},
					{Name: "d", Points: pts(clientSteps, func(x float64) float64 { return 1000 })},
				}},
				{ID: "empty", Title: "no data"},
				{ID: "bars", Title: "bars", Kind: htmlreport.BarChart, Series: []htmlreport.Series{
					{Name: "a", Points: pts(clientSteps, rising)},
					{Name: "b", Points: pts(clientSteps, rising)},
				}},
				{ID: "one", Title: "one series, log X", LogX: true, Series: []htmlreport.Series{
					{Name: "a", Points: pts(clientSteps, func(x float64) float64 { return 1 / x })},
				}},
				// Flat lines far apart, so each is one band of rows.
				{ID: "dashed", Title: "b p90 solid, p99 dashed", Series: []htmlreport.Series{
					{Name: "b p90", Key: "b", Points: pts(dense, func(float64) float64 { return 100 })},
					{Name: "b p99", Key: "b", Dashed: true, Points: pts(dense, func(float64) float64 { return 300 })},
				}},
				{ID: "stacked", Title: "CPU by process", Kind: htmlreport.StackedBarChart, Stacks: &htmlreport.Stacks{
					Segments: stackSegments,
					Groups: []htmlreport.StackGroup{
						{Label: "10", Bars: []htmlreport.Bar{{Name: "a", Values: []float64{20, 0, 80, 10}}, {Name: "b", Values: []float64{25, 40, 70, 10}}}},
						{Label: "100", Bars: []htmlreport.Bar{{Name: "a", Values: []float64{30, 0, 120, 20}}, {Name: "b", Values: []float64{30, 60, 90, 15}}}},
					},
				}},
			},
		}},
	}
	// Series colours per chart, in page order: the plot boxes in the
	// screenshot; the empty chart is a line of text and has none.
	wantColors := [][]int{{0, 1}, {0, 1, 2, 3}, {0, 1}, {0}, {1}, {0, 1}}
	hasSVG := []bool{true, true, false, true, true, true, true}
	const palette = 4 // colours checked: those of the largest chart

	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	var buf bytes.Buffer
	if err := htmlreport.Render(&buf, p); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(page, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	url := "file://" + page

	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()

	start := time.Now()
	dom := string(runChromium(ctx, t, bin, "--dump-dom", url))
	for i, c := range p.Sections[0].Charts {
		fig := fmt.Sprintf(`id="%s" data-chart="%s">`, c.ID, c.ID)
		i0 := strings.Index(dom, fig)
		if i0 < 0 {
			t.Errorf("DOM after loading lacks the figure of chart %q", c.ID)
			continue
		}
		body := dom[i0:]
		body = body[:strings.Index(body, "</figure>")]
		if got := strings.Contains(body, "<svg"); got != hasSVG[i] {
			t.Errorf("chart %q: <svg> in DOM = %v, want %v", c.ID, got, hasSVG[i])
		}
	}

	shot := filepath.Join(dir, "shot.png")
	runChromium(ctx, t, bin, "--screenshot="+shot, url)
	t.Logf("chromium: two runs took %v", time.Since(start).Round(time.Millisecond))

	if keep := os.Getenv("HTMLREPORT_ARTIFACTS"); keep != "" {
		// For looking at what the browser drew, e.g. as a CI artifact.
		for _, name := range []string{page, shot} {
			if data, err := os.ReadFile(name); err == nil {
				err = os.WriteFile(filepath.Join(keep, filepath.Base(name)), data, 0o644)
				if err != nil {
					t.Logf("keep %s: %v", name, err)
				}
			}
		}
	}

	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	decoded, err := png.Decode(f)
	if err != nil {
		t.Fatalf("decode screenshot: %v", err)
	}
	img := toRGBA(decoded)

	boxes := plotBoxes(t, img, parseHex(t, htmlreport.PlotBorderColor))
	if len(boxes) != len(wantColors) {
		t.Fatalf("found %d plot boxes in the screenshot, want %d: %v", len(boxes), len(wantColors), boxes)
	}
	var drawn []htmlreport.Chart // the charts with a plot box
	for i, c := range p.Sections[0].Charts {
		if hasSVG[i] {
			drawn = append(drawn, c)
		}
	}
	for i, box := range boxes {
		id := drawn[i].ID
		if w := box.Dx(); w < 850 {
			t.Errorf("chart %q: plot is %dpx wide, want about 900", id, w)
		}
		for s := range palette {
			n := countNear(img, box, parseHex(t, htmlreport.SeriesColor(s)))
			switch {
			case slices.Contains(wantColors[i], s) && n < 150:
				t.Errorf("chart %q: series %d drawn with only %d pixels of its colour", id, s, n)
			case !slices.Contains(wantColors[i], s) && n > 10:
				t.Errorf("chart %q: %d pixels of series colour %d, which the chart does not have", id, n, s)
			}
			t.Logf("chart %q %v: colour %d: %d pixels", id, box, s, n)
		}
	}
	checkDashed(t, img, boxes[4], parseHex(t, htmlreport.SeriesColor(1)))
	checkStacked(t, img, boxes[5], p)
}

var (
	dense = func() []float64 {
		xs := make([]float64, 60)
		for i := range xs {
			xs[i] = float64(i)
		}
		return xs
	}()
	stackSegments = []string{"client", "proxy", "server", "other"}
)

// checkDashed finds the two flat lines of one colour in box: the upper one
// (p99) must be broken into many dashes, the lower one (p90) unbroken.
func checkDashed(t *testing.T, img *image.RGBA, box image.Rectangle, col rgbColor) {
	t.Helper()
	type row struct{ y, pixels, runs int }
	var rows []row
	for y := box.Min.Y; y < box.Max.Y; y++ {
		r := row{y: y}
		in := false
		for x := box.Min.X; x < box.Max.X; x++ {
			hit := near(img, x, y, col, 60)
			if hit {
				r.pixels++
				if !in {
					r.runs++
				}
			}
			in = hit
		}
		if r.pixels > 200 {
			rows = append(rows, r)
		}
	}
	// Adjacent rows are one line; keep each line's fullest row.
	var lines []row
	for _, r := range rows {
		if n := len(lines); n > 0 && r.y-lines[n-1].y <= 3 {
			if r.pixels > lines[n-1].pixels {
				r.y = max(r.y, lines[n-1].y)
				lines[n-1] = r
			}
			continue
		}
		lines = append(lines, r)
	}
	if len(lines) != 2 {
		t.Fatalf("dashed chart: %d horizontal lines in the series colour, want 2: %v", len(lines), lines)
	}
	p99, p90 := lines[0], lines[1]
	t.Logf("dashed chart: p99 row %+v, p90 row %+v", p99, p90)
	if p99.runs < 30 {
		t.Errorf("p99 line is %d runs of colour, want a dashed line of many dashes", p99.runs)
	}
	if p90.runs > 3 {
		t.Errorf("p90 line is %d runs of colour, want one solid line", p90.runs)
	}
}

// checkStacked: every segment colour is drawn, the bands under the bars
// have the keys' colours, and every column through a bar meets the
// segments bottom to top in their order.
func checkStacked(t *testing.T, img *image.RGBA, box image.Rectangle, p htmlreport.Page) {
	t.Helper()
	segCols := make([]rgbColor, len(stackSegments))
	for i, name := range stackSegments {
		segCols[i] = parseHex(t, htmlreport.SegmentColor(p, name))
		if n := countNear(img, box, segCols[i]); n < 300 {
			t.Errorf("stacked chart: segment %q has %d pixels of its colour", name, n)
		}
	}
	for _, key := range []string{"a", "b"} {
		if n := countNear(img, box, parseHex(t, htmlreport.KeyColor(p, key))); n < 60 {
			t.Errorf("stacked chart: band of %q has %d pixels of its colour", key, n)
		}
	}
	full := 0
	for x := box.Min.X; x < box.Max.X; x++ {
		var seq []int // segment indexes met from the bottom up, runs merged
		for y := box.Max.Y - 1; y >= box.Min.Y; y-- {
			for i, c := range segCols {
				if near(img, x, y, c, 12) && (len(seq) == 0 || seq[len(seq)-1] != i) {
					seq = append(seq, i)
				}
			}
		}
		if !slices.IsSorted(seq) {
			t.Fatalf("stacked chart: column %d meets segments %v from the bottom up, want them in order", x, seq)
		}
		if len(seq) == len(segCols) {
			full++
		}
	}
	// Two bars (b's) have all four segments: about 2 × 80 columns.
	if full < 100 {
		t.Errorf("stacked chart: %d columns through all four segments, want about 160", full)
	}
}
