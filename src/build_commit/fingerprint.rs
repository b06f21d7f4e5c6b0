// Included by build.rs and by src/build_commit.rs: one function, the same on both sides.

/// The inputs' fingerprint: (path, blob id) pairs sorted, hashed (FNV-1a, 64 bits, hex).
pub fn fingerprint(entries: &mut [(String, String)]) -> String {
    entries.sort();
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for (path, blob) in entries.iter() {
        for b in path.bytes().chain([0]).chain(blob.bytes()).chain([b'\n']) {
            hash ^= u64::from(b);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    format!("{hash:016x}")
}

