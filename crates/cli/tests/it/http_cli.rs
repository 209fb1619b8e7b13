//! `tare http` as a user runs it: real binary, real server, real output.

use std::process::{Command, Output};

use tare_serve::{ServeConfig, Server};

fn tare(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tare"))
        .args(args)
        .output()
        .expect("tare runs")
}

fn server() -> (Server, String) {
    let s = Server::start(ServeConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        ..Default::default()
    })
    .unwrap();
    let url = format!("http://{}/", s.local_addr().unwrap());
    (s, url)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn json_output_matches_the_documented_schema() {
    let (_s, url) = server();
    for extra in [&[][..], &["--no-keepalive"][..]] {
        let mut args = vec!["http", "-t1", "-c2", "-d300ms", "--json", "-"];
        args.extend_from_slice(extra);
        args.push(&url);
        let out = tare(&args);
        assert!(out.status.success(), "{}", stderr(&out));
        let value: serde_json::Value =
            serde_json::from_slice(&out.stdout).expect("stdout is JSON only");
        crate::support::validate(&value);
        let validator = crate::support::schema_validator();
        assert!(value["requests"].as_u64().unwrap() > 0);
        assert_eq!(value["engine"], "http");
        // The record says what it counts and how much was attempted.
        assert_eq!(value["unit"], "requests");
        let e = &value["errors"];
        let not_completed: u64 = ["connect", "read", "write", "timeout"]
            .iter()
            .map(|k| e[*k].as_u64().unwrap())
            .sum();
        assert_eq!(
            value["attempts"].as_u64().unwrap(),
            value["requests"].as_u64().unwrap() + not_completed
        );
        // Every connection's state at the deadline adds up to -c.
        let c = &value["connect_phase"];
        let states: u64 = ["established", "connecting", "refused", "idle"]
            .iter()
            .map(|k| c[*k].as_u64().unwrap())
            .sum();
        assert_eq!(states, 2, "{c}");
        let mut bad_phase = value.clone();
        bad_phase["connect_phase"]["connecting"] = (-1).into();
        assert!(!validator.is_valid(&bad_phase));
        let mut bad_unit = value.clone();
        bad_unit["unit"] = "bananas".into();
        assert!(!validator.is_valid(&bad_unit));
        // The schema is not vacuous: a result missing a required field fails.
        let mut broken = value.clone();
        broken.as_object_mut().unwrap().remove("latency_us");
        assert!(!validator.is_valid(&broken));
    }
}

#[test]
fn text_output_has_wrks_lines() {
    let (_s, url) = server();
    let out = tare(&["http", "-t1", "-c2", "-d300ms", "--latency", &url]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with("Running 300.00us test @ ")
            || lines[0].starts_with("Running 0s test @ "),
        "{}",
        lines[0]
    );
    assert_eq!(lines[1], "  1 threads and 2 connections");
    assert_eq!(
        lines[2],
        "  Thread Stats   Avg      Stdev     Max   +/- Stdev"
    );
    assert!(lines[3].starts_with("    Latency "));
    assert!(lines[4].starts_with("    Req/Sec "));
    assert_eq!(lines[5], "  Latency Distribution");
    for (i, p) in ["50%", "75%", "90%", "99%", "99.9%", "99.99%"]
        .iter()
        .enumerate()
    {
        assert_eq!(lines[6 + i].split_whitespace().next(), Some(*p));
    }
    assert!(text.contains(" requests in "));
    assert!(text.contains("\nRequests/sec: "));
    assert!(text.contains("\nTransfer/sec: "));
}

