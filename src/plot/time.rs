//! The time plot: time against message size, one line per family, then the
//! strips and the relative panel, the labels in a column at the right.
//!
//! ```text
//! +-----------------------------------+-----------+
//! | time per call (log) vs size (log) | -- label  |
//! +-----------------------------------+ -- label  |
//! | fastest | table      (the strips) |           |
//! +-----------------------------------+           |
//! | time / best at each size          |           |
//! +-----------------------------------+-----------+
//! ```
//!
//! Each panel builds its own chart over the same size axis ([`Frame`]); the
//! panels that hold the lines' ends say where each line wants its label,
//! and the labels are placed last, apart.

use std::ops::Range;
use std::path::Path;

use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::{register_font, FontStyle};

use colltune_core::measure::figure::{
    place_labels, relative, sizes, winners, Line, LineKind, Stretch,
};

use super::axes::{fmt_bytes, fmt_us, size_ticks, time_ticks};
use super::style::{
    color_of, draw_path, line_style, marked_points, marker_of, text_color_on, with_marker, FORCED,
    LIBRARY,
};
use super::{err, font, to_file, Panels, PlotInput, Res, FONT};

/// The width of the label column at the right.
const LEGEND_W: u32 = 330;
/// The width of the time axis' labels, the same in every panel.
const Y_AREA: u32 = 84;

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

/// What the panels share: the size axis, each line's colour, the sizes.
struct Frame<'a> {
    p: &'a PlotInput<'a>,
    lines: &'a [Line],
    all_sizes: Vec<u64>,
    /// The smallest size (at least 1).
    bmin: f64,
    xr: Range<f64>,
    xticks: Vec<f64>,
    colors: Vec<RGBColor>,
    /// Rows in the strips: the measured fastest, and the table's regimes
    /// where there is a table.
    strip_rows: u32,
}

/// Where a line ends on the screen (line, x px, y px): its label is
/// wished at that height.
type Wish = (usize, i32, i32);

impl<'a> Frame<'a> {
    fn new(p: &'a PlotInput<'a>, all_sizes: Vec<u64>) -> Frame<'a> {
        let lines = p.lines;
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
        Frame {
            p,
            lines,
            all_sizes,
            bmin,
            xr,
            xticks,
            colors,
            strip_rows,
        }
    }
}

fn render_plot<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, p: &PlotInput) -> Res
where
    DB::ErrorType: 'static,
{
    let _ = register_font("sans-serif", FontStyle::Normal, FONT);
    root.fill(&WHITE).map_err(err)?;
    let all_sizes = sizes(p.lines);
    if all_sizes.is_empty() {
        anyhow::bail!("nothing to plot: no line has a point");
    }
    let (w, _h) = root.dim_in_pixel();
    let area = root.titled(&p.title, font(22)).map_err(err)?;
    let (left, _right) = area.split_horizontally(w - LEGEND_W);
    let f = Frame::new(p, all_sizes);
    let strip_h = 30 * f.strip_rows + 12;
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

    let mut wishes: Vec<Wish> = Vec::new();
    let mut panel_y = (0i32, 0i32);
    if let Some(ta) = &time_area {
        panel_y = time_panel(ta, &f, &mut wishes)?;
    }
    strips(root, &strip_area, &f, time_area.is_none())?;
    if p.panels != Panels::Time {
        let ends = time_area.is_none().then_some(&mut wishes);
        if let Some(y) = relative_panel(&rel_area, &f, ends)? {
            panel_y = y;
        }
    }
    labels(root, &f, (w - LEGEND_W) as i32 + 34, &wishes, panel_y)
}

/// Time against size: run bands, then each line with its markers. Wishes
/// a label where each line ends; returns the panel's top and bottom (px).
fn time_panel<DB: DrawingBackend>(
    ta: &DrawingArea<DB, Shift>,
    f: &Frame,
    wishes: &mut Vec<Wish>,
) -> anyhow::Result<(i32, i32)>
where
    DB::ErrorType: 'static,
{
    let lines = f.lines;
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
        .y_label_area_size(Y_AREA)
        .build_cartesian_2d(
            f.xr.clone().log_scale().with_key_points(f.xticks.clone()),
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
        let color = f.colors[i];
        if spread && l.points.len() > 1 {
            let edges: Vec<_> = l.points.iter().map(|(&b, pt)| (b, pt.lo, pt.hi)).collect();
            let band = band(&edges);
            chart
                .draw_series(std::iter::once(Polygon::new(
                    band,
                    color.mix(0.12).filled(),
                )))
                .map_err(err)?;
        }
    }
    for (i, l) in lines.iter().enumerate() {
        let pts = l.points.iter().map(|(&b, pt)| (b.max(1) as f64, pt.median));
        if let Some((x, y)) = draw_line(&mut chart, f, i, pts.collect())? {
            wishes.push((i, x, y));
        }
    }
    Ok((
        chart.backend_coord(&(f.bmin, yr.end)).1,
        chart.backend_coord(&(f.bmin, yr.start)).1,
    ))
}

/// A band's outline from its `edges` (size, low, high): along the high
/// edge, then back along the low one.
fn band(edges: &[(u64, f64, f64)]) -> Vec<(f64, f64)> {
    let x = |b: u64| b.max(1) as f64;
    let high = edges.iter().map(|&(b, _, hi)| (x(b), hi));
    high.chain(edges.iter().rev().map(|&(b, lo, _)| (x(b), lo)))
        .collect()
}

