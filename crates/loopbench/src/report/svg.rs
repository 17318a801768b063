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
    /// The values are percent changes, placed on a log-ratio axis: +100%
    /// and -50% lie equally far from 0, and a +600% row does not squeeze
    /// a +-10% one into a few pixels.
    pub log_ratio: bool,
    /// Dots far outside the rest (beyond 3 interquartile ranges of all the
    /// dots, on the axis' scale) do not stretch the axis: each is drawn as
    /// a mark at the edge, with the row's count of them.
    pub clip_outliers: bool,
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
/// The top of a chart with more rows than [`LONG`]: its axis is labelled
/// above the rows too, so it reads without scrolling to the bottom.
const TOP_LONG: f64 = 62.0;
const LONG: usize = 12;
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
    /// The axis range, in axis units (log ratios on a log-ratio axis).
    lo: f64,
    hi: f64,
    /// Tick values, in the values' own units.
    ticks: Vec<f64>,
    step: f64,
    log_ratio: bool,
    /// Where the rows start.
    top: f64,
    height: f64,
    rows: usize,
}

/// A percent change as a log ratio, and back.
fn log_ratio(pct: f64) -> f64 {
    (pct / 100.0).ln_1p()
}
fn from_log_ratio(y: f64) -> f64 {
    y.exp_m1() * 100.0
}

/// Changes a log-ratio axis may label, percent: round numbers on both
/// sides (a halving is -50%, a doubling +100%).
const LOG_TICKS: &[f64] = &[
    -99.0, -95.0, -90.0, -80.0, -67.0, -50.0, -33.0, -20.0, -10.0, -5.0, -2.0, -1.0, -0.5, 0.0,
    0.5, 1.0, 2.0, 5.0, 10.0, 25.0, 50.0, 100.0, 200.0, 400.0, 900.0, 1900.0, 4900.0, 9900.0,
];

/// Ticks of a log-ratio axis over `[lo, hi]` (log ratios): the labelled
/// changes inside it, thinned so that neighbours stay `min_gap` apart.
fn log_ticks(lo: f64, hi: f64, min_gap: f64) -> Vec<f64> {
    let mut out: Vec<f64> = Vec::new();
    for &t in LOG_TICKS {
        let y = log_ratio(t);
        if y < lo || y > hi {
            continue;
        }
        match out.last() {
            Some(&last) if y - log_ratio(last) < min_gap && t != 0.0 => {}
            Some(&last) if y - log_ratio(last) < min_gap => {
                // Zero always has its tick: it is the line everything is read against.
                out.pop();
                out.push(t);
            }
            _ => out.push(t),
        }
    }
    out
}

