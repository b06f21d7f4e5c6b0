//! The transactional outbox: the state change and its outbox row commit in one transaction, and
//! dispatcher processes publish the rows. Its kinds share the table, the dispatcher role and the
//! delivery checker.

pub mod delivery;
pub mod dispatcher;
#[allow(clippy::module_inception)] // the family's kind of the same name
pub mod outbox;
pub mod outbox_rollback;
pub mod table;

use crate::labs::Family;
use crate::roles::role;
use crate::timeline::vocabulary::entry;

/// The events and roles only this family uses.
pub const FAMILY: Family =
    Family { vocabularies: &[entry::<table::OutboxEvent>()], roles: &[role::<dispatcher::DispatcherConfig>()], tables: &[] };
