//! Pictures, drawn with plotters from what `colltune_core::figure` shapes:
//!
//! - the time plot: one line per algorithm family (its best variant at each
//!   size), the MPI library dashed and its best forced algorithm dotted,
//!   run bands; under it two strips along the size axis, the table's
//!   regimes and the measured fastest; under those the relative panel
//!   (time / best at each size, the best point's run spread around 1.0).
//!   Lines are labelled outside the data, at the height where each ends,
//!   pushed apart so no two labels overlap; colours come from a palette
//!   readable by colour-blind readers and each family also has its own
//!   marker, so the lines stay apart in grey print;
//! - the decision map: a whole table, communicator shapes down, message
//!   size across, each cell coloured by the chosen family, paler where the
//!   margin over the runner-up is small, hatched where node-aware.
//!
//! SVG or PNG (to a file or, SVG, to a string for the HTML report); the
//! font (DejaVu Sans) is built into the binary.

use std::path::Path;

use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::{register_font, FontStyle};

use colltune_algorithms::Collective;
use colltune_core::figure::{
    family_index, place_labels, relative, saturation, sizes, winners, DecisionMap, Line, LineKind,
    Stretch,
};
use colltune_core::record::Sample;
use colltune_core::report::SeriesKey;
use colltune_core::table::Table;
use colltune_core::units::human_bytes;

static FONT: &[u8] = include_bytes!("../assets/fonts/DejaVuSans.ttf");

/// A margin at or above this is drawn fully saturated in the map.
pub const FULL_MARGIN: f64 = 0.2;

/// Which panels a plot has.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Panels {
    /// Time, the strips and the relative panel.
    Both,
    /// Time against size and the strips.
    Time,
    /// The strips and time relative to the best at each size.
    Relative,
}

/// Everything a time plot shows.
pub struct PlotInput<'a> {
    pub title: String,
    pub collective: Collective,
    pub lines: &'a [Line],
    /// The table's regimes for this communicator (none: no strip).
    pub regimes: Option<Vec<Stretch>>,
    pub panels: Panels,
}

/// Colour-blind-safe (Okabe-Ito, then Tol's darker tones, then Tol's
/// muted ones), each a different lightness where it can be: one colour per
/// broadcast family.
const PALETTE: [RGBColor; 14] = [
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
const LIBRARY: RGBColor = RGBColor(0, 0, 0);
const FORCED: RGBColor = RGBColor(100, 100, 100);

/// A family's colour: the same in every picture.
pub fn color_of(c: Collective, family: &str) -> RGBColor {
    match family {
        "mpi" => LIBRARY,
        "ompi_tuned" | "ompi_adapt" | "ompi_han" | "mpich" | "impi" => FORCED,
        f => PALETTE[family_index(c, f) % PALETTE.len()],
    }
}

fn marker_of(c: Collective, l: &Line) -> usize {
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

fn line_style(l: &Line, color: RGBColor) -> ShapeStyle {
    ShapeStyle::from(&color).stroke_width(if l.kind == LineKind::Library { 3 } else { 2 })
}

type Res = anyhow::Result<()>;

fn err<E: std::fmt::Debug>(x: E) -> anyhow::Error {
    anyhow::anyhow!("drawing: {x:?}")
}

/// Size-axis ticks: powers of two, every 2^k so that at most ~9 show.
fn size_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let (a, b) = (lo.max(1.0).log2().ceil() as i32, hi.log2().floor() as i32);
    let span = (b - a).max(0);
    let step = ((span as f64 / 8.0).ceil() as i32).max(1);
    // Prefer steps that land on 1 B, 1 KiB, 1 MiB (multiples of 10 or 5 or 2).
    let step = [1, 2, 5, 10, 20]
        .into_iter()
        .find(|&s| s >= step)
        .unwrap_or(step);
    (a..=b)
        .filter(|e| e.rem_euclid(step) == 0)
        .map(|e| 2f64.powi(e))
        .collect()
}

fn fmt_bytes(x: f64) -> String {
    human_bytes(x.round() as u64)
}

fn fmt_us(y: f64) -> String {
    if y >= 1e6 {
        format!("{:.0} s", y / 1e6)
    } else if y >= 1e3 {
        format!("{:.0} ms", y / 1e3)
    } else if y >= 1.0 {
        format!("{y:.0} us")
    } else {
        format!("{y:.1} us")
    }
}

/// Time ticks: 1-2-5 per decade, thinned to at most ~8.
fn time_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let mut v = Vec::new();
    let mut d = 10f64.powi(lo.log10().floor() as i32);
    while d <= hi {
        for m in [1.0, 2.0, 5.0] {
            let x = d * m;
            if x >= lo && x <= hi {
                v.push(x);
            }
        }
        d *= 10.0;
    }
    if v.len() > 8 {
        v.retain(|x| {
            let m = x / 10f64.powi(x.log10().floor() as i32);
            (m - 1.0).abs() < 1e-9
        });
    }
    if v.len() < 2 {
        v = vec![lo, hi];
    }
    v
}

