//! Handles on registry entries: `TargetKind` is a `&'static` reference
//! to one entry of its registry (`targets::RECIPES`), `PlacementKind` the
//! place of one in its (`placements::PLACEMENTS`); each is named,
//! compared, printed, parsed and serialized by the entry's name. Nothing
//! outside an entry's own file spells its name: the registry is the list.

/// A name that did not parse; the message lists the accepted names.
#[derive(Debug, thiserror::Error)]
#[error("unknown {what} {given:?}: expected one of {expected}")]
pub struct ParseNameError {
    pub(crate) what: &'static str,
    pub(crate) given: String,
    pub(crate) expected: String,
}

/// Implements the handle type `$handle(&'static dyn $trait)` (or, with
/// `index`, `$handle(usize)`) over the registry `$list`, with `$what` in
/// parse errors ("unknown placement ...").
macro_rules! handle {
    ($handle:ident, $trait:path, $list:path, $what:literal) => {
        impl $handle {
            fn nth(i: usize) -> $handle {
                $handle($list[i])
            }

            pub(crate) fn get(self) -> &'static dyn $trait {
                self.0
            }
        }

        $crate::registry::handle!(@names $handle, $list, $what);
    };
    // A handle that holds its entry's place in `$list` (a type declared
    // below the registry, which cannot name the trait).
    (index $handle:ident, $trait:path, $list:path, $what:literal) => {
        impl $handle {
            fn nth(i: usize) -> $handle {
                $handle(i)
            }

            pub(crate) fn get(self) -> &'static dyn $trait {
                $list[self.0]
            }
        }

        $crate::registry::handle!(@names $handle, $list, $what);
    };
    (@names $handle:ident, $list:path, $what:literal) => {
        impl $handle {
            /// The entry's name: on the command line, in experiment files and records.
            pub fn name(self) -> &'static str {
                self.get().name()
            }

            /// Every entry, in registry order.
            pub fn all() -> impl Iterator<Item = $handle> {
                (0..$list.len()).map($handle::nth)
            }

            /// The entry called `name` (or one of its aliases).
            pub fn named(name: &str) -> Result<$handle, $crate::registry::ParseNameError> {
                $list
                    .iter()
                    .position(|e| e.name() == name || e.aliases().contains(&name))
                    .map($handle::nth)
                    .ok_or_else(|| $crate::registry::ParseNameError {
                        what: $what,
                        given: name.to_string(),
                        expected: $list
                            .iter()
                            .map(|e| e.name())
                            .collect::<Vec<_>>()
                            .join(", "),
                    })
            }
        }

        impl PartialEq for $handle {
            fn eq(&self, other: &Self) -> bool {
                self.name() == other.name()
            }
        }

        impl Eq for $handle {}

        impl std::hash::Hash for $handle {
            fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
                self.name().hash(state)
            }
        }

        impl std::fmt::Debug for $handle {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "{}({})", stringify!($handle), self.name())
            }
        }

        impl std::fmt::Display for $handle {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }

        impl std::str::FromStr for $handle {
            type Err = $crate::registry::ParseNameError;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                $handle::named(s)
            }
        }

        impl serde::Serialize for $handle {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.name())
            }
        }

        impl<'de> serde::Deserialize<'de> for $handle {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let name = String::deserialize(d)?;
                $handle::named(&name).map_err(serde::de::Error::custom)
            }
        }
    };
}

pub(crate) use handle;
