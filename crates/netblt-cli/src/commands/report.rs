//! `netblt report`: regenerates docs/reproduction.md and its figures.

use std::io::IsTerminal;
use std::path::PathBuf;

use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use netblt_report::{self as report, Options};

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The Markdown file to write.
    #[arg(long, default_value = "docs/reproduction.md")]
    pub out: PathBuf,
    /// Directory for the figures (PNG and SVG).
    #[arg(long, default_value = "docs/figures")]
    pub figures: PathBuf,
    /// One seed, fewer repetitions and bytes (seconds instead of minutes).
    #[arg(long)]
    pub quick: bool,
    /// Also print every number as one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
    /// Measure this machine for RFC 415's table (kernel TCP over loopback,
    /// about a minute) and keep the figures in --host-file. Without it the
    /// kept figures are used, so the report comes out the same every time.
    #[arg(long)]
    pub measure_host: bool,
    /// Where RFC 415's host measurement is kept.
    #[arg(long, default_value = "docs/rfc415-host.json")]
    pub host_file: PathBuf,
}

pub fn run(args: ReportArgs) -> anyhow::Result<()> {
    let bar = ProgressBar::new(1);
    if !std::io::stderr().is_terminal() {
        bar.set_draw_target(ProgressDrawTarget::hidden());
    }
    if let Ok(style) =
        ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} {msg}")
    {
        bar.set_style(style);
    }
    let opts = Options {
        out: args.out.clone(),
        figures: args.figures.clone(),
        quick: args.quick,
        host_file: args.host_file.clone(),
        measure_host: args.measure_host,
    };
    let rep = report::run(&opts, &mut |msg, done, total| {
        bar.set_length(total);
        bar.set_position(done);
        bar.set_message(msg.to_string());
    })?;
    bar.finish_and_clear();
    if args.json {
        println!("{}", serde_json::to_string_pretty(&rep)?);
    } else {
        println!(
            "wrote {} and {} figures in {}",
            args.out.display(),
            rep.figures.len(),
            args.figures.display()
        );
    }
    Ok(())
}
