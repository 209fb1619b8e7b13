//! The experiment file: the quick experiment and every example load; every
//! kind of mistake gets one line naming the file, line and key.

use std::path::Path;

use tare_engine::{Coalesce, IoMode};

use super::*;

fn parse(text: &str) -> Result<Experiment, ExperimentError> {
    Experiment::parse(
        text,
        Path::new("exp.toml"),
        &ConfigSource::RelativeTo(".".into()),
    )
}

const HEAD: &str = "[target]\nkind = \"nginx\"\n[load]\nduration = \"2s\"\n";

#[test]
fn the_quick_experiment_is_valid_and_short() {
    let q = Experiment::quick();
    assert_eq!(q.cells.len(), 6);
    assert_eq!(q.attribution.len(), 2, "a chain and its fallback");
    // Rounds continue to a precision, within a budget that keeps the whole
    // run under three minutes.
    assert!(q.trials.precision.is_some());
    assert!(q.trials.budget.unwrap() <= Duration::from_secs(150));
}

#[test]
fn every_example_loads() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            let exp = Experiment::load(&path).unwrap_or_else(|e| panic!("{e}"));
            assert!(!exp.cells.is_empty());
            n += 1;
        }
    }
    assert!(n >= 5, "quick + one example per seed, found {n}");
}

#[test]
fn the_product_of_levels_in_file_order() {
    let e = parse(&format!(
        "{HEAD}[factors]\nplacement = [\"native\", \"docker-host\"]\naccess_log = [true, false]\nconnections = [16, 48]\n"
    ))
    .unwrap();
    let ids: Vec<&str> = e.cells.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids.len(), 8);
    assert_eq!(ids[0], "placement=native,access_log=on,connections=16");
    assert_eq!(
        ids[7],
        "placement=docker-host,access_log=off,connections=48"
    );
    assert_eq!(e.cells[1].load_settings(&e.load).shared.connections, 48);
}

#[test]
fn explicit_cells_fill_defaults_and_chains_select_cells() {
    let e = parse(&format!(
        "{HEAD}[[cells]]\nplacement = \"docker-host\"\nstorage = \"image\"\n\
         [[cells]]\nplacement = \"docker-host\"\nstorage = \"host\"\n\
         [attribution]\nchain = [\"storage=image\", \"storage=host-path\"]\n"
    ))
    .unwrap();
    assert_eq!(e.cells[1].id, "placement=docker-host,storage=host-path");
    assert_eq!(e.attribution[0][0], "placement=docker-host,storage=image");
}

