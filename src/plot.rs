//! `colltune plot`: time and bandwidth against message size, log-log, one
//! line per algorithm with its min-max band over runs (the PVFS2 post's
//! high / low / average), the MPI library's own collective dashed, the
//! table's choice marked, crossovers and knees labelled. SVG or PNG; the
//! font (DejaVu Sans) is built into the binary, so no system font is needed.

use std::collections::BTreeMap;
use std::path::Path;

use plotters::prelude::*;
use plotters::style::{register_font, FontStyle};

use colltune_core::fit::{human_bytes, knees};
use colltune_core::report::{Series, SeriesKey};
use colltune_core::stats::Summary;
use colltune_core::table::{CommKey, Table};

static FONT: &[u8] = include_bytes!("../assets/fonts/DejaVuSans.ttf");

/// One plotted line: an algorithm (its best execution per size) or the library.
#[derive(Clone, Debug)]
pub struct Line {
    pub name: String,
    pub library: bool,
    /// bytes -> (median, low run median, high run median, execution)
    pub points: BTreeMap<u64, (f64, f64, f64, String)>,
}

/// Lines for one context (collective, communicator, method).
pub fn lines(all: &Series, ctx: &SeriesKey) -> Vec<Line> {
    let mut by: BTreeMap<String, Line> = BTreeMap::new();
    for (k, pts) in all.iter().filter(|(k, _)| k.context() == *ctx) {
        if k.is_ompi_tuned() {
            continue;
        }
        let line = by.entry(k.spec.clone()).or_insert_with(|| Line {
            name: if k.is_native() {
                "MPI library".into()
            } else {
                k.spec.clone()
            },
            library: k.is_library(),
            points: BTreeMap::new(),
        });
        for (&b, s) in pts {
            let (lo, hi) = band(s);
            let better = line.points.get(&b).is_none_or(|p| s.median < p.0);
            if better {
                line.points
                    .insert(b, (s.median, lo, hi, k.execution.clone()));
            }
        }
    }
    by.into_values().collect()
}

fn band(s: &Summary) -> (f64, f64) {
    if s.run_medians.is_empty() {
        (s.median, s.median)
    } else {
        s.run_range()
    }
}

