//! What a failover does to delivery: a primary killed under a steady producer, its replica
//! promoted with a real replication lag. Every count is read from the promoted replica.

pub mod failover;
pub mod counts;