/// Draws the time plot to a file, .svg or .png.
pub fn draw_plot(path: &Path, p: &PlotInput) -> Res {
    let size = plot_size(p.panels);
    to_file(
        path,
        size,
        |root| render_plot(root, p),
        |root| render_plot(root, p),
    )
}

/// The time plot as SVG text.
pub fn plot_svg(p: &PlotInput) -> anyhow::Result<String> {
    let mut s = String::new();
    {
        let root = SVGBackend::with_string(&mut s, plot_size(p.panels)).into_drawing_area();
        render_plot(&root, p)?;
        root.present().map_err(err)?;
    }
    Ok(s)
}

fn plot_size(p: Panels) -> (u32, u32) {
    match p {
        Panels::Both => (1400, 1060),
        Panels::Time | Panels::Relative => (1400, 720),
    }
}

fn image_kind(path: &Path) -> anyhow::Result<&'static str> {
    match path
        .extension()
        .and_then(|e| e.to_str())
        .map(|e| e.to_ascii_lowercase())
        .as_deref()
    {
        Some("svg") => Ok("svg"),
        Some("png") => Ok("png"),
        other => anyhow::bail!(
            "{}: unknown image type `{}`: name the file .svg or .png",
            path.display(),
            other.unwrap_or("")
        ),
    }
}

fn to_file(
    path: &Path,
    size: (u32, u32),
    svg: impl FnOnce(&DrawingArea<SVGBackend, Shift>) -> Res,
    png: impl FnOnce(&DrawingArea<BitMapBackend, Shift>) -> Res,
) -> Res {
    let _ = register_font("sans-serif", FontStyle::Normal, FONT);
    let kind = image_kind(path)?;
    let io = |e: &dyn std::fmt::Debug| anyhow::anyhow!("{}: {e:?}", path.display());
    if kind == "svg" {
        let root = SVGBackend::new(path, size).into_drawing_area();
        svg(&root)?;
        root.present().map_err(|e| io(&e))?;
    } else {
        let root = BitMapBackend::new(path, size).into_drawing_area();
        png(&root)?;
        root.present().map_err(|e| io(&e))?;
    }
    Ok(())
}

fn font(size: u32) -> TextStyle<'static> {
    ("sans-serif", size).into_font().into()
}

