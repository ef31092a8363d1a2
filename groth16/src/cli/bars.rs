//! Progress bars of the CLI (indicatif, on stderr, only when stderr is a
//! terminal; otherwise the same news as plain lines).

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

pub struct Bars {
    tty: bool,
    spinner: Option<ProgressBar>,
}

impl Bars {
    pub fn new() -> Self {
        Self {
            tty: std::io::stderr().is_terminal(),
            spinner: None,
        }
    }

    /// A spinner for params generation and key load; `say` shows its lines.
    pub fn start_spinner(&mut self, what: &str) {
        if self.tty {
            let b = ProgressBar::new_spinner();
            b.set_message(what.to_string());
            b.enable_steady_tick(Duration::from_millis(120));
            self.spinner = Some(b);
        }
    }

    pub fn say(&self, line: &str) {
        match &self.spinner {
            Some(b) => b.set_message(line.to_string()),
            None => eprintln!("{line}"),
        }
    }

    pub fn stop_spinner(&mut self) {
        if let Some(b) = self.spinner.take() {
            b.finish_and_clear();
        }
    }

    /// A bar over the job's partitions, or None (plain lines then).
    pub fn job_bar(&self, total: u64) -> Option<ProgressBar> {
        if !self.tty {
            return None;
        }
        let b = ProgressBar::new(total);
        b.set_style(
            ProgressStyle::with_template(
                "[{elapsed_precise}] {bar:40} {pos}/{len} partitions ({eta} left) {msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        Some(b)
    }
}