/// Each mistake and its message, in one snapshot.
#[test]
fn mistakes_are_named_with_file_line_and_key() {
    let cases: &[(&str, String)] = &[
        ("not toml", "[target\nkind = 1".into()),
        ("unknown key", format!("{HEAD}durration = \"3s\"\n")),
        ("wrong type", "[target]\nkind = \"nginx\"\n[load]\nthreads = \"two\"\n".into()),
        ("bad duration", "[target]\nkind = \"nginx\"\n[load]\nduration = \"3 parsecs\"\n".into()),
        ("unknown target", "[target]\nkind = \"apache\"\n[load]\n".into()),
        ("unknown factor", format!("{HEAD}[factors]\nplacment = [\"native\"]\n")),
        ("bad placement", format!("{HEAD}[factors]\nplacement = [\"native\", \"docker\"]\n")),
        ("undefined config", format!("{HEAD}[factors]\nconfig = [\"default\", \"fast\"]\n")),
        ("repeated level", format!("{HEAD}[factors]\nconnections = [16, 16]\n")),
        ("factors and cells", format!("{HEAD}[factors]\nplacement = [\"native\"]\n[[cells]]\nplacement = \"native\"\n")),
        ("container factor on native", format!("{HEAD}[factors]\nplacement = [\"native\", \"lab-nat\"]\nseccomp = [\"default\", \"unconfined\"]\n")),
        ("container level on a native cell", format!("{HEAD}[[cells]]\nplacement = \"native\"\nstorage = \"volume\"\naccess_log = \"on\"\n")),
        ("delay outside the lab", format!("{HEAD}[factors]\nplacement = [\"native\"]\ndelay = [\"1ms\"]\n")),
        ("host path in a guest", format!("{HEAD}[[cells]]\nplacement = \"vm-bridge\"\nstorage = \"host-path\"\n")),
        ("cell missing a factor", format!("{HEAD}[[cells]]\naccess_log = \"on\"\n[[cells]]\nplacement = \"native\"\n")),
        ("chain matches nothing", format!("{HEAD}[factors]\nplacement = [\"native\", \"docker-host\"]\n[attribution]\nchain = [\"placement=native\", \"placement=lab-nat\"]\n")),
        ("chain too vague", format!("{HEAD}[factors]\nplacement = [\"native\", \"docker-host\"]\naccess_log = [\"on\", \"off\"]\n[attribution]\nchain = [\"placement=native\", \"access_log=on\"]\n")),
        ("chain step changes two factors", format!("{HEAD}[factors]\nplacement = [\"native\", \"docker-host\"]\naccess_log = [\"on\", \"off\"]\n[attribution]\nchain = [\"placement=docker-host,access_log=on\", \"placement=native,access_log=off\"]\n")),
        ("max below count", format!("{HEAD}[trials]\ncount = 5\nmax = 3\n")),
        ("engine for another target", "[target]\nkind = \"postgres\"\n[load]\nengine = \"http\"\n".into()),
        ("too many cells", format!("{HEAD}[factors]\nconnections = [1,2,3,4,5,6,7,8,9]\ncpus = [1,2,3,4,5,6,7,8]\nplacement = [\"docker-host\", \"docker-bridge\", \"docker-publish\"]\nmemory = [\"1g\", \"2g\", \"3g\"]\n")),
        ("missing config file", "[target]\nkind = \"nginx\"\n[target.configs.mine]\nfile = \"no/such.conf\"\n[load]\n".into()),
        ("bad rootless user", "[target]\nkind = \"nginx\"\nrootless_user = \"-rf /\"\n[load]\n".into()),
        ("another target's variant", "[target]\nkind = \"redis\"\n[factors]\nconfig = [\"default\", \"tuned\"]\n[load]\n".into()),
        ("a config file for a target without one", "[target]\nkind = \"tare-serve\"\n[target.configs.mine]\ntext = \"x\"\n[load]\n".into()),
        ("command without a command", "[target]\nkind = \"command\"\n[load]\n".into()),
        ("unknown placeholder", "[target]\nkind = \"command\"\ncommand = [\"caddy\", \"--listen\", \":{prot}\"]\n[load]\n".into()),
        ("command never told its port", "[target]\nkind = \"command\"\ncommand = [\"caddy\", \"run\"]\n[load]\n".into()),
        ("command never told its socket", "[target]\nkind = \"command\"\ncommand = [\"caddy\", \"--listen\", \":{port}\"]\n[factors]\ntransport = [\"tcp\", \"unix\"]\n[load]\n".into()),
        ("service engine tare has none of", "[target]\nkind = \"command\"\ncommand = [\"x\", \"{port}\"]\nengine = \"smtp\"\n[load]\n".into()),
        ("bad readiness", "[target]\nkind = \"command\"\ncommand = [\"x\", \"{port}\"]\nready = \"http:health\"\n[load]\n".into()),
        ("missing app file", "[target]\nkind = \"command\"\ncommand = [\"x\", \"{port}\"]\nfiles = [\"no/such/app.py\"]\n[load]\n".into()),
        ("app file outside", "[target]\nkind = \"command\"\ncommand = [\"x\", \"{port}\"]\nfiles = [\"../x\"]\n[load]\n".into()),
        ("service key on a built-in", "[target]\nkind = \"nginx\"\ncommand = [\"nginx\"]\n[load]\n".into()),
        ("image with neither image nor build", "[target]\nkind = \"image\"\n[load]\n".into()),
        ("image with both image and build", "[target]\nkind = \"image\"\nimage = \"web:1\"\nbuild = \"web\"\n[load]\n".into()),
        ("image given a command", "[target]\nkind = \"image\"\nimage = \"web:1\"\ncommand = [\"x\", \"{port}\"]\n[load]\n".into()),
        ("image build without a Dockerfile", "[target]\nkind = \"image\"\nbuild = \"no/such/dir\"\n[load]\n".into()),
        ("image in a guest and in podman", "[target]\nkind = \"image\"\nimage = \"web:1\"\n[factors]\nplacement = [\"native\", \"vm-bridge\", \"podman-host\", \"podman-rootless-pasta\"]\n[load]\n".into()),
        ("image over a socket", "[target]\nkind = \"image\"\nimage = \"web:1\"\n[factors]\ntransport = [\"tcp\", \"unix\"]\n[load]\n".into()),
        ("build on a built-in", "[target]\nkind = \"nginx\"\nbuild = \"web\"\n[load]\n".into()),
    ];
    let out: Vec<String> = cases
        .iter()
        .map(|(name, text)| match parse(text) {
            Ok(_) => format!("{name}: ACCEPTED"),
            Err(e) => format!("{name}: {e}"),
        })
        .collect();
    insta::assert_snapshot!(out.join("\n"));
}

