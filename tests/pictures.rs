//! The pictures, MPI-free: `plot` of a simulated CSV (family lines, the
//! library's line, the table's strip, the relative panel), `plot TABLE`
//! (the decision map), bad input for each, and `report --html` rendered by
//! a real browser (headless Chromium): the screenshot is not blank and the
//! page logs nothing to the console and fails to load nothing.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{colltune, run, scratch, skip, text};

fn ct(args: &[&str]) -> Output {
    run({
        let mut c = Command::new(colltune());
        c.args(args);
        c
    })
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A simulated CSV on 2 nodes x 2 with, as a bench with `--baseline mpi`
/// would have, a library line (here: the binomial tree's times at 1.2x,
/// so the test knows who wins), and a table built from it.
fn inputs(d: &Path) -> (PathBuf, PathBuf) {
    let sim = d.join("sim.csv");
    let o = ct(&[
        "simulate",
        "--model",
        "tuning-tables/models/test-ib.yaml",
        "--layout",
        "2x2",
        "--collective",
        "bcast",
        "--sizes",
        "1,1K,64K,1M",
        "--csv",
        s(&sim),
        "--summary-only",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let body = std::fs::read_to_string(&sim).unwrap();
    let mut out = body.clone();
    let time = body
        .lines()
        .next()
        .and_then(|h| h.split(',').position(|c| c == "time_us"))
        .expect("the CSV header names time_us");
    for line in body.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        if f[1] == "binomial" && f[3] == "blocking" {
            let mut g: Vec<String> = f.iter().map(|x| x.to_string()).collect();
            g[1] = "mpi".into();
            g[2] = "mpi".into();
            g[3] = "library".into();
            g[time] = format!("{}", g[time].parse::<f64>().unwrap() * 1.2);
            out.push_str(&g.join(","));
            out.push('\n');
        }
    }
    let csv = d.join("raw.csv");
    std::fs::write(&csv, out).unwrap();
    let table = d.join("t.yaml");
    let o = ct(&["table", "build", s(&sim), "--output", s(&table)]);
    assert!(o.status.success(), "{}", text(&o));
    (csv, table)
}

#[test]
fn plots_maps_and_their_errors() {
    let d = scratch("pic-plot");
    let (csv, table) = inputs(&d);
    let svg = d.join("p.svg");
    let o = ct(&["plot", s(&csv), s(&table), "-o", s(&svg)]);
    assert!(o.status.success(), "{}", text(&o));
    let t = std::fs::read_to_string(&svg).unwrap();
    for needle in [
        "binomial",
        "pipeline",
        "MPI library",
        "table",
        "fastest",
        "time / best at size",
    ] {
        assert!(t.contains(needle), "plot lacks {needle}");
    }
    // One line per family: the sweep's specs are not listed one by one.
    let lines = text(&o);
    let n: usize = lines
        .split("(")
        .nth(1)
        .and_then(|x| x.split(' ').next())
        .and_then(|x| x.parse().ok())
        .unwrap_or(0);
    // at most a line per broadcast family of the registry, and the
    // library's own (its default and its forced algorithms)
    let families =
        colltune_algorithms::registry::algorithms(colltune_algorithms::Collective::Bcast).count();
    assert!((3..=families + 2).contains(&n), "{lines}");
    // --all: more lines; --algorithms: fewer, the library kept.
    let o = ct(&["plot", s(&csv), "--all", "-o", s(&d.join("all.png"))]);
    assert!(o.status.success(), "{}", text(&o));
    let o = ct(&[
        "plot",
        s(&csv),
        "--algorithms",
        "linear,pipeline",
        "--panel",
        "relative",
        "-o",
        s(&svg),
    ]);
    assert!(text(&o).contains("(3 lines)"), "{}", text(&o));
    let t = std::fs::read_to_string(&svg).unwrap();
    assert!(
        t.contains("MPI library") && !t.contains(">binomial<"),
        "filtered"
    );
    // Bad input: each says what is wrong, exit 2, no panic.
    for (args, says) in [
        (
            vec!["plot", s(&csv), "--algorithms", "ring", "-o", s(&svg)],
            "no such algorithm",
        ),
        (
            vec!["plot", s(&table), s(&table), "-o", s(&svg)],
            "a table comes second",
        ),
        (
            vec!["plot", s(&csv), "--ranks", "99", "-o", s(&svg)],
            "no samples match",
        ),
        (vec!["report", s(&csv), s(&table)], "add --html"),
        (
            vec!["report", s(&csv), "--html", s(&d.join("r.txt"))],
            "name the page .html",
        ),
    ] {
        let o = ct(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(text(&o).contains(says), "{args:?}: {}", text(&o));
        assert!(!text(&o).contains("panicked"));
    }
    // The decision map of the shipped table: every shape, every family.
    let map = d.join("map.svg");
    let o = ct(&["plot", "tuning-tables/vm-2core.yaml", "-o", s(&map)]);
    assert!(o.status.success(), "{}", text(&o));
    let t = std::fs::read_to_string(&map).unwrap();
    for needle in ["bcast 4 ranks = 1x4", "swap 8 ranks = 1x8", "shm"] {
        assert!(t.contains(needle), "map lacks {needle}");
    }
    // The shading's key: evidence tables shade by the gain over the
    // library, others by the margin over the runner-up.
    assert!(
        t.contains("gain over the library") || t.contains("margin over the runner-up"),
        "map lacks the shading's key"
    );
    let png = d.join("map.png");
    let o = ct(&["plot", s(&table), "-o", s(&png)]);
    assert!(o.status.success(), "{}", text(&o));
    let (_, _, inked) = ink(&png);
    assert!(inked > 0.05, "the map is mostly blank: {inked}");
}

/// (width, height, share of pixels that are not near-white).
fn ink(png_path: &Path) -> (u32, u32, f64) {
    let dec = png::Decoder::new(std::fs::File::open(png_path).unwrap());
    let mut r = dec.read_info().unwrap();
    let mut buf = vec![0; r.output_buffer_size()];
    let info = r.next_frame(&mut buf).unwrap();
    let ch = info.color_type.samples();
    let px = &buf[..info.buffer_size()];
    let n = px.len() / ch;
    let dark = px
        .chunks(ch)
        .filter(|p| p.iter().take(3.min(ch)).any(|&c| c < 230))
        .count();
    (info.width, info.height, dark as f64 / n as f64)
}

fn chromium() -> Option<PathBuf> {
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        let path = std::env::var_os("PATH")?;
        for dir in std::env::split_paths(&path) {
            let p = dir.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// A probe appended to a copy of the page (the report itself has no
/// script): reports every element that failed to load, and at the end how
/// many SVG pictures drew something.
const PROBE: &str = r#"<script>
window.addEventListener('error', function (e) {
  var t = e.target || {};
  console.log('PROBE-ERROR ' + (t.src || t.href || e.message));
}, true);
window.addEventListener('load', function () {
  var n = 0;
  document.querySelectorAll('svg').forEach(function (s) {
    var b = s.getBoundingClientRect();
    if (b.width > 100 && b.height > 100 && s.querySelectorAll('text').length > 5) n++;
  });
  console.log('PROBE-LOADED svgs=' + n);
});
</script>"#;

/// Renders `page` (with the probe) and returns (console lines, screenshot).
fn render(browser: &Path, page: &str, d: &Path, name: &str) -> (Vec<String>, PathBuf) {
    let html = d.join(format!("{name}.html"));
    let probed = match page.rfind("</body>") {
        Some(i) => format!("{}{PROBE}{}", &page[..i], &page[i..]),
        None => format!("{page}{PROBE}"),
    };
    std::fs::write(&html, probed).unwrap();
    let shot = d.join(format!("{name}.png"));
    let o = run({
        let mut c = Command::new(browser);
        c.args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
            "--window-size=1440,2000",
        ])
        .arg(format!(
            "--user-data-dir={}",
            d.join(format!("{name}-profile")).display()
        ))
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", html.display()));
        c
    });
    assert!(o.status.success(), "chromium failed: {}", text(&o));
    let console = String::from_utf8_lossy(&o.stderr)
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(String::from)
        .collect();
    (console, shot)
}

#[test]
fn report_renders_in_a_browser() {
    let d = scratch("pic-html");
    let (csv, table) = inputs(&d);
    let out = d.join("report.html");
    let o = ct(&["report", s(&csv), s(&table), "--html", s(&out)]);
    assert!(o.status.success(), "{}", text(&o));
    let page = std::fs::read_to_string(&out).unwrap();
    // Self-contained: nothing to fetch, no script.
    for bad in ["<script", "<link", "src=", "url(", "@import"] {
        assert!(!page.contains(bad), "the page has {bad}");
    }
    for needle in [
        "Provenance",
        "Decision map",
        "Per communicator",
        "Fit and knees",
        "faster than the MPI library&#39;s own call",
    ] {
        let needle = needle.replace("&#39;", "'");
        assert!(page.contains(&needle), "the page lacks {needle}");
    }
    assert!(page.matches("<svg").count() >= 2, "map and one plot");
    let Some(browser) = chromium() else {
        skip(
            "chromium",
            "no chromium on PATH (Debian: apt-get install -y chromium); the HTML report is not rendered",
        );
        return;
    };
    // The check can fail: a page with a console message, a broken image
    // and nothing drawn is caught.
    let (console, shot) = render(
        &browser,
        "<!doctype html><html><body><img src=\"missing.png\"><script>console.error('boom')</script></body></html>",
        &d,
        "bad",
    );
    assert!(console.iter().any(|l| l.contains("boom")), "{console:?}");
    assert!(
        console.iter().any(|l| l.contains("PROBE-ERROR")),
        "{console:?}"
    );
    assert!(ink(&shot).2 < 0.01, "a blank page reads as blank");
    // The report.
    let (console, shot) = render(&browser, &page, &d, "report");
    let others: Vec<&String> = console
        .iter()
        .filter(|l| !l.contains("PROBE-LOADED"))
        .collect();
    assert!(others.is_empty(), "console: {others:?}");
    let loaded = console
        .iter()
        .find_map(|l| l.split("PROBE-LOADED svgs=").nth(1))
        .and_then(|x| x.split('"').next())
        .and_then(|x| x.parse::<usize>().ok());
    assert!(
        loaded.is_some_and(|n| n >= 2),
        "pictures drawn: {loaded:?}; {console:?}"
    );
    let (w, h, inked) = ink(&shot);
    assert!(w >= 1000 && h >= 1000, "{w}x{h}");
    assert!(inked > 0.03, "the screenshot is nearly blank: {inked}");
}
