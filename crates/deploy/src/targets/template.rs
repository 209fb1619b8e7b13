//! Data directory templates: a server's initialisation (`initdb`,
//! `mariadb-install-db`) run once per binary and settings, kept in a cache
//! directory, and copied into each deployment (docs/mysql.md,
//! docs/placements.md). The copy is what a deployment serves and what the
//! `storage` factor places; a template is never served.

use std::path::Path;

use crate::error::DeployError;

/// Fills `data` (which must not exist) with a copy of the template `name`
/// in `cache`, made first by `make(aside, scratch)` when there is none:
/// `make` fills the directory `aside` (not yet made) and may use the
/// empty directory `scratch`. A template is only ever a finished one (made
/// aside, then renamed into place), so a deployment interrupted while
/// making one leaves nothing reusable.
pub(crate) fn copy_into(
    cache: &Path,
    name: &str,
    data: &Path,
    make: impl FnOnce(&Path, &Path) -> Result<(), DeployError>,
) -> Result<(), DeployError> {
    let template = cache.join(name);
    if !template.is_dir() {
        std::fs::create_dir_all(cache)
            .map_err(|e| DeployError::io(format!("creating {}", cache.display()), e))?;
        // Unique to this call: two deployments of one process (tests run
        // in threads) may make the same template at once.
        static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let id = format!("{name}.{}.{n}", std::process::id());
        let aside = cache.join(format!(".{id}"));
        let scratch = cache.join(format!(".tmp-{id}"));
        let _ = std::fs::remove_dir_all(&aside);
        std::fs::create_dir_all(&scratch)
            .map_err(|e| DeployError::io(format!("creating {}", scratch.display()), e))?;
        let made = make(&aside, &scratch).and_then(|()| {
            std::fs::rename(&aside, &template).or_else(|e| {
                // Another deployment made the same template meanwhile.
                if template.is_dir() {
                    Ok(())
                } else {
                    Err(DeployError::io(
                        format!("keeping {}", template.display()),
                        e,
                    ))
                }
            })
        });
        let _ = std::fs::remove_dir_all(&aside);
        let _ = std::fs::remove_dir_all(&scratch);
        made?;
    }
    copy_tree(&template, data).map_err(|e| {
        DeployError::io(
            format!("copying {} to {}", template.display(), data.display()),
            e,
        )
    })
}

/// Copies the directory `from` to `to` (which must not exist), with the
/// modes of its files and directories.
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        if entry.file_type()?.is_dir() {
            copy_tree(&src, &dst)?;
        } else {
            std::fs::copy(&src, &dst)?;
        }
    }
    std::fs::set_permissions(to, std::fs::metadata(from)?.permissions())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_template_is_made_once_and_copied_with_its_modes() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let cache = tmp.path().join("cache");
        let mut made = 0;
        for n in 0..2 {
            let data = tmp.path().join(format!("data{n}"));
            copy_into(&cache, "t-1", &data, |aside, scratch| {
                made += 1;
                assert!(scratch.is_dir());
                std::fs::create_dir_all(aside.join("sub")).unwrap();
                std::fs::write(aside.join("sub/f"), "x").unwrap();
                std::fs::set_permissions(aside, std::fs::Permissions::from_mode(0o700)).unwrap();
                Ok(())
            })
            .unwrap();
            assert_eq!(std::fs::read_to_string(data.join("sub/f")).unwrap(), "x");
            let mode = std::fs::metadata(&data).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o700);
        }
        assert_eq!(made, 1);
        // Only the template stays in the cache: no half-made directory.
        let names: Vec<_> = std::fs::read_dir(&cache)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["t-1"]);
    }

    #[test]
    fn a_failed_make_leaves_no_template() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = tmp.path().join("cache");
        let err = copy_into(&cache, "t-2", &tmp.path().join("data"), |aside, _| {
            std::fs::create_dir_all(aside).unwrap();
            Err(DeployError::Invalid("no".into()))
        })
        .unwrap_err();
        assert!(err.to_string().contains("no"), "{err}");
        assert_eq!(std::fs::read_dir(&cache).unwrap().count(), 0);
    }
}
