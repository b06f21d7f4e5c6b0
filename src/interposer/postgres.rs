//! PostgreSQL v3 on the wire (to be written).
