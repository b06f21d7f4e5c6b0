//! Many orders at once: every strategy side by side at the same handler budget, and the limits of
//! one fan-out reader. Throughput and latency are measured, not asserted.

pub mod load;
pub mod reader_ceiling;
pub mod concurrency;
pub mod generate;
