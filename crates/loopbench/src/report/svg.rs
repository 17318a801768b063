//! Small hand-written SVG charts for the HTML report: a dot/interval chart
//! (strip plots, forest plots, true-vs-measured) and horizontal bars. Two
//! chart kinds with categorical rows and one numeric axis did not need a
//! plotting crate: this is a page of code, has no fonts to find, and keeps
//! the text as real `<text>` the browser lays out.
//!
//! Colours are the Okabe-Ito palette (safe for the common colour-vision
//! deficiencies); verdicts are also told apart by the legend and the
//! tables, never by colour alone.

use std::fmt::Write;

/// Okabe-Ito.
pub const BLACK: &str = "#000000";
pub const ORANGE: &str = "#E69F00";
pub const SKY: &str = "#56B4E9";
pub const GREEN: &str = "#009E73";
pub const YELLOW: &str = "#F0E442";
pub const BLUE: &str = "#0072B2";
pub const VERMILLION: &str = "#D55E00";
pub const PURPLE: &str = "#CC79A7";
pub const GREY: &str = "#8C8C8C";
/// Colours for a list of series, in order.
pub const SERIES: &[&str] = &[BLUE, ORANGE, GREEN, VERMILLION, PURPLE, SKY, YELLOW, BLACK];

/// Escape text for HTML and SVG (the markup layer owns it).
pub use super::markup::escape_html as esc;

/// One row of a dot chart.
#[derive(Clone, Debug, Default)]
pub struct Row {
    pub label: String,
    /// Individual values (a strip), drawn small and translucent.
    pub dots: Vec<f64>,
    /// A point estimate with its interval, drawn bold.
    pub point: Option<f64>,
    pub interval: Option<[f64; 2]>,
    /// A reference value for this row (a true effect, a prediction): a
    /// hollow diamond.
    pub marker: Option<f64>,
    /// A shaded band behind this row only (its null floor).
    pub band: Option<[f64; 2]>,
    pub color: &'static str,
}

