package stelacdk

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"regexp"
	"strings"
	"testing"
)

// The picture of the dashboard in docs/operations.md is drawn from the
// synthesized template by renderDashboard: the layout, titles, legends,
// annotations and alarms are the template's; the curves are made up. It is
// a rendering, not a screenshot of AWS. Regenerate it with
//
//	cd infra && go test -run TestDashboardPictureIsCurrent -update
var update = flag.Bool("update", false, "rewrite docs/operations-dashboard.svg")

const dashboardPicture = "../../docs/operations-dashboard.svg"

func TestDashboardPictureIsCurrent(t *testing.T) {
	dash := iamStack.one(t, "AWS::CloudWatch::Dashboard")
	svg, err := renderDashboard(dash.Props["DashboardBody"])
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(dashboardPicture, svg, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	have, err := os.ReadFile(dashboardPicture)
	if err != nil || !bytes.Equal(have, svg) {
		t.Fatalf("%s is not the rendering of the synthesized dashboard (%v): run  cd infra && go test -run TestDashboardPictureIsCurrent -update", dashboardPicture, err)
	}
}

// dashboardBody resolves a DashboardBody (a string or an Fn::Join of
// strings and references) to JSON, references replaced by readable names.
func dashboardBody(v any) ([]byte, error) {
	if s, ok := v.(string); ok {
		return []byte(s), nil
	}
	join, ok := v.(map[string]any)["Fn::Join"].([]any)
	if !ok || len(join) != 2 {
		return nil, fmt.Errorf("DashboardBody is neither a string nor an Fn::Join: %v", v)
	}
	hash := regexp.MustCompile(`[0-9A-F]{8}$`)
	var b strings.Builder
	for _, part := range join[1].([]any) {
		switch p := part.(type) {
		case string:
			b.WriteString(p)
		case map[string]any:
			switch {
			case p["Ref"] != nil:
				b.WriteString(hash.ReplaceAllString(fmt.Sprint(p["Ref"]), ""))
			case p["Fn::GetAtt"] != nil:
				b.WriteString("alarm:" + hash.ReplaceAllString(fmt.Sprint(p["Fn::GetAtt"].([]any)[0]), ""))
			default:
				b.WriteString("?")
			}
		}
	}
	return []byte(b.String()), nil
}

type widget struct {
	Type       string          `json:"type"`
	X, Y, W, H float64         `json:"-"`
	Props      json.RawMessage `json:"properties"`
}

type widgetProps struct {
	Title       string   `json:"title"`
	Markdown    string   `json:"markdown"`
	Alarms      []string `json:"alarms"`
	Metrics     [][]any  `json:"metrics"`
	Annotations struct {
		Horizontal []struct {
			Value float64 `json:"value"`
			Label string  `json:"label"`
		} `json:"horizontal"`
	} `json:"annotations"`
}

// series is one visible line of a graph: its legend and axis.
type series struct {
	label string
	right bool
}

func seriesOf(metrics [][]any) []series {
	var out []series
	for _, m := range metrics {
		if len(m) == 0 {
			continue
		}
		opts, _ := m[len(m)-1].(map[string]any)
		if v, ok := opts["visible"].(bool); ok && !v {
			continue
		}
		label, _ := opts["label"].(string)
		if label == "" && len(m) >= 2 {
			label = fmt.Sprint(m[1])
		}
		right := opts["yAxis"] == "right"
		out = append(out, series{label, right})
	}
	return out
}

func esc(s string) string {
	r := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;")
	return r.Replace(s)
}

var palette = []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2"}

// curve is a made-up, smooth, repeatable series for label.
func curve(label string, n int) []float64 {
	h := fnv.New32a()
	h.Write([]byte(label))
	seed := float64(h.Sum32()%1000) / 1000
	out := make([]float64, n)
	for i := range out {
		x := float64(i) / float64(n-1)
		out[i] = 0.35 + 0.2*seed + 0.15*math.Sin(6*x+seed*9) + 0.08*math.Sin(17*x+seed*3)
	}
	return out
}

// renderDashboard draws the dashboard body as SVG.
func renderDashboard(bodyValue any) ([]byte, error) {
	raw, err := dashboardBody(bodyValue)
	if err != nil {
		return nil, err
	}
	var body struct {
		Widgets []map[string]any `json:"widgets"`
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		return nil, fmt.Errorf("dashboard body: %w", err)
	}
	const unitW, unitH, top, margin = 44.0, 34.0, 64.0, 12.0
	maxY := 0.0
	var ws []widget
	for _, m := range body.Widgets {
		b, _ := json.Marshal(m)
		var w widget
		if err := json.Unmarshal(b, &w); err != nil {
			return nil, err
		}
		w.X, w.Y, w.W, w.H = m["x"].(float64), m["y"].(float64), m["width"].(float64), m["height"].(float64)
		maxY = max(maxY, w.Y+w.H)
		ws = append(ws, w)
	}
	width := 24*unitW + 2*margin
	height := top + maxY*unitH + margin
	var out bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&out, format, args...) }
	p(`<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="Helvetica, Arial, sans-serif">`+"\n", width, height, width, height)
	p(`<rect width="100%%" height="100%%" fill="#f2f3f3"/>` + "\n")
	p(`<text x="%.0f" y="26" font-size="17" font-weight="bold" fill="#16191f">Stela — CloudWatch dashboard (infra/monitoring.go)</text>`+"\n", margin)
	p(`<text x="%.0f" y="46" font-size="11.5" fill="#545b64">A rendering of the dashboard the CDK app synthesizes: layout, titles, legends, thresholds and alarms come from the template; the curves are illustrative, not data. Not a screenshot of AWS.</text>`+"\n", margin)
	for _, w := range ws {
		var props widgetProps
		if err := json.Unmarshal(w.Props, &props); err != nil {
			return nil, err
		}
		x, y := margin+w.X*unitW+3, top+w.Y*unitH+3
		wd, ht := w.W*unitW-6, w.H*unitH-6
		p(`<g><rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" rx="3" fill="#ffffff" stroke="#d5dbdb"/>`+"\n", x, y, wd, ht)
		switch w.Type {
		case "text":
			ly := y + 22
			for _, line := range strings.Split(props.Markdown, "\n") {
				size, weight := 11.5, "normal"
				if strings.HasPrefix(line, "# ") {
					line, size, weight = strings.TrimPrefix(line, "# "), 16, "bold"
				}
				for _, chunk := range wrap(strings.ReplaceAll(line, "`", ""), int(wd/6.2)) {
					p(`<text x="%.1f" y="%.1f" font-size="%.1f" font-weight="%s" fill="#16191f">%s</text>`+"\n", x+10, ly, size, weight, esc(chunk))
					ly += size + 5
				}
			}
		case "alarm":
			p(`<text x="%.1f" y="%.1f" font-size="13" font-weight="bold" fill="#16191f">%s</text>`+"\n", x+10, y+20, esc(props.Title))
			cols := 3
			for i, a := range props.Alarms {
				cx := x + 10 + float64(i%cols)*(wd-20)/float64(cols)
				cy := y + 40 + float64(i/cols)*24
				p(`<rect x="%.1f" y="%.1f" width="34" height="16" rx="3" fill="#1d8102"/><text x="%.1f" y="%.1f" font-size="10" fill="#fff" font-weight="bold">OK</text>`+"\n", cx, cy-12, cx+8, cy)
				p(`<text x="%.1f" y="%.1f" font-size="11" fill="#16191f">%s</text>`+"\n", cx+40, cy, esc(strings.TrimPrefix(a, "alarm:")))
			}
		default:
			p(`<text x="%.1f" y="%.1f" font-size="13" font-weight="bold" fill="#16191f">%s</text>`+"\n", x+10, y+20, esc(props.Title))
			ss := seriesOf(props.Metrics)
			legendRows := (len(ss) + 1) / 2
			gx, gy := x+36, y+32
			gw, gh := wd-48, ht-48-float64(legendRows)*14
			p(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#879596"/><line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#879596"/>`+"\n",
				gx, gy, gx, gy+gh, gx, gy+gh, gx+gw, gy+gh)
			for i := 1; i < 4; i++ {
				ly := gy + gh*float64(i)/4
				p(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#eaeded"/>`+"\n", gx, ly, gx+gw, ly)
			}
			for _, a := range props.Annotations.Horizontal {
				ay := gy + gh*0.12
				p(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#d13212" stroke-dasharray="5,3"/>`+"\n", gx, ay, gx+gw, ay)
				p(`<text x="%.1f" y="%.1f" font-size="10" fill="#d13212" text-anchor="end">%s %g</text>`+"\n", gx+gw-2, ay-3, esc(a.Label), a.Value)
			}
			for i, s := range ss {
				color := palette[i%len(palette)]
				vals := curve(props.Title+s.label, 40)
				var pts []string
				for j, v := range vals {
					pts = append(pts, fmt.Sprintf("%.1f,%.1f", gx+gw*float64(j)/float64(len(vals)-1), gy+gh*(1-v*0.8)))
				}
				dash := ""
				if s.right {
					dash = ` stroke-dasharray="4,2"`
				}
				p(`<polyline fill="none" stroke="%s" stroke-width="1.6"%s points="%s"/>`+"\n", color, dash, strings.Join(pts, " "))
				lx := x + 12 + float64(i%2)*(wd-24)/2
				ly := gy + gh + 18 + float64(i/2)*14
				p(`<rect x="%.1f" y="%.1f" width="10" height="3" fill="%s"/><text x="%.1f" y="%.1f" font-size="10.5" fill="#16191f">%s</text>`+"\n",
					lx, ly-4, color, lx+14, ly, esc(truncate(s.label, int((wd-24)/2/5.6)-3)))
			}
		}
		p("</g>\n")
	}
	p("</svg>\n")
	return out.Bytes(), nil
}

func wrap(s string, n int) []string {
	var out []string
	line := ""
	for _, w := range strings.Fields(s) {
		if line != "" && len(line)+1+len(w) > n {
			out = append(out, line)
			line = w
			continue
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	if line != "" || len(out) == 0 {
		out = append(out, line)
	}
	return out
}

func truncate(s string, n int) string {
	if n > 3 && len(s) > n {
		return s[:n-1] + "…"
	}
	return s
}
