//! RESP2/RESP3 on the wire (to be written).