/// Draws line `i` through `pts`, with its markers; where it ends, in
/// pixels (where its label is wished).
fn draw_line<DB, X, Y>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<X, Y>>,
    f: &Frame,
    i: usize,
    pts: Vec<(f64, f64)>,
) -> anyhow::Result<Option<(i32, i32)>>
where
    DB: DrawingBackend,
    DB::ErrorType: 'static,
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    let (l, color) = (&f.lines[i], f.colors[i]);
    let end = pts.last().copied();
    draw_path!(chart, l, pts.clone(), line_style(l, color)).map_err(err)?;
    let shown = marked_points(&pts, i);
    with_marker!(marker_of(f.p.collective, l), color, |mk| chart
        .draw_series(shown.iter().map(|&pt| mk(pt)))
        .map(|_| ()))
    .map_err(err)?;
    Ok(end.map(|p| chart.backend_coord(&p)))
}

/// One strip's row: its position and its stretches (from, to, what).
type Strip = (f64, Vec<(f64, f64, Stretch)>);

/// The strips' rows: the measured fastest (each size's cell reaches
/// half-way, in log space, to its neighbours), then the table's regimes.
fn strip_rows(f: &Frame) -> Vec<Strip> {
    let (all_sizes, xr) = (&f.all_sizes, &f.xr);
    let mut strips: Vec<Strip> = Vec::new();
    let mid = |a: u64, b: u64| ((a.max(1) as f64) * (b.max(1) as f64)).sqrt();
    let mut cells = Vec::new();
    for s in &winners(f.lines) {
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
    if let Some(reg) = &f.p.regimes {
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
    strips
}

/// The strips: the measured fastest and the table's regimes, each cell in
/// its family's colour with its name inside where it fits; the size axis
/// under them when there is no time panel above.
fn strips<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    strip_area: &DrawingArea<DB, Shift>,
    f: &Frame,
    with_axis: bool,
) -> Res
where
    DB::ErrorType: 'static,
{
    let (lines, xr) = (f.lines, &f.xr);
    let rows = f.strip_rows as f64;
    let mut chart = ChartBuilder::on(strip_area)
        .margin_top(6)
        .margin_right(12)
        .margin_left(8)
        .x_label_area_size(if with_axis { 36 } else { 0 })
        .y_label_area_size(Y_AREA)
        .build_cartesian_2d(xr.clone().log_scale(), 0f64..rows)
        .map_err(err)?;
    let names = ["fastest", "table"];
    for (row, cells) in &strip_rows(f) {
        let y0 = *row + 0.12;
        let y1 = *row + 0.88;
        for (x0, x1, s) in cells {
            let kind = lines.iter().find(|l| l.name == s.label).map(|l| l.kind);
            let color = match kind {
                Some(LineKind::Library) => LIBRARY,
                Some(LineKind::LibraryForced) => FORCED,
                _ => color_of(f.p.collective, &s.family),
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
    if with_axis {
        chart
            .configure_mesh()
            .disable_mesh()
            .disable_y_axis()
            .x_label_formatter(&|x| fmt_bytes(*x))
            .label_style(font(14))
            .draw()
            .map_err(err)?;
    }
    Ok(())
}

/// Time relative to the best at each size, cut at a cap, the best's run
/// spread as a grey band around 1.0. Given `wishes` (no time panel above),
/// wishes the labels where the lines end and returns the panel's top and
/// bottom (px).
fn relative_panel<DB: DrawingBackend>(
    rel_area: &DrawingArea<DB, Shift>,
    f: &Frame,
    wishes: Option<&mut Vec<Wish>>,
) -> anyhow::Result<Option<(i32, i32)>>
where
    DB::ErrorType: 'static,
{
    let (lines, xr) = (f.lines, &f.xr);
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
    let mut chart = ChartBuilder::on(rel_area)
        .margin_top(6)
        .margin_right(12)
        .margin_left(8)
        .x_label_area_size(40)
        .y_label_area_size(Y_AREA)
        .build_cartesian_2d(
            xr.clone().log_scale().with_key_points(f.xticks.clone()),
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
        let edges: Vec<_> = (rel.band.iter())
            .map(|(&b, &(lo, hi))| (b, lo.max(0.97), hi.min(top)))
            .collect();
        let band = band(&edges);
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
    let mut wishes = wishes;
    for i in 0..lines.len() {
        let pts = rel.ratios[i]
            .iter()
            .map(|(&b, &r)| (b.max(1) as f64, r.min(cap)));
        let end = draw_line(&mut chart, f, i, pts.collect())?;
        if let (Some(w), Some((x, y))) = (wishes.as_deref_mut(), end) {
            w.push((i, x, y));
        }
    }
    Ok(wishes.is_some().then(|| {
        (
            chart.backend_coord(&(f.bmin, top)).1,
            chart.backend_coord(&(f.bmin, 0.97)).1,
        )
    }))
}

/// The labels outside the data, at column `lx`, beside where each line
/// ends and pushed apart within the panel (`panel_y`: its top and bottom).
fn labels<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    f: &Frame,
    lx: i32,
    wishes: &[Wish],
    panel_y: (i32, i32),
) -> Res
where
    DB::ErrorType: 'static,
{
    let gap = 34.0;
    let want: Vec<f64> = wishes.iter().map(|w| w.2 as f64).collect();
    let (ptop, pbot) = panel_y;
    let lo = ptop as f64 + 8.0;
    let hi = (pbot as f64 - 20.0).max(lo + gap * want.len() as f64 * 0.5);
    let placed = place_labels(&want, gap, lo, hi.max(lo));
    for ((i, ex, ey), y) in wishes.iter().zip(placed) {
        let l = &f.lines[*i];
        let color = f.colors[*i];
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
        with_marker!(marker_of(f.p.collective, l), color, |mk| root
            .draw(&mk((lx - 14, y))))
        .map_err(err)?;
        root.draw(&Text::new(
            l.name.clone(),
            (lx + 2, y - 13),
            font(15).color(&color),
        ))
        .map_err(err)?;
        root.draw(&Text::new(
            detail(l),
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
