//! A process's random values (a lock token from `uuid4()`, `secrets.token_hex()`,
//! `bin2hex(random_bytes(16))`) differ from run to run while its step is the same one: a
//! schedule matches a command by its shape, with such words left out, so a worker with random
//! tokens can be stepped and replayed. Values the worker draws from `ORDLAB_SEED` are the same
//! in every schedule and need nothing.

/// What a random word is shown as in a command's shape.
pub const MASK: &str = "<random>";

/// Is `w` a value drawn at random: a UUID (`8-4-4-4-12` hex digits), 16 or more hex digits, or
/// a token of 20 or more letters, digits and `+/=_-` that mixes letters and digits (base64)?
pub fn is_random(w: &str) -> bool {
    let hex = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_hexdigit());
    let groups: Vec<&str> = w.split('-').collect();
    let uuid =
        groups.len() == 5 && groups.iter().map(|g| g.len()).eq([8, 4, 4, 4, 12]) && groups.iter().all(|g| hex(g));
    let long_hex = w.len() >= 16 && hex(w) && w.bytes().any(|b| b.is_ascii_alphabetic());
    let token = w.len() >= 20
        && w.bytes().all(|b| b.is_ascii_alphanumeric() || b"+/=_-".contains(&b))
        && w.bytes().any(|b| b.is_ascii_digit())
        && w.bytes().any(|b| b.is_ascii_alphabetic());
    uuid || long_hex || token
}

#[cfg(test)]
mod tests {
    use super::is_random;

    #[test]
    fn tokens_drawn_at_random_are_told_from_the_words_of_a_command() {
        for w in
            ["38355df8-9579-4683-a481-33cf102e49f9", "9f86d081884c7d659a2feaa0c55ad015", "q3Zr8vK1xPw0LmN2bT7yUe4s"]
        {
            assert!(is_random(w), "{w}");
        }
        for w in [
            "lock:order:42",
            "C1:1-0",
            "order-processor",
            "XREADGROUP",
            "42",
            "1796408234884",
            "e1",
            "ordlab_orders_version",
        ] {
            assert!(!is_random(w), "{w}");
        }
    }
}
