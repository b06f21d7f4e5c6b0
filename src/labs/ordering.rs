//! Order events on a stream, applied by consumer processes with a strategy: what breaks the order
//! and what each fix costs (seed 001, 08a-08g, S2-S3, P3-P4, and the redelivery lab). Two SQL
//! sessions racing on one row show the database's side of CAS.

mod race_lines;
pub mod redelivery;
pub mod sql_race;
pub mod stream;

use crate::labs::Family;

/// The events and roles only this family uses.
pub const FAMILY: Family = Family::NOTHING_OF_ITS_OWN;
