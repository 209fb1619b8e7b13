//! Fuzzes the URL file parser (`tare http --urls`, `[load.http] urls`):
//! whatever bytes a file holds, it never panics, every error is one line,
//! and what it accepts is a mix tare can send (paths start with `/`,
//! weights add up to the lines read).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match tare_http::mix::parse_urls(text) {
        Err(e) => assert!(!e.contains('\n'), "a multi-line error: {e:?}"),
        Ok(f) => {
            assert!(!f.paths.is_empty());
            assert!(f.paths.len() <= tare_http::mix::MAX_REQUESTS);
            let lines = text.lines().filter(|l| {
                let l = l.trim();
                !l.is_empty() && !l.starts_with('#')
            });
            let weights: u64 = f.paths.iter().map(|(_, w)| w).sum();
            assert_eq!(weights, lines.count() as u64);
            for (p, _) in &f.paths {
                assert!(p.starts_with('/'), "{p:?}");
            }
            if let Some(s) = &f.server {
                assert!(f.check_server(s).is_ok());
            }
        }
    }
});