fn render_plot<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, p: &PlotInput) -> Res
where
    DB::ErrorType: 'static,
{
    let _ = register_font("sans-serif", FontStyle::Normal, FONT);
    root.fill(&WHITE).map_err(err)?;
    let lines = p.lines;
    let all_sizes = sizes(lines);
    if all_sizes.is_empty() {
        anyhow::bail!("nothing to plot: no line has a point");
    }
    let (w, _h) = root.dim_in_pixel();
    let area = root.titled(&p.title, font(22)).map_err(err)?;
    let legend_w = 330;
    let (left, _right) = area.split_horizontally(w - legend_w);
    let (bmin, bmax) = (
        all_sizes[0].max(1) as f64,
        all_sizes[all_sizes.len() - 1].max(1) as f64,
    );
    let xr = (bmin / 1.3)..(bmax * 1.3);
    let xticks = size_ticks(xr.start, xr.end);
    let colors: Vec<RGBColor> = lines
        .iter()
        .map(|l| match l.kind {
            LineKind::LibraryForced => FORCED,
            _ => color_of(p.collective, &l.family),
        })
        .collect();
    let strip_rows = if p.regimes.is_some() { 2 } else { 1 };
    let strip_h = 30 * strip_rows + 12;
    let (_, lh) = left.dim_in_pixel();
    let (time_area, rest) = match p.panels {
        Panels::Both => {
            let (a, b) = left.split_vertically(lh * 52 / 100);
            (Some(a), b)
        }
        Panels::Time => {
            let (a, b) = left.split_vertically(lh - strip_h - 46);
            (Some(a), b)
        }
        Panels::Relative => (None, left.clone()),
    };
    let (strip_area, rel_area) = rest.split_vertically(strip_h + 46);
    let y_area = 84;

    // Time against size.
    let mut label_wish: Vec<(usize, i32, i32)> = Vec::new(); // (line, end x px, end y px)
    let mut panel_y = (0i32, 0i32);
    if let Some(ta) = &time_area {
        let (mut tmin, mut tmax) = (f64::INFINITY, 0f64);
        for pt in lines.iter().flat_map(|l| l.points.values()) {
            tmin = tmin.min(pt.lo.min(pt.median));
            tmax = tmax.max(pt.hi.max(pt.median));
        }
        let tmin = tmin.max(1e-3);
        let tmax = tmax.max(tmin * 1.01);
        let yr = (tmin / 1.3)..(tmax * 1.3);
        let yticks = time_ticks(yr.start, yr.end);
        let mut chart = ChartBuilder::on(ta)
            .margin_top(8)
            .margin_right(12)
            .margin_left(8)
            .x_label_area_size(36)
            .y_label_area_size(y_area)
            .build_cartesian_2d(
                xr.clone().log_scale().with_key_points(xticks.clone()),
                yr.clone().log_scale().with_key_points(yticks),
            )
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_label_formatter(&|x| fmt_bytes(*x))
            .y_label_formatter(&|y| fmt_us(*y))
            .y_desc("time per call (median over runs; band: min-max run median)")
            .label_style(font(14))
            .axis_desc_style(font(14))
            .light_line_style(WHITE.mix(0.0))
            .bold_line_style(BLACK.mix(0.08))
            .draw()
            .map_err(err)?;
        let spread = lines
            .iter()
            .flat_map(|l| l.points.values())
            .any(|pt| pt.hi > pt.lo * 1.000001);
        for (i, l) in lines.iter().enumerate() {
            let color = colors[i];
            if spread && l.points.len() > 1 {
                let band: Vec<(f64, f64)> = l
                    .points
                    .iter()
                    .map(|(&b, pt)| (b.max(1) as f64, pt.hi))
                    .chain(
                        l.points
                            .iter()
                            .rev()
                            .map(|(&b, pt)| (b.max(1) as f64, pt.lo)),
                    )
                    .collect();
                chart
                    .draw_series(std::iter::once(Polygon::new(
                        band,
                        color.mix(0.12).filled(),
                    )))
                    .map_err(err)?;
            }
        }
        for (i, l) in lines.iter().enumerate() {
            let color = colors[i];
            let pts: Vec<(f64, f64)> = l
                .points
                .iter()
                .map(|(&b, pt)| (b.max(1) as f64, pt.median))
                .collect();
            draw_path!(chart, l, pts.clone(), line_style(l, color)).map_err(err)?;
            let m = marker_of(p.collective, l);
            let shown = marked_points(&pts, i);
            with_marker!(m, color, |mk| chart
                .draw_series(shown.iter().map(|&pt| mk(pt)))
                .map(|_| ()))
            .map_err(err)?;
            if let Some(&last) = pts.last() {
                let (x, y) = chart.backend_coord(&last);
                label_wish.push((i, x, y));
            }
        }
        let (top, bottom) = (
            chart.backend_coord(&(bmin, yr.end)).1,
            chart.backend_coord(&(bmin, yr.start)).1,
        );
        panel_y = (top, bottom);
    }

    // The strips: the table's regimes and the measured fastest.
    {
        let rows = strip_rows as f64;
        let mut chart = ChartBuilder::on(&strip_area)
            .margin_top(6)
            .margin_right(12)
            .margin_left(8)
            .x_label_area_size(if time_area.is_none() { 36 } else { 0 })
            .y_label_area_size(y_area)
            .build_cartesian_2d(xr.clone().log_scale(), 0f64..rows)
            .map_err(err)?;
        let win = winners(lines);
        // Per row: its position and its stretches (from, to, what).
        type Strip = (f64, Vec<(f64, f64, Stretch)>);
        let mut strips: Vec<Strip> = Vec::new();
        // Measured winners: each size's cell reaches half-way (in log
        // space) to its neighbours.
        let mid = |a: u64, b: u64| ((a.max(1) as f64) * (b.max(1) as f64)).sqrt();
        let mut cells = Vec::new();
        for s in &win {
            let from = s.from;
            let to = s.to.unwrap_or(from);
            let i0 = all_sizes.iter().position(|&b| b == from).unwrap_or(0);
            let i1 = all_sizes.iter().position(|&b| b == to).unwrap_or(i0);
            let x0 = if i0 == 0 {
                xr.start
            } else {
                mid(all_sizes[i0 - 1], from)
            };
            let x1 = if i1 + 1 >= all_sizes.len() {
                xr.end
            } else {
                mid(to, all_sizes[i1 + 1])
            };
            cells.push((x0, x1, s.clone()));
        }
        strips.push((0.0, cells));
        if let Some(reg) = &p.regimes {
            let cells = reg
                .iter()
                .filter_map(|s| {
                    let x0 = (s.from.max(1) as f64).max(xr.start);
                    let x1 = s.to.map(|t| (t as f64 + 1.0).min(xr.end)).unwrap_or(xr.end);
                    (x1 > x0).then(|| (x0, x1, s.clone()))
                })
                .collect();
            strips.push((1.0, cells));
        }
        let names = ["fastest", "table"];
        for (row, cells) in &strips {
            let y0 = *row + 0.12;
            let y1 = *row + 0.88;
            for (x0, x1, s) in cells {
                let kind = lines.iter().find(|l| l.name == s.label).map(|l| l.kind);
                let color = match kind {
                    Some(LineKind::Library) => LIBRARY,
                    Some(LineKind::LibraryForced) => FORCED,
                    _ => color_of(p.collective, &s.family),
                };
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(*x0, y0), (*x1, y1)],
                        color.filled(),
                    )))
                    .map_err(err)?;
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(*x0, y0), (*x1, y1)],
                        WHITE.stroke_width(1),
                    )))
                    .map_err(err)?;
                // The name inside, only where it fits.
                let (px0, py) = chart.backend_coord(&(*x0, (y0 + y1) / 2.0));
                let (px1, _) = chart.backend_coord(&(*x1, y1));
                let text = if *row == 0.0 {
                    s.label.clone()
                } else {
                    s.family.clone()
                };
                let tc = text_color_on(color);
                let style = font(12).color(&tc);
                let (tw, th) = strip_area.estimate_text_size(&text, &style).map_err(err)?;
                if (px1 - px0) as u32 > tw + 6 {
                    root.draw(&Text::new(
                        text,
                        ((px0 + px1) / 2 - tw as i32 / 2, py - th as i32 / 2),
                        style,
                    ))
                    .map_err(err)?;
                }
            }
            let (lx, ly) = chart.backend_coord(&(xr.start, *row + 0.5));
            let style = font(13);
            let name = names[*row as usize];
            let (tw, th) = root.estimate_text_size(name, &style).map_err(err)?;
            root.draw(&Text::new(
                name,
                (lx - tw as i32 - 6, ly - th as i32 / 2),
                style,
            ))
            .map_err(err)?;
        }
        if time_area.is_none() {
            chart
                .configure_mesh()
                .disable_mesh()
                .disable_y_axis()
                .x_label_formatter(&|x| fmt_bytes(*x))
                .label_style(font(14))
                .draw()
                .map_err(err)?;
        }
    }

    // Relative to the best at each size.
    if p.panels != Panels::Time {
        let rel = relative(lines);
        let maxr = rel
            .ratios
            .iter()
            .flat_map(|m| m.values())
            .fold(1.0f64, |a, &x| a.max(x));
        let cap = maxr.clamp(1.1, 4.0);
        let top = cap * 1.04;
        let mut ticks: Vec<f64> = [1.0, 1.05, 1.1, 1.25, 1.5, 2.0, 3.0, 4.0]
            .into_iter()
            .filter(|&t| t <= top)
            .collect();
        if ticks.len() > 6 {
            ticks.retain(|&t| t != 1.05);
        }
        let mut chart = ChartBuilder::on(&rel_area)
            .margin_top(6)
            .margin_right(12)
            .margin_left(8)
            .x_label_area_size(40)
            .y_label_area_size(y_area)
            .build_cartesian_2d(
                xr.clone().log_scale().with_key_points(xticks.clone()),
                (0.97f64..top).log_scale().with_key_points(ticks),
            )
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_label_formatter(&|x| fmt_bytes(*x))
            .y_label_formatter(&|y| format!("{y:.2}x"))
            .x_desc("message size")
            .y_desc(if rel.has_spread {
                format!("time / best at size (grey: best's run spread; cut at {cap:.1}x)")
            } else {
                format!("time / best at size (one run: no spread; cut at {cap:.1}x)")
            })
            .label_style(font(14))
            .axis_desc_style(font(14))
            .light_line_style(WHITE.mix(0.0))
            .bold_line_style(BLACK.mix(0.08))
            .draw()
            .map_err(err)?;
        if rel.has_spread {
            let band: Vec<(f64, f64)> = rel
                .band
                .iter()
                .map(|(&b, &(_, hi))| (b.max(1) as f64, hi.min(top)))
                .chain(
                    rel.band
                        .iter()
                        .rev()
                        .map(|(&b, &(lo, _))| (b.max(1) as f64, lo.max(0.97))),
                )
                .collect();
            chart
                .draw_series(std::iter::once(Polygon::new(
                    band,
                    BLACK.mix(0.15).filled(),
                )))
                .map_err(err)?;
        }
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(xr.start, 1.0), (xr.end, 1.0)],
                BLACK.mix(0.5).stroke_width(1),
            )))
            .map_err(err)?;
        for (i, l) in lines.iter().enumerate() {
            let color = colors[i];
            let pts: Vec<(f64, f64)> = rel.ratios[i]
                .iter()
                .map(|(&b, &r)| (b.max(1) as f64, r.min(cap)))
                .collect();
            draw_path!(chart, l, pts.clone(), line_style(l, color)).map_err(err)?;
            let m = marker_of(p.collective, l);
            let shown = marked_points(&pts, i);
            with_marker!(m, color, |mk| chart
                .draw_series(shown.iter().map(|&pt| mk(pt)))
                .map(|_| ()))
            .map_err(err)?;
            if time_area.is_none() {
                if let Some(&last) = pts.last() {
                    let (x, y) = chart.backend_coord(&last);
                    label_wish.push((i, x, y));
                }
            }
        }
        if time_area.is_none() {
            panel_y = (
                chart.backend_coord(&(bmin, top)).1,
                chart.backend_coord(&(bmin, 0.97)).1,
            );
        }
    }

    // Labels outside the data, beside where each line ends, apart.
    let lx = (w - legend_w) as i32 + 34;
    let gap = 34.0;
    let want: Vec<f64> = label_wish.iter().map(|w| w.2 as f64).collect();
    let (ptop, pbot) = panel_y;
    let lo = ptop as f64 + 8.0;
    let hi = (pbot as f64 - 20.0).max(lo + gap * want.len() as f64 * 0.5);
    let placed = place_labels(&want, gap, lo, hi.max(lo));
    for ((i, ex, ey), y) in label_wish.iter().zip(placed) {
        let l = &lines[*i];
        let color = colors[*i];
        let y = y.round() as i32;
        root.draw(&PathElement::new(
            vec![(*ex + 6, *ey), (lx - 26, y)],
            color.mix(0.45).stroke_width(1),
        ))
        .map_err(err)?;
        let sample = vec![(lx - 24, y), (lx - 4, y)];
        match l.kind {
            LineKind::Algorithm => root.draw(&PathElement::new(sample, line_style(l, color))),
            LineKind::Library => {
                root.draw(&DashedPathElement::new(sample, 6, 3, line_style(l, color)))
            }
            LineKind::LibraryForced => {
                root.draw(&DashedPathElement::new(sample, 3, 3, line_style(l, color)))
            }
        }
        .map_err(err)?;
        with_marker!(marker_of(p.collective, l), color, |mk| root
            .draw(&mk((lx - 14, y))))
        .map_err(err)?;
        root.draw(&Text::new(
            l.name.clone(),
            (lx + 2, y - 13),
            font(15).color(&color),
        ))
        .map_err(err)?;
        let detail = detail(l);
        root.draw(&Text::new(
            detail,
            (lx + 2, y + 4),
            font(11).color(&RGBColor(80, 80, 80)),
        ))
        .map_err(err)?;
    }
    Ok(())
}