/// Regression: the number of cells of `[factors]` was a plain product,
/// which overflows with enough levels: here 2^64, which wrapped to 0 cells
/// in a release build, passed the 512-cell limit and set about building
/// 2^64 cells (a panic in a debug build). It is the too-many-cells error now.
#[test]
fn a_product_of_levels_beyond_usize_is_too_many_cells_not_an_overflow() {
    let levels = |f: &dyn Fn(usize) -> String| -> String {
        (1..=1 << 15).map(f).collect::<Vec<_>>().join(", ")
    };
    let text = format!(
        "{HEAD}[factors]\nplacement = [\"docker-host\", \"docker-bridge\"]\n\
         access_log = [\"on\", \"off\"]\ntransport = [\"tcp\", \"unix\"]\n\
         seccomp = [\"default\", \"unconfined\"]\nconnections = [{}]\ncpus = [{}]\n\
         memory = [{}]\ndelay = [{}]\n",
        levels(&|i| i.to_string()),
        levels(&|i| i.to_string()),
        levels(&|i| format!("\"{i}m\"")),
        levels(&|i| format!("\"{i}us\"")),
    );
    let e = parse(&text).unwrap_err().to_string();
    assert!(e.contains("more than 512 cells (too many to count)"), "{e}");
}

#[test]
fn io_is_checked_and_kept() {
    assert_eq!(parse(HEAD).unwrap().load.shared.io, IoMode::Auto);
    let e = parse(&format!("{HEAD}io = \"epoll\"\n")).unwrap();
    assert_eq!(e.load.shared.io, IoMode::Epoll);
    let e = parse(&format!("{HEAD}io = \"io_uring\"\n")).unwrap();
    assert_eq!(e.load.shared.io, IoMode::Uring);
    let err = parse(&format!("{HEAD}io = \"kqueue\"\n"))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("exp.toml:5") && err.contains("load.io") && err.contains("invalid --io"),
        "{err}"
    );
    let err = parse(&format!(
        "{HEAD}io = \"io_uring\"\n[load.http]\ncoalesce = \"100us\"\n"
    ))
    .unwrap_err()
    .to_string();
    assert!(err.contains("load.io") && err.contains("coalesce"), "{err}");
}

#[test]
fn http_coalesce_is_checked_and_kept() {
    assert_eq!(parse(HEAD).unwrap().load.shared.coalesce, Coalesce::Off);
    let e = parse(&format!("{HEAD}[load.http]\ncoalesce = \"auto\"\n")).unwrap();
    assert_eq!(e.load.shared.coalesce, Coalesce::Auto);
    let e = parse(&format!("{HEAD}[load.http]\ncoalesce = \"100us\"\n")).unwrap();
    assert_eq!(e.load.shared.coalesce.to_string(), "100us");
    let err = parse(&format!("{HEAD}[load.http]\ncoalesce = \"5ms\"\n"))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("exp.toml:6")
            && err.contains("load.http.coalesce")
            && err.contains("longer than 1ms"),
        "{err}"
    );
    let err = parse(&format!(
        "{HEAD}rate = 1000.0\n[load.http]\ncoalesce = \"auto\"\n"
    ))
    .unwrap_err()
    .to_string();
    assert!(err.contains("closed loop"), "{err}");
}