/// A coalescing run says so in the text, with its pauses and stamps; a
/// default run prints no such line (wrk's layout).
#[test]
fn text_output_reports_coalesced_wakeups() {
    let (_s, url) = server();
    let out = tare(&[
        "http",
        "-t1",
        "-c16",
        "-d300ms",
        "--coalesce",
        "200us",
        &url,
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with("  Wake-ups: coalesce 200us: "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains(" waits; "), "{line}");
    let out = tare(&["http", "-t1", "-c2", "-d200ms", &url]);
    assert!(!String::from_utf8(out.stdout).unwrap().contains("Wake-ups"));
}

#[test]
fn json_to_a_file_keeps_the_text() {
    let (_s, url) = server();
    let dir = std::env::temp_dir().join(format!("tare-cli-json-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("r.json");
    let out = tare(&[
        "http",
        "-t1",
        "-c1",
        "-n",
        "25",
        "--json",
        path.to_str().unwrap(),
        &url,
    ]);
    let json = std::fs::read_to_string(&path);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("Requests/sec:"));
    let v: serde_json::Value = serde_json::from_str(&json.unwrap()).unwrap();
    assert_eq!(v["requests"], 25);
}

#[test]
fn bad_input_is_one_line_and_nonzero() {
    for (args, needle) in [
        (vec!["http", "not a url"], "invalid URL"),
        (vec!["http", "https://127.0.0.1/"], "https is not supported"),
        (
            vec!["http", "-d", "0", "http://127.0.0.1:1/"],
            "greater than zero",
        ),
        (vec!["http", "-d", "-1s", "http://127.0.0.1:1/"], "-1"),
        (
            vec!["http", "-d=-1s", "http://127.0.0.1:1/"],
            "invalid duration",
        ),
        (
            vec!["http", "-d", "ten", "http://127.0.0.1:1/"],
            "invalid duration",
        ),
        (
            vec!["http", "-c", "0", "http://127.0.0.1:1/"],
            "connections",
        ),
        (vec!["http", "--bogus", "http://127.0.0.1:1/"], "--bogus"),
        (
            vec!["http", "-H", "no colon", "http://127.0.0.1:1/"],
            "invalid header",
        ),
        (vec!["http", "http://192.0.2.1/"], "not a loopback address"),
        (
            vec!["http", "--coalesce", "5ms", "http://127.0.0.1:1/"],
            "longer than 1ms",
        ),
        (
            vec!["http", "--coalesce", "often", "http://127.0.0.1:1/"],
            "invalid --coalesce",
        ),
        (
            vec![
                "http",
                "--rate",
                "100",
                "--coalesce",
                "100us",
                "http://127.0.0.1:1/",
            ],
            "cannot be used with",
        ),
        (
            vec!["http", "--io", "kqueue", "http://127.0.0.1:1/"],
            "invalid --io",
        ),
        (
            vec![
                "http",
                "--io",
                "io_uring",
                "--coalesce",
                "100us",
                "-d",
                "1s",
                "http://127.0.0.1:1/",
            ],
            "only --io epoll",
        ),
    ] {
        let out = tare(&args);
        assert!(!out.status.success(), "{args:?} succeeded");
        let err = stderr(&out);
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(!err.contains("RUST_BACKTRACE"), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    }
}

#[test]
fn unreachable_port_prints_the_summary_and_fails() {
    let port = tare_testbed::free_port();
    let url = format!("http://127.0.0.1:{port}/");
    let out = tare(&["http", "-t1", "-c2", "-d200ms", &url]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Socket errors: connect "), "{text}");
    assert!(text.contains("Requests/sec:"), "{text}");
    assert!(stderr(&out).contains("no request completed"));
}

#[test]
fn progress_line_only_on_a_terminal() {
    let (_s, url) = server();
    // Not a terminal: no escape codes, no progress.
    let out = tare(&["http", "-t1", "-c1", "-d600ms", &url]);
    assert!(!String::from_utf8_lossy(&out.stdout).contains('\x1b'));
    // A pseudo-terminal, through util-linux's `script`.
    let cmd = format!("{} http -t1 -c1 -d600ms {url}", env!("CARGO_BIN_EXE_tare"));
    let dir = std::env::temp_dir().join(format!("tare-tty-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("tty.log");
    let status = Command::new("script")
        .args(["-qec", &cmd])
        .arg(&log)
        .stdout(std::process::Stdio::null())
        .status()
        .expect("script (util-linux) runs");
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(status.success());
    assert!(text.contains("\x1b[2K"), "{text}");
    assert!(text.contains(" req/s "), "{text}");
    assert!(text.contains("Requests/sec:"), "{text}");
}

/// `tare http` with its open-files limits set to `soft`/`hard` before it
/// starts (lowering them needs no privilege).
fn tare_with_nofile(soft: u64, hard: u64, args: &[&str]) -> Output {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tare"));
    cmd.args(args);
    // SAFETY: only setrlimit, async-signal-safe, between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            let r = libc::rlimit {
                rlim_cur: soft,
                rlim_max: hard,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &r) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd.output().expect("tare runs")
}

#[test]
fn more_connections_than_open_files_are_refused_up_front_with_the_numbers() {
    let (_s, url) = server();
    // A hard limit of 500 cannot hold 1000 connections (and a process
    // cannot raise its own hard limit without CAP_SYS_RESOURCE once it
    // lowered it): refused before any load, one line, the numbers and the fix.
    let out = tare_with_nofile(500, 500, &["http", "-t1", "-c1000", "-d300ms", &url]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("1000 connections need 1064 open files"),
        "{err}"
    );
    assert!(err.contains("the open-files limit is 500"), "{err}");
    assert!(err.contains("use at most 436 connections"), "{err}");
    assert!(out.stdout.is_empty());
    // Only the soft limit low: tare raises it to the hard limit and runs.
    let out = tare_with_nofile(300, 2000, &["http", "-t1", "-c1000", "-d300ms", &url]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("1000 established, 0 connecting, 0 refused"),
        "{text}"
    );
}

#[test]
fn a_run_where_nothing_completes_says_why_in_one_line() {
    // A listener that never accepts, with an accept queue of one: most
    // connects are never answered.
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    // SAFETY: listen on our own listening socket only changes its backlog.
    assert_eq!(
        unsafe { libc::listen(std::os::fd::AsRawFd::as_raw_fd(&l), 0) },
        0
    );
    let url = format!("http://{}/", l.local_addr().unwrap());
    let out = tare(&["http", "-t2", "-c1500", "-d400ms", "--timeout", "5s", &url]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("no request completed"), "{err}");
    assert!(err.contains("still connecting"), "{err}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Connections: never all established"),
        "{text}"
    );
}

/// `--urls` with http_load's file and no URL: the file's server is the
/// target; the text and the JSON show each path's counts, and they add
/// up to the run's.
#[test]
fn a_url_file_alone_is_the_target_and_its_names_are_shown() {
    let (_s, url) = server();
    let dir = tempfile::tempdir().unwrap();
    let urls = dir.path().join("site.urls");
    std::fs::write(&urls, format!("{url}a\n{url}b?x=1\n/a\n")).unwrap();
    let u = urls.to_str().unwrap();
    let out = tare(&["http", "-t1", "-c2", "-d300ms", "--urls", u]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Requests by name:"), "{text}");
    assert!(text.contains("/b?x=1") && text.contains("/a "), "{text}");
    let out = tare(&["http", "-t1", "-c2", "-d300ms", "--json", "-", "--urls", u]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let names = v["by_name"].as_array().unwrap();
    assert_eq!(names.len(), 2);
    assert_eq!(
        (names[0]["name"].as_str(), names[0]["weight"].as_u64()),
        (Some("/a"), Some(2))
    );
    let sum: u64 = names.iter().map(|n| n["requests"].as_u64().unwrap()).sum();
    assert_eq!(sum, v["requests"].as_u64().unwrap());
    crate::support::validate(&v);
    let validator = crate::support::schema_validator();
    let mut bad = v.clone();
    bad["by_name"][0]["weight"] = 0.into();
    assert!(!validator.is_valid(&bad));
}

/// Each mistake in a mix's file is one line on stderr and a non-zero
/// exit, before any load: a missing file, an empty one, URLs naming
/// another server than the target, a weight of 0, a file past the bound.
#[test]
fn bad_mix_files_are_one_line_each() {
    let (_s, url) = server();
    let dir = tempfile::tempdir().unwrap();
    let file = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_string()
    };
    let huge = dir.path().join("huge.urls");
    std::fs::File::create(&huge)
        .unwrap()
        .set_len(tare_engine::bounds::MAX_FILE + 1)
        .unwrap();
    let missing = dir.path().join("missing.urls");
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec!["--urls".into(), missing.display().to_string()],
            "No such file",
        ),
        (
            vec!["--urls".into(), file("empty.urls", "")],
            "no URL in it",
        ),
        (
            vec![
                "--urls".into(),
                file("other.urls", "http://127.0.0.1:1/x\n"),
                url.clone(),
            ],
            "not the target",
        ),
        (
            vec![
                "--urls".into(),
                file("two.urls", "http://127.0.0.1:1/x\nhttp://127.0.0.2:1/y\n"),
            ],
            "line 2: names 127.0.0.2:1",
        ),
        (
            vec!["--urls".into(), file("bad.urls", "/ok\nhttps://x/\n")],
            "line 2",
        ),
        (
            vec![
                "--requests-file".into(),
                file(
                    "zero.toml",
                    "[[request]]\nname = \"a\"\npath = \"/\"\nweight = 0\n",
                ),
                url.clone(),
            ],
            "weight 0",
        ),
        (
            vec!["--urls".into(), huge.display().to_string()],
            "larger than 16m",
        ),
        (
            vec!["--requests-file".into(), file("none.toml", ""), url.clone()],
            "no [[request]]",
        ),
    ];
    for (extra, says) in cases {
        let mut args = vec!["http".to_string(), "-d300ms".into()];
        args.extend(extra);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = tare(&args);
        let err = stderr(&out);
        assert!(!out.status.success(), "{args:?} succeeded");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

/// `tare run` with a URL file end to end, against a real nginx: every
/// trial's record counts by path, the names add up to its requests, the
/// run directory keeps the file and the provenance its hash, and the JSON,
/// text and HTML reports show the names.
#[test]
fn an_experiment_with_a_url_file_records_and_reports_its_names() {
    let dir = tempfile::tempdir().unwrap();
    let urls = "http://127.0.0.1/index.html\nhttp://127.0.0.1/index.html\nhttp://127.0.0.1/\n/nowhere.html\n";
    std::fs::write(dir.path().join("site.urls"), urls).unwrap();
    let exp = dir.path().join("mix.toml");
    std::fs::write(
        &exp,
        "[target]\nkind = \"nginx\"\n[factors]\nplacement = [\"native\"]\n\
         [load]\nthreads = 1\nconnections = 4\nduration = \"500ms\"\nwarmup = \"100ms\"\n\
         [load.http]\nurls = \"site.urls\"\n[trials]\ncount = 2\n",
    )
    .unwrap();
    let run = dir.path().join("run");
    let out = tare(&[
        "run",
        "-q",
        exp.to_str().unwrap(),
        "--out",
        run.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let trials = std::fs::read_to_string(run.join("trials.jsonl")).unwrap();
    let mut seen = 0;
    for line in trials.lines() {
        let t: serde_json::Value = serde_json::from_str(line).unwrap();
        let r = &t["result"];
        let names = r["by_name"].as_array().expect("by_name in every record");
        let got: Vec<&str> = names.iter().map(|n| n["name"].as_str().unwrap()).collect();
        assert_eq!(got, ["/index.html", "/", "/nowhere.html"]);
        let sum: u64 = names.iter().map(|n| n["requests"].as_u64().unwrap()).sum();
        assert_eq!(sum, r["requests"].as_u64().unwrap());
        assert!(sum > 0);
        // nginx serves one page: the missing one's 404s are its errors.
        assert_eq!(
            names[2]["errors"]["status"].as_u64().unwrap(),
            names[2]["requests"].as_u64().unwrap()
        );
        seen += 1;
    }
    assert_eq!(seen, 2);
    assert_eq!(
        std::fs::read_to_string(run.join("inputs/load.http.urls")).unwrap(),
        urls
    );
    let prov: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("provenance.json")).unwrap())
            .unwrap();
    let hash = prov["inputs"]["inputs/load.http.urls"].as_str().unwrap();
    assert_eq!(hash.len(), 64);
    assert!(prov["inputs"]["experiment.toml"].is_string());
    let json = std::fs::read_to_string(run.join("report.json")).unwrap();
    assert!(
        json.contains("\"by_name\"") && json.contains("/nowhere.html"),
        "{json}"
    );
    let html = std::fs::read_to_string(run.join("report.html")).unwrap();
    assert!(html.contains("Requests by name") && html.contains("/nowhere.html"));
    let text = std::fs::read_to_string(run.join("report.txt")).unwrap();
    assert!(
        text.contains("requests by name") && text.contains("/nowhere.html"),
        "{text}"
    );
}
