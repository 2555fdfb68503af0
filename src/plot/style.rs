//! The look every picture shares: a family's colour and marker, the
//! library's dashes, text that reads on a fill, and which points carry a
//! marker.
//!
//! ```text
//! family  -> colour (palette, colour-blind safe) + marker (8 shapes,
//!            filled, then hollow)
//! library -> black, dashed; its best forced algorithm grey, dotted
//! ```

use plotters::prelude::*;

use colltune_algorithms::Collective;
use colltune_core::measure::figure::{family_index, Line, LineKind};

/// Colour-blind-safe (Okabe-Ito, then Tol's darker tones, then Tol's
/// muted ones), each a different lightness where it can be: one colour per
/// broadcast family.
pub(super) const PALETTE: [RGBColor; 14] = [
    RGBColor(0, 114, 178),   // blue
    RGBColor(213, 94, 0),    // vermillion
    RGBColor(0, 158, 115),   // bluish green
    RGBColor(204, 121, 167), // reddish purple
    RGBColor(230, 159, 0),   // orange
    RGBColor(86, 180, 233),  // sky blue
    RGBColor(51, 34, 136),   // indigo
    RGBColor(153, 153, 51),  // olive
    RGBColor(136, 34, 85),   // wine
    RGBColor(68, 170, 153),  // teal
    RGBColor(17, 119, 51),   // green
    RGBColor(170, 68, 153),  // purple
    RGBColor(136, 204, 238), // cyan
    RGBColor(221, 204, 119), // sand
];
pub(super) const LIBRARY: RGBColor = RGBColor(0, 0, 0);
pub(super) const FORCED: RGBColor = RGBColor(100, 100, 100);

/// A family's colour: the same in every picture.
pub fn color_of(c: Collective, family: &str) -> RGBColor {
    match family {
        "mpi" => LIBRARY,
        "ompi_tuned" | "ompi_adapt" | "ompi_han" | "mpich" | "impi" => FORCED,
        f => PALETTE[family_index(c, f) % PALETTE.len()],
    }
}

pub(super) fn marker_of(c: Collective, l: &Line) -> usize {
    match l.kind {
        LineKind::Library => usize::MAX,
        LineKind::LibraryForced => usize::MAX - 1,
        LineKind::Algorithm => family_index(c, &l.family),
    }
}

/// Runs `$body` with `$mk`, a closure making the marker for shape `$i`
/// (8 shapes, filled, then the same hollow; `usize::MAX` none,
/// `usize::MAX - 1` a hollow square) at a point, in `$color`.
macro_rules! with_marker {
    ($i:expr, $color:expr, |$mk:ident| $body:expr) => {{
        let (i, color): (usize, RGBColor) = ($i, $color);
        let s = 5i32;
        let style = if i == usize::MAX - 1 || (i / 8) % 2 == 1 {
            ShapeStyle::from(&color).stroke_width(2)
        } else {
            ShapeStyle::from(&color).filled()
        };
        let st = ShapeStyle::from(&color).stroke_width(3);
        if i == usize::MAX {
            let $mk = |p| EmptyElement::at(p);
            $body
        } else if i == usize::MAX - 1 {
            let $mk =
                |p| EmptyElement::at(p) + Rectangle::new([(-s + 1, -s + 1), (s - 1, s - 1)], style);
            $body
        } else {
            match i % 8 {
                0 => {
                    let $mk = |p| EmptyElement::at(p) + Circle::new((0, 0), s, style);
                    $body
                }
                1 => {
                    let $mk = |p| {
                        EmptyElement::at(p)
                            + Rectangle::new([(-s + 1, -s + 1), (s - 1, s - 1)], style)
                    };
                    $body
                }
                2 => {
                    let $mk = |p| {
                        EmptyElement::at(p)
                            + Polygon::new(vec![(0, -s - 1), (s + 1, s), (-s - 1, s)], style)
                    };
                    $body
                }
                3 => {
                    let $mk = |p| {
                        EmptyElement::at(p)
                            + Polygon::new(
                                vec![(0, -s - 1), (s + 1, 0), (0, s + 1), (-s - 1, 0)],
                                style,
                            )
                    };
                    $body
                }
                4 => {
                    let $mk = |p| {
                        EmptyElement::at(p)
                            + Polygon::new(vec![(0, s + 1), (s + 1, -s), (-s - 1, -s)], style)
                    };
                    $body
                }
                5 => {
                    let $mk = |p| {
                        EmptyElement::at(p)
                            + PathElement::new(vec![(-s, -s), (s, s)], st)
                            + PathElement::new(vec![(-s, s), (s, -s)], st)
                    };
                    $body
                }
                6 => {
                    let $mk = |p| {
                        EmptyElement::at(p)
                            + PathElement::new(vec![(-s - 1, 0), (s + 1, 0)], st)
                            + PathElement::new(vec![(0, -s - 1), (0, s + 1)], st)
                    };
                    $body
                }
                _ => {
                    let $mk = |p| {
                        EmptyElement::at(p)
                            + Polygon::new(
                                vec![
                                    (-s, -2),
                                    (-2, -s),
                                    (2, -s),
                                    (s, -2),
                                    (s, 2),
                                    (2, s),
                                    (-2, s),
                                    (-s, 2),
                                ],
                                style,
                            )
                    };
                    $body
                }
            }
        }
    }};
}

pub(super) use with_marker;

/// Draws one line's path on a chart: solid, dashed (the library) or dotted
/// (its best forced algorithm).
macro_rules! draw_path {
    ($chart:expr, $l:expr, $pts:expr, $style:expr) => {{
        let (pts, style): (Vec<(f64, f64)>, ShapeStyle) = ($pts, $style);
        match $l.kind {
            LineKind::Algorithm => $chart
                .draw_series(std::iter::once(PathElement::new(pts, style)))
                .map(|_| ()),
            LineKind::Library => $chart
                .draw_series(std::iter::once(DashedPathElement::new(pts, 10, 6, style)))
                .map(|_| ()),
            LineKind::LibraryForced => $chart
                .draw_series(std::iter::once(DashedPathElement::new(pts, 3, 4, style)))
                .map(|_| ()),
        }
    }};
}

pub(super) use draw_path;

pub(super) fn line_style(l: &Line, color: RGBColor) -> ShapeStyle {
    ShapeStyle::from(&color).stroke_width(if l.kind == LineKind::Library { 3 } else { 2 })
}

/// Black on light colours, white on dark ones.
pub(super) fn text_color_on(c: RGBColor) -> RGBColor {
    let l = 0.299 * c.0 as f64 + 0.587 * c.1 as f64 + 0.114 * c.2 as f64;
    if l > 140.0 {
        BLACK
    } else {
        WHITE
    }
}

/// A colour at a saturation: mixed with white.
pub(super) fn tint(c: RGBColor, s: f64) -> RGBColor {
    let m = |x: u8| (255.0 - (255.0 - x as f64) * s).round() as u8;
    RGBColor(m(c.0), m(c.1), m(c.2))
}

/// The points of line `i` that get a marker: about ten per line, offset by
/// the line's index so that lines sharing points do not hide each other's
/// markers, and always the last.
pub(super) fn marked_points(pts: &[(f64, f64)], i: usize) -> Vec<(f64, f64)> {
    let step = (pts.len() / 10).max(1);
    pts.iter()
        .enumerate()
        .filter(|(j, _)| (j + i) % step == 0 || *j + 1 == pts.len())
        .map(|(_, &pt)| pt)
        .collect()
}
