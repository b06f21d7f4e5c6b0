//! Real job-queue libraries as the system under test: the library's own client enqueues, its
//! own worker process runs the jobs, its own API says what it believes of each job. ordlab
//! places a fault at a named command on the wire and judges the outcome against the guarantee
//! the library documents.
//!
//! A library is an adapter folder (`examples/libraries/<name>/`: `library.toml` and three
//! commands, see [`manifest`]), installed at the version a scenario pins ([`install`]); the kind
//! ([`job_queue`]) runs it, and [`checker`] reads the side-effect ledger and the library's state
//! into a fate per job.

pub mod adapter;
pub mod checker;
pub mod events;
pub mod install;
pub mod job_queue;
pub mod manifest;
pub mod matrix;

use crate::labs::Family;
use crate::timeline::vocabulary::entry;

/// The events only this family uses (the steps a lab places: a held command, a stop); no roles
/// (its workers are the library's own).
pub const FAMILY: Family = Family { vocabularies: &[entry::<events::LibraryEvent>()], roles: &[], tables: &[matrix::table] };
