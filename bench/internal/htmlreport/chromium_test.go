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
	browserHeight = 3000
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
			},
		}},
	}
	// Series count per chart, in page order.
	wantSeries := []int{2, 4, 0, 2, 1}
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
		fig := fmt.Sprintf(`<figure class="chart" id="%s" data-chart="%s">`, c.ID, c.ID)
		i0 := strings.Index(dom, fig)
		if i0 < 0 {
			t.Errorf("DOM after loading lacks the figure of chart %q", c.ID)
			continue
		}
		body := dom[i0:]
		body = body[:strings.Index(body, "</figure>")]
		if hasSVG := strings.Contains(body, "<svg"); hasSVG != (wantSeries[i] > 0) {
			t.Errorf("chart %q: <svg> in DOM = %v, want %v", c.ID, hasSVG, wantSeries[i] > 0)
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
	if len(boxes) != len(wantSeries) {
		t.Fatalf("found %d plot boxes in the screenshot, want %d: %v", len(boxes), len(wantSeries), boxes)
	}
	for i, box := range boxes {
		id := p.Sections[0].Charts[i].ID
		if w := box.Dx(); w < 850 {
			t.Errorf("chart %q: plot is %dpx wide, want about 900", id, w)
		}
		for s := range palette {
			n := countNear(img, box, parseHex(t, htmlreport.SeriesColor(s)))
			switch {
			case s < wantSeries[i] && n < 150:
				t.Errorf("chart %q: series %d drawn with only %d pixels of its colour", id, s, n)
			case s >= wantSeries[i] && n > 10:
				t.Errorf("chart %q: %d pixels of series colour %d, which the chart does not have", id, n, s)
			}
			t.Logf("chart %q %v: colour %d: %d pixels", id, box, s, n)
		}
	}
}