#[test]
fn a_backend_binary_is_nginx_proxys_alone() {
    let proxy = "[target]\nkind = \"nginx-proxy\"\nbackend_binary = \"/opt/tare\"\n[load]\nduration = \"2s\"\n";
    let e = parse(proxy).unwrap();
    let backend = e.target.server.companion.as_ref().unwrap();
    assert_eq!(backend.binary, Some("/opt/tare".into()));
    let err = parse(&proxy.replace("nginx-proxy", "nginx"))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("exp.toml:3") && err.contains("target.backend_binary"),
        "{err}"
    );
}

#[test]
fn pg_coalesce_is_checked_and_kept() {
    let pg = "[target]\nkind = \"postgres\"\n[load]\nengine = \"pg\"\nduration = \"2s\"\n";
    assert_eq!(parse(pg).unwrap().load.shared.coalesce, Coalesce::Off);
    let e = parse(&format!("{pg}[load.pg]\ncoalesce = \"100us\"\n")).unwrap();
    assert_eq!(e.load.shared.coalesce.to_string(), "100us");
    let err = parse(&format!(
        "{pg}[load.pg]\nreconnect = true\ncoalesce = \"auto\"\n"
    ))
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("exp.toml:8") && err.contains("load.pg.coalesce") && err.contains("reconnect"),
        "{err}"
    );
    let err = parse(&format!(
        "{pg}rate = 500.0\n[load.pg]\ncoalesce = \"auto\"\n"
    ))
    .unwrap_err()
    .to_string();
    assert!(err.contains("closed loop"), "{err}");
}

/// `[load] engine` picks from the engines' registry; a name it does not
/// hold, a table for an engine the experiment does not use, and a typo of
/// a table are each one line at their key.
#[test]
fn engines_come_from_the_registry() {
    let names = crate::engines::names().join(", ");
    let err = parse("[target]\nkind = \"nginx\"\n[load]\nengine = \"smtp\"\n")
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        format!("exp.toml:4:10: `load.engine`: unknown engine `smtp` ({names})")
    );
    let err = parse(&format!("{HEAD}[load.pg]\nuser = \"x\"\n"))
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("exp.toml:5:")
            && err.contains("`load.pg`")
            && err.contains("engine is http"),
        "{err}"
    );
    let err = parse(&format!("{HEAD}[load.htp]\npath = \"/\"\n"))
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("exp.toml:5:")
            && err.contains("unknown field `htp`")
            && err.contains("`http`"),
        "{err}"
    );
}

