//! Writes a synthetic run directory (seed 000's five-cell chain:
//! docs/studies.md, seed 000) for trying `tare report` and `tare compare`
//! without generating load:
//!
//! ```text
//! cargo run -p tare-analysis --features synthetic --example synthetic_run -- /tmp/tare-a 5 1
//! tare report /tmp/tare-a
//! ```
//!
//! Arguments: directory, trials per cell (default 5), seed (default 1),
//! round-to-round drift (default 0.05: log steps of a random walk uniform in
//! ±5%, as this project's 2-core VM drifts; 0 for a steady machine).

use tare_analysis::synthetic::{drifting_trials, plan, seed000_cells, write_run_dir};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let dir = std::path::PathBuf::from(
        args.next()
            .ok_or("usage: synthetic_run DIR [TRIALS] [SEED]")?,
    );
    let n: u32 = args.next().map(|a| a.parse()).transpose()?.unwrap_or(5);
    let seed: u64 = args.next().map(|a| a.parse()).transpose()?.unwrap_or(1);
    let drift: f64 = args.next().map(|a| a.parse()).transpose()?.unwrap_or(0.05);
    let run_id = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "synthetic".into());
    let cells = seed000_cells(0.02);
    let chain: Vec<String> = cells.iter().map(|c| c.id()).collect();
    write_run_dir(
        &dir,
        &drifting_trials(&run_id, &cells, n, seed, drift),
        Some(&plan(&run_id, &cells, &chain)),
    )?;
    println!(
        "wrote {} ({} cells × {n} trials, drift ±{drift} per round)",
        dir.display(),
        cells.len()
    );
    Ok(())
}
