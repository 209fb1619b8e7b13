//! The guest's `/init`: a busybox shell script that mounts the kernel's
//! filesystems, loads the virtio modules, sets the address the kernel
//! command line names (`tare.ip=ADDR/PREFIX tare.gw=GATEWAY`: Debian's
//! kernel has no CONFIG_IP_PNP, so `ip=` would be ignored), reports what the
//! guest is, starts the server and says so on the serial console, and when
//! the server exits says that too and ends the guest (QEMU runs with
//! `-no-reboot`, so `reboot -f` ends QEMU).
//!
//! The console lines it prints start with `tare-vm: ` and are what the host
//! reads: [`STARTED`], [`EXITED`] and the `facts` line ([`GuestReport`]).

use std::collections::BTreeMap;
use std::path::Path;

use crate::facts::GuestReport;

/// Where the modules go in the guest, numbered in load order.
pub(crate) const MODULE_DIR: &str = "tare/modules";
/// Where the disk's modules go in the guest, numbered in load order.
pub(crate) const DISK_MODULE_DIR: &str = "tare/modules-disk";

/// The line saying the server process runs.
pub(crate) const STARTED: &str = "tare-vm: server started";
/// The line saying it has exited (the guest shuts down after it).
pub(crate) const EXITED: &str = "tare-vm: server exited";
const FACTS: &str = "tare-vm: facts ";

/// A program the init starts: the server, or its companion.
pub(crate) struct Program<'a> {
    pub binary: &'a Path,
    pub args: &'a [String],
    /// Environment it gets beside the init's.
    pub env: &'a [(String, String)],
    /// Its working directory; `None`: the deployment directory.
    pub workdir: Option<&'a Path>,
    /// uid:gid to run as (postgres refuses root).
    pub run_as: Option<(u32, u32)>,
    /// The TCP port it listens on: the init says the server started only
    /// once every such port listens.
    pub port: Option<u16>,
    /// A user's image: it runs chrooted into the image's files, here in
    /// the guest ([`IMAGE_ROOT`]), as a native cell's entrypoint does.
    pub root: Option<&'a Path>,
}

/// Where a user's image's root filesystem is in the guest: its own
/// directory, beside (not over) the init's busybox, so its files are the
/// image's alone.
pub(crate) const IMAGE_ROOT: &str = "/tare/root";

/// What the init mounts over the server's content directory before it
/// starts the server (the storage factor in a guest).
pub(crate) enum Data<'a> {
    /// Nothing: the content stays in the initramfs (the root filesystem).
    Root,
    /// The virtio-blk disk (`vm::disk`), formatted on the host.
    Disk {
        at: &'a Path,
        device: &'a str,
        fs: &'a str,
    },
    /// A tmpfs in the guest's memory.
    Tmpfs { at: &'a Path },
}

/// What the init starts.
pub(crate) struct Plan<'a> {
    /// The deployment directory (the server's working directory).
    pub dir: &'a Path,
    pub server: Program<'a>,
    /// A companion in the same guest (nginx-proxy's backend), started first.
    pub companion: Option<Program<'a>>,
    /// Open-file limit (soft, hard), as a native server inherits it.
    pub nofile: (u64, u64),
    /// What holds the server's content.
    pub data: Data<'a>,
}

/// The shell words that run `p`: in its working directory, with its
/// environment, the shell replaced by it (so `$!` is its pid).
fn command(p: &Program<'_>) -> String {
    if let Some(root) = p.root {
        return chrooted(p, root);
    }
    let mut command: Vec<String> = Vec::new();
    if !p.env.is_empty() {
        command.push("env".into());
        command.extend(p.env.iter().map(|(k, v)| format!("{k}={v}")));
    }
    if let Some((uid, gid)) = p.run_as {
        // busybox's setpriv cannot change ids; its start-stop-daemon
        // without -b sets them (and the user's groups) and execs.
        command.extend([
            "start-stop-daemon".into(),
            "-S".into(),
            "-c".into(),
            format!("{uid}:{gid}"),
            "-x".into(),
            p.binary.display().to_string(),
            "--".into(),
        ]);
    } else {
        command.push(p.binary.display().to_string());
    }
    command.extend(p.args.iter().cloned());
    let words = command
        .iter()
        .map(|w| quote(w))
        .collect::<Vec<_>>()
        .join(" ");
    match p.workdir {
        Some(w) => format!("( cd {} && exec {words} )", quote(&w.display().to_string())),
        None => words,
    }
}