/// The second line of a label: the variant that won most sizes.
fn detail(l: &Line) -> String {
    let n = l.points.len();
    match (l.kind, l.main_variant()) {
        (LineKind::Library, _) => "the library's own call".into(),
        (_, Some((v, c))) => {
            let v = v
                .strip_prefix(&format!("{}:", l.family))
                .or_else(|| v.strip_prefix(&l.family))
                .unwrap_or(v)
                .trim();
            let v: String = if v.chars().count() > 34 {
                format!("{}...", v.chars().take(33).collect::<String>())
            } else {
                v.to_string()
            };
            if c == n {
                v.to_string()
            } else {
                format!("{v} at {c}/{n} sizes")
            }
        }
        _ => String::new(),
    }
}

/// Black on light colours, white on dark ones.
fn text_color_on(c: RGBColor) -> RGBColor {
    let l = 0.299 * c.0 as f64 + 0.587 * c.1 as f64 + 0.114 * c.2 as f64;
    if l > 140.0 {
        BLACK
    } else {
        WHITE
    }
}

/// A colour at a saturation: mixed with white.
fn tint(c: RGBColor, s: f64) -> RGBColor {
    let m = |x: u8| (255.0 - (255.0 - x as f64) * s).round() as u8;
    RGBColor(m(c.0), m(c.1), m(c.2))
}

