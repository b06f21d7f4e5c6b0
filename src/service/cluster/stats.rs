//! What a master has done, from its own INFO: main-thread CPU time (`INFO cpu`), calls of the
//! list commands a queue uses (`INFO commandstats`) and the redirections and refusals it
//! answered (`INFO errorstats`: ASK, MOVED, TRYAGAIN, CROSSSLOT). Two samples, before and
//! after a run, give what the run cost each master; this works on any cluster, ours or not.

use super::topology::info_field;
use serde::{Deserialize, Serialize};

/// The list commands a queue sends: push, move to processing, the effect, remove.
pub const QUEUE_COMMANDS: &[&str] = &["lpush", "rpush", "blmove", "lmove", "brpoplpush", "rpoplpush", "lrem"];

/// Counters of one master at one moment (or their difference over a run).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeCounters {
    /// CPU time of the main thread (Redis ≥ 7), else of the whole process, in µs.
    pub cpu_us: i64,
    /// Calls of [`QUEUE_COMMANDS`].
    pub queue_commands: u64,
    pub ask: u64,
    pub moved: u64,
    pub tryagain: u64,
    pub crossslot: u64,
}

impl NodeCounters {
    /// From the text of `INFO cpu`, `INFO commandstats` and `INFO errorstats`.
    pub fn parse(cpu: &str, commandstats: &str, errorstats: &str) -> NodeCounters {
        let cpu_us = crate::redis_info::main_thread_cpu_us(cpu).unwrap_or(0);
        let calls = |cmd: &str| stat(commandstats, &format!("cmdstat_{cmd}"), "calls");
        let errors = |code: &str| stat(errorstats, &format!("errorstat_{code}"), "count");
        NodeCounters {
            cpu_us,
            queue_commands: QUEUE_COMMANDS.iter().map(|c| calls(c)).sum(),
            ask: errors("ASK"),
            moved: errors("MOVED"),
            tryagain: errors("TRYAGAIN"),
            crossslot: errors("CROSSSLOT"),
        }
    }

    /// What happened between `before` and `self`.
    pub fn since(&self, before: &NodeCounters) -> NodeCounters {
        NodeCounters {
            cpu_us: self.cpu_us - before.cpu_us,
            queue_commands: self.queue_commands.saturating_sub(before.queue_commands),
            ask: self.ask.saturating_sub(before.ask),
            moved: self.moved.saturating_sub(before.moved),
            tryagain: self.tryagain.saturating_sub(before.tryagain),
            crossslot: self.crossslot.saturating_sub(before.crossslot),
        }
    }
}

/// `field` of the `name:field=value,…` line of an INFO section, 0 when absent.
fn stat(section: &str, name: &str, field: &str) -> u64 {
    info_field(section, name)
        .and_then(|v| v.split(',').find_map(|kv| kv.strip_prefix(field)?.strip_prefix('=')))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// The counters of the master behind `conn`, now.
pub async fn sample(conn: &mut redis::aio::MultiplexedConnection) -> redis::RedisResult<NodeCounters> {
    let mut texts = Vec::new();
    for section in ["cpu", "commandstats", "errorstats"] {
        texts.push(redis::cmd("INFO").arg(section).query_async::<String>(conn).await?);
    }
    Ok(NodeCounters::parse(&texts[0], &texts[1], &texts[2]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_from_info_text() {
        // From Redis 7.0.15.
        let cpu = "# CPU\r\nused_cpu_sys:0.51\r\nused_cpu_user:1.25\r\nused_cpu_sys_children:0.000000\r\nused_cpu_sys_main_thread:0.500000\r\nused_cpu_user_main_thread:1.200000\r\n";
        let cmds = "# Commandstats\r\ncmdstat_lpush:calls=3,usec=40,usec_per_call=13.33,rejected_calls=0,failed_calls=0\r\ncmdstat_blmove:calls=12,usec=300,usec_per_call=25.00,rejected_calls=0,failed_calls=2\r\ncmdstat_info:calls=9,usec=900,usec_per_call=100.00,rejected_calls=0,failed_calls=0\r\n";
        let errs = "# Errorstats\r\nerrorstat_ASK:count=3\r\nerrorstat_CROSSSLOT:count=2\r\nerrorstat_ERR:count=4\r\n";
        let c = NodeCounters::parse(cpu, cmds, errs);
        assert_eq!(
            c,
            NodeCounters { cpu_us: 1_700_000, queue_commands: 15, ask: 3, moved: 0, tryagain: 0, crossslot: 2 }
        );
        let later = NodeCounters { cpu_us: 1_900_000, queue_commands: 20, ask: 3, moved: 1, ..c.clone() };
        assert_eq!(
            later.since(&c),
            NodeCounters { cpu_us: 200_000, queue_commands: 5, moved: 1, ..Default::default() }
        );
        // Before Redis 7 there is no main-thread line: the process's CPU.
        assert_eq!(NodeCounters::parse("used_cpu_sys:1.0\r\nused_cpu_user:2.0\r\n", "", "").cpu_us, 3_000_000);
    }
}