/// Where the fastest of our lines changes: (bytes before, bytes after, from, to).
pub fn crossovers(lines: &[Line]) -> Vec<(u64, u64, String, String)> {
    let sizes: Vec<u64> = {
        let mut v: Vec<u64> = lines
            .iter()
            .flat_map(|l| l.points.keys().copied())
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    let best = |b: u64| {
        lines
            .iter()
            .filter(|l| !l.library)
            .filter_map(|l| l.points.get(&b).map(|p| (&l.name, p.0)))
            .min_by(|x, y| x.1.total_cmp(&y.1))
            .map(|x| x.0.clone())
    };
    // Winners that hold for one size only are noise between near-ties:
    // label a crossover only where the new winner holds for two sizes
    // (or to the last one).
    let winners: Vec<(u64, String)> = sizes
        .iter()
        .filter_map(|&b| best(b).map(|w| (b, w)))
        .collect();
    let mut out = Vec::new();
    let mut current: Option<(u64, String)> = winners.first().cloned();
    for (i, (b, w)) in winners.iter().enumerate().skip(1) {
        let (cb, cw) = current.clone().expect("set");
        if *w != cw {
            let holds = winners.get(i + 1).is_none_or(|n| n.1 == *w);
            if holds {
                out.push((winners[i - 1].0.max(cb), *b, cw, w.clone()));
                current = Some((*b, w.clone()));
            }
        }
    }
    out
}

fn short(name: &str) -> String {
    name.replace(":segment=0", "").replace(",segment=0", "")
}

/// Draws the plot. `table` marks its choice on the lines.
pub fn draw(
    path: &Path,
    title: &str,
    lines: &[Line],
    table: Option<(&Table, CommKey, colltune_algorithms::Collective)>,
) -> anyhow::Result<()> {
    let _ = register_font("sans-serif", FontStyle::Normal, FONT);
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(|e| e.to_ascii_lowercase())
        .unwrap_or_default();
    let size = (1400u32, 1100u32);
    match ext.as_str() {
        "svg" => {
            let root = SVGBackend::new(path, size).into_drawing_area();
            render(&root, title, lines, table)?;
            root.present()
                .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        }
        "png" => {
            let root = BitMapBackend::new(path, size).into_drawing_area();
            render(&root, title, lines, table)?;
            root.present()
                .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        }
        other => anyhow::bail!(
            "{}: unknown image type `{other}`: name the file .svg or .png",
            path.display()
        ),
    }
    Ok(())
}

fn render<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    lines: &[Line],
    table: Option<(&Table, CommKey, colltune_algorithms::Collective)>,
) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    let e = |x: DrawingAreaErrorKind<DB::ErrorType>| anyhow::anyhow!("drawing: {x:?}");
    root.fill(&WHITE).map_err(e)?;
    let (top, bottom) = root
        .titled(title, ("sans-serif", 26))
        .map_err(e)?
        .split_vertically(560);
    let all = lines.iter().flat_map(|l| l.points.iter());
    let (mut bmin, mut bmax, mut tmin, mut tmax, mut wmin, mut wmax) =
        (u64::MAX, 1u64, f64::INFINITY, 0f64, f64::INFINITY, 0f64);
    for (&b, p) in all {
        let b1 = b.max(1);
        bmin = bmin.min(b1);
        bmax = bmax.max(b1);
        tmin = tmin.min(p.1.max(1e-3));
        tmax = tmax.max(p.2);
        let bw = b1 as f64 / p.0;
        wmin = wmin.min(bw);
        wmax = wmax.max(bw);
    }
    if bmin == u64::MAX {
        anyhow::bail!("nothing to plot");
    }
    let xr = (bmin as f64 * 0.8)..(bmax as f64 * 1.25);
    let chosen = |l: &Line, b: u64| -> bool {
        table.is_some_and(|(t, key, c)| {
            t.lookup(c, key, b).is_some_and(|r| {
                !l.library
                    && short(&r.label()).starts_with(&short(&l.name))
                    && l.points.get(&b).is_some_and(|p| r.execution == p.3)
            })
        })
    };
    const PALETTE: [RGBColor; 12] = [
        RGBColor(31, 119, 180),
        RGBColor(255, 127, 14),
        RGBColor(44, 160, 44),
        RGBColor(214, 39, 40),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(127, 127, 127),
        RGBColor(188, 189, 34),
        RGBColor(23, 190, 207),
        RGBColor(0, 0, 128),
        RGBColor(128, 64, 0),
    ];
    let colors: Vec<RGBColor> = (0..lines.len())
        .map(|i| PALETTE[i % PALETTE.len()])
        .collect();

    // Time against size.
    let mut chart = ChartBuilder::on(&top)
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(
            xr.clone().log_scale(),
            (tmin * 0.8..tmax * 1.25).log_scale(),
        )
        .map_err(e)?;
    chart
        .configure_mesh()
        .x_desc("message size (bytes)")
        .y_desc("time per call (us), median; band: min-max of run medians")
        .x_label_formatter(&|x| human_bytes(*x as u64))
        .label_style(("sans-serif", 15))
        .draw()
        .map_err(e)?;
    for (i, l) in lines.iter().enumerate() {
        let color = if l.library { BLACK } else { colors[i] };
        let band_pts: Vec<(f64, f64)> = l
            .points
            .iter()
            .map(|(&b, p)| (b.max(1) as f64, p.2))
            .chain(l.points.iter().rev().map(|(&b, p)| (b.max(1) as f64, p.1)))
            .collect();
        chart
            .draw_series(std::iter::once(Polygon::new(
                band_pts,
                color.mix(0.15).filled(),
            )))
            .map_err(e)?;
        let pts: Vec<(f64, f64)> = l
            .points
            .iter()
            .map(|(&b, p)| (b.max(1) as f64, p.0))
            .collect();
        let style = if l.library {
            ShapeStyle::from(&BLACK).stroke_width(3)
        } else {
            ShapeStyle::from(&color).stroke_width(2)
        };
        let series: Box<dyn Iterator<Item = _>> = if l.library {
            // Dashed: short segments.
            Box::new(
                pts.windows(2)
                    .flat_map(|w| dashes(w[0], w[1]))
                    .map(move |seg| PathElement::new(seg, style)),
            )
        } else {
            Box::new(std::iter::once(PathElement::new(pts.clone(), style)))
        };
        chart
            .draw_series(series)
            .map_err(e)?
            .label(short(&l.name))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
        chart
            .draw_series(
                l.points
                    .iter()
                    .filter(|(&b, _)| chosen(l, b))
                    .map(|(&b, p)| {
                        Circle::new((b.max(1) as f64, p.0), 6, ShapeStyle::from(&color).filled())
                    }),
            )
            .map_err(e)?;
    }
    for (a, b, from, to) in crossovers(lines) {
        let x = ((a.max(1) as f64) * (b as f64)).sqrt();
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(x, tmin * 0.8), (x, tmax * 1.2)],
                ShapeStyle::from(&BLACK.mix(0.3)).stroke_width(1),
            )))
            .map_err(e)?;
        chart
            .draw_series(std::iter::once(Text::new(
                format!("{} -> {}", short(&from), short(&to)),
                (x, tmax * 1.1),
                ("sans-serif", 12)
                    .into_font()
                    .transform(FontTransform::Rotate90),
            )))
            .map_err(e)?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 13))
        .draw()
        .map_err(e)?;

    // Bandwidth against size, with knees.
    let mut chart = ChartBuilder::on(&bottom)
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(
            xr.log_scale(),
            (wmin.max(1e-3) * 0.8..wmax * 1.3).log_scale(),
        )
        .map_err(e)?;
    chart
        .configure_mesh()
        .x_desc("message size (bytes)")
        .y_desc("bandwidth (MB/s), size / median time; filled: the table's choice")
        .x_label_formatter(&|x| human_bytes(*x as u64))
        .label_style(("sans-serif", 15))
        .draw()
        .map_err(e)?;
    for (i, l) in lines.iter().enumerate() {
        let color = if l.library { BLACK } else { colors[i] };
        let pts: Vec<(f64, f64)> = l
            .points
            .iter()
            .map(|(&b, p)| (b.max(1) as f64, b.max(1) as f64 / p.0))
            .collect();
        chart
            .draw_series(std::iter::once(PathElement::new(
                pts,
                ShapeStyle::from(&color).stroke_width(2),
            )))
            .map_err(e)?;
        chart
            .draw_series(
                l.points
                    .iter()
                    .filter(|(&b, _)| chosen(l, b))
                    .map(|(&b, p)| {
                        Circle::new(
                            (b.max(1) as f64, b.max(1) as f64 / p.0),
                            6,
                            ShapeStyle::from(&color).filled(),
                        )
                    }),
            )
            .map_err(e)?;
        // Knees: bandwidth drops by more than a quarter as size grows.
        let sums: BTreeMap<u64, Summary> = l
            .points
            .iter()
            .map(|(&b, p)| (b, colltune_core::stats::summarize(&[vec![p.0]])))
            .collect();
        for k in knees(&sums, 0.25) {
            let x = k.to as f64;
            chart
                .draw_series(std::iter::once(Text::new(
                    format!("knee {} ({})", human_bytes(k.to), short(&l.name)),
                    (x, k.bw_to),
                    ("sans-serif", 12).into_font().color(&color),
                )))
                .map_err(e)?;
        }
    }
    Ok(())
}