/// Draws the decision map to a file, .svg or .png.
pub fn draw_map(path: &Path, m: &DecisionMap, title: &str) -> Res {
    let size = map_size(m);
    to_file(
        path,
        size,
        |r| render_map(r, m, title),
        |r| render_map(r, m, title),
    )
}

/// The decision map as SVG text.
pub fn map_svg(m: &DecisionMap, title: &str) -> anyhow::Result<String> {
    let _ = register_font("sans-serif", FontStyle::Normal, FONT);
    let mut s = String::new();
    {
        let root = SVGBackend::with_string(&mut s, map_size(m)).into_drawing_area();
        render_map(&root, m, title)?;
        root.present().map_err(err)?;
    }
    Ok(s)
}

fn row_height(m: &DecisionMap) -> u32 {
    (720 / m.rows.len().max(1) as u32).clamp(3, 34)
}

fn map_size(m: &DecisionMap) -> (u32, u32) {
    let colls = m
        .families
        .iter()
        .map(|f| f.0 as usize + 1)
        .max()
        .unwrap_or(1) as u32;
    let legend = 60 + 24 * m.families.len() as u32 + 18 * colls + 190;
    let h = (110 + row_height(m) * m.rows.len().max(1) as u32).max(legend);
    (1400, h.max(360))
}

