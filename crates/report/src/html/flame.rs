//! A step's differential flame graph (docs/profiles.md): an icicle of the
//! step's CPU per unit of work, the whole step on top, then each component
//! (server, generator, docker-proxy, the rest of the machine...), then
//! each component's kernel subsystems and user space. A frame is as wide
//! as the larger of its two cells' figures, so what vanished shows as well
//! as what appeared, and coloured by its move: red grew, blue shrank, the
//! stronger the more (Gregg's differential flame graphs, "Differential
//! Flame Graphs", 2014, colour the same way).
//!
//! Why not the `inferno` crate: the profile keeps no stacks, only
//! component → subsystem and a flat list of top functions (samples are
//! named as they are drained, docs/profiles.md, "How it is sampled"), so
//! the graph is three levels deep and a folded-stack renderer adds nothing;
//! inferno's SVG carries its own script and element ids, which clash when a
//! page holds one graph per step; and inferno is CDDL-licensed, this
//! project MIT or Apache-2.0. A plain SVG opens offline like every chart.

use std::collections::BTreeMap;

use super::axis::px;
use super::escape::html;
use super::svg;
use crate::resources::StepProfile;

const WIDTH: f64 = 820.0;
const ROW: f64 = 20.0;
/// Frames narrower than this many µs per unit in both cells are left out.
const SMALLEST_US: f64 = 0.05;
/// A label needs this many pixels per character.
const CHAR_PX: f64 = 6.5;

/// One frame: its label, its two cells' µs per unit, its children.
struct Frame {
    label: String,
    from: f64,
    to: f64,
    children: Vec<Frame>,
}

impl Frame {
    /// A subsystem is as wide as the larger of its two figures; a parent
    /// as its children together, so they fit under it.
    fn width(&self) -> f64 {
        if self.children.is_empty() {
            self.from.max(self.to)
        } else {
            self.children.iter().map(Frame::width).sum()
        }
    }
}

fn tree(p: &StepProfile) -> Frame {
    let mut by: BTreeMap<&str, Vec<Frame>> = BTreeMap::new();
    for (c, s, x, y) in &p.components_us {
        if x.max(*y) < SMALLEST_US {
            continue;
        }
        by.entry(c).or_default().push(Frame {
            label: s.clone(),
            from: *x,
            to: *y,
            children: Vec::new(),
        });
    }
    let mut components: Vec<Frame> = by
        .into_iter()
        .map(|(c, mut subs)| {
            subs.sort_by(|a, b| b.width().total_cmp(&a.width()));
            Frame {
                label: c.to_string(),
                from: subs.iter().map(|f| f.from).sum(),
                to: subs.iter().map(|f| f.to).sum(),
                children: subs,
            }
        })
        .collect();
    components.sort_by(|a, b| b.width().total_cmp(&a.width()));
    Frame {
        label: "all".into(),
        from: components.iter().map(|f| f.from).sum(),
        to: components.iter().map(|f| f.to).sum(),
        children: components,
    }
}

/// Red for a frame that grew, blue for one that shrank, mixed with white
/// by `share` (its move over the largest move of the graph, 0..1).
fn fill(moved: f64, share: f64) -> String {
    let (r, g, b) = if moved >= 0.0 {
        (0xD5, 0x5E, 0x00)
    } else {
        (0x00, 0x72, 0xB2)
    };
    let k = 0.15 + 0.85 * share.clamp(0.0, 1.0);
    let mix = |c: i32| (255.0 - (255.0 - c as f64) * k).round() as u8;
    format!("#{:02x}{:02x}{:02x}", mix(r), mix(g), mix(b))
}