impl Frame {
    fn new<'a>(
        labels: impl Iterator<Item = &'a str>,
        rows: usize,
        values: Vec<f64>,
        log: bool,
    ) -> Frame {
        let longest = labels.map(|l| l.chars().count()).max().unwrap_or(4);
        let left = (longest as f64 * 6.6 + 16.0).clamp(60.0, 300.0);
        let right = WIDTH - 24.0;
        let (lo, hi, step, ticks) = if log {
            // A change of -100% or less has no log ratio: it is left out of
            // the range (and drawn at the axis' edge).
            let ys = values.into_iter().filter(|v| *v > -100.0).map(log_ratio);
            let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
            for y in ys.filter(|y| y.is_finite()) {
                lo = lo.min(y);
                hi = hi.max(y);
            }
            if !lo.is_finite() {
                (lo, hi) = (log_ratio(-1.0), log_ratio(1.0));
            }
            let pad = ((hi - lo) * 0.06).max(0.005);
            let (lo, hi) = (lo - pad, hi + pad);
            // Labels need about 48 px each.
            let min_gap = (hi - lo) * 48.0 / (right - left);
            (lo, hi, 0.0, log_ticks(lo, hi, min_gap))
        } else {
            let (lo, hi, step) = range(values.into_iter());
            let n = ((hi - lo) / step).round() as usize;
            let ticks = (0..=n).map(|i| lo + i as f64 * step).collect();
            (lo, hi, step, ticks)
        };
        let top = if rows > LONG { TOP_LONG } else { TOP };
        Frame {
            left,
            right,
            lo,
            hi,
            ticks,
            step,
            log_ratio: log,
            top,
            height: top + rows as f64 * ROW + BOTTOM,
            rows,
        }
    }
    /// The x position of value `v` (a percent change on a log-ratio axis).
    fn x(&self, v: f64) -> f64 {
        let axis = if self.log_ratio {
            log_ratio(v.max(from_log_ratio(self.lo)))
        } else {
            v
        };
        self.left + (axis - self.lo) / (self.hi - self.lo) * (self.right - self.left)
    }
    fn y(&self, row: usize) -> f64 {
        self.top + row as f64 * ROW + ROW / 2.0
    }
    fn bottom(&self) -> f64 {
        self.top + self.rows as f64 * ROW
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
        for &v in &self.ticks {
            let x = self.x(v);
            let text = if self.log_ratio {
                format!("{v:+}%").replace("+0%", "0")
            } else {
                tick_text(v, self.step)
            };
            let _ = write!(
                out,
                r##"<line x1="{x:.1}" y1="{top}" x2="{x:.1}" y2="{b:.1}" stroke="#e4e4e4"/><text x="{x:.1}" y="{ty:.1}" text-anchor="middle" fill="#333">{text}</text>"##,
                top = self.top,
                b = self.bottom(),
                ty = self.bottom() + 16.0
            );
            if self.top > TOP {
                let _ = write!(
                    out,
                    r##"<text x="{x:.1}" y="{:.1}" text-anchor="middle" fill="#333">{text}</text>"##,
                    self.top - 6.0
                );
            }
        }
        if self.top > TOP {
            let _ = write!(
                out,
                r##"<text x="{:.1}" y="36" text-anchor="middle" fill="#111">{}</text>"##,
                self.label_centre(x_label),
                esc(x_label)
            );
        }
        let _ = write!(
            out,
            r##"<line x1="{l}" y1="{b:.1}" x2="{r}" y2="{b:.1}" stroke="#333"/><text x="{c:.1}" y="{ly:.1}" text-anchor="middle" fill="#111">{}</text>"##,
            esc(x_label),
            l = self.left,
            r = self.right,
            b = self.bottom(),
            c = self.label_centre(x_label),
            ly = self.bottom() + 36.0
        );
    }
    /// Where the axis label is centred: under the axis, or under the
    /// whole chart when it is wider than the axis (a long row label leaves
    /// the axis little room).
    fn label_centre(&self, text: &str) -> f64 {
        let wide = text.chars().count() as f64 * 6.2;
        if wide > self.right - self.left {
            (WIDTH / 2.0).max(wide / 2.0)
        } else {
            (self.left + self.right) / 2.0
        }
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
    /// A row's dots beyond the axis: a triangle at each edge they are past,
    /// pointing out, with their count.
    fn outliers(&self, out: &mut String, y: f64, below: usize, above: usize, color: &str) {
        for (n, x, dir, anchor, tx) in [
            (below, self.left, -1.0, "start", self.left + 8.0),
            (above, self.right, 1.0, "end", self.right - 8.0),
        ] {
            if n == 0 {
                continue;
            }
            let _ = write!(
                out,
                r##"<path d="M{:.1} {y:.1}L{:.1} {:.1}L{:.1} {:.1}Z" fill="{color}" stroke="#000" stroke-width="0.5"><title>{n} beyond the axis</title></path><text x="{tx:.1}" y="{:.1}" text-anchor="{anchor}" font-size="10" fill="#111">{n}</text>"##,
                x + dir * 6.0,
                x,
                y - 5.0,
                x,
                y + 5.0,
                y - 6.0
            );
        }
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

/// The fence beyond which a dot is an outlier: 3 interquartile ranges
/// outside the quartiles of `values` (on the axis' scale: log ratios on a
/// log-ratio axis); `None` for too few values to tell.
fn outlier_fence(values: &[f64], log: bool) -> Option<[f64; 2]> {
    let scale = |v: f64| if log { log_ratio(v) } else { v };
    let back = |v: f64| if log { from_log_ratio(v) } else { v };
    let mut on_axis: Vec<f64> = values
        .iter()
        .map(|&v| scale(v))
        .filter(|v| v.is_finite())
        .collect();
    if on_axis.len() < 8 {
        return None;
    }
    on_axis.sort_by(f64::total_cmp);
    let at = |q: f64| on_axis[((on_axis.len() - 1) as f64 * q).round() as usize];
    let (q1, q3) = (at(0.25), at(0.75));
    let reach = 3.0 * (q3 - q1).max(1e-9);
    Some([back(q1 - reach), back(q3 + reach)])
}

impl DotChart {
    pub fn svg(&self) -> String {
        let all_dots: Vec<f64> = self
            .rows
            .iter()
            .flat_map(|r| r.dots.iter().copied())
            .collect();
        let fence = match self.clip_outliers {
            true => outlier_fence(&all_dots, self.log_ratio),
            false => None,
        };
        let inside = |v: &f64| fence.is_none_or(|[lo, hi]| (lo..=hi).contains(v));
        let mut values: Vec<f64> = Vec::new();
        for r in &self.rows {
            values.extend(r.dots.iter().filter(|v| inside(v)));
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
            self.log_ratio,
        );
        let mut o = String::new();
        f.open(&mut o, &self.title, &self.x_label);
        if let Some(b) = self.band {
            f.band(&mut o, b, f.top, f.bottom());
        }
        if let Some(r) = self.reference {
            let x = f.x(r);
            let _ = write!(
                o,
                r##"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}" stroke="#333" stroke-dasharray="4 3"/>"##,
                f.top,
                f.bottom()
            );
        }
        for (i, r) in self.rows.iter().enumerate() {
            let y = f.y(i);
            f.label(&mut o, i, &r.label);
            if let Some(b) = r.band {
                f.band(&mut o, b, y - ROW / 2.0 + 2.0, y + ROW / 2.0 - 2.0);
            }
            let (mut below, mut above) = (0, 0);
            for (j, d) in r.dots.iter().enumerate() {
                let x = f.x(*d);
                if x < f.left || x > f.right || !inside(d) {
                    if x < (f.left + f.right) / 2.0 {
                        below += 1;
                    } else {
                        above += 1;
                    }
                    continue;
                }
                // Deterministic jitter so overlapping rounds stay visible.
                let jitter = ((j * 7919) % 13) as f64 - 6.0;
                let _ = write!(
                    o,
                    r#"<circle cx="{x:.1}" cy="{:.1}" r="2.5" fill="{}" fill-opacity="0.45"/>"#,
                    y + jitter * 0.8,
                    r.color
                );
            }
            f.outliers(&mut o, y, below, above, r.color);
            if let Some(p) = r.point {
                let _ = write!(
                    o,
                    r##"<circle cx="{:.1}" cy="{y:.1}" r="4" fill="{}" stroke="#000" stroke-width="1"/>"##,
                    f.x(p),
                    r.color
                );
            }
            // The interval over its point, with end caps taller than the
            // point: an interval narrower than the dot still shows.
            if let Some([a, b]) = r.interval {
                let (xa, xb) = (f.x(a), f.x(b));
                let _ = write!(
                    o,
                    r##"<path d="M{xa:.1} {:.1}V{:.1}M{xa:.1} {y:.1}H{xb:.1}M{xb:.1} {:.1}V{:.1}" stroke="{}" stroke-width="2.5" fill="none"/>"##,
                    y - 7.0,
                    y + 7.0,
                    y - 7.0,
                    y + 7.0,
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
            false,
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
    fn a_log_ratio_axis_gives_a_halving_and_a_doubling_equal_room() {
        let f = Frame::new(["a"].into_iter(), 1, vec![-50.0, 100.0, 600.0], true);
        let zero = f.x(0.0);
        let (half, double) = (f.x(-50.0), f.x(100.0));
        assert!(((zero - half) - (double - zero)).abs() < 1e-6);
        assert!(
            f.ticks.contains(&0.0) && f.ticks.contains(&100.0),
            "{:?}",
            f.ticks
        );
        // Ticks do not crowd: neighbours at least 40 px apart.
        for w in f.ticks.windows(2) {
            assert!(f.x(w[1]) - f.x(w[0]) >= 40.0, "{:?}", f.ticks);
        }
        // +-10% keeps twice the room beside +600% that a linear axis gives it.
        let ten = (f.x(10.0) - f.x(-10.0)) / (f.right - f.left);
        let linear = Frame::new(["a"].into_iter(), 1, vec![-50.0, 100.0, 600.0], false);
        let ten_linear = (linear.x(10.0) - linear.x(-10.0)) / (linear.right - linear.left);
        assert!(ten > 2.0 * ten_linear, "{ten} against {ten_linear}");
        // -100% has no log ratio: drawn at the edge, not at -infinity.
        assert!(f.x(-100.0).is_finite() && f.x(-100.0) >= f.left - 1e-9);
    }

    /// One round of +22,000% among rounds within 1% (the default
    /// session's strip plots): it is marked at the edge and counted, not
    /// given the axis.
    #[test]
    fn an_outlier_is_marked_at_the_edge_rather_than_stretching_the_axis() {
        let mut dots: Vec<f64> = (0..40).map(|i| (i % 9) as f64 * 0.2 - 0.8).collect();
        dots.push(22_000.0);
        let chart = |clip: bool| DotChart {
            rows: vec![Row {
                label: "a".into(),
                dots: dots.clone(),
                point: Some(0.1),
                interval: Some([-0.2, 0.4]),
                color: BLUE,
                ..Default::default()
            }],
            log_ratio: true,
            clip_outliers: clip,
            ..Default::default()
        };
        let clipped = chart(true).svg();
        assert!(
            clipped.contains("<title>1 beyond the axis</title>"),
            "{clipped}"
        );
        assert!(
            !clipped.contains("+100%"),
            "the axis reaches +100%: {clipped}"
        );
        assert_eq!(
            clipped.matches("<circle").count(),
            40 + 1,
            "40 dots and the point"
        );
        let stretched = chart(false).svg();
        assert!(stretched.contains("+9900%") && !stretched.contains("beyond the axis"));
    }

    /// A long chart is labelled above its rows too; its intervals have end
    /// caps taller than their point.
    #[test]
    fn a_long_chart_has_its_axis_on_top_and_every_interval_shows() {
        let rows = (0..20)
            .map(|i| Row {
                label: format!("row {i}"),
                point: Some(i as f64),
                interval: Some([i as f64 - 0.01, i as f64 + 0.01]),
                color: BLUE,
                ..Default::default()
            })
            .collect();
        let s = DotChart {
            x_label: "the axis".into(),
            rows,
            ..Default::default()
        }
        .svg();
        assert_eq!(s.matches(">the axis</text>").count(), 2, "{s}");
        let tick = format!(">{}</text>", tick_text(10.0, 5.0));
        assert_eq!(s.matches(&tick).count(), 2, "{s}");
        // Caps 14 px tall, over a point 8 px wide.
        assert_eq!(s.matches("V").count(), 2 * 20, "{s}");
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