fn render_map<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    m: &DecisionMap,
    title: &str,
) -> Res
where
    DB::ErrorType: 'static,
{
    let _ = register_font("sans-serif", FontStyle::Normal, FONT);
    root.fill(&WHITE).map_err(err)?;
    if m.rows.is_empty() {
        anyhow::bail!("the table has no rules to draw");
    }
    let (w, _) = root.dim_in_pixel();
    let area = root.titled(title, font(20)).map_err(err)?;
    let legend_w = 300;
    let (left, _) = area.split_horizontally(w - legend_w);
    let n = m.rows.len();
    let rh = row_height(m);
    // Row labels: every row when they fit, else every k-th.
    let every = 16u32.div_ceil(rh).max(1) as usize;
    let both = m.rows.iter().any(|r| r.collective != m.rows[0].collective);
    let labels: Vec<String> = m
        .rows
        .iter()
        .map(|r| {
            format!(
                "{}{} ranks = {}x{}",
                if both {
                    format!("{} ", r.collective)
                } else {
                    String::new()
                },
                r.key.ranks,
                r.key.nodes,
                r.key.ppn
            )
        })
        .collect();
    let xr = (m.min_bytes.max(1) as f64 / 1.5)..(m.max_bytes as f64 * 1.5);
    let xticks = size_ticks(xr.start, xr.end);
    let mut chart = ChartBuilder::on(&left)
        .margin_top(6)
        .margin_right(12)
        .margin_left(8)
        .x_label_area_size(44)
        .y_label_area_size(if both { 210 } else { 170 })
        .build_cartesian_2d(
            xr.clone().log_scale().with_key_points(xticks),
            0f64..n as f64,
        )
        .map_err(err)?;
    // Row i is drawn from the top: y = n - 1 - i.
    let yrow = |i: usize| (n - 1 - i) as f64;
    chart
        .configure_mesh()
        .disable_mesh()
        .disable_y_axis()
        .x_label_formatter(&|x| fmt_bytes(*x))
        .x_desc("message size (each cell: a rule's size range)")
        .label_style(font(if rh >= 14 { 13 } else { 11 }))
        .axis_desc_style(font(14))
        .draw()
        .map_err(err)?;
    for (i, row) in m.rows.iter().enumerate() {
        let (y0, y1) = (yrow(i) + 0.06, yrow(i) + 0.94);
        if i % every == 0 {
            let style = font(if rh >= 14 { 13 } else { 11 });
            let (lx, ly) = chart.backend_coord(&(xr.start, yrow(i) + 0.5));
            let (tw, th) = root.estimate_text_size(&labels[i], &style).map_err(err)?;
            root.draw(&Text::new(
                labels[i].clone(),
                (lx - tw as i32 - 8, ly - th as i32 / 2),
                style,
            ))
            .map_err(err)?;
        }
        for s in &row.cells {
            let x0 = (s.from.max(1) as f64).max(xr.start);
            let x0 = if s.from == 0 { xr.start } else { x0 };
            let x1 = s.to.map(|t| (t as f64 + 1.0).min(xr.end)).unwrap_or(xr.end);
            if x1 <= x0 {
                continue;
            }
            let base = color_of(row.collective, &s.family);
            let sat = if m.has_margins {
                saturation(s.margin, FULL_MARGIN)
            } else {
                1.0
            };
            let fill = tint(base, sat);
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(x0, y0), (x1, y1)],
                    fill.filled(),
                )))
                .map_err(err)?;
            let (px0, py0) = chart.backend_coord(&(x0, y0));
            let (px1, py1) = chart.backend_coord(&(x1, y1));
            let (top, bot) = (py0.min(py1), py0.max(py1));
            if s.hierarchical {
                // Hatching: diagonal strokes clipped to the cell.
                let st = ShapeStyle::from(&text_color_on(fill).mix(0.55)).stroke_width(1);
                let step = 7;
                let mut c = px0 - (bot - top);
                while c < px1 {
                    // The line x = c + (bot - y), for y in top..bot, clipped.
                    let (mut a, mut b) = ((c, bot), (c + (bot - top), top));
                    if a.0 < px0 {
                        a = (px0, bot - (px0 - c));
                    }
                    if b.0 > px1 {
                        b = (px1, top + (b.0 - px1));
                    }
                    if a.0 <= b.0 {
                        root.draw(&PathElement::new(vec![a, b], st)).map_err(err)?;
                    }
                    c += step;
                }
            }
            root.draw(&Rectangle::new(
                [(px0, top), (px1, bot)],
                WHITE.stroke_width(1),
            ))
            .map_err(err)?;
            if rh >= 14 {
                let text = s.family.clone();
                let tc = text_color_on(fill);
                let style = font(11).color(&tc);
                let (tw, th) = root.estimate_text_size(&text, &style).map_err(err)?;
                if (px1 - px0) as u32 > tw + 6 {
                    root.draw(&Text::new(
                        text,
                        (
                            (px0 + px1) / 2 - tw as i32 / 2,
                            (top + bot) / 2 - th as i32 / 2,
                        ),
                        style,
                    ))
                    .map_err(err)?;
                }
            }
        }
        // A rule between collectives.
        if i > 0 && row.collective != m.rows[i - 1].collective {
            chart
                .draw_series(std::iter::once(PathElement::new(
                    vec![(xr.start, yrow(i) + 1.0), (xr.end, yrow(i) + 1.0)],
                    BLACK.stroke_width(2),
                )))
                .map_err(err)?;
        }
    }

    // Legend: families, saturation, hatching.
    let lx = (w - legend_w) as i32 + 16;
    let mut y = 50;
    let head = font(15);
    root.draw(&Text::new("chosen algorithm", (lx, y), head.clone()))
        .map_err(err)?;
    y += 26;
    let mut last_coll = None;
    for (c, f) in &m.families {
        if both && last_coll != Some(*c) {
            root.draw(&Text::new(
                c.to_string(),
                (lx, y),
                font(12).color(&RGBColor(90, 90, 90)),
            ))
            .map_err(err)?;
            y += 18;
            last_coll = Some(*c);
        }
        let col = color_of(*c, f);
        root.draw(&Rectangle::new([(lx, y), (lx + 26, y + 16)], col.filled()))
            .map_err(err)?;
        root.draw(&Text::new(f.clone(), (lx + 34, y + 1), font(14)))
            .map_err(err)?;
        y += 24;
    }
    y += 14;
    if m.has_margins {
        root.draw(&Text::new(
            if m.has_evidence {
                "gain over the library (95% interval's low end; library's own: full)"
            } else {
                "margin over the runner-up"
            },
            (lx, y),
            head.clone(),
        ))
        .map_err(err)?;
        y += 24;
        let base = m
            .families
            .first()
            .map(|(c, f)| color_of(*c, f))
            .unwrap_or(PALETTE[0]);
        for (k, mg) in [0.0, 0.05, 0.1, FULL_MARGIN].iter().enumerate() {
            let x = lx + k as i32 * 64;
            root.draw(&Rectangle::new(
                [(x, y), (x + 56, y + 16)],
                tint(base, saturation(Some(*mg), FULL_MARGIN)).filled(),
            ))
            .map_err(err)?;
            let t = if k == 3 {
                format!(">={:.0}%", mg * 100.0)
            } else {
                format!("{:.0}%", mg * 100.0)
            };
            root.draw(&Text::new(t, (x + 4, y + 20), font(12)))
                .map_err(err)?;
        }
        y += 46;
    } else {
        root.draw(&Text::new(
            "(no margins in this table: one shade)",
            (lx, y),
            font(12),
        ))
        .map_err(err)?;
        y += 24;
    }
    // Hatch sample.
    let st = ShapeStyle::from(&BLACK.mix(0.55)).stroke_width(1);
    root.draw(&Rectangle::new(
        [(lx, y), (lx + 26, y + 18)],
        RGBColor(220, 220, 220).filled(),
    ))
    .map_err(err)?;
    for k in (0..26).step_by(7) {
        root.draw(&PathElement::new(
            vec![
                (lx + k, y + 18),
                (lx + (k + 18).min(26), y + 18 - (18.min(26 - k))),
            ],
            st,
        ))
        .map_err(err)?;
    }
    root.draw(&Text::new(
        "hatched: hierarchical (node-aware)",
        (lx + 34, y + 2),
        font(13),
    ))
    .map_err(err)?;
    Ok(())
}