/// The step's graph, or nothing when no frame is wide enough to draw.
/// `unit` is the per-unit figure's name (`µs/request`).
pub(super) fn step_graph(p: &StepProfile, title: &str, unit: &str) -> String {
    let root = tree(p);
    if root.width() <= 0.0 || root.children.is_empty() {
        return String::new();
    }
    let scale = WIDTH / root.width();
    let mut biggest = 0.0f64;
    for c in &root.children {
        biggest = biggest.max((c.to - c.from).abs());
        for s in &c.children {
            biggest = biggest.max((s.to - s.from).abs());
        }
    }
    let biggest = biggest.max((root.to - root.from).abs()).max(1e-9);
    let height = ROW * 3.0 + 2.0;
    let mut out = svg::open("flame", WIDTH, height, title);
    let mut draw = |f: &Frame, x: f64, depth: usize, path: &str| {
        let w = f.width() * scale;
        if w < 0.5 {
            return;
        }
        let moved = f.to - f.from;
        let name = if path.is_empty() {
            f.label.clone()
        } else {
            format!("{path} / {}", f.label)
        };
        let y = depth as f64 * ROW;
        out.push_str(&format!(
            "<g><title>{}: {:.2} → {:.2} {} ({:+.2})</title><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" stroke=\"#fff\"/>",
            html(&name),
            f.from,
            f.to,
            html(unit),
            moved,
            px(x),
            px(y),
            px(w),
            px(ROW - 1.0),
            fill(moved, moved.abs() / biggest)
        ));
        let fits = ((w - 6.0) / CHAR_PX).floor().max(0.0) as usize;
        let text = format!("{} {:+.1}", f.label, moved);
        let shown: String = if text.chars().count() <= fits {
            text
        } else if fits >= 4 {
            let mut t: String = text.chars().take(fits - 1).collect();
            t.push('…');
            t
        } else {
            String::new()
        };
        if !shown.is_empty() {
            out.push_str(&format!(
                "<text x=\"{}\" y=\"{}\" font-size=\"11\">{}</text>",
                px(x + 3.0),
                px(y + ROW - 6.0),
                html(&shown)
            ));
        }
        out.push_str("</g>\n");
    };
    draw(&root, 0.0, 0, "");
    let mut x = 0.0;
    for c in &root.children {
        draw(c, x, 1, "");
        let mut sx = x;
        for s in &c.children {
            draw(s, sx, 2, &c.label);
            sx += s.width() * scale;
        }
        x += c.width() * scale;
    }
    out.push_str(svg::close());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step() -> StepProfile {
        StepProfile {
            components_us: vec![
                ("server".into(), "NAT".into(), 0.0, 1.5),
                ("server".into(), "TCP/IP".into(), 10.0, 10.0),
                ("generator".into(), "user space".into(), 8.0, 6.0),
                ("generator".into(), "seccomp".into(), 0.01, 0.02),
            ],
            ..Default::default()
        }
    }

    #[test]
    fn frames_are_as_wide_as_either_cell_and_coloured_by_their_move() {
        let g = step_graph(&step(), "lab-bridge → lab-nat", "µs/request");
        assert!(g.contains("data-chart=\"flame\""), "{g}");
        // Root, two components, three subsystems (seccomp is too small).
        assert_eq!(g.matches("<rect").count(), 6, "{g}");
        assert!(!g.contains("seccomp"), "{g}");
        assert!(
            g.contains("<title>server / NAT: 0.00 → 1.50 µs/request (+1.50)</title>"),
            "{g}"
        );
        assert!(g.contains("generator / user space: 8.00 → 6.00"), "{g}");
        // The largest move (generator −2.0) is the strongest blue; a frame
        // that did not move is near white.
        assert!(g.contains(&format!("fill=\"{}\"", fill(-2.0, 1.0))), "{g}");
        assert_eq!(fill(-2.0, 1.0), "#0072b2");
        assert_eq!(fill(1.0, 0.0), "#f9e7d9");
        // The root spans the whole width, its children fit under it: the
        // server's 10 + 1.5 µs, then the generator's 8.
        assert!(g.contains("<rect x=\"0\" y=\"0\" width=\"820\""), "{g}");
        assert!(
            g.contains("<rect x=\"483.6\" y=\"20\" width=\"336.4\""),
            "{g}"
        );
        assert_eq!(step_graph(&StepProfile::default(), "x", "µs"), "");
    }
}
