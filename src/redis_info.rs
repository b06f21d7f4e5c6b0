//! Fields of Redis's `INFO` text (`name:value` lines), read as numbers: what the labs that own a
//! server sample from it (persistence counters, memory, CPU seconds).

/// The value of `name` as text.
pub fn field<'a>(info: &'a str, name: &str) -> Option<&'a str> {
    info.lines().find_map(|l| l.strip_prefix(name).and_then(|rest| rest.strip_prefix(':'))).map(str::trim)
}

/// The value of `name` as an integer.
pub fn int(info: &str, name: &str) -> Option<i64> {
    field(info, name)?.parse().ok()
}

/// The value of `name` as a float (`used_cpu_sys:0.452787`).
pub fn float(info: &str, name: &str) -> Option<f64> {
    field(info, name)?.parse().ok()
}

/// The server's main thread's CPU time so far in µs, from `INFO cpu` (user + system; where the
/// server does not report its main thread, the whole process's).
pub fn main_thread_cpu_us(info: &str) -> Option<i64> {
    let main = float(info, "used_cpu_sys_main_thread").zip(float(info, "used_cpu_user_main_thread"));
    let all = float(info, "used_cpu_sys").zip(float(info, "used_cpu_user"));
    main.or(all).map(|(s, u)| ((s + u) * 1e6).round() as i64)
}

/// `INFO <section>` on `conn`.
pub async fn read<C: redis::aio::ConnectionLike + Send>(conn: &mut C, section: &str) -> redis::RedisResult<String> {
    redis::cmd("INFO").arg(section).query_async(conn).await
}

#[cfg(test)]
mod tests {
    const INFO: &str = "# CPU\r\nused_cpu_sys:0.452787\r\nused_cpu_sys_children:0.000000\r\nused_memory:939344\r\n";

    #[test]
    fn fields_are_read_by_their_exact_name() {
        assert_eq!(super::float(INFO, "used_cpu_sys"), Some(0.452787));
        assert_eq!(super::float(INFO, "used_cpu_sys_children"), Some(0.0));
        assert_eq!(super::int(INFO, "used_memory"), Some(939344));
        assert_eq!(super::int(INFO, "used_cpu"), None);
        assert_eq!(super::int(INFO, "used_cpu_sys"), None, "not an integer");
    }

    #[test]
    fn the_main_threads_cpu_is_preferred_to_the_whole_servers() {
        let both = "used_cpu_sys:0.51\r\nused_cpu_user:1.25\r\nused_cpu_sys_main_thread:0.5\r\nused_cpu_user_main_thread:1.2\r\n";
        assert_eq!(super::main_thread_cpu_us(both), Some(1_700_000));
        assert_eq!(super::main_thread_cpu_us("used_cpu_sys:1.0\r\nused_cpu_user:2.0\r\n"), Some(3_000_000));
        assert_eq!(super::main_thread_cpu_us(INFO), None, "no user time");
    }
}