/// The shared settings are typed once, over the engine's defaults; the
/// plan records them with the engine's table.
#[test]
fn shared_settings_are_typed_once() {
    let e = parse(&format!(
        "{HEAD}threads = 4\nconnections = 8\nrate = 100.0\narrivals = \"poisson\"\nslo_unused = 1\n"
    ));
    assert!(e
        .unwrap_err()
        .to_string()
        .contains("unknown field `slo_unused`"));
    let e = parse(&format!(
        "{HEAD}threads = 4\nconnections = 8\nrate = 100.0\narrivals = \"poisson\"\n"
    ))
    .unwrap();
    let l = &e.load.shared;
    assert_eq!((l.threads, l.connections, l.rate), (4, 8, Some(100.0)));
    assert_eq!(l.arrivals, tare_engine::schedule::Arrivals::Poisson);
    assert_eq!(l.timeout, Duration::from_secs(2));
    let snap = e.load.snapshot();
    assert_eq!(snap["engine"], "http");
    assert_eq!(snap["http"]["keepalive"], true);
    assert_eq!(snap["arrivals"], "poisson");
    // A cell's connections below the threads is run with fewer threads,
    // not refused.
    let e = parse(&format!("{HEAD}threads = 4\nconnections = 2\n")).unwrap();
    assert_eq!(e.load.shared.threads, 4);
    // pg's timeout is its connect timeout, 10 s unless given.
    let pg = parse("[target]\nkind = \"postgres\"\n[load]\n").unwrap();
    assert_eq!(pg.load.shared.timeout, Duration::from_secs(10));
    let e = parse(&format!("{HEAD}rate = 2e7\n"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("load.rate") && e.contains("10M"), "{e}");
}

/// An `[attribution] chain` over [`two_cells`]' placements.
const TWO_CELL_CHAIN: &str =
    "[attribution]\nchain = [\"placement=native\", \"placement=docker-host\"]\n";

/// An experiment with native and docker-host, `trials` as its `[trials]`
/// keys, and `tail` after them (a chain, or nothing).
fn two_cells(trials: &str, tail: &str) -> String {
    format!(
        "{HEAD}[factors]\nplacement = [\"native\", \"docker-host\"]\n[trials]\n{trials}\n{tail}"
    )
}

#[test]
fn focus_needs_a_precision_and_a_chain() {
    let (chain, text) = (TWO_CELL_CHAIN, two_cells);
    let e = parse(&text("precision = \"3%\"\nfocus = \"chain\"", chain)).unwrap();
    assert_eq!(e.trials.focus, super::Focus::Chain);
    let e = parse(&text("precision = \"3%\"", chain)).unwrap();
    assert_eq!(e.trials.focus, super::Focus::All);
    for (trials, tail, says) in [
        ("focus = \"chain\"", chain, "set a precision too"),
        (
            "precision = \"3%\"\nfocus = \"some\"",
            chain,
            "must be all or chain",
        ),
        (
            "precision = \"3%\"\nfocus = \"chain\"",
            "",
            "needs an [attribution] chain",
        ),
    ] {
        let err = parse(&text(trials, tail)).unwrap_err().to_string();
        assert!(err.contains("trials.focus") && err.contains(says), "{err}");
    }
}

/// `precision = "5 points"`: a target on each step's share of the gap,
/// which only a chain has.
#[test]
fn precision_in_points_is_of_the_gap_and_needs_a_chain() {
    use tare_analysis::PrecisionUnit;
    let (chain, text) = (TWO_CELL_CHAIN, two_cells);
    for written in ["5 points", "5points", "5 pt", "5pts", " 5 point "] {
        let p = parse(&text(&format!("precision = \"{written}\""), chain))
            .unwrap()
            .trials;
        assert_eq!(
            (p.precision, p.precision_unit),
            (Some(0.05), PrecisionUnit::Share),
            "{written}"
        );
    }
    let p = parse(&text("precision = \"5%\"", chain)).unwrap().trials;
    assert_eq!(p.precision_unit, PrecisionUnit::Change);
    for (trials, tail, says) in [
        (
            "precision = \"5 points\"",
            "",
            "need an [attribution] chain",
        ),
        (
            "precision = \"0 points\"",
            chain,
            "points of the attribution gap",
        ),
        ("precision = \"120 points\"", chain, "below 100"),
        ("precision = \"five points\"", chain, "trials.precision"),
    ] {
        let err = parse(&text(trials, tail)).unwrap_err().to_string();
        assert!(
            err.contains("trials.precision") && err.contains(says),
            "{trials}: {err}"
        );
        assert_eq!(err.lines().count(), 1, "{err}");
    }
}

#[test]
fn precision_and_budget_are_checked_and_kept() {
    let t = |keys: &str| parse(&format!("{HEAD}[trials]\n{keys}\n"));
    let p = t("precision = \"3%\"\nbudget = \"4m\"").unwrap().trials;
    assert_eq!(p.precision, Some(0.03));
    assert_eq!(p.budget, Some(Duration::from_secs(240)));
    assert_eq!(p.max, 1000, "the budget, not max, ends a precise run");
    let p = t("precision = 0.05").unwrap().trials;
    assert_eq!(
        (p.precision, p.budget),
        (Some(0.05), Some(Duration::from_secs(600)))
    );
    assert_eq!(t("").unwrap().trials.precision, None);
    for (keys, want) in [
        ("precision = \"three\"", "trials.precision"),
        ("precision = \"150%\"", "below 100"),
        ("precision = 0", "above 0"),
        (
            "precision = \"3%\"\nmax_rsd = 0.05",
            "replaces the per-cell max_rsd",
        ),
        ("budget = \"5m\"", "set a precision too"),
        ("precision = \"3%\"\nbudget = \"soon\"", "trials.budget"),
    ] {
        let err = t(keys).unwrap_err().to_string();
        assert!(
            err.contains("exp.toml:") && err.contains(want),
            "{keys}: {err}"
        );
        assert_eq!(err.lines().count(), 1, "{err}");
    }
}

/// Regression: cells named factors that do not apply to them
/// (`placement=native,storage=image`), and a product with a container
/// factor was refused. Such a factor is left out of the cells it does not
/// apply to, and the cells that leaves the same are one.
#[test]
fn factors_that_do_not_apply_are_left_out_of_cells() {
    let e = parse(&format!(
        "{HEAD}[factors]\nplacement = [\"native\", \"docker-host\"]\nstorage = [\"image\", \"volume\"]\naccess_log = [\"on\"]\n"
    ))
    .unwrap();
    let ids: Vec<&str> = e.cells.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "placement=native,access_log=on",
            "placement=docker-host,storage=image,access_log=on",
            "placement=docker-host,storage=volume,access_log=on",
        ]
    );
    // Listed cells: the default fills only the factors that apply.
    let e = parse(&format!(
        "{HEAD}[[cells]]\nplacement = \"native\"\naccess_log = \"on\"\n[[cells]]\nplacement = \"docker-host\"\nseccomp = \"unconfined\"\naccess_log = \"on\"\n[attribution]\nchain = [\"placement=native\", \"placement=docker-host\"]\n"
    ));
    let e = e.unwrap();
    let ids: Vec<&str> = e.cells.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "placement=native,access_log=on",
            "placement=docker-host,access_log=on,seccomp=unconfined",
        ]
    );
}