/// Rows on one shared numeric axis.
#[derive(Clone, Debug, Default)]
pub struct DotChart {
    pub title: String,
    pub x_label: String,
    pub rows: Vec<Row>,
    /// A band shaded across all rows (the null floor of a shape).
    pub band: Option<[f64; 2]>,
    pub band_label: String,
    /// A vertical reference line (0% change).
    pub reference: Option<f64>,
    /// (label, colour) pairs; the marker's meaning, if rows have one.
    pub legend: Vec<(String, &'static str)>,
    pub marker_label: Option<String>,
}

/// Horizontal bars from zero.
#[derive(Clone, Debug, Default)]
pub struct Bars {
    pub title: String,
    pub x_label: String,
    pub rows: Vec<(String, f64, &'static str)>,
}

const WIDTH: f64 = 760.0;
const ROW: f64 = 22.0;
const TOP: f64 = 34.0;
const BOTTOM: f64 = 64.0;

/// A 1-2-5 step giving about `n` ticks over `span`.
fn nice_step(span: f64, n: f64) -> f64 {
    let raw = (span / n).max(f64::MIN_POSITIVE);
    let mag = 10f64.powf(raw.log10().floor());
    let f = raw / mag;
    let m = if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    m * mag
}

/// The axis range over `values`, padded, with its tick step.
fn range(values: impl Iterator<Item = f64>) -> (f64, f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values.filter(|v| v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return (0.0, 1.0, 0.2);
    }
    if hi - lo < 1e-9 {
        let pad = (lo.abs() * 0.05).max(0.5);
        lo -= pad;
        hi += pad;
    }
    let step = nice_step(hi - lo, 6.0);
    ((lo / step).floor() * step, (hi / step).ceil() * step, step)
}

fn tick_text(v: f64, step: f64) -> String {
    let digits = if step >= 1.0 {
        0
    } else {
        (-step.log10().floor()) as usize
    };
    format!("{v:.digits$}")
}

struct Frame {
    left: f64,
    right: f64,
    lo: f64,
    hi: f64,
    step: f64,
    height: f64,
    rows: usize,
}

impl Frame {
    fn new<'a>(labels: impl Iterator<Item = &'a str>, rows: usize, values: Vec<f64>) -> Frame {
        let longest = labels.map(|l| l.chars().count()).max().unwrap_or(4);
        let left = (longest as f64 * 6.6 + 16.0).clamp(60.0, 300.0);
        let (lo, hi, step) = range(values.into_iter());
        Frame {
            left,
            right: WIDTH - 24.0,
            lo,
            hi,
            step,
            height: TOP + rows as f64 * ROW + BOTTOM,
            rows,
        }
    }
    fn x(&self, v: f64) -> f64 {
        self.left + (v - self.lo) / (self.hi - self.lo) * (self.right - self.left)
    }
    fn y(&self, row: usize) -> f64 {
        TOP + row as f64 * ROW + ROW / 2.0
    }
    fn bottom(&self) -> f64 {
        TOP + self.rows as f64 * ROW
    }
    /// Opening tag, title, gridlines, ticks and the axis label.
    fn open(&self, out: &mut String, title: &str, x_label: &str) {
        let _ = write!(
            out,
            r#"<svg class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {h}" width="{WIDTH}" height="{h}" role="img" aria-label="{t}" font-family="sans-serif" font-size="12">"#,
            h = self.height,
            t = esc(title)
        );
        let _ = write!(
            out,
            r#"<text x="{}" y="18" font-size="14" font-weight="bold">{}</text>"#,
            self.left,
            esc(title)
        );
        let mut v = self.lo;
        while v <= self.hi + self.step * 1e-6 {
            let x = self.x(v);
            let _ = write!(
                out,
                r##"<line x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{b:.1}" stroke="#e4e4e4"/><text x="{x:.1}" y="{ty:.1}" text-anchor="middle" fill="#333">{}</text>"##,
                tick_text(v, self.step),
                b = self.bottom(),
                ty = self.bottom() + 16.0
            );
            v += self.step;
        }
        let _ = write!(
            out,
            r##"<line x1="{l}" y1="{b:.1}" x2="{r}" y2="{b:.1}" stroke="#333"/><text x="{c:.1}" y="{ly:.1}" text-anchor="middle" fill="#111">{}</text>"##,
            esc(x_label),
            l = self.left,
            r = self.right,
            b = self.bottom(),
            c = (self.left + self.right) / 2.0,
            ly = self.bottom() + 36.0
        );
    }
    fn label(&self, out: &mut String, row: usize, text: &str) {
        let _ = write!(
            out,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="end" dominant-baseline="middle" fill="#111">{}</text>"##,
            self.left - 8.0,
            self.y(row),
            esc(text)
        );
    }
    fn band(&self, out: &mut String, [a, b]: [f64; 2], y0: f64, y1: f64) {
        let (x0, x1) = (self.x(a.min(b)), self.x(a.max(b)));
        let _ = write!(
            out,
            r##"<rect x="{x0:.1}" y="{y0:.1}" width="{:.1}" height="{:.1}" fill="#bbbbbb" fill-opacity="0.35"/>"##,
            (x1 - x0).max(1.0),
            y1 - y0
        );
    }
}

impl DotChart {
    pub fn svg(&self) -> String {
        let mut values: Vec<f64> = Vec::new();
        for r in &self.rows {
            values.extend(&r.dots);
            values.extend(r.point);
            values.extend(r.interval.iter().flatten());
            values.extend(r.marker);
            values.extend(r.band.iter().flatten());
        }
        values.extend(self.band.iter().flatten());
        values.extend(self.reference);
        let f = Frame::new(
            self.rows.iter().map(|r| r.label.as_str()),
            self.rows.len(),
            values,
        );
        let mut o = String::new();
        f.open(&mut o, &self.title, &self.x_label);
        if let Some(b) = self.band {
            f.band(&mut o, b, TOP, f.bottom());
        }
        if let Some(r) = self.reference {
            let x = f.x(r);
            let _ = write!(
                o,
                r##"<line x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{:.1}" stroke="#333" stroke-dasharray="4 3"/>"##,
                f.bottom()
            );
        }
        for (i, r) in self.rows.iter().enumerate() {
            let y = f.y(i);
            f.label(&mut o, i, &r.label);
            if let Some(b) = r.band {
                f.band(&mut o, b, y - ROW / 2.0 + 2.0, y + ROW / 2.0 - 2.0);
            }
            for (j, d) in r.dots.iter().enumerate() {
                // Deterministic jitter so overlapping rounds stay visible.
                let jitter = ((j * 7919) % 13) as f64 - 6.0;
                let _ = write!(
                    o,
                    r#"<circle cx="{:.1}" cy="{:.1}" r="2.5" fill="{}" fill-opacity="0.45"/>"#,
                    f.x(*d),
                    y + jitter * 0.8,
                    r.color
                );
            }
            if let Some([a, b]) = r.interval {
                let _ = write!(
                    o,
                    r#"<line x1="{:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="{}" stroke-width="2.5"/>"#,
                    f.x(a),
                    f.x(b),
                    r.color
                );
            }
            if let Some(p) = r.point {
                let _ = write!(
                    o,
                    r##"<circle cx="{:.1}" cy="{y:.1}" r="5" fill="{}" stroke="#000" stroke-width="1"/>"##,
                    f.x(p),
                    r.color
                );
            }
            if let Some(m) = r.marker {
                let x = f.x(m);
                let _ = write!(
                    o,
                    r##"<path d="M{:.1} {y:.1} L{x:.1} {:.1} L{:.1} {y:.1} L{x:.1} {:.1} Z" fill="none" stroke="#000" stroke-width="1.5"/>"##,
                    x - 6.0,
                    y - 6.0,
                    x + 6.0,
                    y + 6.0
                );
            }
        }
        // The legend, left to right under the axis label.
        enum Swatch {
            Band,
            Dot(&'static str),
            Diamond,
        }
        let mut items: Vec<(Swatch, String)> = Vec::new();
        if self.band.is_some() || self.rows.iter().any(|r| r.band.is_some()) {
            let text = if self.band_label.is_empty() {
                "null floor".to_string()
            } else {
                self.band_label.clone()
            };
            items.push((Swatch::Band, text));
        }
        for (text, color) in &self.legend {
            items.push((Swatch::Dot(color), text.clone()));
        }
        if let Some(m) = &self.marker_label {
            items.push((Swatch::Diamond, m.clone()));
        }
        let mut lx = f.left;
        let ly = f.bottom() + 54.0;
        for (swatch, text) in items {
            let x = lx + 5.0;
            let _ = match swatch {
                Swatch::Band => write!(
                    o,
                    r##"<rect x="{lx:.1}" y="{:.1}" width="10" height="10" fill="#bbbbbb" fill-opacity="0.6"/>"##,
                    ly - 5.0
                ),
                Swatch::Dot(color) => write!(
                    o,
                    r#"<circle cx="{x:.1}" cy="{ly:.1}" r="5" fill="{color}"/>"#
                ),
                Swatch::Diamond => write!(
                    o,
                    r##"<path d="M{:.1} {ly:.1} L{x:.1} {:.1} L{:.1} {ly:.1} L{x:.1} {:.1} Z" fill="none" stroke="#000" stroke-width="1.5"/>"##,
                    x - 5.0,
                    ly - 5.0,
                    x + 5.0,
                    ly + 5.0
                ),
            };
            let _ = write!(
                o,
                r##"<text x="{:.1}" y="{ly:.1}" dominant-baseline="middle" fill="#111">{}</text>"##,
                lx + 14.0,
                esc(&text)
            );
            lx += 14.0 + text.chars().count() as f64 * 6.6 + 18.0;
        }
        o.push_str("</svg>");
        o
    }
}

impl Bars {
    pub fn svg(&self) -> String {
        let values: Vec<f64> = self
            .rows
            .iter()
            .map(|r| r.1)
            .chain(std::iter::once(0.0))
            .collect();
        let f = Frame::new(
            self.rows.iter().map(|r| r.0.as_str()),
            self.rows.len(),
            values,
        );
        let mut o = String::new();
        f.open(&mut o, &self.title, &self.x_label);
        for (i, (label, v, color)) in self.rows.iter().enumerate() {
            f.label(&mut o, i, label);
            let (x0, x1) = (f.x(0.0_f64.min(*v)), f.x(0.0_f64.max(*v)));
            let _ = write!(
                o,
                r#"<rect x="{x0:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{color}"><title>{}: {v}</title></rect>"#,
                f.y(i) - ROW / 2.0 + 3.0,
                (x1 - x0).max(0.5),
                ROW - 6.0,
                esc(label)
            );
        }
        o.push_str("</svg>");
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_numbers_covering_the_data() {
        let (lo, hi, step) = range([-3.2, 11.7].into_iter());
        assert_eq!(step, 5.0);
        assert_eq!((lo, hi), (-5.0, 15.0));
        let (lo, hi, _) = range([2.0, 2.0].into_iter());
        assert!(lo < 2.0 && hi > 2.0);
    }

    #[test]
    fn labels_are_escaped() {
        let c = Bars {
            title: "a<b".into(),
            x_label: "x & y".into(),
            rows: vec![("<script>".into(), 1.0, BLUE)],
        };
        let s = c.svg();
        assert!(!s.contains("<script>"), "{s}");
        assert!(s.contains("a&lt;b") && s.contains("x &amp; y"));
    }
}
