//! Fuzzes the requests file parser (`tare http --requests-file`,
//! `[load.http] requests`): whatever bytes a file holds, it never panics,
//! every error is one line, and what it accepts has unique names, weights
//! of at least 1 and paths that start with `/`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match tare_http::mix::parse_requests(text) {
        Err(e) => assert!(!e.contains('\n'), "a multi-line error: {e:?}"),
        Ok(r) => {
            assert!(!r.is_empty());
            for (i, n) in r.iter().enumerate() {
                assert!(n.weight >= 1 && n.weight <= tare_http::mix::MAX_WEIGHT);
                assert!(n.path.starts_with('/'));
                assert!(r[..i].iter().all(|m| m.name != n.name), "{:?} twice", n.name);
            }
        }
    }
});
