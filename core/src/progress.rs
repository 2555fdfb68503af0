//! How long-running work reports its progress, without saying how it is
//! shown: the `colltune` binary draws a bar or plain lines (see its
//! `progress` module); a library user or a test passes [`Silent`].

/// Progress over a number of steps that may grow as work is found.
pub trait Progress {
    /// What is being done now.
    fn set_message(&mut self, msg: &str);
    /// One step done; `more` steps were found to do besides.
    fn inc(&mut self, more: u64);
    /// A line for the reader, printed without disturbing the display.
    fn println(&self, line: &str);
    /// All steps are done.
    fn finish(&mut self);
}

/// Reports nothing.
#[derive(Clone, Copy, Debug, Default)]
pub struct Silent;

impl Progress for Silent {
    fn set_message(&mut self, _: &str) {}
    fn inc(&mut self, _: u64) {}
    fn println(&self, _: &str) {}
    fn finish(&mut self) {}
}
