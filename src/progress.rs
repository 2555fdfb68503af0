//! Progress for long MPI jobs, on rank 0.
//!
//! Under mpirun a rank's stderr is a pipe, so a progress bar drawn there never
//! shows. colltune therefore draws its indicatif bar on the controlling
//! terminal (`/dev/tty`) when the job was started from one, and otherwise
//! (batch jobs, CI, output redirected to a log) prints a plain progress line
//! every few seconds. `COLLTUNE_PROGRESS=bar|plain|none` forces a mode.

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{self, IsTerminal, Write};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use colltune_core::progress::Progress;
use colltune_core::units::hms;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle, TermLike};

/// The controlling terminal, for indicatif.
struct Tty(Mutex<File>);

impl fmt::Debug for Tty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Tty")
    }
}

impl Tty {
    fn esc(&self, s: &str) -> io::Result<()> {
        let mut f = self.0.lock().map_err(|_| io::Error::other("tty lock"))?;
        f.write_all(s.as_bytes())
    }
}

impl TermLike for Tty {
    fn width(&self) -> u16 {
        std::env::var("COLUMNS")
            .ok()
            .and_then(|c| c.parse().ok())
            .unwrap_or(100)
    }
    fn move_cursor_up(&self, n: usize) -> io::Result<()> {
        if n > 0 {
            self.esc(&format!("\x1b[{n}A"))?;
        }
        Ok(())
    }
    fn move_cursor_down(&self, n: usize) -> io::Result<()> {
        if n > 0 {
            self.esc(&format!("\x1b[{n}B"))?;
        }
        Ok(())
    }
    fn move_cursor_right(&self, n: usize) -> io::Result<()> {
        if n > 0 {
            self.esc(&format!("\x1b[{n}C"))?;
        }
        Ok(())
    }
    fn move_cursor_left(&self, n: usize) -> io::Result<()> {
        if n > 0 {
            self.esc(&format!("\x1b[{n}D"))?;
        }
        Ok(())
    }
    fn write_line(&self, s: &str) -> io::Result<()> {
        self.esc(&format!("{s}\n"))
    }
    fn write_str(&self, s: &str) -> io::Result<()> {
        self.esc(s)
    }
    fn clear_line(&self) -> io::Result<()> {
        self.esc("\r\x1b[2K")
    }
    fn flush(&self) -> io::Result<()> {
        self.0
            .lock()
            .map_err(|_| io::Error::other("tty lock"))?
            .flush()
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    Bar,
    Plain,
    None,
}

/// Progress over a known number of steps, shown as a bar, plain lines or
/// not at all (see the module comment).
pub struct Reporter {
    bar: Option<ProgressBar>,
    mode: Mode,
    total: u64,
    done: u64,
    started: Instant,
    last_line: Instant,
    every: Duration,
    what: String,
}

impl Reporter {
    /// `active`: only rank 0 reports. `what`: a noun for the plain lines.
    pub fn new(total: u64, active: bool, what: &str) -> Reporter {
        let mode = if !active {
            Mode::None
        } else {
            match std::env::var("COLLTUNE_PROGRESS").as_deref() {
                Ok("none") => Mode::None,
                Ok("plain") => Mode::Plain,
                _ => Mode::Bar,
            }
        };
        let bar = if mode == Mode::Bar {
            Self::bar(total)
        } else {
            None
        };
        let mode = if mode == Mode::Bar && bar.is_none() {
            Mode::Plain
        } else {
            mode
        };
        Reporter {
            bar,
            mode,
            total,
            done: 0,
            started: Instant::now(),
            last_line: Instant::now(),
            every: Duration::from_secs(
                std::env::var("COLLTUNE_PROGRESS_EVERY")
                    .ok()
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(10),
            ),
            what: what.to_string(),
        }
    }

    fn bar(total: u64) -> Option<ProgressBar> {
        let target = if io::stderr().is_terminal() {
            ProgressDrawTarget::stderr()
        } else {
            let tty = OpenOptions::new().write(true).open("/dev/tty").ok()?;
            ProgressDrawTarget::term_like_with_hz(Box::new(Tty(Mutex::new(tty))), 5)
        };
        let bar = ProgressBar::with_draw_target(Some(total), target);
        bar.set_style(
            ProgressStyle::with_template(
                "{elapsed_precise} [{bar:30}] {pos}/{len} ~{eta} left  {msg}",
            )
            .ok()?
            .progress_chars("=> "),
        );
        Some(bar)
    }

    #[cfg(test)]
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// Sets what is being done now.
    pub fn set_message(&mut self, msg: impl Into<String>) {
        let msg = msg.into();
        if let Some(b) = &self.bar {
            b.set_message(msg.clone());
        }
        if self.mode == Mode::Plain && self.last_line.elapsed() >= self.every {
            self.plain_line(&msg);
        }
    }

    /// One step done; adjusts the total if more steps were found (`more`).
    pub fn inc(&mut self, more: u64) {
        self.done += 1;
        self.total += more;
        if self.done >= self.total {
            // An adaptive search found more to do than estimated.
            self.total = self.done + self.done / 4 + 1;
            if let Some(b) = &self.bar {
                b.set_length(self.total);
            }
        }
        if let Some(b) = &self.bar {
            if more > 0 {
                b.set_length(self.total);
            }
            b.inc(1);
        }
    }

    fn plain_line(&mut self, msg: &str) {
        self.last_line = Instant::now();
        let elapsed = self.started.elapsed().as_secs_f64();
        let left = if self.done > 0 {
            elapsed / self.done as f64 * (self.total.saturating_sub(self.done)) as f64
        } else {
            f64::NAN
        };
        eprintln!(
            "progress: {}/{} {} ({:.0}%), {} elapsed, ~{} left: {msg}",
            self.done,
            self.total,
            self.what,
            100.0 * self.done as f64 / self.total.max(1) as f64,
            hms(elapsed),
            if left.is_finite() {
                hms(left)
            } else {
                "?".into()
            }
        );
    }

    /// Prints a line without disturbing the bar.
    pub fn println(&self, line: &str) {
        match &self.bar {
            Some(b) => b.suspend(|| eprintln!("{line}")),
            None if self.mode != Mode::None => eprintln!("{line}"),
            None => {}
        }
    }

    pub fn finish(&mut self) {
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
        }
        if self.mode == Mode::Plain {
            self.plain_line("done");
        }
    }
}

impl Drop for Reporter {
    fn drop(&mut self) {
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
        }
    }
}

impl Progress for Reporter {
    fn set_message(&mut self, msg: &str) {
        Reporter::set_message(self, msg);
    }
    fn inc(&mut self, more: u64) {
        Reporter::inc(self, more);
    }
    fn println(&self, line: &str) {
        Reporter::println(self, line);
    }
    fn finish(&mut self) {
        Reporter::finish(self);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inactive_ranks_report_nothing() {
        let mut p = Reporter::new(10, false, "points");
        assert_eq!(p.mode(), Mode::None);
        p.inc(0);
        p.finish();
    }
}
