//! Where to connect and as whom, resolved as libpq resolves it: flags first,
//! then the `PG*` environment variables, then libpq's compiled-in defaults,
//! and the password from `PGPASSWORD` or the password file.
//!
//! Reference: PostgreSQL documentation, 34.15 "Environment Variables" and
//! 34.16 "The Password File".

use std::net::ToSocketAddrs;
use std::path::{Path, PathBuf};

use tare_engine::Endpoint;

use crate::error::PgError;

/// Debian's libpq looks for the server's socket here when no host is given
/// (upstream's default is `/tmp`; Debian patches `DEFAULT_PGSOCKET_DIR`).
pub(crate) const DEFAULT_SOCKET_DIR: &str = "/var/run/postgresql";
pub(crate) const DEFAULT_PORT: u16 = 5432;

/// A resolved connection: an endpoint plus the startup and auth parameters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnParams {
    pub endpoint: Endpoint,
    /// The host as given (a name, an address or a socket directory), for display.
    pub host: String,
    pub port: u16,
    pub user: String,
    pub database: String,
    pub password: Option<String>,
    pub application_name: String,
    /// Server options at start-up (`PGOPTIONS`, e.g. `-c
    /// default_transaction_isolation=serializable`), passed as libpq
    /// passes them.
    pub options: Option<String>,
}

/// What the command line said; `None` means "not given".
#[derive(Clone, Debug, Default)]
pub struct ConnFlags {
    pub host: Option<String>,
    pub port: Option<u16>,
    pub user: Option<String>,
    pub database: Option<String>,
    pub password: Option<String>,
}

impl ConnParams {
    /// Resolves flags against the process environment.
    pub fn from_env(flags: &ConnFlags) -> Result<Self, PgError> {
        Self::resolve(flags, &|k| std::env::var(k).ok())
    }