/// The shell words that run `p` chrooted into `root` (a user's image), as
/// a native cell runs it (`placements::chroot`): only the image's
/// environment, its working directory, its user, the guest's /proc, /dev,
/// /sys and a tmpfs /tmp mounted inside the tree first. busybox's nsenter
/// opens the working directory before the chroot and enters it after (its
/// chroot applet would start in `/`), and sets the ids last.
fn chrooted(p: &Program<'_>, root: &Path) -> String {
    let r = root.display().to_string();
    let workdir = p.workdir.unwrap_or(Path::new("/"));
    let inside = format!(
        "{r}/{}",
        workdir.display().to_string().trim_start_matches('/')
    );
    let mut words: Vec<String> = vec!["env".into(), "-i".into()];
    words.extend(p.env.iter().map(|(k, v)| format!("{k}={v}")));
    words.extend([
        "nsenter".into(),
        "-F".into(),
        format!("-r{r}"),
        format!("-w{}", inside.trim_end_matches('/')),
    ]);
    if let Some((uid, gid)) = p.run_as {
        words.extend([format!("-S{uid}"), format!("-G{gid}")]);
    }
    words.push(p.binary.display().to_string());
    words.extend(p.args.iter().cloned());
    let q = quote(&r);
    format!(
        "{{ for d in proc dev sys tmp; do mkdir -p {q}/$d; done; mkdir -p {w}; \
mount -t proc proc {q}/proc; mount -o bind /dev {q}/dev; mount -o bind /sys {q}/sys; \
mount -t tmpfs -o mode=1777 tmpfs {q}/tmp; exec {words}; }}",
        w = quote(&inside),
        words = words.iter().map(|w| quote(w)).collect::<Vec<_>>().join(" ")
    )
}

/// The shell lines that mount `data` before the server starts. A mount
/// that fails ends the guest with the server "exited", so the host's wait
/// fails at once with these console lines.
fn mount(data: &Data<'_>) -> String {
    let fail = |what: &str| {
        format!("{{ say \"{what}\"; say \"server exited with status 1\"; sync; reboot -f; }}")
    };
    match data {
        Data::Root => String::new(),
        Data::Disk { at, device, fs } => {
            let at = quote(&at.display().to_string());
            format!(
                r#"load /{DISK_MODULE_DIR}
n=0
while [ ! -b {device} ] && [ $n -lt 1000 ]; do tick; n=$((n+1)); done
mkdir -p {at}
mount -t {fs} {device} {at} || {fail}
"#,
                fail = fail(&format!("mounting {device} ({fs}) failed"))
            )
        }
        Data::Tmpfs { at } => {
            let at = quote(&at.display().to_string());
            format!(
                "mkdir -p {at}\nmount -t tmpfs -o mode=0755 tmpfs {at} || {}\n",
                fail("mounting a tmpfs failed")
            )
        }
    }
}

/// The directory whose filesystem the facts line reports as the data's.
fn data_dir<'a>(plan: &'a Plan<'_>) -> &'a Path {
    match &plan.data {
        Data::Root => plan.dir,
        Data::Disk { at, .. } | Data::Tmpfs { at } => at,
    }
}