/// `[trials] exclude_disturbed`: off unless asked; a boolean, its mistakes
/// named with line and key like every other.
#[test]
fn exclude_disturbed_is_a_boolean_off_by_default() {
    assert!(!parse(HEAD).unwrap().trials.exclude_disturbed);
    let on = parse(&format!("{HEAD}[trials]\nexclude_disturbed = true\n")).unwrap();
    assert!(on.trials.exclude_disturbed);
    let e = parse(&format!("{HEAD}[trials]\nexclude_disturbed = \"yes\"\n"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("exp.toml:6") && e.contains("exclude_disturbed"),
        "{e}"
    );
    assert_eq!(e.lines().count(), 1, "{e}");
}

/// `[monitor] profile`: on at the default rate unless turned off; a rate
/// in Hz; anything else is one line naming the file, line and key.
#[test]
fn the_profile_is_on_by_default_and_turns_off_or_takes_a_rate() {
    let hz = |extra: &str| {
        parse(&format!("{HEAD}[monitor]\n{extra}\n"))
            .map(|e| e.monitor.profile_hz)
            .map_err(|e| e.to_string())
    };
    assert_eq!(
        parse(HEAD).unwrap().monitor.profile_hz,
        tare_monitor::profile::DEFAULT_HZ
    );
    assert_eq!(hz("profile = false"), Ok(0));
    assert_eq!(hz("profile = \"off\""), Ok(0));
    assert_eq!(hz("profile = true"), Ok(tare_monitor::profile::DEFAULT_HZ));
    assert_eq!(
        hz("profile = \"on\""),
        Ok(tare_monitor::profile::DEFAULT_HZ)
    );
    assert_eq!(hz("profile = 997"), Ok(997));
    for bad in [
        "profile = 0",
        "profile = 10001",
        "profile = -1",
        "profile = \"no\"",
        "profile = 99.5",
        "profile = [1]",
    ] {
        let e = hz(bad).unwrap_err();
        assert!(
            e.contains("exp.toml:6") && e.contains("monitor.profile"),
            "{bad}: {e}"
        );
        assert_eq!(e.lines().count(), 1, "{e}");
    }
    let e = hz("rate = 5").unwrap_err();
    assert!(e.contains("rate") && e.lines().count() == 1, "{e}");
}

/// `[attribution] split = true`: the docker-host → native step gets the
/// intermediate cells (seccomp unconfined, then storage on the host path),
/// container cells name the split factors at their defaults, native names
/// none, and the plan's splits are sub-chains of one factor per step.
#[test]
fn a_split_adds_the_intermediate_cells_of_a_container_step() {
    let text = format!(
        "{HEAD}[factors]\nplacement = [\"docker-publish\", \"docker-host\", \"native\"]\n\
         [attribution]\nchain = [\"placement=docker-publish\", \"placement=docker-host\", \"placement=native\"]\nsplit = true\n"
    );
    let e = parse(&text).unwrap();
    let ids: Vec<&str> = e.cells.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "placement=docker-publish,seccomp=default,storage=image",
            "placement=docker-host,seccomp=default,storage=image",
            "placement=docker-host,seccomp=unconfined,storage=image",
            "placement=docker-host,seccomp=unconfined,storage=host-path",
            "placement=native",
        ]
    );
    assert_eq!(e.attribution[0][0], ids[0]);
    assert_eq!(e.splits.len(), 1);
    let split = &e.splits[0];
    assert_eq!(split.len(), 1, "docker-publish → docker-host is not split");
    assert_eq!(split[0].step, 2);
    assert_eq!(split[0].chain, ids[1..].to_vec());
    // Every sub-step changes one factor.
    for w in split[0].chain.windows(2) {
        let levels = |id: &str| {
            e.cells
                .iter()
                .find(|c| c.id == id)
                .unwrap()
                .levels
                .iter()
                .cloned()
                .collect()
        };
        assert_eq!(
            tare_analysis::changed_factors(&levels(&w[0]), &levels(&w[1])).len(),
            1,
            "{w:?}"
        );
    }

    // Native first: the parts reversed, from native into the container.
    let text = format!(
        "{HEAD}[factors]\nplacement = [\"native\", \"docker-host\"]\n\
         [attribution]\nchain = [\"placement=native\", \"placement=docker-host\"]\nsplit = true\n"
    );
    let e = parse(&text).unwrap();
    assert_eq!(
        e.splits[0][0].chain,
        [
            "placement=native",
            "placement=docker-host,seccomp=unconfined,storage=host-path",
            "placement=docker-host,seccomp=unconfined,storage=image",
            "placement=docker-host,seccomp=default,storage=image",
        ]
    );

    // Nothing to split: a one-line error at the key.
    let text = format!(
        "{HEAD}[factors]\nplacement = [\"native\", \"lab-nat\"]\n\
         [attribution]\nchain = [\"placement=native\", \"placement=lab-nat\"]\nsplit = true\n"
    );
    let err = parse(&text).unwrap_err().to_string();
    assert!(
        err.contains("attribution.split") && err.contains("nothing to split"),
        "{err}"
    );
}