    /// Resolves flags against `env` (a lookup, so tests need not touch the
    /// real environment).
    pub fn resolve(
        flags: &ConnFlags,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, PgError> {
        let nonempty = |v: Option<String>| v.filter(|s| !s.is_empty());
        let host = nonempty(flags.host.clone())
            .or_else(|| nonempty(env("PGHOST")))
            .unwrap_or_else(|| DEFAULT_SOCKET_DIR.to_string());
        let port = match flags.port {
            Some(p) => p,
            None => match nonempty(env("PGPORT")) {
                Some(p) => p
                    .parse()
                    .map_err(|_| PgError::Config(format!("invalid PGPORT value: \"{p}\"")))?,
                None => DEFAULT_PORT,
            },
        };
        let user = nonempty(flags.user.clone())
            .or_else(|| nonempty(env("PGUSER")))
            .or_else(os_user)
            .ok_or_else(|| PgError::Config("could not determine the user name".into()))?;
        let database = nonempty(flags.database.clone())
            .or_else(|| nonempty(env("PGDATABASE")))
            .unwrap_or_else(|| user.clone());
        let application_name = nonempty(env("PGAPPNAME")).unwrap_or_else(|| "tare".into());
        let endpoint = endpoint_of(&host, port)?;
        let password = flags
            .password
            .clone()
            .or_else(|| env("PGPASSWORD"))
            .or_else(|| {
                let file = nonempty(env("PGPASSFILE"))
                    .map(PathBuf::from)
                    .or_else(|| nonempty(env("HOME")).map(|h| Path::new(&h).join(".pgpass")))?;
                let text = std::fs::read_to_string(file).ok()?;
                passfile_lookup(&text, &host, port, &database, &user)
            });
        let params = Self {
            endpoint,
            host,
            port,
            user,
            database,
            password,
            application_name,
            options: nonempty(env("PGOPTIONS")),
        };
        params.check()?;
        Ok(params)
    }

    /// Start-up parameters and passwords travel as NUL-terminated strings:
    /// a NUL inside one would cut it short, so it is refused here, with the
    /// parameter named, wherever it came from (flags, environment, password
    /// file, an experiment file, a library caller).
    pub fn check(&self) -> Result<(), PgError> {
        let fields = [
            ("user name", Some(&self.user)),
            ("database name", Some(&self.database)),
            ("application name", Some(&self.application_name)),
            ("password", self.password.as_ref()),
            ("options", self.options.as_ref()),
        ];
        for (what, value) in fields {
            if let Some(v) = value.filter(|v| v.contains('\0')) {
                let shown = if what == "password" {
                    String::new()
                } else {
                    format!(" {v:?}")
                };
                return Err(PgError::Config(format!(
                    "invalid {what}{shown}: it contains a NUL byte"
                )));
            }
        }
        Ok(())
    }

    /// `host=… port=… dbname=… user=…`, the run's `target`.
    pub fn target(&self) -> String {
        format!(
            "host={} port={} dbname={} user={}",
            self.host, self.port, self.database, self.user
        )
    }

    /// The connection as libpq names it in errors.
    pub(crate) fn display_server(&self) -> String {
        match &self.endpoint {
            Endpoint::Unix(p) => format!("socket \"{}\"", p.display()),
            Endpoint::Tcp(a) => format!("\"{}\" ({}), port {}", self.host, a.ip(), a.port()),
        }
    }
}

/// A host starting with `/` is a socket directory (libpq's rule); anything
/// else is resolved, first address wins.
pub(crate) fn endpoint_of(host: &str, port: u16) -> Result<Endpoint, PgError> {
    if host.starts_with('/') {
        return Ok(Endpoint::Unix(
            Path::new(host).join(format!(".s.PGSQL.{port}")),
        ));
    }
    let host_only = host.trim_start_matches('[').trim_end_matches(']');
    (host_only, port)
        .to_socket_addrs()
        .map_err(|e| {
            PgError::Config(format!(
                "could not translate host name \"{host}\" to address: {e}"
            ))
        })?
        .next()
        .map(Endpoint::Tcp)
        .ok_or_else(|| PgError::Config(format!("host name \"{host}\" has no address")))
}

fn os_user() -> Option<String> {
    // SAFETY: getpwuid returns a pointer into static storage or null; we copy
    // the name out before any other call could overwrite it.
    unsafe {
        let pw = libc::getpwuid(libc::geteuid());
        if pw.is_null() {
            return None;
        }
        let name = std::ffi::CStr::from_ptr((*pw).pw_name);
        Some(name.to_string_lossy().into_owned())
    }
}

/// One line of a password file is `host:port:database:user:password`, `*`
/// matching anything, `\` escaping `:` and `\`; the first match wins. A
/// socket directory matches `localhost` as well, as libpq does.
pub(crate) fn passfile_lookup(
    text: &str,
    host: &str,
    port: u16,
    db: &str,
    user: &str,
) -> Option<String> {
    let port = port.to_string();
    for line in text.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let mut fields = Vec::with_capacity(5);
        let mut cur = String::new();
        let mut chars = line.chars();
        while let Some(c) = chars.next() {
            match c {
                '\\' => cur.extend(chars.next()),
                ':' if fields.len() < 4 => fields.push(std::mem::take(&mut cur)),
                c => cur.push(c),
            }
        }
        fields.push(cur);
        if fields.len() != 5 {
            continue;
        }
        let m = |f: &str, v: &str| f == "*" || f == v;
        let host_ok = m(&fields[0], host) || (host.starts_with('/') && fields[0] == "localhost");
        if host_ok && m(&fields[1], &port) && m(&fields[2], db) && m(&fields[3], user) {
            return Some(fields[4].clone());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| m.get(k).cloned()
    }

    #[test]
    fn a_nul_byte_in_a_parameter_is_an_error_naming_it() {
        let e = ConnParams::resolve(&ConnFlags::default(), &env(&[("PGUSER", "a\0")]))
            .unwrap_err()
            .to_string();
        assert_eq!(e, "invalid user name \"a\\0\": it contains a NUL byte");
        let e = ConnParams::resolve(
            &ConnFlags::default(),
            &env(&[("PGUSER", "u"), ("PGPASSWORD", "p\0w")]),
        )
        .unwrap_err()
        .to_string();
        assert_eq!(e, "invalid password: it contains a NUL byte");
    }

    #[test]
    fn flags_beat_environment_beat_defaults() {
        let e = env(&[
            ("PGHOST", "/run/pg"),
            ("PGPORT", "6000"),
            ("PGUSER", "alice"),
        ]);
        let p = ConnParams::resolve(&ConnFlags::default(), &e).unwrap();
        assert_eq!(p.endpoint, Endpoint::Unix("/run/pg/.s.PGSQL.6000".into()));
        assert_eq!((p.user.as_str(), p.database.as_str()), ("alice", "alice"));

        let flags = ConnFlags {
            host: Some("127.0.0.1".into()),
            port: Some(5433),
            database: Some("db".into()),
            ..Default::default()
        };
        let p = ConnParams::resolve(&flags, &e).unwrap();
        assert_eq!(p.endpoint, Endpoint::Tcp("127.0.0.1:5433".parse().unwrap()));
        assert_eq!(p.database, "db");
    }

    #[test]
    fn default_host_is_debians_socket_directory() {
        let p = ConnParams::resolve(&ConnFlags::default(), &env(&[("PGUSER", "u")])).unwrap();
        assert_eq!(
            p.endpoint,
            Endpoint::Unix("/var/run/postgresql/.s.PGSQL.5432".into())
        );
    }

    #[test]
    fn bad_pgport_is_an_error() {
        let r = ConnParams::resolve(
            &ConnFlags::default(),
            &env(&[("PGPORT", "x"), ("PGUSER", "u")]),
        );
        assert!(r.unwrap_err().to_string().contains("PGPORT"));
    }

    #[test]
    fn password_file_matches_first_line_with_wildcards_and_escapes() {
        let text = "# comment\nother:*:*:*:no\nlocalhost:5432:*:bob:pa\\:ss\n*:*:*:*:fallback\n";
        assert_eq!(
            passfile_lookup(text, "/tmp", 5432, "db", "bob").as_deref(),
            Some("pa:ss")
        );
        assert_eq!(
            passfile_lookup(text, "10.0.0.1", 1, "db", "x").as_deref(),
            Some("fallback")
        );
    }

    #[test]
    fn pgpassword_is_used() {
        let p = ConnParams::resolve(
            &ConnFlags::default(),
            &env(&[("PGUSER", "u"), ("PGPASSWORD", "s")]),
        )
        .unwrap();
        assert_eq!(p.password.as_deref(), Some("s"));
    }
}