/// The `/init` script for `plan`.
///
/// The servers start as soon as the filesystems are mounted, before the
/// NIC's modules load and the address is set: they listen on the wildcard
/// address, and their own start (under TCG, every first-run instruction
/// translated) then overlaps the network set-up on the other vCPU instead
/// of following it (docs/placements.md, "Boot time"). The init reports the
/// server started once its port listens (read from /proc/net/tcp with
/// shell built-ins: a fork per poll would take CPU from the server's own
/// start), so the host's first probe finds it ready.
pub(crate) fn script(plan: &Plan<'_>) -> String {
    let limit = |n: u64| {
        if n == libc::RLIM_INFINITY {
            "unlimited".to_string()
        } else {
            n.to_string()
        }
    };
    let mut start = String::new();
    let ports: Vec<u16> = plan
        .companion
        .iter()
        .chain(std::iter::once(&plan.server))
        .filter_map(|p| p.port)
        .collect();
    if let Some(c) = &plan.companion {
        start.push_str(&format!("{} >/tmp/tare-companion.log 2>&1 &\n", command(c)));
    }
    start.push_str(&format!(
        "{} >/tmp/tare-server.log 2>&1 &\nPID=$!",
        command(&plan.server)
    ));
    let listening: String = if ports.is_empty() {
        "true".into()
    } else {
        ports
            .iter()
            .map(|p| format!("listening {p:04X}"))
            .collect::<Vec<_>>()
            .join(" && ")
    };
    format!(
        r#"#!/bin/busybox sh
# tare's guest init (crates/deploy/src/vm/init.rs)
/bin/busybox mkdir -p /tare/bin
/bin/busybox --install -s /tare/bin
export PATH=/tare/bin:/usr/sbin:/usr/bin:/sbin:/bin
say() {{ echo "tare-vm: $*"; }}
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
hostname tare-guest
ulimit -Hn {hard}
ulimit -Sn {soft}
ip link set lo up
mkfifo /tmp/tare-tick
exec 3<>/tmp/tare-tick
tick() {{ read -t 0.01 -u 3 _; }}
# Modules in load order; one already loaded (a shared dependency) is skipped.
load() {{ for m in "$1"/*.ko; do n="${{m##*/}}"; n="${{n#*-}}"; n="${{n%.ko}}"; [ -d "/sys/module/$n" ] || insmod "$m" || say "insmod $m failed"; done; }}
# The filesystem a directory is on: its own mount's type, else stat's.
fstype() {{ t=$(awk -v p="$1" '$2 == p {{ t = $3 }} END {{ print t }}' /proc/mounts); [ -n "$t" ] || t=$(stat -f -c %T "$1"); echo "$t"; }}
{mount}cd {dir}
{start}
load /{MODULE_DIR}
IP=; GW=
for a in $(cat /proc/cmdline); do
  case "$a" in
    tare.ip=*) IP="${{a#tare.ip=}}" ;;
    tare.gw=*) GW="${{a#tare.gw=}}" ;;
  esac
done
n=0
while [ ! -e /sys/class/net/eth0 ] && [ $n -lt 200 ]; do tick; n=$((n+1)); done
ip link set eth0 up || say "no eth0"
[ -n "$IP" ] && ip addr add "$IP" dev eth0
[ -n "$GW" ] && ip route add default via "$GW"
say "facts kernel=$(uname -r) cpus=$(nproc) mem_kb=$(awk '/^MemTotal/{{print $2}}' /proc/meminfo) nofile=$(ulimit -Sn):$(ulimit -Hn) fs=$(fstype {dir}) data_fs=$(fstype {data}){root_fs} addr=$IP"
listening() {{ while read -r _ a _ st _; do [ "$st" = 0A ] && [ "${{a#*:}}" = "$1" ] && return 0; done < /proc/net/tcp; return 1; }}
alive() {{ while read -r k v _; do [ "$k" = State: ] && {{ [ "$v" != Z ]; return; }}; done 2>/dev/null < /proc/$1/status; return 1; }}
n=0
while alive $PID && ! {{ {listening}; }} && [ $n -lt 2000 ]; do tick; n=$((n+1)); done
read up _ < /proc/uptime
alive $PID && say "server started (pid $PID, uptime $up s)"
wait $PID
rc=$?
tail -n 20 /tmp/tare-server.log
{companion_log}say "server exited with status $rc"
sync
reboot -f
"#,
        hard = limit(plan.nofile.1),
        soft = limit(plan.nofile.0),
        dir = quote(&plan.dir.display().to_string()),
        data = quote(&data_dir(plan).display().to_string()),
        mount = mount(&plan.data),
        root_fs = match plan.server.root {
            Some(r) => format!(" root_fs=$(fstype {})", quote(&r.display().to_string())),
            None => String::new(),
        },
        companion_log = if plan.companion.is_some() {
            "say \"companion's last output:\"\ntail -n 10 /tmp/tare-companion.log\n"
        } else {
            ""
        },
    )
}

