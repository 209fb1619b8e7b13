//! Moving a parsed configuration to another directory before building it, so a
//! changed copy can be written beside the original instead of over it (what
//! `tare tune` needs: one directory per variant). File names under `from` move
//! under `to`, and so do absolute `include` arguments pointing under `from`;
//! relative includes need nothing, they follow the main file.

use crate::payload::{Payload, Statement};

/// `path` with the directory prefix `from` replaced by `to`, if it is under `from`.
fn moved(path: &str, from: &str, to: &str) -> Option<String> {
    let from = from.trim_end_matches('/');
    let to = to.trim_end_matches('/');
    let rest = path.strip_prefix(from)?;
    (rest.is_empty() || rest.starts_with('/')).then(|| format!("{to}{rest}"))
}

/// A copy of `payload` whose files live under `to` instead of `from`.
pub fn relocate(payload: &Payload, from: &str, to: &str) -> Payload {
    fn fix(stmts: &mut [Statement], from: &str, to: &str) {
        for s in stmts {
            if s.directive == "include" {
                if let Some(arg) = s.args.first_mut() {
                    if let Some(new) = moved(arg, from, to).filter(|_| arg.starts_with('/')) {
                        *arg = new;
                    }
                }
            }
            if let Some(block) = &mut s.block {
                fix(block, from, to);
            }
        }
    }
    let mut out = payload.clone();
    for config in &mut out.config {
        if let Some(new) = moved(&config.file, from, to) {
            config.file = new;
        }
        fix(&mut config.parsed, from, to);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moves_files_and_absolute_includes_only_under_the_prefix() {
        let mut p: Payload = serde_json::from_str(
            r#"{"config":[{"file":"/etc/nginx/nginx.conf","parsed":[
                {"directive":"include","line":1,"args":["/etc/nginx/conf.d/*.conf"],"includes":[]},
                {"directive":"include","line":2,"args":["/etc/nginxother/x"],"includes":[]},
                {"directive":"include","line":3,"args":["mime.types"],"includes":[]}]}]}"#,
        )
        .unwrap();
        p = relocate(&p, "/etc/nginx/", "/tmp/v1");
        assert_eq!(p.config[0].file, "/tmp/v1/nginx.conf");
        let args: Vec<&str> = p.config[0]
            .parsed
            .iter()
            .map(|s| s.args[0].as_str())
            .collect();
        assert_eq!(
            args,
            ["/tmp/v1/conf.d/*.conf", "/etc/nginxother/x", "mime.types"]
        );
    }
}