/// The points of line `i` that get a marker: about ten per line, offset by
/// the line's index so that lines sharing points do not hide each other's
/// markers, and always the last.
fn marked_points(pts: &[(f64, f64)], i: usize) -> Vec<(f64, f64)> {
    let step = (pts.len() / 10).max(1);
    pts.iter()
        .enumerate()
        .filter(|(j, _)| (j + i) % step == 0 || *j + 1 == pts.len())
        .map(|(_, &pt)| pt)
        .collect()
}

/// The time plot's title: the communicator, the call pattern where it is
/// not one call without overlap, and where the samples come from (`plot`
/// and the HTML report alike).
pub fn plot_title(ctx: &SeriesKey, samples: &[Sample]) -> String {
    format!(
        "{} on {} ranks ({} node(s) x {}){}{}",
        ctx.collective,
        ctx.ranks,
        ctx.nodes,
        ctx.ppn,
        if ctx.iterations != 1 || ctx.overlap != "0" {
            format!(", {}, overlap {} us", ctx.calls(), ctx.overlap)
        } else {
            String::new()
        },
        samples
            .first()
            .map(|s| format!(": {} on {} ({})", s.mpi, s.host, s.source))
            .unwrap_or_default()
    )
}

/// The decision map's title: the table's file, library, host and cluster.
pub fn map_title(t: &Table, path: &Path) -> String {
    let p = &t.provenance;
    format!(
        "{}: {} on {}{} ({})",
        path.file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default(),
        p.mpi,
        p.host,
        p.cluster
            .as_deref()
            .map(|c| format!(", {}", clip(c, 40)))
            .unwrap_or_default(),
        p.source
    )
}