/// A word for sh, single-quoted.
fn quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// The last `facts` line of a console log, if any. Values are single
/// words (`key=value`, space-separated); unknown keys are ignored.
pub fn guest_report(console: &str) -> Option<GuestReport> {
    let line = console
        .lines()
        .rev()
        .find_map(|l| l.find(FACTS).map(|at| &l[at + FACTS.len()..]))?;
    let kv: BTreeMap<&str, &str> = line
        .split_whitespace()
        .filter_map(|w| w.split_once('='))
        .collect();
    let nofile = kv
        .get("nofile")
        .and_then(|v| v.split_once(':'))
        .map(|(s, h)| {
            let n = |t: &str| t.parse::<u64>().ok();
            (n(s), n(h))
        });
    Some(GuestReport {
        kernel: kv.get("kernel").map(|s| s.to_string()),
        cpus: kv.get("cpus").and_then(|v| v.parse().ok()),
        memory_kb: kv.get("mem_kb").and_then(|v| v.parse().ok()),
        nofile,
        fs: kv
            .get("fs")
            .filter(|v| !v.is_empty())
            .map(|s| s.to_string()),
        data_fs: kv
            .get("data_fs")
            .filter(|v| !v.is_empty())
            .map(|s| s.to_string()),
        root_fs: kv
            .get("root_fs")
            .filter(|v| !v.is_empty())
            .map(|s| s.to_string()),
    })
}

/// The last `n` console lines, after the kernel's panic line when it
/// panicked earlier (its stack trace would push the reason out of them).
pub fn console_tail(text: &str, n: usize) -> String {
    let tail = last_lines(text, n);
    match text.lines().find(|l| l.contains("Kernel panic")) {
        Some(panic) if !tail.contains(panic.trim_end()) => format!("{}\n{tail}", panic.trim_end()),
        _ => tail,
    }
}

fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty())
        .collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_runs_the_server_quoted_and_as_its_user() {
        let args = vec!["-c".to_string(), "it's".to_string()];
        let backend = vec!["serve".to_string()];
        let s = script(&Plan {
            dir: Path::new("/tmp/tare-x"),
            server: Program {
                binary: Path::new("/usr/bin/postgres"),
                args: &args,
                env: &[],
                workdir: None,
                run_as: Some((104, 111)),
                port: Some(5432),
                root: None,
            },
            companion: Some(Program {
                binary: Path::new("/usr/bin/tare"),
                args: &backend,
                env: &[],
                workdir: None,
                run_as: None,
                port: Some(8080),
                root: None,
            }),
            nofile: (1024, libc::RLIM_INFINITY),
            data: Data::Root,
        });
        assert!(s.starts_with("#!/bin/busybox sh\n"));
        assert!(s.contains(
            "'start-stop-daemon' '-S' '-c' '104:111' '-x' '/usr/bin/postgres' '--' '-c' 'it'\\''s' >"
        ), "{s}");
        assert!(s.contains("ulimit -Hn unlimited\nulimit -Sn 1024\n"), "{s}");
        assert!(s.contains("cd '/tmp/tare-x'"), "{s}");
        // The companion starts before the server; both ports must listen.
        let companion = s.find("'/usr/bin/tare' 'serve' >").unwrap();
        assert!(companion < s.find("'start-stop-daemon'").unwrap(), "{s}");
        assert!(s.contains("listening 1F90 && listening 1538"), "{s}");
    }

    #[test]
    fn an_image_runs_chrooted_with_its_own_env_workdir_and_user() {
        let args = vec!["httpd".to_string(), "-f".to_string()];
        let env = vec![("PATH".to_string(), "/bin".to_string())];
        let s = script(&Plan {
            dir: Path::new("/tmp/tare-x"),
            server: Program {
                binary: Path::new("/bin/busybox"),
                args: &args,
                env: &env,
                workdir: Some(Path::new("/www")),
                run_as: Some((65534, 65534)),
                port: Some(8080),
                root: Some(Path::new(IMAGE_ROOT)),
            },
            companion: None,
            nofile: (1024, 1024),
            data: Data::Root,
        });
        assert!(s.contains("mount -t proc proc '/tare/root'/proc"), "{s}");
        assert!(
            s.contains("exec 'env' '-i' 'PATH=/bin' 'nsenter' '-F' '-r/tare/root' '-w/tare/root/www' '-S65534' '-G65534' '/bin/busybox' 'httpd' '-f'; } >/tmp/tare-server.log"),
            "{s}"
        );
        assert!(s.contains(" root_fs=$(fstype '/tare/root')"), "{s}");
        let r = guest_report("tare-vm: facts kernel=6.1 fs=rootfs root_fs=rootfs addr=").unwrap();
        assert_eq!(r.root_fs.as_deref(), Some("rootfs"));
    }

    #[test]
    fn a_data_disk_is_mounted_before_the_server_starts() {
        let args = vec!["tool".to_string()];
        let plan = |data| Plan {
            dir: Path::new("/tmp/tare-x"),
            server: Program {
                binary: Path::new("/usr/bin/tare"),
                args: &args,
                env: &[],
                workdir: None,
                run_as: None,
                port: Some(9876),
                root: None,
            },
            companion: None,
            nofile: (1024, 1024),
            data,
        };
        let s = script(&plan(Data::Disk {
            at: Path::new("/tmp/tare-x/data"),
            device: "/dev/vda",
            fs: "ext4",
        }));
        let mount = s
            .find("mount -t ext4 /dev/vda '/tmp/tare-x/data' || {")
            .expect(&s);
        assert!(
            s.find(&format!("load /{DISK_MODULE_DIR}")).unwrap() < mount,
            "{s}"
        );
        assert!(mount < s.find("'/usr/bin/tare' 'tool' >").unwrap(), "{s}");
        assert!(s.contains("data_fs=$(fstype '/tmp/tare-x/data')"), "{s}");
        let t = script(&plan(Data::Tmpfs {
            at: Path::new("/tmp/tare-x/data"),
        }));
        assert!(
            t.contains("mount -t tmpfs -o mode=0755 tmpfs '/tmp/tare-x/data' || {"),
            "{t}"
        );
        assert!(!t.contains(DISK_MODULE_DIR), "{t}");
        let r = script(&plan(Data::Root));
        assert!(!r.contains("mount -t ext4") && r.contains("data_fs=$(fstype '/tmp/tare-x')"));
    }

    #[test]
    fn the_facts_line_reads_back() {
        let console = "[    1.0] x\ntare-vm: facts kernel=6.1.0-56-amd64 cpus=2 mem_kb=494000 nofile=1024:524288 fs=tmpfs data_fs=ext4 addr=10.0.0.2/28\ntare-vm: server started (pid 80)\n";
        let r = guest_report(console).unwrap();
        assert_eq!(r.kernel.as_deref(), Some("6.1.0-56-amd64"));
        assert_eq!(r.cpus, Some(2));
        assert_eq!(r.memory_kb, Some(494_000));
        assert_eq!(r.nofile, Some((Some(1024), Some(524_288))));
        assert_eq!(r.fs.as_deref(), Some("tmpfs"));
        assert_eq!(r.data_fs.as_deref(), Some("ext4"));
        assert!(guest_report("nothing here").is_none());
        let odd = guest_report("tare-vm: facts cpus=x nofile=1 fs=").unwrap();
        assert_eq!(odd.cpus, None);
        assert_eq!(odd.nofile, None);
        assert_eq!(odd.fs, None);
    }

    #[test]
    fn a_kernel_panic_is_named_before_the_last_lines() {
        let console =
            "[ 1.0] Kernel panic - not syncing: Out of memory\n[ 1.1] a\n[ 1.2] b\n[ 1.3] c\n";
        let t = console_tail(console, 2);
        assert!(
            t.starts_with("[ 1.0] Kernel panic - not syncing: Out of memory"),
            "{t}"
        );
        assert!(t.ends_with("[ 1.2] b\n[ 1.3] c"), "{t}");
        assert_eq!(console_tail("x\ny\n", 1), "y");
    }
}
