//! hpcc's `hpccoutf.txt`: the `key=value` lines between `Begin of Summary
//! section.` and `End of Summary section.` (HPC Challenge 1.5, Debian's
//! `hpcc`). The IBM study's CPU and memory rows are three of them: HPL
//! (Linpack) GFLOP/s, STREAM triad GB/s and RandomAccess GUP/s
//! (docs/studies.md, seed 002).
//!
//! RandomAccess is recorded twice: `randomaccess_gups` is the node-local
//! kernel (`SingleRandomAccess_GUPs`, memory latency and no MPI), and
//! `mpi_randomaccess_gups` the global table updated through MPI
//! (`MPIRandomAccess_GUPs`, what the study's two-socket figure measures
//! across processes). A value hpcc marks as not run (`-1`) is left out.

use tare_record::{Better, Metric};

use crate::parsed::{ParseError, Parsed};

/// Summary keys the record keeps: (hpcc's key, metric name, unit, scale).
const KEYS: &[(&str, &str, &str, f64)] = &[
    ("HPL_Tflops", "hpl_gflops", "GFLOP/s", 1e3),
    ("SingleSTREAM_Triad", "stream_triad_gb_s", "GB/s", 1.0),
    ("SingleSTREAM_Copy", "stream_copy_gb_s", "GB/s", 1.0),
    ("SingleSTREAM_Scale", "stream_scale_gb_s", "GB/s", 1.0),
    ("SingleSTREAM_Add", "stream_add_gb_s", "GB/s", 1.0),
    ("SingleRandomAccess_GUPs", "randomaccess_gups", "GUP/s", 1.0),
    (
        "MPIRandomAccess_GUPs",
        "mpi_randomaccess_gups",
        "GUP/s",
        1.0,
    ),
    ("SingleDGEMM_Gflops", "dgemm_gflops", "GFLOP/s", 1.0),
    ("SingleFFT_Gflops", "fft_gflops", "GFLOP/s", 1.0),
    ("PTRANS_GBs", "ptrans_gb_s", "GB/s", 1.0),
];

/// Parses hpcc's output file.
pub fn parse(text: &str) -> Result<Parsed, ParseError> {
    let begin = text
        .find("Begin of Summary section.")
        .ok_or_else(|| ParseError::new("hpcc wrote no summary section (it did not finish)"))?;
    let body = &text[begin..];
    let end = body
        .find("End of Summary section.")
        .ok_or_else(|| ParseError::new("hpcc's summary section is cut short"))?;
    let pairs: Vec<(&str, &str)> = body[..end]
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim(), v.trim()))
        .collect();
    let get = |key: &str| pairs.iter().find(|(k, _)| *k == key).map(|(_, v)| *v);
    let number = |key: &str| get(key).and_then(|v| v.parse::<f64>().ok());
    let mut out = Parsed {
        version: match (
            get("VersionMajor"),
            get("VersionMinor"),
            get("VersionMicro"),
        ) {
            (Some(a), Some(b), Some(c)) => format!("hpcc {a}.{b}.{c}"),
            _ => String::new(),
        },
        ..Parsed::default()
    };
    for (key, name, unit, scale) in KEYS {
        if let Some(v) = number(key).filter(|v| *v >= 0.0 && v.is_finite()) {
            out.metrics
                .push(Metric::new(name, v * scale, unit, Better::Higher));
        }
    }
    if let Some(t) = number("HPL_time").filter(|t| *t > 0.0 && t.is_finite()) {
        out.metrics
            .push(Metric::new("hpl_seconds", t, "s", Better::Lower));
    }
    if out.metric("hpl_gflops").is_none() {
        return Err(ParseError::new(
            "hpcc's summary has no HPL result (HPL_Tflops)",
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_summary_without_hpl_or_an_end_is_an_error() {
        assert!(parse("nothing").is_err());
        assert!(parse("Begin of Summary section.\nHPL_Tflops=1\n").is_err());
        let no_hpl = "Begin of Summary section.\nSingleSTREAM_Triad=5\nEnd of Summary section.\n";
        assert!(parse(no_hpl).unwrap_err().to_string().contains("HPL"));
        let ok = "Begin of Summary section.\nHPL_Tflops=0.002\nStarSTREAM_Triad=-1\nEnd of Summary section.\n";
        let p = parse(ok).unwrap();
        assert_eq!(p.metric("hpl_gflops").unwrap().value, 2.0);
        assert!(p.metric("stream_triad_gb_s").is_none());
    }
}