/// At most `n` characters, cut at a word and marked.
fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        return s.to_string();
    }
    let head: String = s.chars().take(n).collect();
    let cut = head
        .rfind([' ', ',', ';'])
        .filter(|&i| i > n / 2)
        .unwrap_or(head.len());
    format!("{}...", head[..cut].trim_end_matches([' ', ',', ';']))
}

#[cfg(test)]
mod tests {
    use super::*;
    use colltune_core::figure::{decision_map, lines, Selection};
    use colltune_core::record::sample;
    use colltune_core::report::series;

    fn data() -> Vec<Line> {
        let mut s = Vec::new();
        for run in 1..=2 {
            for (b, lin, pipe) in [
                (1, 1.0, 3.0),
                (1024, 2.0, 4.0),
                (65536, 60.0, 30.0),
                (1 << 20, 900.0, 400.0),
            ] {
                s.push(sample(
                    "linear",
                    "blocking",
                    b,
                    run,
                    lin * (1.0 + run as f64 * 0.05),
                ));
                s.push(sample(
                    "pipeline:segment=65536",
                    "nonblocking",
                    b,
                    run,
                    pipe,
                ));
                s.push(sample("mpi", "library", b, run, pipe * 1.1));
            }
        }
        let all = series(&s);
        let ctx = all.keys().next().unwrap().context();
        lines(&all, &ctx, &Selection::default()).unwrap()
    }

    #[test]
    fn plots_in_both_formats_and_refuses_others() {
        let ls = data();
        let dir = std::env::temp_dir();
        for panels in [Panels::Both, Panels::Time, Panels::Relative] {
            let p = PlotInput {
                title: "test".into(),
                collective: Collective::Bcast,
                lines: &ls,
                regimes: None,
                panels,
            };
            for ext in ["svg", "png"] {
                let out = dir.join(format!(
                    "colltune-plot-test-{}-{panels:?}.{ext}",
                    std::process::id()
                ));
                draw_plot(&out, &p).unwrap();
                let bytes = std::fs::read(&out).unwrap();
                assert!(bytes.len() > 1000, "{ext} too small");
                if ext == "svg" {
                    let t = String::from_utf8(bytes).unwrap();
                    assert!(
                        t.contains("<svg") && t.contains("linear") && t.contains("MPI library")
                    );
                    assert!(
                        t.contains("fastest"),
                        "the strip of measured winners is labelled"
                    );
                } else {
                    assert_eq!(&bytes[1..4], b"PNG");
                }
                let _ = std::fs::remove_file(&out);
            }
            assert!(draw_plot(&dir.join("x.jpg"), &p).is_err());
        }
        let svg = plot_svg(&PlotInput {
            title: "t".into(),
            collective: Collective::Bcast,
            lines: &[],
            regimes: None,
            panels: Panels::Both,
        });
        assert!(svg.unwrap_err().to_string().contains("nothing to plot"));
    }

    #[test]
    fn size_ticks_are_few_powers_of_two() {
        let t = size_ticks(1.0, 4.0 * 1024.0 * 1024.0);
        assert!(t.len() <= 12 && t.len() >= 4, "{t:?}");
        assert!(t.iter().all(|x| x.log2().fract() == 0.0));
        assert_eq!(fmt_bytes(1024.0), "1 KiB");
        let t = time_ticks(0.5, 20000.0);
        assert!(t.len() <= 8, "{t:?}");
    }

    #[test]
    fn a_map_draws() {
        let t = colltune_core::table::load_str(
            "schema: 1\nprovenance:\n  host: h\n  mpi: m\n  date: d\n  command: c\n  colltune: x\n  source: measured\n  sweep:\n    mode: built\n\
             bcast:\n- ranks: 8\n  ppn: 4\n  nodes: 2\n  rules:\n  - {min_bytes: 0, max_bytes: 4095, algorithm: binomial, execution: blocking, margin: 0.5}\n  - {min_bytes: 4096, algorithm: hierarchical, execution: nonblocking, margin: 0.01}\n",
        )
        .unwrap();
        let svg = map_svg(&decision_map(&t), "map").unwrap();
        assert!(
            svg.contains("8 ranks = 2x4") && svg.contains("hierarchical"),
            "{svg}"
        );
    }
}