/// Dashes along a segment in log space (for the library's line).
fn dashes(a: (f64, f64), b: (f64, f64)) -> Vec<Vec<(f64, f64)>> {
    let (la, lb) = ((a.0.ln(), a.1.ln()), (b.0.ln(), b.1.ln()));
    let n = 6;
    (0..n)
        .step_by(2)
        .map(|i| {
            let f = |t: f64| {
                (
                    (la.0 + (lb.0 - la.0) * t).exp(),
                    (la.1 + (lb.1 - la.1) * t).exp(),
                )
            };
            vec![f(i as f64 / n as f64), f((i + 1) as f64 / n as f64)]
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use colltune_core::record::sample;
    use colltune_core::report::series;

    #[test]
    fn lines_crossovers_and_a_drawing() {
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
        let ls = lines(&all, &ctx);
        assert_eq!(ls.len(), 3);
        let x = crossovers(&ls);
        assert_eq!(x.len(), 1);
        assert_eq!((x[0].0, x[0].1), (1024, 65536));
        let lin = ls.iter().find(|l| l.name == "linear").unwrap();
        let p = &lin.points[&1];
        assert!(p.1 < p.2, "band from two runs");
        let dir = std::env::temp_dir();
        for ext in ["svg", "png"] {
            let out = dir.join(format!("colltune-plot-test-{}.{ext}", std::process::id()));
            draw(&out, "test", &ls, None).unwrap();
            let bytes = std::fs::read(&out).unwrap();
            assert!(bytes.len() > 1000, "{ext} too small");
            if ext == "svg" {
                let t = String::from_utf8(bytes).unwrap();
                assert!(t.contains("<svg") && t.contains("linear") && t.contains("MPI library"));
            } else {
                assert_eq!(&bytes[1..4], b"PNG");
            }
        }
        assert!(draw(&dir.join("x.jpg"), "t", &ls, None).is_err());
    }
}
