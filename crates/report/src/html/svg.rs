//! The few SVG pieces every chart shares: the `<svg>` element (with a
//! `<title>` for screen readers and tooltips), a plot frame with gridlines
//! and tick labels, a legend, and the palette. Charts are plain strings:
//! hand-written SVG is smaller than any plotting crate's output and needs
//! no fonts, scripts or files (the report must open offline).

use super::axis::{px, trim_zeros, Linear};
use super::escape::html;

/// Okabe & Ito's colour-blind-safe palette ("Color Universal Design",
/// 2008), without its yellow, which vanishes on white paper.
pub(crate) const PALETTE: [&str; 7] = [
    "#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#555555",
];

/// The `i`th series colour (cycling; dashes tell repeats apart, see
/// [`dash`]).
pub(crate) fn colour(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

/// A dash pattern for the `i`th series: solid for the first round of
/// colours, dashed after, so 14 series stay distinguishable.
pub(crate) fn dash(i: usize) -> &'static str {
    match (i / PALETTE.len()) % 3 {
        0 => "",
        1 => " stroke-dasharray=\"6 3\"",
        _ => " stroke-dasharray=\"2 2\"",
    }
}

/// Opens a chart: `kind` names it for the page's checks and styles, `title`
/// is shown as its accessible name and tooltip.
pub fn open(kind: &str, width: f64, height: f64, title: &str) -> String {
    format!(
        "<svg class=\"chart\" data-chart=\"{}\" viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\" role=\"img\" preserveAspectRatio=\"xMinYMin meet\"><title>{}</title>\n",
        html(kind),
        px(width),
        px(height),
        px(width),
        px(height),
        html(title)
    )
}

pub fn close() -> &'static str {
    "</svg>\n"
}

/// The plot area inside a chart, in chart pixels.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Frame {
    pub left: f64,
    pub top: f64,
    pub right: f64,
    pub bottom: f64,
}

impl Frame {
    pub(crate) fn width(&self) -> f64 {
        self.right - self.left
    }
}

/// Horizontal gridlines with labels on the left, one per tick.
pub(crate) fn y_grid(
    out: &mut String,
    f: &Frame,
    y: &Linear,
    ticks: &[f64],
    label: impl Fn(f64) -> String,
) {
    for &t in ticks {
        let yy = px(y.map(t));
        out.push_str(&format!(
            "<line class=\"grid\" x1=\"{}\" x2=\"{}\" y1=\"{yy}\" y2=\"{yy}\"/><text class=\"tick\" x=\"{}\" y=\"{yy}\" dy=\"0.32em\" text-anchor=\"end\">{}</text>\n",
            px(f.left),
            px(f.right),
            px(f.left - 6.0),
            html(&trim_zeros(&label(t)))
        ));
    }
}

/// Vertical gridlines with labels below the frame, one per tick.
pub(crate) fn x_grid(
    out: &mut String,
    f: &Frame,
    x: &Linear,
    ticks: &[f64],
    label: impl Fn(f64) -> String,
) {
    for &t in ticks {
        let xx = px(x.map(t));
        out.push_str(&format!(
            "<line class=\"grid\" x1=\"{xx}\" x2=\"{xx}\" y1=\"{}\" y2=\"{}\"/><text class=\"tick\" x=\"{xx}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
            px(f.top),
            px(f.bottom),
            px(f.bottom + 16.0),
            html(&trim_zeros(&label(t)))
        ));
    }
}

/// An axis title: below the frame (`x`) or rotated on the left (`y`).
pub(crate) fn axis_title(out: &mut String, f: &Frame, text: &str, horizontal: bool) {
    if horizontal {
        out.push_str(&format!(
            "<text class=\"axis-title\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
            px(f.left + f.width() / 2.0),
            px(f.bottom + 34.0),
            html(text)
        ));
    } else {
        let cy = (f.top + f.bottom) / 2.0;
        out.push_str(&format!(
            "<text class=\"axis-title\" transform=\"translate({} {}) rotate(-90)\" text-anchor=\"middle\">{}</text>\n",
            px(f.left - 52.0),
            px(cy),
            html(text)
        ));
    }
}

/// A legend laid out in rows under the chart, starting at `y`; returns the
/// height it used. Each entry is a short line in the series colour.
pub(crate) fn legend(out: &mut String, x0: f64, y: f64, width: f64, labels: &[String]) -> f64 {
    const ROW: f64 = 18.0;
    // About 7 px per character at the tick font size, plus the swatch.
    let mut x = x0;
    let mut row = 0.0;
    for (i, label) in labels.iter().enumerate() {
        let w = 34.0 + 7.2 * label.chars().count() as f64;
        if x > x0 && x + w > x0 + width {
            x = x0;
            row += ROW;
        }
        let yy = y + row;
        out.push_str(&format!(
            "<g class=\"legend\"><line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"3\"{}/><text x=\"{}\" y=\"{}\" dy=\"0.32em\">{}</text></g>\n",
            px(x),
            px(x + 18.0),
            px(yy),
            px(yy),
            colour(i),
            dash(i),
            px(x + 23.0),
            px(yy),
            html(label)
        ));
        x += w;
    }
    row + ROW
}

/// A whisker (an interval) drawn horizontally at `y` from `x1` to `x2`.
pub(crate) fn h_whisker(out: &mut String, x1: f64, x2: f64, y: f64, half: f64) {
    out.push_str(&format!(
        "<path class=\"whisker\" d=\"M{a} {t}V{b}M{a} {m}H{c}M{c} {t}V{b}\"/>\n",
        a = px(x1),
        c = px(x2),
        m = px(y),
        t = px(y - half),
        b = px(y + half)
    ));
}

/// A whisker drawn vertically at `x` from `y1` to `y2`.
pub(crate) fn v_whisker(out: &mut String, x: f64, y1: f64, y2: f64, half: f64) {
    out.push_str(&format!(
        "<path class=\"whisker\" d=\"M{l} {a}H{r}M{m} {a}V{c}M{l} {c}H{r}\"/>\n",
        a = px(y1),
        c = px(y2),
        m = px(x),
        l = px(x - half),
        r = px(x + half)
    ));
}

/// A polyline through `points` (already in pixels).
pub fn polyline(points: &[(f64, f64)], colour: &str, extra: &str) -> String {
    let pts: Vec<String> = points
        .iter()
        .map(|(x, y)| format!("{},{}", px(*x), px(*y)))
        .collect();
    format!(
        "<polyline fill=\"none\" stroke=\"{colour}\" stroke-width=\"2\"{extra} points=\"{}\"/>\n",
        pts.join(" ")
    )
}
