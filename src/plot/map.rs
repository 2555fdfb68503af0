//! The decision map: a whole table at a glance.
//!
//! ```text
//! 8 ranks = 2x4   | binomial |  pipeline  | hierarchical/// |  legend
//! 16 ranks = 4x4  | binomial |      hierarchical///          |
//!                 +----------+------------+-----------------+
//!                   message size (log) ->
//! ```
//!
//! Communicator shapes down, message size across, each cell a rule
//! coloured by the chosen family, paler where its margin is small
//! ([`FULL_MARGIN`] and above: full colour), hatched where node-aware.

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::{register_font, FontStyle};

use colltune_core::measure::figure::{saturation, DecisionMap};

use super::axes::{fmt_bytes, size_ticks};
use super::style::{color_of, text_color_on, tint, PALETTE};
use super::{err, font, to_file, Res, FONT, FULL_MARGIN};

/// The width of the legend at the right.
const LEGEND_W: u32 = 300;

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

/// Whether the map holds more than one collective (its rows then say
/// which, and its legend groups the families by collective).
fn mixed(m: &DecisionMap) -> bool {
    m.rows.iter().any(|r| r.collective != m.rows[0].collective)
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
    let (left, _) = area.split_horizontally(w - LEGEND_W);
    rows(root, &left, m)?;
    legend(root, (w - LEGEND_W) as i32 + 16, m)
}

/// The rows: each labelled (every row when the labels fit, else every
/// k-th), each rule a cell; a black rule between collectives.
fn rows<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    left: &DrawingArea<DB, Shift>,
    m: &DecisionMap,
) -> Res
where
    DB::ErrorType: 'static,
{
    let n = m.rows.len();
    let rh = row_height(m);
    let every = 16u32.div_ceil(rh).max(1) as usize;
    let both = mixed(m);
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
    let mut chart = ChartBuilder::on(left)
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
            let cell = Cell {
                x: (px0, px1),
                y: (py0.min(py1), py0.max(py1)),
                fill,
            };
            if s.hierarchical {
                cell.hatch(root)?;
            }
            cell.frame(root, (rh >= 14).then_some(s.family.as_str()))?;
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
    Ok(())
}

/// A drawn cell in pixels: left and right, top and bottom, its fill.
struct Cell {
    x: (i32, i32),
    y: (i32, i32),
    fill: RGBColor,
}

impl Cell {
    /// Hatching: diagonal strokes clipped to the cell.
    fn hatch<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Res
    where
        DB::ErrorType: 'static,
    {
        let ((px0, px1), (top, bot)) = (self.x, self.y);
        let st = ShapeStyle::from(&text_color_on(self.fill).mix(0.55)).stroke_width(1);
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
        Ok(())
    }

    /// The cell's white border, and `name` inside where given and where
    /// it fits.
    fn frame<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>, name: Option<&str>) -> Res
    where
        DB::ErrorType: 'static,
    {
        let ((px0, px1), (top, bot)) = (self.x, self.y);
        root.draw(&Rectangle::new(
            [(px0, top), (px1, bot)],
            WHITE.stroke_width(1),
        ))
        .map_err(err)?;
        if let Some(text) = name {
            let tc = text_color_on(self.fill);
            let style = font(11).color(&tc);
            let (tw, th) = root.estimate_text_size(text, &style).map_err(err)?;
            if (px1 - px0) as u32 > tw + 6 {
                root.draw(&Text::new(
                    text.to_string(),
                    (
                        (px0 + px1) / 2 - tw as i32 / 2,
                        (top + bot) / 2 - th as i32 / 2,
                    ),
                    style,
                ))
                .map_err(err)?;
            }
        }
        Ok(())
    }
}

/// The legend at column `lx`: the families (grouped by collective when
/// the map holds both), the saturation scale, the hatching.
fn legend<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, lx: i32, m: &DecisionMap) -> Res
where
    DB::ErrorType: 'static,
{
    let both = mixed(m);
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
        // Lines that fit the legend's width.
        let key: &[&str] = if m.has_evidence {
            &[
                "gain over the library",
                "(95% interval's low end;",
                "library's own: full)",
            ]
        } else {
            &["margin over the runner-up"]
        };
        for (i, line) in key.iter().enumerate() {
            let style = if i == 0 { head.clone() } else { font(12) };
            root.draw(&Text::new(*line, (lx, y), style)).map_err(err)?;
            y += if i == 0 { 20 } else { 16 };
        }
        y += 4;
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
