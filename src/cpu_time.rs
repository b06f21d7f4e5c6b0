//! CPU time as Linux's `/proc` counts it: a process's (user + system) and the whole machine's
//! (busy and idle). Two readings over a window give a share of a core, or of all cores, which
//! is how a throughput lab says who was saturated.

/// Seconds of CPU a process has used so far.
pub fn process_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = stat.rsplit_once(") ")?.1;
    let fields: Vec<&str> = rest.split(' ').collect();
    // After the name: state(0) ppid(1) … utime(11) stime(12), in clock ticks.
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    Some(ticks as f64 / hz)
}

/// (all jiffies, idle + iowait jiffies) of the machine so far.
pub fn machine() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let v: Vec<u64> = stat.lines().next()?.split_whitespace().skip(1).filter_map(|x| x.parse().ok()).collect();
    Some((v.iter().sum(), v.get(3)? + v.get(4).copied().unwrap_or(0)))
}

#[cfg(test)]
mod tests {
    #[test]
    fn this_process_has_used_some_cpu_and_the_machine_has_ticks() {
        assert!(super::process_seconds(std::process::id()).is_some());
        let (all, idle) = super::machine().unwrap();
        assert!(all >= idle && all > 0);
        assert_eq!(super::process_seconds(u32::MAX), None);
    }
}
