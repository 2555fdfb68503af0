//! Pictures, drawn with plotters from what `colltune_core::measure::figure` shapes:
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
//!
//! ```text
//! mod.rs   what callers name: the inputs, titles, files and SVG text
//! time.rs  the time plot, one function per panel
//! map.rs   the decision map: rows of cells, the legend
//! style.rs colours, markers, dashes; axes.rs ticks and their labels
//! ```

mod axes;
mod map;
mod style;
mod time;

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::{register_font, FontStyle};

use colltune_algorithms::Collective;
use colltune_core::measure::figure::{Line, Stretch};
use colltune_core::measure::record::Sample;
use colltune_core::measure::report::SeriesKey;
use colltune_core::tables::table::Table;

pub use map::{draw_map, map_svg};
pub use time::{draw_plot, plot_svg};

static FONT: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");

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

type Res = anyhow::Result<()>;

fn err<E: std::fmt::Debug>(x: E) -> anyhow::Error {
    anyhow::anyhow!("drawing: {x:?}")
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
    use super::axes::{fmt_bytes, size_ticks, time_ticks};
    use super::*;
    use colltune_core::measure::figure::{decision_map, lines, Selection};
    use colltune_core::measure::record::sample;
    use colltune_core::measure::report::series;

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
        let t = colltune_core::tables::table::load_str(
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