#[test]
fn hosts_are_read_with_their_defaults_and_named_where_used() {
    let e = parse(&format!(
        "[hosts.gen]\nssh = \"bench@192.0.2.10\"\nport = 2222\n[hosts.srv]\nssh = \"192.0.2.11\"\ncheck_host_key = false\n{}",
        HEAD.replace("[load]\n", "[load]\nhosts = [\"gen\"]\n")
            .replace("[target]\n", "[target]\nhost = \"srv\"\n")
    ))
    .unwrap();
    let gen = e.hosts.get("gen").unwrap();
    assert_eq!(
        (gen.user.as_str(), gen.address.as_str(), gen.port),
        ("bench", "192.0.2.10", 2222)
    );
    assert!(gen.check_host_key, "known-hosts checking is on by default");
    assert_eq!(gen.dir, std::path::PathBuf::from("/tmp/tare-remote"));
    let srv = e.hosts.get("srv").unwrap();
    assert_eq!(
        (srv.user.as_str(), srv.port, srv.check_host_key),
        ("", 22, false)
    );
    assert_eq!(e.hosts.generators, ["gen"]);
    assert_eq!(e.hosts.target.as_deref(), Some("srv"));
    assert_eq!(e.hosts.used().len(), 2);
}

#[test]
fn host_mistakes_are_named_at_their_line() {
    let with = |hosts: &str, load: &str| {
        parse(&format!(
            "{hosts}{}",
            HEAD.replace("[load]\n", &format!("[load]\n{load}"))
        ))
        .unwrap_err()
        .to_string()
    };
    let e = with("", "hosts = [\"gen\"]\n");
    assert!(
        e.contains("`load.hosts`") && e.contains("no [hosts.gen]"),
        "{e}"
    );
    let e = with("[hosts.gen]\nssh = \"a b@c\"\n", "");
    assert!(
        e.contains("hosts.gen.ssh") && e.contains("user@address"),
        "{e}"
    );
    let e = with("[hosts.gen]\nssh = \"r@c\"\nport = 0\n", "");
    assert!(e.contains("hosts.gen.port"), "{e}");
    let e = with(
        "[hosts.gen]\nssh = \"r@c\"\nidentity = \"/nonexistent/id\"\n",
        "",
    );
    assert!(
        e.contains("hosts.gen.identity") && e.contains("not a file"),
        "{e}"
    );
    let e = with(
        "[hosts.gen]\nssh = \"r@c\"\n",
        "hosts = [\"gen\", \"gen\"]\n",
    );
    assert!(e.contains("named twice"), "{e}");
    let e = with(
        "[hosts.gen]\nssh = \"r@c\"\n",
        "hosts = [\"gen\"]\nslo = \"p99<10ms\"\n",
    );
    assert!(e.contains("load.slo"), "{e}");
    let e = with("[hosts.gen]\nssh = \"r@c\"\naddress = \"nope\"\n", "");
    assert!(e.contains("hosts.gen.address"), "{e}");
}

