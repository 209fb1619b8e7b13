//! Placements that run the server as a plain process (native and lab-*);
//! docker-* placements live in [`crate::docker`].

pub(crate) mod process;