/// Regression: `config = "tuned"` for redis passed `--check` and failed in
/// `prepare` reading a file named `tuned`, and redis's documented
/// `appendonly` was refused: each target lists its own variants.
#[test]
fn redis_has_appendonly_and_not_tuned() {
    let text =
        "[target]\nkind = \"redis\"\n[factors]\nconfig = [\"default\", \"appendonly\"]\n[load]\n";
    let e = parse(text).unwrap();
    assert_eq!(e.cells[1].setup.config, "appendonly");
    let err = parse(&text.replace("appendonly", "tuned"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("known: default, appendonly"), "{err}");
}

#[test]
fn a_command_target_is_read_into_its_service() {
    let text =
        "[target]\nkind = \"command\"\ncommand = [\"/bin/sh\", \"-c\", \"exec x --port {port}\"]\n\
                engine = \"redis\"\nready = \"tcp\"\nport = 7000\nenv = { HOME = \"{data}\" }\n\
                files = [\"/etc/hostname\"]\n[load]\n";
    let e = parse(text).unwrap();
    let t = &e.target.server;
    assert_eq!(t.name(), "command");
    assert_eq!(t.engine(), "redis");
    assert_eq!(e.load.engine.name(), "redis");
    assert_eq!(t.port, 7000);
    assert_eq!(t.ready, tare_deploy::Ready::Tcp);
    assert_eq!(t.binary, Some("/bin/sh".into()));
    let s = t.service.as_ref().unwrap();
    assert_eq!(s.env, vec![("HOME".to_string(), "{data}".to_string())]);
    assert_eq!(
        s.system_files,
        vec![std::path::PathBuf::from("/etc/hostname")]
    );
    assert_eq!(s.path, "/");
}

#[test]
fn an_image_target_is_read_into_its_source_and_is_no_container_option() {
    let text = "[target]\nkind = \"image\"\nimage = \"web:1\"\nport = 8081\npath = \"/i.html\"\n\
                [factors]\nplacement = [\"native\", \"docker-host\", \"lab-nat\"]\n[load]\n";
    let e = parse(text).unwrap();
    assert_eq!(e.target.image, None);
    let t = &e.target.server;
    assert_eq!((t.name(), t.engine()), ("image", "http"));
    let o = t.oci.as_ref().unwrap();
    assert_eq!(o.source, tare_deploy::OciSource::Image("web:1".into()));
    assert_eq!((o.port, o.path.as_str()), (Some(8081), "/i.html"));
    // Without `port`, the image's exposed one, read when it deploys.
    let e = parse(&text.replace("port = 8081\n", "")).unwrap();
    assert_eq!(e.target.server.oci.as_ref().unwrap().port, None);
}

/// `[load.http]` alone makes `[load]` as a dotted header: read like an
/// explicit one (toml's span of such a table failed with "invalid type:
/// string \"http\", expected a borrowed string"), and its mistakes named
/// at their line.
#[test]
fn an_engine_table_without_its_load_table_is_read() {
    let text = "[target]\nkind = \"nginx\"\n[load.http]\npath = \"/x\"\n";
    let e = parse(text).unwrap();
    assert_eq!(e.load.engine.name(), "http");
    let bad = "[target]\nkind = \"nginx\"\n[load.http]\npath = \"/x\"\nnope = 1\n";
    let msg = parse(bad).unwrap_err().to_string();
    assert!(msg.contains("exp.toml:5"), "{msg}");
}
